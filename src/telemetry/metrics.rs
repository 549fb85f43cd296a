//! The metrics registry: one per process, as Prometheus clients expect, so
//! every instance exports its own counters. It imports nothing of ridepay's,
//! so every layer may count into it; `/metrics` serves it (`http::metrics`).

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::{
    Encoder, Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    Opts, Registry, TextEncoder,
};

pub struct Metrics {
    registry: Registry,
    http_requests: IntCounterVec,
    http_duration: HistogramVec,
    /// How idempotent requests (every endpoint's) ended: created, replayed,
    /// in_use, reused, declined, rejected, transient, reconciling,
    /// lease_takeover, fencing_refused, or the slug of an endpoint's refusal
    /// (`refund-not-allowed`, `invalid-ride-state`, `authorization-expired`).
    pub idempotency: IntCounterVec,
    /// Completer results per key: finished, failed, needs_attention,
    /// lease_lost, reconciling.
    pub completer: IntCounterVec,
    pub reaper_deleted: IntCounter,
    /// What reconciliation passes did: matched, recorded, reissued, refused,
    /// orphan_cancelled, orphan_refunded, needs_attention, unresolved.
    pub reconciliation: IntCounterVec,
    /// Attempts at delivering webhooks (users' and receipts): succeeded, failed, gone
    /// (a 410, which disables the destination).
    pub outbound_webhooks: IntCounterVec,
    /// Stripe webhook events by type (the types ridepay acts on, or `other`,
    /// or `unverified`) and result: applied, ignored, duplicate, retry,
    /// failed, invalid_signature, invalid_event.
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
        reconciliation: register(
            r,
            IntCounterVec::new(
                Opts::new(
                    "reconciliation_total",
                    "What reconciliation passes found and did, by outcome",
                ),
                &["outcome"],
            )
            .unwrap(),
        ),
        outbound_webhooks: register(
            r,
            IntCounterVec::new(
                Opts::new(
                    "outbound_webhook_attempts_total",
                    "Attempts at delivering webhooks, users' and receipts, by outcome",
                ),
                &["outcome"],
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

/// One HTTP request: its route pattern, method and status (each from a
/// fixed set, see `http::metrics`) and how long it took.
pub fn observe_request(route: &str, method: &str, status: &str, elapsed: Duration) {
    let m = metrics();
    m.http_requests
        .with_label_values(&[route, method, status])
        .inc();
    m.http_duration
        .with_label_values(&[route, method])
        .observe(elapsed.as_secs_f64());
}

/// The gauges read at scrape time: the pool's state and the age of the
/// oldest unfinished key (None when it could not be read).
pub fn set_gauges(connections: u32, idle: u32, oldest_unfinished_key: Option<Duration>) {
    let m = metrics();
    m.pool_size.set(i64::from(connections));
    m.pool_idle.set(i64::from(idle));
    if let Some(age) = oldest_unfinished_key {
        m.oldest_unfinished_key.set(age.as_secs_f64());
    }
}

/// Every metric, in Prometheus' text exposition format, and its content type.
pub fn encode() -> (Vec<u8>, String) {
    let encoder = TextEncoder::new();
    let mut body = Vec::new();
    encoder
        .encode(&metrics().registry.gather(), &mut body)
        .expect("metrics encode as text");
    (body, encoder.format_type().to_owned())
}
