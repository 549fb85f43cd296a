//! Payments: the gateway trait, its implementations, and derived keys.

mod derived_key;
mod gateway;
mod simulated;

pub use derived_key::{derived_key, installation_id};
pub use gateway::{Charge, ChargeRequest, GatewayError, PaymentGateway};
pub use simulated::SimulatedGateway;
