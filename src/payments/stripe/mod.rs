//! The `stripe` gateway: Stripe's HTTP API, PaymentIntents, refunds,
//! balance transactions, connected accounts and transfers.

pub mod accounts;
pub mod balance_transactions;
mod client;
pub mod intents;
mod outcome;
pub mod refunds;
pub mod transfers;
pub mod wire;

pub use client::StripeGateway;
pub use ridepay_gateway::{stripe_signature as signature, STRIPE_VERSION};
