//! Stand-ins for the payment gateway, in a crate apart from the service
//! (which uses them only with its default `simulated` feature, and in its
//! tests): the simulated gateway `cargo run` pays through, the fake Stripe
//! server of `ridepay fake-gateway`, and the PaymentIntents, refunds,
//! connected accounts, transfers and events both keep, in tables of their
//! own (`simulated_*`, with migrations of their own), committed like an
//! external system's. They depend on
//! `ridepay-gateway` only: the service reaches into them, never the reverse.

pub mod account_balance;
pub mod accounts;
pub mod authentication;
pub mod balance;
pub mod balance_transactions;
pub mod events;
pub mod fake_stripe;
pub mod intents;
pub mod onboarding;
mod records;
pub mod refunds;
mod return_url;
pub mod schema;
mod settings;
pub mod simulated;
pub mod transfers;

pub use records::{records_pool, run_migrations, RecordsPool, MIGRATIONS};
pub use settings::SimulatedGatewaySettings;
pub use simulated::{SimulatedGateway, RATE_LIMIT_RETRY_AFTER};
