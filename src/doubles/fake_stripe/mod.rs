//! `ridepay fake-gateway`: the simulated gateway's ledger served over Stripe's
//! HTTP API on loopback, with fault knobs, so the `stripe` client can be
//! tested end to end without Stripe, and its webhooks with it.

mod authentication_page;
mod charges;
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
    /// The ledger's database (its `simulated_charges` table).
    pub database_url: String,
    pub faults: SimulatedGatewaySettings,
    /// The key clients must send; `None` accepts any.
    pub api_key: Option<ApiKey>,
    /// Where signed events for new charges and refunds go; `None` sends none.
    pub webhook: Option<WebhookTarget>,
}
