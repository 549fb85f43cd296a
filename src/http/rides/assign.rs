//! `POST /api/rides/{id}/driver`

use actix_web::{web, HttpResponse};
use utoipa::OpenApi;

use crate::http::idempotent::IdempotentPost;
use crate::http::openapi_components::{
    ApiProblems, IdempotencyKeyHeader, IdempotentPostProblems, ProblemDocument,
};
use crate::http::owing_drivers;
use crate::http::routes::Routes;
use crate::http::routing::post_only;
use crate::public_ids::{PathId, RidePublicId};
use crate::rides::assign::{AssignEndpoint, AssignParams};
use crate::wire::driver::AssignDriverBody;
use crate::wire::problem::Problem;
use crate::wire::ride::RideJson;

/// Assign a ride's driver, exactly once per `Idempotency-Key` (the
/// platform's key only).
///
/// The commission (`PLATFORM_COMMISSION_BPS`) is fixed on the ride now. What
/// the ride has captured already is the driver's share at once, and the
/// transfers that pay it are owed; what it captures later is, as it is
/// captured. The answer is the ride with its `driver`: what they are owed,
/// what the platform keeps, and the transfers.
#[utoipa::path(
    post,
    path = "/api/rides/{id}/driver",
    tag = "drivers",
    params(("id" = String, Path, description = "The ride's id (`ride_...`)", pattern = "^ride_[a-z2-7]{29}$"), IdempotencyKeyHeader),
    request_body(content = AssignDriverBody, content_type = "application/json"),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The ride with its `driver` (or the replay of it)", body = RideJson),
        (status = 400, description = "`driver_id` missing, not a `drv_` id, or naming no driver (nothing written)", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 403, description = "Not the platform's key", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 404, description = "No such ride", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 422, description = "`invalid-ride-state`: the ride has its driver, or is neither to be paid, paid, nor cancelled with a fee; `driver-not-payable`: the driver's account is not active (nothing written); or `idempotency-key-reused`", body = ProblemDocument, content_type = "application/problem+json"),
        IdempotentPostProblems,
        ApiProblems,
    )
)]
pub async fn assign_driver(
    post: IdempotentPost,
    ride_id: web::Path<PathId<RidePublicId>>,
) -> Result<HttpResponse, Problem> {
    let ride_id = ride_id.into_inner();
    owing_drivers::serve::<AssignEndpoint>(post, move |body| AssignParams::parse(ride_id, body))
        .await
}

/// The route's part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(assign_driver))]
pub struct Api;

impl Routes for AssignEndpoint {
    fn configure(cfg: &mut web::ServiceConfig) {
        cfg.service(post_only("/rides/{id}/driver", assign_driver));
    }

    fn openapi() -> utoipa::openapi::OpenApi {
        Api::openapi()
    }
}
