//! `/metrics`, and the middleware that counts every request into the
//! registry (`telemetry::metrics`).

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::{web, HttpResponse};

use super::openapi_components::ProblemDocument;
use super::request_id;
use crate::context::ServiceContext;
use crate::idempotency;
use crate::telemetry::metrics;
use crate::wire::problem::Problem;

/// Middleware: requests by route pattern (not the raw path, which would make
/// one series per ride id), method and status, and their latency.
pub async fn track_requests(
    request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let started = Instant::now();
    let method = method_label(request.method());
    let response = next.call(request).await?;
    let route = response
        .request()
        .match_pattern()
        .unwrap_or_else(|| "unmatched".to_owned());
    metrics::observe_request(
        &route,
        method,
        response.status().as_str(),
        started.elapsed(),
    );
    Ok(response)
}

/// The methods that get a label of their own; any other is `other`. actix
/// accepts any token as a method, and one series per invented method would
/// let a stranger grow memory at will.
static KNOWN_METHODS: [Method; 7] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::DELETE,
    Method::PATCH,
    Method::OPTIONS,
];

fn method_label(method: &Method) -> &'static str {
    KNOWN_METHODS
        .iter()
        .find(|known| *known == method)
        .map_or("other", Method::as_str)
}

/// Prometheus metrics, in the text exposition format.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses(
        (status = 200, description = "Metrics", content_type = "text/plain"),
        (status = 429, description = "Too many requests from this address", body = ProblemDocument, content_type = "application/problem+json",
            headers(("Retry-After" = String))),
        (status = 500, description = "Unexpected error", body = ProblemDocument, content_type = "application/problem+json"),
    ))]
pub async fn serve(context: web::Data<ServiceContext>) -> Result<HttpResponse, Problem> {
    let pool = context.pool.clone();
    let oldest = request_id::block(move || -> anyhow::Result<_> {
        let mut conn = pool.get()?;
        Ok(idempotency::oldest_unfinished_age(&mut conn)?)
    })
    .await?;
    let oldest = oldest
        .inspect_err(|err| log::warn!("metrics: cannot read the oldest unfinished key: {err}"))
        .ok();
    let state = context.pool.state();
    metrics::set_gauges(state.connections, state.idle_connections, oldest);
    let (body, content_type) = metrics::encode();
    Ok(HttpResponse::Ok().content_type(content_type).body(body))
}
