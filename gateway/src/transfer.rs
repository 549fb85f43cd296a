//! Transfers to connected accounts (Stripe Connect's separate charges and
//! transfers): a driver's share sent from the charge that paid for it, its
//! reversals when a refund takes the share back, and the balance the
//! driver's account holds meanwhile.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::listing::ListIntents;

/// `POST /v1/transfers`: `amount_cents` of the charge `source_transaction`
/// to the account `destination`. No `transfer_group` is sent: the gateway
/// gives the transfer its source charge's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreateTransfer {
    pub idempotency_key: String,
    pub amount_cents: i64,
    /// The source charge's, lower case.
    pub currency: String,
    /// An `acct_` id whose `transfers` capability is `active`.
    pub destination: String,
    /// The `ch_` id of a succeeded charge of the platform, with at least
    /// `amount_cents` left untransferred.
    pub source_transaction: String,
    pub metadata: Vec<(String, String)>,
}

/// A transfer as the gateway holds it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transfer {
    /// A `tr_` id.
    pub id: String,
    /// Whole seconds, as Stripe's `created`.
    pub created: DateTime<Utc>,
    pub amount_cents: i64,
    /// What its reversals took back, together.
    pub amount_reversed_cents: i64,
    pub currency: String,
    pub destination: String,
    pub source_transaction: Option<String>,
    /// Its source charge's: the PaymentIntent's `transfer_group`, else
    /// `group_` and the PaymentIntent's id.
    pub transfer_group: Option<String>,
    pub metadata: BTreeMap<String, String>,
    /// Whether it was reversed whole.
    pub reversed: bool,
    /// Its reversals, newest first.
    pub reversals: Vec<TransferReversal>,
}

impl Transfer {
    /// What a reversal may still take back.
    pub fn reversible_cents(&self) -> i64 {
        self.amount_cents - self.amount_reversed_cents
    }
}

/// `POST /v1/transfers/{transfer}/reversals`: `amount_cents` of the
/// transfer back from the destination's available balance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreateTransferReversal {
    pub idempotency_key: String,
    /// The `tr_` id.
    pub transfer: String,
    /// At most what the transfer has left (`Transfer::reversible_cents`).
    pub amount_cents: i64,
    pub metadata: Vec<(String, String)>,
}

/// A reversal of (part of) a transfer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransferReversal {
    /// A `trr_` id.
    pub id: String,
    pub transfer: String,
    pub amount_cents: i64,
    pub currency: String,
    /// Whole seconds, as Stripe's `created`.
    pub created: DateTime<Utc>,
    pub metadata: BTreeMap<String, String>,
}

/// `GET /v1/transfers`: those to `destination`, created at or after
/// `created_gte` (whole seconds), of `transfer_group`, each when given;
/// newest first, the page after the transfer `starting_after`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListTransfers {
    pub destination: Option<String>,
    pub created_gte: Option<DateTime<Utc>>,
    pub transfer_group: Option<String>,
    pub starting_after: Option<String>,
    /// At most 100, Stripe's limit.
    pub limit: u8,
}

/// A page of transfers, and whether more follow it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TransferPage {
    pub transfers: Vec<Transfer>,
    pub has_more: bool,
}

impl ListTransfers {
    /// The first page of the transfers to `destination` made since
    /// `created_gte`: what proves whether a transfer was made, as a list
    /// never lags.
    pub fn to_since(destination: &str, created_gte: DateTime<Utc>) -> ListTransfers {
        ListTransfers {
            destination: Some(destination.to_owned()),
            created_gte: Some(created_gte),
            limit: ListIntents::MAX_LIMIT,
            ..ListTransfers::default()
        }
    }

    /// The page after `page`, or `None` when it was the last.
    pub fn after(&self, page: &TransferPage) -> Option<ListTransfers> {
        let last = page.transfers.last().filter(|_| page.has_more)?;
        Some(ListTransfers {
            starting_after: Some(last.id.clone()),
            ..self.clone()
        })
    }
}

/// `GET /v1/transfers/{transfer}/reversals`: newest first, the page after
/// the reversal `starting_after`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListTransferReversals {
    /// The `tr_` id.
    pub transfer: String,
    pub starting_after: Option<String>,
    /// At most 100, Stripe's limit.
    pub limit: u8,
}

/// A page of a transfer's reversals, and whether more follow it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TransferReversalPage {
    pub reversals: Vec<TransferReversal>,
    pub has_more: bool,
}

impl ListTransferReversals {
    /// The first page of `transfer`'s reversals (limit 100): what proves
    /// whether a reversal was made, as a list never lags.
    pub fn of(transfer: &str) -> ListTransferReversals {
        ListTransferReversals {
            transfer: transfer.to_owned(),
            starting_after: None,
            limit: ListIntents::MAX_LIMIT,
        }
    }

    /// The page after `page`, or `None` when it was the last.
    pub fn after(&self, page: &TransferReversalPage) -> Option<ListTransferReversals> {
        let last = page.reversals.last().filter(|_| page.has_more)?;
        Some(ListTransferReversals {
            starting_after: Some(last.id.clone()),
            ..self.clone()
        })
    }
}

/// An amount of one currency in a balance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalanceAmount {
    pub currency: String,
    pub amount_cents: i64,
}

/// A connected account's balance (`GET /v1/balance` with its
/// `Stripe-Account`): per currency, what it may pay out or have reversed
/// now (`available`), and what transfers sent it that is not yet available
/// (`pending`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Balance {
    pub available: Vec<BalanceAmount>,
    pub pending: Vec<BalanceAmount>,
}

impl Balance {
    /// What is available in `currency`; 0 when it holds none.
    pub fn available_in(&self, currency: &str) -> i64 {
        amount_in(&self.available, currency)
    }

    /// What is pending in `currency`; 0 when it holds none.
    pub fn pending_in(&self, currency: &str) -> i64 {
        amount_in(&self.pending, currency)
    }
}

fn amount_in(amounts: &[BalanceAmount], currency: &str) -> i64 {
    amounts
        .iter()
        .filter(|amount| amount.currency == currency)
        .map(|amount| amount.amount_cents)
        .sum()
}
