//! `ridepay fake-gateway`: the doubles' PaymentIntents and refunds served
//! over Stripe's HTTP API on loopback, with fault knobs, its own
//! authentication page and signed events, so the `stripe` client can be
//! tested end to end without Stripe, and its webhooks with it.

mod authentication_page;
mod calls;
mod http;
mod intents;
mod refunds;
mod server;
mod webhooks;
mod wire;

pub use server::FakeGateway;
pub use webhooks::WebhookTarget;

use crate::config::{ApiKey, SimulatedGatewaySettings};

pub struct FakeGatewayConfig {
    /// Where to listen; port 0 picks a free port.
    pub bind: String,
    /// The doubles' database (their `simulated_*` tables).
    pub database_url: String,
    pub faults: SimulatedGatewaySettings,
    /// The key clients must send; `None` accepts any.
    pub api_key: Option<ApiKey>,
    /// Where its signed events go; `None` sends none.
    pub webhook: Option<WebhookTarget>,
}
