//! The payment gateway seen from ridepay: one trait, several implementations.

use std::collections::BTreeMap;
use std::time::Duration;

use super::account::{
    Account, AccountLink, AccountPage, CreateAccount, CreateAccountLink, ListAccounts,
};
use super::intent::{CancelIntent, CaptureIntent, CreateIntent, IncrementIntent, PaymentIntent};
use super::listing::{BalanceTransactionPage, IntentPage, ListBalanceTransactions, ListIntents};
use super::transfer::{
    Balance, CreateTransfer, CreateTransferReversal, ListTransferReversals, ListTransfers,
    Transfer, TransferPage, TransferReversal, TransferReversalPage,
};

/// Why a gateway call did not do what was asked. The variants are what
/// ridepay must do next, not how the gateway said it.
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
    /// The gateway refused the request for good (an unknown payment method,
    /// say): final.
    #[error("rejected: {message}")]
    Rejected { message: String },
    /// Known not to have acted (failed before acting, rate-limited): retry.
    #[error("gateway unavailable: {reason}")]
    Unavailable {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// Unknown whether it acted (timeout, reset): retry with the same key,
    /// which the gateway deduplicates.
    #[error("outcome unknown: {reason}")]
    OutcomeUnknown { reason: String },
    /// A failure the gateway saved under the key and answers every retry
    /// with (Stripe's 500 replayed with `Idempotent-Replayed: true`): the
    /// call may or may not have acted, and no retry under this key can
    /// learn which. Reconciliation finds out with the gateway's lists.
    #[error("failure saved under the key: {reason}")]
    SavedFailure { reason: String },
    /// Something an operator must fix (credentials, a key reused with other
    /// parameters). Retrying cannot help until they do.
    #[error("gateway misconfigured: {reason}")]
    Misconfigured { reason: String },
}

/// Stripe's words for a payment method it does not have (its 400
/// `resource_missing` on `payment_method`), which the doubles say too.
pub const NO_SUCH_PAYMENT_METHOD: &str = "No such PaymentMethod";

/// Stripe's code for a reversal the destination's available balance
/// cannot cover, which the doubles give too.
pub const BALANCE_INSUFFICIENT: &str = "balance_insufficient";

impl GatewayError {
    /// A refusal of a payment method the gateway does not have: the
    /// caller's mistake, not the gateway's, so it is told as such.
    pub fn is_unknown_payment_method(&self) -> bool {
        matches!(self, GatewayError::Rejected { message } if message.contains(NO_SUCH_PAYMENT_METHOD))
    }

    /// A reversal refused because the destination's available balance is
    /// short (Stripe's `balance_insufficient`): the driver's debt, not a
    /// mistake, and a later reversal may succeed.
    pub fn is_balance_insufficient(&self) -> bool {
        matches!(self, GatewayError::Rejected { message } if message.contains(BALANCE_INSUFFICIENT))
    }
}

/// What a refund gives money back from: a PaymentIntent, or the charge of a
/// ride paid through the Charges API.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Payment {
    Intent(String),
    Charge(String),
}

impl Payment {
    pub fn id(&self) -> &str {
        match self {
            Payment::Intent(id) | Payment::Charge(id) => id,
        }
    }
}

/// A refund to make, exactly once per `idempotency_key`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RefundRequest {
    /// Derived from the client's key row: the same on every retry.
    pub idempotency_key: String,
    pub payment: Payment,
    pub amount_cents: i64,
    /// `requested_by_customer`, `duplicate` or `fraudulent`.
    pub reason: Option<String>,
    pub metadata: Vec<(String, String)>,
}

ridepay_diesel_helpers::text_enum! {
    /// A refund's status at the gateway, as Stripe names them.
    pub enum RefundState {
        /// Accepted, not yet settled: it may still fail.
        Pending = "pending",
        RequiresAction = "requires_action",
        Succeeded = "succeeded",
        /// Failed after it was accepted (even after `succeeded`): the money
        /// stayed with the merchant.
        Failed = "failed",
        Canceled = "canceled",
    }
}

impl RefundState {
    /// Whether the refund ended without giving the money back.
    pub fn undone(self) -> bool {
        matches!(self, RefundState::Failed | RefundState::Canceled)
    }
}

/// A refund the gateway holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Refund {
    pub id: String,
    pub payment_intent: Option<String>,
    pub charge: Option<String>,
    pub amount_cents: i64,
    pub currency: String,
    pub status: RefundState,
    pub reason: Option<String>,
    pub metadata: BTreeMap<String, String>,
}

