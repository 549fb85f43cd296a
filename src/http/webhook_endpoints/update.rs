//! `PATCH /api/webhook_endpoints/{id}`: a destination's URL, events or
//! status changed. Setting fields is idempotent by itself: it takes no
//! `Idempotency-Key`.

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};

use crate::context::ServiceContext;
use crate::http::auth::Caller;
use crate::http::body::{read_json, MAX_BODY_BYTES};
use crate::http::openapi_components::{ApiProblems, ProblemDocument};
use crate::http::reading::as_caller;
use crate::http_client::destination::DestinationPolicy;
use crate::public_ids::{DestinationPublicId, PathId};
use crate::service_error::ServiceError;
use crate::user_webhooks::model::{self, Changes};
use crate::user_webhooks::register::{checked_events, checked_url, expected};
use crate::validation::{parse_body, FieldError};
use crate::wire::destination::{DestinationJson, WebhookEndpointPatchBody};
use crate::wire::problem::{Problem, ProblemKind};

/// A validated change.
struct Patch {
    url: Option<String>,
    events: Option<Vec<String>>,
    enabled: Option<bool>,
}

fn parse(policy: DestinationPolicy, body: &[u8]) -> Result<Patch, Vec<FieldError>> {
    let body: WebhookEndpointPatchBody = parse_body(body, expected).map_err(|err| vec![err])?;
    if body.url.is_none() && body.events.is_none() && body.status.is_none() {
        return Err(vec![FieldError::new(
            "body",
            "must change at least one of url, events and status",
        )]);
    }
    let enabled = match body.status.as_deref() {
        None => None,
        Some("enabled") => Some(true),
        Some("disabled") => Some(false),
        Some(_) => {
            return Err(vec![FieldError::new(
                "status",
                "must be enabled or disabled",
            )])
        }
    };
    Ok(Patch {
        url: body.url.map(|url| checked_url(policy, url)).transpose()?,
        events: body.events.map(checked_events).transpose()?,
        enabled,
    })
}

/// Change one of the caller's destinations: its `url` (checked as at
/// registration), its `events`, or its `status` (`enabled` re-enables a
/// disabled destination and forgets its failures).
#[utoipa::path(
    patch,
    path = "/api/webhook_endpoints/{id}",
    tag = "webhooks",
    params(("id" = String, Path, description = "The destination's id (`whep_...`), or the integer of one registered before those", pattern = "^(whep_[a-z2-7]{29}|[0-9]+)$")),
    request_body(content = WebhookEndpointPatchBody, content_type = "application/json"),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The destination as changed", body = DestinationJson),
        (status = 400, description = "Invalid body", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 404, description = "No such destination of the caller's", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 422, description = "`webhook-destination-not-allowed`: the new URL's host resolves to an address that may not be reached", body = ProblemDocument, content_type = "application/problem+json"),
        ApiProblems,
    )
)]
pub async fn update_webhook_endpoint(
    caller: Caller,
    id: web::Path<PathId<DestinationPublicId>>,
    request: HttpRequest,
    payload: web::Payload,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let id = id.into_inner();
    let policy = context.destinations;
    let body = read_json(&request, payload, MAX_BODY_BYTES).await?;
    let patch = parse(policy, &body).map_err(Problem::invalid)?;
    // Resolved before any connection is taken: the resolver may be slow.
    if let Some(url) = patch.url.clone() {
        web::block(move || {
            let url = policy.check_url(&url)?;
            policy.check_destination(&url)
        })
        .await
        .map_err(|err| Problem::new(ProblemKind::InternalError, err.to_string()))?
        .map_err(|reason| {
            Problem::new(
                ProblemKind::WebhookDestinationNotAllowed,
                format!("url {reason}"),
            )
        })?;
    }
    let endpoint = as_caller(context, caller, move |conn, user| {
        let changes = Changes {
            url: patch.url.as_deref(),
            events: patch.events.as_deref(),
            ..patch.enabled.map(Changes::status).unwrap_or_default()
        };
        model::update_for_user(conn, user.id, id, &changes)?.ok_or(ServiceError::NotFound)
    })
    .await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .body(endpoint.json(false).body()))
}
