//! `ridepay fake-gateway`: the doubles' PaymentIntents, refunds, balance
//! transactions, connected accounts, transfers and their balances served
//! over Stripe's HTTP API on loopback, with fault knobs, its own
//! authentication and onboarding pages and signed events, so the `stripe`
//! client can be tested end to end without Stripe, and its webhooks with
//! it.

mod accounts;
mod authentication_page;
mod balance_transactions;
mod calls;
mod config;
mod http;
mod intents;
mod onboarding_page;
mod refunds;
mod server;
mod state;
mod transfers;
mod webhooks;
mod wire;

pub use config::{ConnectionLimits, FakeGatewayConfig, WebhookTarget};
pub use server::FakeGateway;
