//! The `stripe` gateway: Stripe's HTTP API (PaymentIntents, and the Charges
//! API of the rides made before them).

mod client;
pub mod intents;
mod outcome;
pub mod signature;
pub mod wire;

pub use client::{StripeGateway, STRIPE_VERSION};
