//! The payment gateway seen from ridepay: one trait, several implementations.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::service_error::ServiceError;

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
        /// The PaymentIntent the decline left behind (`requires_payment_method`),
        /// when there is one: the ride records it.
        payment_intent: Option<String>,
    },
    /// The gateway refused the request for good (a bad source, say): final.
    #[error("rejected: {message}")]
    Rejected { message: String },
    /// Known not to have charged (failed before charging, rate-limited): retry.
    #[error("gateway unavailable: {reason}")]
    Unavailable {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// Unknown whether it charged (timeout, reset): retry with the same key,
    /// which the gateway deduplicates.
    #[error("outcome unknown: {reason}")]
    OutcomeUnknown { reason: String },
    /// Something an operator must fix (credentials, a key reused with other
    /// parameters). Retrying cannot help until they do.
    #[error("gateway misconfigured: {reason}")]
    Misconfigured { reason: String },
}

/// A refund to make, exactly once per `idempotency_key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefundRequest {
    /// Derived from the client's key row: the same on every retry.
    pub idempotency_key: String,
    pub charge_id: String,
    /// `None` refunds whatever remains of the charge, as Stripe does.
    pub amount_cents: Option<i64>,
    /// `requested_by_customer`, `duplicate` or `fraudulent`.
    pub reason: Option<String>,
    pub metadata: Vec<(String, String)>,
}

/// A refund the gateway made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refund {
    pub id: String,
    pub charge_id: String,
    pub amount_cents: i64,
    pub currency: String,
    pub reason: Option<String>,
    pub metadata: BTreeMap<String, String>,
}

/// A charge as the gateway holds it now: what a webhook's claims are checked
/// against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChargeState {
    pub id: String,
    pub amount_cents: i64,
    pub currency: String,
    pub succeeded: bool,
    pub amount_refunded_cents: i64,
    /// Every refund of the charge.
    pub refunds: Vec<Refund>,
    pub disputed: bool,
    pub metadata: BTreeMap<String, String>,
}

impl ChargeState {
    pub fn charge(&self) -> Charge {
        Charge {
            id: self.id.clone(),
            amount_cents: self.amount_cents,
            currency: self.currency.clone(),
        }
    }
}

pub trait PaymentGateway: Send + Sync {
    /// Makes the charge, or returns the charge already made under the same
    /// idempotency key. Blocking; never called while holding a pooled
    /// database connection.
    fn charge(&self, request: &ChargeRequest) -> Result<Charge, GatewayError>;

    /// Refunds (part of) a charge, or returns the refund already made under
    /// the same idempotency key. A refund beyond what remains of the charge is
    /// `Rejected`. Blocking, like `charge`.
    fn refund(&self, request: &RefundRequest) -> Result<Refund, GatewayError>;

    /// The charge as the gateway holds it, refunds and dispute included;
    /// `None` when the gateway has no such charge.
    fn retrieve_charge(&self, id: &str) -> Result<Option<ChargeState>, GatewayError>;
}

impl GatewayError {
    /// The 503 of a failure that a retry with the same key may cure.
    pub fn into_unavailable(self) -> ServiceError {
        let retry_after = match &self {
            GatewayError::Unavailable {
                retry_after: Some(after),
                ..
            } => *after,
            GatewayError::Misconfigured { reason } => {
                log::error!("payment gateway needs an operator: {reason}");
                Duration::from_secs(30)
            }
            _ => DEFAULT_RETRY_AFTER,
        };
        ServiceError::GatewayUnavailable {
            reason: self.to_string(),
            retry_after,
        }
    }
}

/// How long a client should wait after a gateway failure that says nothing.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(2);
