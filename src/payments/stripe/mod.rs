//! The `stripe` gateway: Stripe's Charges API over HTTP.

mod client;
mod outcome;
pub mod signature;
pub mod wire;

pub use client::{StripeGateway, STRIPE_VERSION};
