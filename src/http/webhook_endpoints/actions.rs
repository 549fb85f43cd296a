//! The POSTs that act on one of the caller's destinations, each an
//! idempotent endpoint of its own: a delivery sent again, the secret rolled,
//! a test event sent.

use crate::http::routes::Routes;
use crate::public_ids::{DeliveryPublicId, DestinationPublicId, PathId};
use crate::user_webhooks::actions::retry::RetryEndpoint;
use crate::user_webhooks::actions::roll_secret::RollSecretEndpoint;
use crate::user_webhooks::actions::test_event::TestEventEndpoint;
use actix_web::{web, HttpResponse};
use utoipa::OpenApi;

use crate::http::idempotent::IdempotentPost;
use crate::http::openapi_components::{
    ApiProblems, IdempotencyKeyHeader, IdempotentPostProblems, ProblemDocument,
};
use crate::http::routing::post_only;
use crate::user_webhooks::actions::retry::Retry;
use crate::user_webhooks::actions::roll_secret::RollSecret;
use crate::user_webhooks::actions::test_event::TestEvent;
use crate::user_webhooks::actions::{Action, ActionParams, DestinationAction};
use crate::wire::destination::DestinationJson;
use crate::wire::problem::Problem;
use crate::wire::webhook_delivery::DeliveryJson;

async fn act<A: DestinationAction>(
    post: IdempotentPost,
    endpoint_id: PathId<DestinationPublicId>,
    delivery_id: Option<PathId<DeliveryPublicId>>,
) -> Result<HttpResponse, Problem> {
    post.serve::<Action<A>>(move |body| ActionParams::parse(endpoint_id, delivery_id, body))
        .await
}

/// Send a delivery again, exactly once per `Idempotency-Key`: it is due at
/// once, whatever came of it before (a disabled destination's waits until
/// it is enabled). The body is empty, or `{}`.
#[utoipa::path(
    post,
    path = "/api/webhook_endpoints/{id}/deliveries/{delivery_id}/retry",
    tag = "webhooks",
    params(
        ("id" = String, Path, description = "The destination's id (`whep_...`), or the integer of one registered before those", pattern = "^(whep_[a-z2-7]{29}|[0-9]+)$"),
        ("delivery_id" = String, Path, description = "The delivery's id (`whdl_...`)", pattern = "^whdl_[a-z2-7]{29}$"),
        IdempotencyKeyHeader,
    ),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The delivery, due again (or the replay of it)", body = DeliveryJson),
        (status = 404, description = "No such delivery of the caller's destinations", body = ProblemDocument, content_type = "application/problem+json"),
        IdempotentPostProblems,
        ApiProblems,
    )
)]
pub async fn retry_delivery(
    post: IdempotentPost,
    path: web::Path<(PathId<DestinationPublicId>, PathId<DeliveryPublicId>)>,
) -> Result<HttpResponse, Problem> {
    let (endpoint_id, delivery_id) = path.into_inner();
    act::<Retry>(post, endpoint_id, Some(delivery_id)).await
}

/// Roll the destination's signing secret, exactly once per
/// `Idempotency-Key`: the answer carries the new one; the one before still
/// signs beside it for 24 hours. The body is empty, or `{}`.
#[utoipa::path(
    post,
    path = "/api/webhook_endpoints/{id}/roll_secret",
    tag = "webhooks",
    params(("id" = String, Path, description = "The destination's id (`whep_...`), or the integer of one registered before those", pattern = "^(whep_[a-z2-7]{29}|[0-9]+)$"), IdempotencyKeyHeader),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The destination with its new `secret` (or the replay of it)", body = DestinationJson),
        (status = 404, description = "No such destination of the caller's", body = ProblemDocument, content_type = "application/problem+json"),
        IdempotentPostProblems,
        ApiProblems,
    )
)]
pub async fn roll_secret(
    post: IdempotentPost,
    id: web::Path<PathId<DestinationPublicId>>,
) -> Result<HttpResponse, Problem> {
    act::<RollSecret>(post, id.into_inner(), None).await
}

/// Send a test event (`webhook_endpoint.test`) to the destination alone,
/// exactly once per `Idempotency-Key`. The body is empty, or `{}`.
#[utoipa::path(
    post,
    path = "/api/webhook_endpoints/{id}/test",
    tag = "webhooks",
    params(("id" = String, Path, description = "The destination's id (`whep_...`), or the integer of one registered before those", pattern = "^(whep_[a-z2-7]{29}|[0-9]+)$"), IdempotencyKeyHeader),
    security(("api_key" = [])),
    responses(
        (status = 200, description = "The test event's delivery, pending (or the replay of it)", body = DeliveryJson),
        (status = 404, description = "No such destination of the caller's", body = ProblemDocument, content_type = "application/problem+json"),
        IdempotentPostProblems,
        ApiProblems,
    )
)]
pub async fn send_test_event(
    post: IdempotentPost,
    id: web::Path<PathId<DestinationPublicId>>,
) -> Result<HttpResponse, Problem> {
    act::<TestEvent>(post, id.into_inner(), None).await
}

/// The retry's part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(retry_delivery))]
pub struct RetryApi;

impl Routes for RetryEndpoint {
    fn configure(cfg: &mut web::ServiceConfig) {
        cfg.service(post_only(
            "/webhook_endpoints/{id}/deliveries/{delivery_id}/retry",
            retry_delivery,
        ));
    }

    fn openapi() -> utoipa::openapi::OpenApi {
        RetryApi::openapi()
    }
}

/// The roll's part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(roll_secret))]
pub struct RollSecretApi;

impl Routes for RollSecretEndpoint {
    fn configure(cfg: &mut web::ServiceConfig) {
        cfg.service(post_only(
            "/webhook_endpoints/{id}/roll_secret",
            roll_secret,
        ));
    }

    fn openapi() -> utoipa::openapi::OpenApi {
        RollSecretApi::openapi()
    }
}

/// The test's part of the OpenAPI document.
#[derive(OpenApi)]
#[openapi(paths(send_test_event))]
pub struct TestEventApi;

impl Routes for TestEventEndpoint {
    fn configure(cfg: &mut web::ServiceConfig) {
        cfg.service(post_only("/webhook_endpoints/{id}/test", send_test_event));
    }

    fn openapi() -> utoipa::openapi::OpenApi {
        TestEventApi::openapi()
    }
}
