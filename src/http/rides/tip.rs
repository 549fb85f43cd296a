//! `POST /api/rides/{id}/tip`

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
use crate::rides::tip::{TipEndpoint, TipParams};
use crate::wire::problem::Problem;
use crate::wire::ride::RideJson;
use crate::wire::ride_actions::TipBody;

/// Tip a ride, exactly once per `Idempotency-Key`; one tip per ride
/// succeeds.
///
/// On an `authorized` ride the tip is added to what the completion will
/// capture (cancelling the ride drops it). On a `captured` ride, paid with
/// the user's saved card, it is charged at once, off session, by a
/// PaymentIntent of its own; a card that needs the rider to authenticate
/// is a stored 402 (`code` `authentication_required`), its PaymentIntent
/// cancelled and the ride unchanged, so another key may try again.
#[utoipa::path(
    post,
    path = "/api/rides/{id}/tip",
    tag = "rides",
    params(("id" = String, Path, description = "The ride's id (`ride_...`), or the integer of one made before those", pattern = "^(ride_[a-z2-7]{29}|[0-9]+)$"), IdempotencyKeyHeader),
    request_body(content = TipBody, content_type = "application/json"),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The ride with its `tip_cents` (or the replay of it)", body = RideJson),
        (status = 402, description = "`card-declined`: the saved card declined the tip off session (stored; `code` says why, `authentication_required` for a card that needs the rider); the ride is unchanged", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 404, description = "No such ride of the caller's", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 422, description = "`invalid-ride-state`: the ride is neither `authorized` nor `captured`, already has a tip, is being completed, cancelled or tipped under another key, or (captured) was not paid with a saved card (nothing written); or `idempotency-key-reused`", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 502, description = "The gateway refused the tip permanently (stored); the ride is unchanged", body = ProblemDocument, content_type = "application/problem+json"),
        IdempotentPostProblems,
        ApiProblems,
    )
)]
pub async fn tip_ride(
    post: IdempotentPost,
    ride_id: web::Path<PathId<RidePublicId>>,
) -> Result<HttpResponse, Problem> {
    let ride_id = ride_id.into_inner();
    owing_drivers::serve::<TipEndpoint>(post, move |body| TipParams::parse(ride_id, body)).await
}

/// The route's part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(tip_ride))]
pub struct Api;

impl Routes for TipEndpoint {
    fn configure(cfg: &mut web::ServiceConfig) {
        cfg.service(post_only("/rides/{id}/tip", tip_ride));
    }

    fn openapi() -> utoipa::openapi::OpenApi {
        Api::openapi()
    }
}
