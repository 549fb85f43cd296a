//! `POST /api/drivers`

use actix_web::HttpResponse;

use crate::drivers::create::{DriverEndpoint, DriverParams};
use crate::http::idempotent::IdempotentPost;
use crate::http::openapi_components::{
    ApiProblems, IdempotencyKeyHeader, IdempotentPostProblems, ProblemDocument,
};
use crate::wire::driver::{DriverBody, DriverJson};
use crate::wire::problem::Problem;

/// Register a driver, exactly once per `Idempotency-Key` (the platform's
/// key only).
///
/// Makes the driver's connected account at the gateway (Express, the
/// `transfers` capability requested) and answers with `onboarding_url`,
/// the driver's own page, good for 7 days, which sends them to the
/// gateway's onboarding. The URL is in this answer (and its replays) and
/// nowhere else; `.../onboarding_link` makes a new one.
#[utoipa::path(
    post,
    path = "/api/drivers",
    tag = "drivers",
    params(IdempotencyKeyHeader),
    request_body(content = DriverBody, content_type = "application/json"),
    security(("api_key" = [])),
    responses(
        (status = 201, description = "The driver, `onboarding`, with `onboarding_url` (or the replay of it)", body = DriverJson),
        (status = 403, description = "Not the platform's key", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 502, description = "The gateway refused the account permanently (stored)", body = ProblemDocument, content_type = "application/problem+json"),
        IdempotentPostProblems,
        ApiProblems,
    )
)]
pub async fn create_driver(post: IdempotentPost) -> Result<HttpResponse, Problem> {
    let country = post.context().drivers.country.clone();
    post.serve::<DriverEndpoint>(move |body| DriverParams::parse(&country, body))
        .await
}
