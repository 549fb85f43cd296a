//! `GET /api/webhook_endpoints/{id}/deliveries?limit=N&starting_after=ID`

use actix_web::{web, HttpResponse};
use serde::Serialize;
use utoipa::ToSchema;

use crate::context::ServiceContext;
use crate::http::auth::Caller;
use crate::http::openapi_components::{ApiProblems, ProblemDocument};
use crate::http::pagination::ListQuery;
use crate::http::reading::as_caller;
use crate::public_ids::{DestinationPublicId, PathId};
use crate::service_error::ServiceError;
use crate::user_webhooks::{deliveries, model};
use crate::wire::problem::Problem;
use crate::wire::webhook_delivery::DeliveryJson;

/// A page of deliveries, newest first.
#[derive(Serialize, ToSchema)]
#[schema(as = WebhookDeliveryPage)]
pub struct Page {
    data: Vec<DeliveryJson>,
    has_more: bool,
}

/// The deliveries to one of the caller's destinations, newest first, each
/// with every attempt: when, the HTTP status or the error, how long.
#[utoipa::path(
    get,
    path = "/api/webhook_endpoints/{id}/deliveries",
    tag = "webhooks",
    params(("id" = String, Path, description = "The destination's id (`whep_...`), or the integer of one registered before those", pattern = "^(whep_[a-z2-7]{29}|[0-9]+)$"), ListQuery),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "A page of deliveries", body = Page),
        (status = 404, description = "No such destination of the caller's", body = ProblemDocument, content_type = "application/problem+json"),
        ApiProblems,
    )
)]
pub async fn list_deliveries(
    caller: Caller,
    id: web::Path<PathId<DestinationPublicId>>,
    query: web::Query<ListQuery>,
    context: web::Data<ServiceContext>,
) -> Result<HttpResponse, Problem> {
    let id = id.into_inner();
    let query = query.into_inner();
    let (data, has_more) = as_caller(context, caller, move |conn, user| {
        let destination = model::find_for_user(conn, user.id, id)?.ok_or(ServiceError::NotFound)?;
        let (limit, cursor) = query.checked()?;
        deliveries::page(conn, destination.id, limit, cursor)
    })
    .await?;
    Ok(HttpResponse::Ok().json(Page { data, has_more }))
}
