//! `POST /api/rides/{id}/complete`

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
use crate::rides::complete::{CompleteEndpoint, CompleteParams};
use crate::wire::problem::Problem;
use crate::wire::ride::RideJson;
use crate::wire::ride_actions::CompleteBody;

/// Complete an `authorized` ride: capture its final fare, exactly once per
/// `Idempotency-Key`.
///
/// Up to what the hold covers, the fare is captured and the rest of the hold
/// released. Above it, the hold is raised first; if the gateway will not,
/// the answer is a stored 402 and the ride stays `authorized`, so a
/// completion under another key may capture what the hold covers.
#[utoipa::path(
    post,
    path = "/api/rides/{id}/complete",
    tag = "rides",
    params(("id" = String, Path, description = "The ride's id (`ride_...`), or the integer of one made before those", pattern = "^(ride_[a-z2-7]{29}|[0-9]+)$"), IdempotencyKeyHeader),
    request_body(content = CompleteBody, content_type = "application/json"),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The ride, `captured` (or the replay of it)", body = RideJson),
        (status = 402, description = "The hold could not be raised to the final fare (stored); the ride stays `authorized`", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 404, description = "No such ride of the caller's", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 422, description = "`invalid-ride-state`: the ride is not `authorized` (nothing written); `authorization-expired`: the hold lapsed, the ride is `expired` (stored); or `idempotency-key-reused`", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 502, description = "The gateway refused the capture permanently (stored)", body = ProblemDocument, content_type = "application/problem+json"),
        IdempotentPostProblems,
        ApiProblems,
    )
)]
pub async fn complete_ride(
    post: IdempotentPost,
    ride_id: web::Path<PathId<RidePublicId>>,
) -> Result<HttpResponse, Problem> {
    let ride_id = ride_id.into_inner();
    owing_drivers::serve::<CompleteEndpoint>(post, move |body| CompleteParams::parse(ride_id, body))
        .await
}

/// The route's part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(complete_ride))]
pub struct Api;

impl Routes for CompleteEndpoint {
    fn configure(cfg: &mut web::ServiceConfig) {
        cfg.service(post_only("/rides/{id}/complete", complete_ride));
    }

    fn openapi() -> utoipa::openapi::OpenApi {
        Api::openapi()
    }
}
