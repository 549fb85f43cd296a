//! The ledger on the wire: its accounts with their balances, and its
//! transactions with their entries, in minor units, debits positive.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::public_ids::{LedgerTransactionPublicId, RidePublicId};

/// An account and its balance: the sum of its entries, signed as they are
/// (a liability in credit is negative).
#[derive(Serialize, ToSchema)]
#[schema(as = LedgerAccount)]
pub struct AccountJson {
    /// `gateway:usd`, `platform:unassigned:usd`, ...
    pub code: String,
    #[schema(pattern = "^(asset|liability|revenue|expense|suspense|fx)$")]
    pub kind: String,
    pub currency: String,
    pub balance_cents: i64,
}

/// A transaction: the movement it records, and its entries.
#[derive(Serialize, ToSchema)]
#[schema(as = LedgerTransaction)]
pub struct TransactionJson {
    #[schema(value_type = String, pattern = "^ltx_[a-z2-7]{29}$", example = "ltx_4be32blpsnwrwonxasv47asov3zzw")]
    pub id: LedgerTransactionPublicId,
    #[schema(
        pattern = "^(opening|capture|fx|fee|refund|refund_failed|release|reallocation|transfer|transfer_reversal|stray_transfer|stray_reversal)$"
    )]
    pub kind: String,
    /// The movement, unique: `<ch id>:capture`, `<txn id>:fee`,
    /// `<re id>:refund`, `<re id>:failed`, `opening:ride:...`.
    pub source: String,
    #[schema(value_type = Option<String>, pattern = "^ride_[a-z2-7]{29}$")]
    pub ride_id: Option<RidePublicId>,
    /// The transaction this one reverses.
    #[schema(value_type = Option<String>, pattern = "^ltx_[a-z2-7]{29}$")]
    pub reverses: Option<LedgerTransactionPublicId>,
    pub created_at: DateTime<Utc>,
    /// In the order of the accounts' codes; they sum to zero per currency.
    pub entries: Vec<EntryJson>,
}

/// One entry of a transaction.
#[derive(Serialize, ToSchema)]
#[schema(as = LedgerEntry)]
pub struct EntryJson {
    pub account: String,
    pub currency: String,
    /// Debits positive, credits negative.
    pub amount_cents: i64,
}
