//! Payments: the gateway trait, its implementations, and derived keys.

mod derived_key;
mod gateway;
pub mod ledger;
mod outcome;
mod simulated;
pub mod stripe;

pub use derived_key::{derived_key, installation_id};
pub use gateway::{
    Charge, ChargeRequest, ChargeState, GatewayError, PaymentGateway, Refund, RefundRequest,
};
pub use outcome::final_outcome;
pub use simulated::{SimulatedGateway, RATE_LIMIT_RETRY_AFTER};
pub use stripe::StripeGateway;
