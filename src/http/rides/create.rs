//! `POST /api/rides`

use actix_web::HttpResponse;

use crate::http::idempotent::IdempotentPost;
use crate::http::openapi_components::{
    ApiProblems, IdempotencyKeyHeader, IdempotentPostProblems, ProblemDocument,
};
use crate::rides::create::{RideEndpoint, RideParams};
use crate::wire::problem::Problem;
use crate::wire::ride::{RideBody, RideJson};

/// Create a ride and pay for it through a PaymentIntent, exactly once per
/// `Idempotency-Key`: the fare held (`capture_method` `manual`, the default)
/// or charged at once (`automatic`).
///
/// A retry with the same key and request finishes or replays the first one; a
/// replay carries `Idempotent-Replayed: true`. A 202 is the key's final
/// answer too: the ride moves on by itself (the rider's authentication, the
/// gateway's events); read it with `GET /api/rides/{id}`.
#[utoipa::path(
    post,
    path = "/api/rides",
    tag = "rides",
    request_body(content = RideBody, content_type = "application/json"),
    params(IdempotencyKeyHeader),
    security(("api_key" = [])),
    responses(
        (status = 201, description = "The ride, its fare held (`authorized`) or paid (`captured`), or the replay of it", body = RideJson,
            headers(
                ("Location" = String, description = "`/api/rides/{id}`"),
                ("Idempotent-Replayed" = String, description = "`true` on a replay"),
            )),
        (status = 202, description = "The ride, waiting for the rider to authenticate the card (`requires_action`, with `next_action`) or for the bank (`processing`) (stored, replayed)", body = RideJson,
            headers(
                ("Location" = String, description = "`/api/rides/{id}`"),
                ("Idempotent-Replayed" = String, description = "`true` on a replay"),
            )),
        (status = 402, description = "Card declined (stored, replayed)", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 403, description = "`forbidden`: the platform's key makes no ride", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 422, description = "The key was used for a different request", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 502, description = "The gateway rejected the payment permanently (stored, replayed)", body = ProblemDocument, content_type = "application/problem+json"),
        IdempotentPostProblems,
        ApiProblems,
    )
)]
pub async fn create_ride(post: IdempotentPost) -> Result<HttpResponse, Problem> {
    post.serve::<RideEndpoint>(RideParams::parse).await
}
