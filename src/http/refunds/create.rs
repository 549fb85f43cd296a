//! `POST /api/rides/{id}/refunds`

use actix_web::{web, HttpResponse};

use crate::http::idempotent::IdempotentPost;
use crate::http::openapi_components::{
    ApiProblems, IdempotencyKeyHeader, IdempotentPostProblems, ProblemDocument,
};
use crate::http::owing_drivers;
use crate::public_ids::{PathId, RidePublicId};
use crate::refunds::create::{RefundEndpoint, RefundParams};
use crate::wire::problem::Problem;
use crate::wire::refund::{RefundBody, RefundJson};

/// Refund (part of) a ride's charge, exactly once per `Idempotency-Key`.
///
/// Without `amount_cents`, refunds all that remains. Partial refunds add up;
/// the ride becomes `refunded` when nothing remains. A retry with the same
/// key and request finishes or replays the first one; a replay carries
/// `Idempotent-Replayed: true`.
#[utoipa::path(
    post,
    path = "/api/rides/{id}/refunds",
    tag = "refunds",
    params(("id" = String, Path, description = "The ride's id (`ride_...`), or the integer of one made before those", pattern = "^(ride_[a-z2-7]{29}|[0-9]+)$"), IdempotencyKeyHeader),
    request_body(content = RefundBody, content_type = "application/json"),
    security(("api_key" = [])),
    responses(
        (status = 201, description = "The refund, made (or the replay of it)", body = RefundJson,
            headers(
                ("Location" = String, description = "`/api/rides/{id}/refunds/{refund_id}`"),
                ("Idempotent-Replayed" = String, description = "`true` on a replay"),
            )),
        (status = 404, description = "No such ride of the caller's", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 422, description = "`refund-not-allowed`: the ride is not charged, or the amount is more than remains (nothing written); or `idempotency-key-reused`", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 502, description = "The gateway refused the refund permanently (stored, replayed)", body = ProblemDocument, content_type = "application/problem+json"),
        IdempotentPostProblems,
        ApiProblems,
    )
)]
pub async fn create_refund(
    post: IdempotentPost,
    ride_id: web::Path<PathId<RidePublicId>>,
) -> Result<HttpResponse, Problem> {
    let ride_id = ride_id.into_inner();
    owing_drivers::serve::<RefundEndpoint>(post, move |body| RefundParams::parse(ride_id, body))
        .await
}
