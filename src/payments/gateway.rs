//! The payment gateway seen from ridepay: one trait, several implementations.

use std::time::Duration;

/// A charge to make, exactly once per `idempotency_key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChargeRequest {
    /// Derived from the client's key row: the same on every retry.
    pub idempotency_key: String,
    pub amount_cents: i64,
    pub currency: String,
    /// A token (`tok_...`) or a stored customer (`cus_...`).
    pub source: String,
    pub description: String,
    pub metadata: Vec<(String, String)>,
}

/// A charge the gateway made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    pub id: String,
    pub amount_cents: i64,
    pub currency: String,
}

/// Why a charge did not succeed. The variants are what ridepay must do next,
/// not how the gateway said it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GatewayError {
    /// The card was declined: final, and the answer is stored.
    #[error("card declined: {code} ({decline_code:?}): {message}")]
    Declined {
        code: String,
        decline_code: Option<String>,
        message: String,
    },
    /// The gateway refused the request for good (a bad source, say): final.
    #[error("charge rejected: {message}")]
    Rejected { message: String },
    /// Known not to have charged (failed before charging, rate-limited): retry.
    #[error("gateway unavailable: {reason}")]
    Unavailable {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// Unknown whether it charged (timeout, reset): retry with the same key,
    /// which the gateway deduplicates.
    #[error("charge outcome unknown: {reason}")]
    OutcomeUnknown { reason: String },
    /// Something an operator must fix (credentials, a key reused with other
    /// parameters). Retrying cannot help until they do.
    #[error("gateway misconfigured: {reason}")]
    Misconfigured { reason: String },
}

pub trait PaymentGateway: Send + Sync {
    /// Makes the charge, or returns the charge already made under the same
    /// idempotency key. Blocking; never called while holding a pooled
    /// database connection.
    fn charge(&self, request: &ChargeRequest) -> Result<Charge, GatewayError>;
}
