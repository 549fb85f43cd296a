//! The `stripe` gateway: Stripe's HTTP API, PaymentIntents and refunds.

mod client;
pub mod intents;
mod outcome;
pub mod refunds;
pub mod signature;
pub mod wire;

pub use client::{StripeGateway, STRIPE_VERSION};
