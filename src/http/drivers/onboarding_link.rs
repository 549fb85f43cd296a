//! `POST /api/drivers/{id}/onboarding_link`

use actix_web::{web, HttpResponse};
use utoipa::OpenApi;

use crate::drivers::onboarding_link::{LinkParams, OnboardingLinkEndpoint};
use crate::http::idempotent::IdempotentPost;
use crate::http::openapi_components::{
    ApiProblems, IdempotencyKeyHeader, IdempotentPostProblems, ProblemDocument,
};
use crate::http::routes::Routes;
use crate::http::routing::post_only;
use crate::public_ids::DriverPublicId;
use crate::wire::driver::DriverJson;
use crate::wire::problem::Problem;

/// A new onboarding page for a driver, exactly once per `Idempotency-Key`
/// (the platform's key only).
///
/// The answer's `onboarding_url` is good for 7 days; the one before stops
/// working at once. The body, if any, is `{}`.
#[utoipa::path(
    post,
    path = "/api/drivers/{id}/onboarding_link",
    tag = "drivers",
    params(("id" = String, Path, description = "The driver's id (`drv_...`)", pattern = "^drv_[a-z2-7]{29}$"), IdempotencyKeyHeader),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The driver with a new `onboarding_url` (or the replay of it)", body = DriverJson),
        (status = 403, description = "Not the platform's key", body = ProblemDocument, content_type = "application/problem+json"),
        (status = 404, description = "No such driver", body = ProblemDocument, content_type = "application/problem+json"),
        IdempotentPostProblems,
        ApiProblems,
    )
)]
pub async fn create_onboarding_link(
    post: IdempotentPost,
    driver_id: web::Path<DriverPublicId>,
) -> Result<HttpResponse, Problem> {
    let driver_id = driver_id.into_inner();
    post.serve::<OnboardingLinkEndpoint>(move |body| LinkParams::parse(driver_id, body))
        .await
}

/// The route's part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(create_onboarding_link))]
pub struct Api;

impl Routes for OnboardingLinkEndpoint {
    fn configure(cfg: &mut web::ServiceConfig) {
        cfg.service(post_only(
            "/drivers/{id}/onboarding_link",
            create_onboarding_link,
        ));
    }

    fn openapi() -> utoipa::openapi::OpenApi {
        Api::openapi()
    }
}
