//! `ridepay fake-gateway`: the simulated gateway's ledger served over Stripe's
//! HTTP API on loopback, with fault knobs, so the `stripe` client can be
//! tested end to end without Stripe.

mod charges;
mod http;
mod server;
mod wire;

pub use server::FakeGateway;

use crate::config::{ApiKey, SimulatedGatewaySettings};

pub struct FakeGatewayConfig {
    /// Where to listen; port 0 picks a free port.
    pub bind: String,
    /// The ledger's database (its `simulated_charges` table).
    pub database_url: String,
    pub faults: SimulatedGatewaySettings,
    /// The key clients must send; `None` accepts any.
    pub api_key: Option<ApiKey>,
}