/// The gateway's calls. Every POST is idempotent on its key: the same key
/// and parameters get the same answer, other parameters an error
/// (`Misconfigured`, for an operator). Blocking; never called while holding
/// a pooled database connection.
pub trait PaymentGateway: Send + Sync {
    /// Creates and confirms a PaymentIntent: a hold (`manual`) or a charge
    /// (`automatic`), or a `requires_action` for the rider's authentication.
    fn create_intent(&self, request: &CreateIntent) -> Result<PaymentIntent, GatewayError>;
    fn capture_intent(&self, request: &CaptureIntent) -> Result<PaymentIntent, GatewayError>;
    fn increment_intent(&self, request: &IncrementIntent) -> Result<PaymentIntent, GatewayError>;
    fn cancel_intent(&self, request: &CancelIntent) -> Result<PaymentIntent, GatewayError>;
    /// The PaymentIntent now, with whether its charge is disputed and,
    /// once captured, the charge's balance transaction; `None` when the
    /// gateway has no such intent.
    fn retrieve_intent(&self, id: &str) -> Result<Option<PaymentIntent>, GatewayError>;
    /// Refunds (part of) what a payment captured. A refund beyond what
    /// remains is `Rejected`.
    fn refund(&self, request: &RefundRequest) -> Result<Refund, GatewayError>;
    /// Every refund of a payment, in its status now: what refund events are
    /// checked against, and what proves a refund was not made.
    fn refunds_of(&self, payment: &Payment) -> Result<Vec<Refund>, GatewayError>;
    /// A page of PaymentIntents, newest first, as Stripe's list gives them:
    /// it never lags, so what it does not show was not made.
    fn list_intents(&self, request: &ListIntents) -> Result<IntentPage, GatewayError>;
    /// The PaymentIntents whose metadata has every pair of `metadata`, as
    /// Stripe's search finds them: quick, but a new one may be missing for
    /// a while (up to an hour in an incident), so it proves nothing absent.
    fn search_intents(&self, metadata: &[(&str, &str)]) -> Result<IntentPage, GatewayError>;
    /// A page of the platform's balance transactions, newest first, as
    /// Stripe lists them: each captured charge's (with the gateway's fee)
    /// and each refund's that moved money, among any others.
    fn list_balance_transactions(
        &self,
        request: &ListBalanceTransactions,
    ) -> Result<BalanceTransactionPage, GatewayError>;
    /// Makes a driver's connected account (`POST /v1/accounts`).
    fn create_account(&self, request: &CreateAccount) -> Result<Account, GatewayError>;
    /// The account as the gateway holds it now; `None` if it holds none by
    /// that id.
    fn retrieve_account(&self, id: &str) -> Result<Option<Account>, GatewayError>;
    /// The platform's connected accounts, newest first (`GET /v1/accounts`):
    /// a list, which never lags, so what it does not show was not made.
    fn list_accounts(&self, request: &ListAccounts) -> Result<AccountPage, GatewayError>;
    /// A link that onboards the account's owner (`POST /v1/account_links`).
    fn create_account_link(&self, request: &CreateAccountLink)
        -> Result<AccountLink, GatewayError>;
    /// Sends (part of) a charge to a connected account
    /// (`POST /v1/transfers`). Refused (`Rejected`) when the destination
    /// cannot be paid, the charge is not a succeeded one of the platform or
    /// has less left untransferred, or the currency is not the charge's.
    fn create_transfer(&self, request: &CreateTransfer) -> Result<Transfer, GatewayError>;
    /// A page of transfers, newest first, as Stripe's list gives them: it
    /// never lags, so what it does not show was not made.
    fn list_transfers(&self, request: &ListTransfers) -> Result<TransferPage, GatewayError>;
    /// Takes (part of) a transfer back from the destination's available
    /// balance. Refused when the transfer has less left, and, when the
    /// balance is short, with `balance_insufficient`
    /// (`GatewayError::is_balance_insufficient`).
    fn create_transfer_reversal(
        &self,
        request: &CreateTransferReversal,
    ) -> Result<TransferReversal, GatewayError>;
    /// A page of a transfer's reversals, newest first: a list, which never
    /// lags, so what it does not show was not made. A transfer the gateway
    /// does not hold is `Unavailable`, as a 404 of any list: it proves
    /// nothing.
    fn list_transfer_reversals(
        &self,
        request: &ListTransferReversals,
    ) -> Result<TransferReversalPage, GatewayError>;
    /// A connected account's balance now (`GET /v1/balance` as the
    /// account, `Stripe-Account`).
    fn retrieve_balance(&self, account: &str) -> Result<Balance, GatewayError>;
}
