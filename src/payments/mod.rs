//! Payments: the gateway trait, its implementations, and derived keys.

mod gateway_key;
pub mod lookup;
mod outcome;
pub mod released;
pub mod stripe;

pub use gateway_key::{
    call_metadata, gateway_key, installation_id, GENERATION, INSTALLATION, RIDEPAY_KEY,
};
pub use outcome::{final_answer, unavailable, Final};
pub use ridepay_gateway::{
    CancelIntent, CaptureIntent, CaptureMethod, CreateIntent, GatewayError, HoldRequest,
    IncrementIntent, IntentPage, IntentStatus, ListIntents, NextAction, Payment, PaymentError,
    PaymentGateway, PaymentIntent, Refund, RefundRequest, RefundState,
};
pub use stripe::StripeGateway;
