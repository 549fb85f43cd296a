//! `POST /api/webhook_endpoints`

use actix_web::HttpResponse;

use crate::http::idempotent::IdempotentPost;
use crate::http::openapi_components::{
    ApiProblems, IdempotencyKeyHeader, IdempotentPostProblems, ProblemDocument,
};
use crate::user_webhooks::register::{DestinationParams, RegisterDestination};
use crate::wire::destination::{DestinationJson, WebhookEndpointBody};
use crate::wire::problem::Problem;

/// Register a destination for the caller's events, exactly once per
/// `Idempotency-Key`.
///
/// The URL must be `https://` to a host that resolves only to public
/// addresses (loopback too, over `http://` as well, where the server allows
/// it); a user has at most 16. The answer carries the signing secret, shown
/// nowhere else.
#[utoipa::path(
    post,
    path = "/api/webhook_endpoints",
    tag = "webhooks",
    params(IdempotencyKeyHeader),
    request_body(content = WebhookEndpointBody, content_type = "application/json"),
    security(("api_key" = [])),
    responses(
        (status = 201, description = "The destination, with its `secret` (or the replay of it)", body = DestinationJson),
        (status = 422, description = "`webhook-destination-not-allowed`: the host resolves to an address that may not be reached (stored); `webhook-endpoint-limit`: 16 already (nothing written); or `idempotency-key-reused`", body = ProblemDocument, content_type = "application/problem+json"),
        IdempotentPostProblems,
        ApiProblems,
    )
)]
pub async fn create_webhook_endpoint(post: IdempotentPost) -> Result<HttpResponse, Problem> {
    let policy = post.context().destinations;
    post.serve::<RegisterDestination>(move |body| DestinationParams::parse(policy, body))
        .await
}
