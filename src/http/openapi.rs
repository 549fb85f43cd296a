//! The OpenAPI 3 description, generated from the handlers' annotations and the
//! types they use, and served at `/api/openapi.json`.

use std::sync::LazyLock;

use actix_web::HttpResponse;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::openapi_components::ProblemDocument;
use crate::validation::FieldError;

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
        crate::http::gateway_events::stripe_webhook,
        crate::http::gateway_events::connect_webhook,
        crate::http::payment_return::payment_return,
        crate::http::health::healthz,
        crate::http::health::readyz,
        crate::http::metrics::serve,
        openapi_json,
    ),
    components(schemas(ProblemDocument, FieldError)),
    modifiers(&BearerAuth),
    tags((name = "rides"), (name = "refunds"), (name = "webhooks"), (name = "ledger"), (name = "drivers"), (name = "operations"))
)]
pub struct ApiDoc;

/// The routes of every endpoint (from the registry) and the others.
static DOCUMENT: LazyLock<String> = LazyLock::new(|| {
    let mut document = ApiDoc::openapi();
    document.merge(super::ledger::Api::openapi());
    for endpoint in super::routes::endpoints() {
        document.merge((endpoint.openapi)());
    }
    document
        .to_pretty_json()
        .expect("the OpenAPI document serialises")
});

/// The document, as served.
pub fn document() -> &'static str {
    DOCUMENT.as_str()
}

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
