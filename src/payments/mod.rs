//! Payments: the gateway trait, its implementations, and derived keys.

mod derived_key;
mod gateway;
mod intent;
mod outcome;
pub mod stripe;

pub use derived_key::{derived_key, installation_id};
pub use gateway::{GatewayError, Payment, PaymentGateway, Refund, RefundRequest, RefundState};
pub use intent::{
    CancelIntent, CaptureIntent, CaptureMethod, CreateIntent, IncrementIntent, IntentStatus,
    NextAction, PaymentError, PaymentIntent,
};
pub use outcome::final_outcome;
pub use stripe::StripeGateway;
