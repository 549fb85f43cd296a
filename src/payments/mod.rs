//! Payments: the gateway trait, the Stripe client, and how ridepay makes
//! its calls (`calls`): their keys, their metadata, their answers.

mod calls;
pub mod lookup;
pub mod released;
pub mod stripe;

pub use crate::service_error::unavailable;
pub use calls::{
    call_metadata, create_answer, final_answer, gateway_key, Final, GENERATION, INSTALLATION,
    RIDEPAY_KEY,
};
pub use ridepay_gateway::{
    Account, AccountLink, AccountPage, Balance, BalanceAmount, BalanceTransaction,
    BalanceTransactionPage, CancelIntent, CapabilityStatus, CaptureIntent, CaptureMethod,
    CreateAccount, CreateAccountLink, CreateIntent, CreateTransfer, CreateTransferReversal,
    GatewayError, HoldRequest, IncrementIntent, IntentPage, IntentStatus, ListAccounts,
    ListBalanceTransactions, ListIntents, ListTransferReversals, ListTransfers,
    ListedBalanceTransaction, NextAction, Payment, PaymentError, PaymentGateway, PaymentIntent,
    Refund, RefundRequest, RefundState, Transfer, TransferPage, TransferReversal,
    TransferReversalPage,
};
pub use stripe::StripeGateway;
