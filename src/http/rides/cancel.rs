//! `POST /api/rides/{id}/cancel`

use crate::http::routes::Routes;
use crate::public_ids::{PathId, RidePublicId};
use actix_web::{web, HttpResponse};
use utoipa::OpenApi;

use crate::http::idempotent::IdempotentPost;
use crate::http::openapi_components::{
    ApiProblems, IdempotencyKeyHeader, IdempotentPostProblems, ProblemDocument,
};
use crate::http::owing_drivers;
use crate::http::routing::post_only;
use crate::rides::cancel::{CancelEndpoint, CancelParams};
use crate::wire::problem::Problem;
use crate::wire::ride::RideJson;
use crate::wire::ride_actions::CancelBody;

/// Cancel an `authorized` or `requires_action` ride, exactly once per
/// `Idempotency-Key`: the hold released, or a cancellation fee captured from
/// it.
#[utoipa::path(
    post,
    path = "/api/rides/{id}/cancel",
    tag = "rides",
    params(("id" = String, Path, description = "The ride's id (`ride_...`), or the integer of one made before those", pattern = "^(ride_[a-z2-7]{29}|[0-9]+)$"), IdempotencyKeyHeader),
    request_body(content = CancelBody, content_type = "application/json"),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The ride, `canceled` (or the replay of it)", body = RideJson),
        (status = 404, description = "No such ride of the caller's", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 422, description = "`invalid-ride-state`: the ride cannot be cancelled (nothing written), or the gateway refused the cancellation or the fee's capture (stored; the ride takes the state the gateway holds); or `idempotency-key-reused`", body = ProblemDocument, content_type = "application/problem+json"),
        IdempotentPostProblems,
        ApiProblems,
    )
)]
pub async fn cancel_ride(
    post: IdempotentPost,
    ride_id: web::Path<PathId<RidePublicId>>,
) -> Result<HttpResponse, Problem> {
    let ride_id = ride_id.into_inner();
    owing_drivers::serve::<CancelEndpoint>(post, move |body| CancelParams::parse(ride_id, body))
        .await
}

/// The route's part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(cancel_ride))]
pub struct Api;

impl Routes for CancelEndpoint {
    fn configure(cfg: &mut web::ServiceConfig) {
        cfg.service(post_only("/rides/{id}/cancel", cancel_ride));
    }

    fn openapi() -> utoipa::openapi::OpenApi {
        Api::openapi()
    }
}
