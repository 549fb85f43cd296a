//! The doubles' knobs: their faults, how long a hold lasts, and how long
//! a transfer's funds are pending.

use std::time::Duration;

/// The simulated gateway's and the fake Stripe's knobs: their faults, how
/// long a hold lasts, and how long a transfer's funds are pending.
#[derive(Debug, Clone, PartialEq)]
pub struct SimulatedGatewaySettings {
    pub latency: Duration,
    /// Share of calls that fail before charging.
    pub fail_rate: f64,
    /// Share of calls that act, then report a timeout.
    pub lost_response_rate: f64,
    /// Share of calls refused as rate-limited before charging.
    pub rate_limit_rate: f64,
    /// Share of calls answered with a 500 that is saved under the key and
    /// answered to every retry, as Stripe does: half of them before acting,
    /// half after.
    pub saved_error_rate: f64,
    /// How long a new PaymentIntent is missing from search, as Stripe's
    /// search index lags (lists never do).
    pub search_lag: Duration,
    /// Forget a key this long after its first call, as Stripe does after
    /// 24 hours (a call under it then acts afresh); `None` keeps every key.
    pub forget_keys: Option<Duration>,
    /// How long a hold lasts before it lapses (Stripe's: seven days).
    pub authorization_ttl: Duration,
    /// How long an extended hold lasts (Stripe's: up to 30 days).
    pub extended_authorization_ttl: Duration,
    /// How long a transfer's funds are pending in the destination's
    /// balance before they are available (Stripe's: two days).
    pub transfer_available: Duration,
    /// Whether its clock ticks and its events reach ridepay in-process
    /// (off only to measure a request's own statements).
    pub events_enabled: bool,
}

impl Default for SimulatedGatewaySettings {
    fn default() -> Self {
        SimulatedGatewaySettings {
            latency: Duration::ZERO,
            fail_rate: 0.0,
            lost_response_rate: 0.0,
            rate_limit_rate: 0.0,
            saved_error_rate: 0.0,
            search_lag: Duration::ZERO,
            forget_keys: None,
            authorization_ttl: Duration::from_secs(7 * 24 * 3600),
            extended_authorization_ttl: Duration::from_secs(30 * 24 * 3600),
            transfer_available: Duration::from_secs(2 * 24 * 3600),
            events_enabled: true,
        }
    }
}
