//! The OpenAPI 3 description, generated from the handlers' annotations and the
//! types they use, and served at `/api/openapi.json`.

use std::sync::LazyLock;

use actix_web::HttpResponse;
use serde::Serialize;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{IntoParams, IntoResponses, Modify, OpenApi, ToSchema};

use crate::validation::FieldError;

/// An RFC 9457 problem, as `crate::problem::Problem` writes it.
#[derive(Serialize, ToSchema)]
#[schema(as = Problem)]
pub struct ProblemDocument {
    /// `https://ridepay.dev/problems/<slug>`, a stable slug per kind of problem.
    #[serde(rename = "type")]
    pub type_uri: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// The rejected fields of an invalid request.
    #[schema(nullable = false)]
    pub errors: Option<Vec<FieldError>>,
    /// On `card-declined` and `payment-gateway-rejected`: the ride created.
    #[schema(nullable = false)]
    pub ride_id: Option<i64>,
    /// On `payment-gateway-rejected` for a refund: the refund, `failed`.
    #[schema(nullable = false)]
    pub refund_id: Option<i64>,
    /// On `card-declined`: the gateway's error code.
    #[schema(nullable = false)]
    pub code: Option<String>,
    /// On `card-declined`: the gateway's decline code.
    pub decline_code: Option<String>,
}

/// The `Idempotency-Key` request header.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct IdempotencyKeyHeader {
    /// 1 to 255 printable ASCII characters, not blank; scoped to the caller.
    /// An RFC 8941 string (`"abc"`) names the same key as its content.
    #[param(
        rename = "Idempotency-Key",
        min_length = 1,
        max_length = 255,
        pattern = "^[!#-~]([ -~]{0,253}[!-~])?$"
    )]
    pub idempotency_key: String,
}

/// Answers every authenticated route may give.
#[derive(IntoResponses)]
pub enum ApiProblems {
    /// No or unknown API key.
    #[response(status = 401, content_type = "application/problem+json", headers(("WWW-Authenticate" = String)))]
    Unauthorized(ProblemDocument),
    /// Too many requests for this API key.
    #[response(status = 429, content_type = "application/problem+json", headers(("Retry-After" = String)))]
    RateLimited(ProblemDocument),
    /// An unexpected error.
    #[response(status = 500, content_type = "application/problem+json")]
    Internal(ProblemDocument),
    /// A dependency is unavailable; retry (with the same `Idempotency-Key`).
    #[response(status = 503, content_type = "application/problem+json", headers(("Retry-After" = String)))]
    Unavailable(ProblemDocument),
}

/// Answers every idempotent POST may give before its own.
#[derive(IntoResponses)]
pub enum IdempotentPostProblems {
    /// Invalid or missing `Idempotency-Key`, or an invalid body (nothing
    /// written, the key not consumed).
    #[response(status = 400, content_type = "application/problem+json")]
    Invalid(ProblemDocument),
    /// Another request with this key is in flight.
    #[response(status = 409, content_type = "application/problem+json", headers(("Retry-After" = String)))]
    InUse(ProblemDocument),
    /// The body did not arrive within `HTTP_BODY_TIMEOUT_MS`.
    #[response(status = 408, content_type = "application/problem+json")]
    BodyTimeout(ProblemDocument),
    /// Body over 16 KiB.
    #[response(status = 413, content_type = "application/problem+json")]
    TooLarge(ProblemDocument),
    /// Body not `application/json`.
    #[response(status = 415, content_type = "application/problem+json")]
    UnsupportedMediaType(ProblemDocument),
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("ridepay_sk_...")
                    .build(),
            ),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "ridepay",
        description = "Retry-safe ride payments. Every POST takes an `Idempotency-Key`; a retry with the same key and request finishes or replays the first one, never charging twice."
    ),
    paths(
        crate::http::webhooks::stripe_webhook,
        crate::http::payment_return::payment_return,
        crate::http::health::healthz,
        crate::http::health::readyz,
        crate::http::metrics::serve,
        openapi_json,
    ),
    components(schemas(ProblemDocument, FieldError)),
    modifiers(&BearerAuth),
    tags((name = "rides"), (name = "refunds"), (name = "webhooks"), (name = "operations"))
)]
pub struct ApiDoc;

/// The routes of every endpoint (from the registry) and the others.
static DOCUMENT: LazyLock<String> = LazyLock::new(|| {
    let mut document = ApiDoc::openapi();
    for endpoint in super::routes::endpoints() {
        document.merge((endpoint.openapi)());
    }
    document
        .to_pretty_json()
        .expect("the OpenAPI document serialises")
});

/// This document.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    tag = "operations",
    responses((status = 200, description = "The OpenAPI 3 document", content_type = "application/json"))
)]
pub async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(DOCUMENT.as_str())
}
