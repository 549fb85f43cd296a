//! The payment gateway as ridepay sees it, in a crate of its own so that
//! both the service and the gateway doubles depend on it and never on each
//! other: the [`PaymentGateway`] trait, its requests and answers
//! (PaymentIntents, refunds, connected accounts and transfers, as Stripe
//! shapes them), and what a Stripe client and a fake Stripe must agree on
//! (the API version, webhook signatures, the page a payer's browser sees).

mod account;
mod gateway;
pub mod html;
mod intent;
mod listing;
pub mod stripe_signature;
mod transfer;

pub use account::{
    Account, AccountLink, AccountPage, CapabilityStatus, CreateAccount, CreateAccountLink,
    ListAccounts,
};
pub use gateway::{
    GatewayError, Payment, PaymentGateway, Refund, RefundRequest, RefundState,
    BALANCE_INSUFFICIENT, NO_SUCH_PAYMENT_METHOD,
};
pub use intent::{
    BalanceTransaction, CancelIntent, CaptureIntent, CaptureMethod, CreateIntent, HoldRequest,
    IncrementIntent, IntentStatus, NextAction, PaymentError, PaymentIntent,
};
pub use listing::{
    metadata_query, parse_metadata_query, BalanceTransactionPage, IntentPage,
    ListBalanceTransactions, ListIntents, ListedBalanceTransaction,
};
pub use transfer::{
    Balance, BalanceAmount, CreateTransfer, CreateTransferReversal, ListTransferReversals,
    ListTransfers, Transfer, TransferPage, TransferReversal, TransferReversalPage,
};

/// The Stripe API version every request of the Stripe client names and every
/// answer of the fake Stripe claims: pinned, so that a change of the
/// account's default version cannot change what the answers mean. It is the
/// version of the specification vendored in the service's `tests/stripe/`,
/// so what the client sends and reads is what that specification describes,
/// the parameters newer than it named (`intents::NEWER_PARAMETERS` in the
/// client); the client also reads Stripe's current (2026) example objects,
/// whose differences from it the conformance test lists by name.
pub const STRIPE_VERSION: &str = "2023-08-16";
