//! Stand-ins for the payment gateway, apart from the domain modules: the
//! simulated gateway `cargo run` pays through, the fake Stripe server of
//! `ridepay fake-gateway`, and the PaymentIntents, refunds and events both
//! keep (in tables of their own, committed like an external system's).

pub mod authentication;
pub mod events;
pub mod fake_stripe;
pub mod intents;
pub mod refunds;
mod return_url;
pub mod simulated;

pub use simulated::{SimulatedGateway, RATE_LIMIT_RETRY_AFTER};
