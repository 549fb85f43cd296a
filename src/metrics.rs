//! Prometheus metrics, served at `/metrics`. One process-wide registry, as
//! Prometheus clients expect: every instance exports its own counters.

use std::sync::LazyLock;
use std::time::{Duration, Instant};

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::{web, HttpResponse};
use diesel::prelude::*;
use prometheus::{
    Encoder, Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    Opts, Registry, TextEncoder,
};

use crate::context::ServiceContext;
use crate::db::{self, DbPool};
use crate::idempotency::FINISHED;
use crate::openapi::ProblemDocument;
use crate::problem::{Problem, ProblemKind};
use crate::schema::idempotency_keys;

pub struct Metrics {
    registry: Registry,
    http_requests: IntCounterVec,
    http_duration: HistogramVec,
    /// How idempotent requests (rides and refunds) ended: created, replayed,
    /// in_use, reused, declined, rejected, refund_not_allowed, transient,
    /// lease_takeover, fencing_refused.
    pub idempotency: IntCounterVec,
    /// Completer results per key: finished, failed, needs_attention, lease_lost.
    pub completer: IntCounterVec,
    pub reaper_deleted: IntCounter,
    /// Outbox deliveries: delivered, failed.
    pub outbox: IntCounterVec,
    /// Stripe webhook events by type (the five charge events, or `other`, or
    /// `unverified`) and result: applied, ignored, superseded, duplicate,
    /// retry, failed, invalid_signature, invalid_event.
    pub webhook_events: IntCounterVec,
    pub pool_wait: Histogram,
    pub pool_timeouts: IntCounter,
    pool_size: IntGauge,
    pool_idle: IntGauge,
    oldest_unfinished_key: Gauge,
}

fn register<T: prometheus::core::Collector + Clone + 'static>(registry: &Registry, metric: T) -> T {
    registry
        .register(Box::new(metric.clone()))
        .expect("metric names are unique");
    metric
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let registry = Registry::new_custom(Some("ridepay".to_owned()), None).expect("a valid prefix");
    let r = &registry;
    Metrics {
        http_requests: register(
            r,
            IntCounterVec::new(
                Opts::new(
                    "http_requests_total",
                    "HTTP requests by route, method and status",
                ),
                &["route", "method", "status"],
            )
            .unwrap(),
        ),
        http_duration: register(
            r,
            HistogramVec::new(
                HistogramOpts::new("http_request_duration_seconds", "HTTP request latency")
                    .buckets(vec![
                        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                        10.0,
                    ]),
                &["route", "method"],
            )
            .unwrap(),
        ),
        idempotency: register(
            r,
            IntCounterVec::new(
                Opts::new(
                    "idempotency_outcomes_total",
                    "How idempotent requests ended",
                ),
                &["outcome"],
            )
            .unwrap(),
        ),
        completer: register(
            r,
            IntCounterVec::new(
                Opts::new(
                    "completer_keys_total",
                    "Keys the completer handled, by result",
                ),
                &["result"],
            )
            .unwrap(),
        ),
        reaper_deleted: register(
            r,
            IntCounter::new(
                "reaper_deleted_keys_total",
                "Finished keys the reaper deleted",
            )
            .unwrap(),
        ),
        outbox: register(
            r,
            IntCounterVec::new(
                Opts::new(
                    "outbox_deliveries_total",
                    "Outbox job deliveries, by result",
                ),
                &["result"],
            )
            .unwrap(),
        ),
        webhook_events: register(
            r,
            IntCounterVec::new(
                Opts::new(
                    "webhook_events_total",
                    "Stripe webhook events received, by type and result",
                ),
                &["type", "result"],
            )
            .unwrap(),
        ),
        pool_wait: register(
            r,
            Histogram::with_opts(
                HistogramOpts::new(
                    "db_pool_wait_seconds",
                    "Time spent waiting for a pooled connection",
                )
                .buckets(vec![
                    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0,
                ]),
            )
            .unwrap(),
        ),
        pool_timeouts: register(
            r,
            IntCounter::new(
                "db_pool_timeouts_total",
                "Waits for a connection that timed out",
            )
            .unwrap(),
        ),
        pool_size: register(
            r,
            IntGauge::new("db_pool_connections", "Open pooled connections").unwrap(),
        ),
        pool_idle: register(
            r,
            IntGauge::new("db_pool_idle_connections", "Idle pooled connections").unwrap(),
        ),
        oldest_unfinished_key: register(
            r,
            Gauge::new(
                "oldest_unfinished_key_age_seconds",
                "Age of the oldest idempotency key not finished (0 when none)",
            )
            .unwrap(),
        ),
        registry,
    }
});

pub fn metrics() -> &'static Metrics {
    &METRICS
}

/// Counts one idempotent request's outcome.
pub fn idempotency_outcome(outcome: &str) {
    metrics().idempotency.with_label_values(&[outcome]).inc();
}

/// Records pool waits and timeouts, as r2d2 reports them.
#[derive(Debug)]
pub struct PoolEvents;

impl diesel::r2d2::HandleEvent for PoolEvents {
    fn handle_checkout(&self, event: diesel::r2d2::event::CheckoutEvent) {
        metrics().pool_wait.observe(event.duration().as_secs_f64());
    }

    fn handle_timeout(&self, _event: diesel::r2d2::event::TimeoutEvent) {
        metrics().pool_timeouts.inc();
    }
}

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
    let m = metrics();
    m.http_requests
        .with_label_values(&[route.as_str(), method, response.status().as_str()])
        .inc();
    m.http_duration
        .with_label_values(&[route.as_str(), method])
        .observe(started.elapsed().as_secs_f64());
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
    let oldest = crate::request_id::block(move || oldest_unfinished_key_age(&pool)).await?;
    let m = metrics();
    let state = context.pool.state();
    m.pool_size.set(i64::from(state.connections));
    m.pool_idle.set(i64::from(state.idle_connections));
    match oldest {
        Ok(age) => m.oldest_unfinished_key.set(age.as_secs_f64()),
        Err(err) => log::warn!("metrics: cannot read the oldest unfinished key: {err}"),
    }
    let mut body = Vec::new();
    TextEncoder::new()
        .encode(&m.registry.gather(), &mut body)
        .map_err(|err| Problem::new(ProblemKind::InternalError, err.to_string()))?;
    Ok(HttpResponse::Ok()
        .content_type(TextEncoder::new().format_type())
        .body(body))
}

fn oldest_unfinished_key_age(pool: &DbPool) -> anyhow::Result<Duration> {
    let mut conn = pool.get()?;
    let now = db::now(&mut conn)?;
    let oldest: Option<chrono::DateTime<chrono::Utc>> = idempotency_keys::table
        .filter(idempotency_keys::recovery_point.ne(FINISHED))
        .select(diesel::dsl::min(idempotency_keys::created_at))
        .first(&mut conn)?;
    Ok(oldest
        .map(|created| (now - created).to_std().unwrap_or_default())
        .unwrap_or_default())
}
