//! Transfers to connected accounts, as Stripe Connect makes them from a
//! source charge (`source_transaction`): only to an account whose
//! `transfers` capability is active, from a succeeded charge of the double
//! with enough left untransferred, in its currency, and with its
//! `transfer_group`; their funds pending in the destination's balance for
//! a while, then available; their reversals taken from what is available.
//! Each is idempotent under the caller's key, as every POST is.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde_json::Value;

use crate::account_balance::{balance_now, locked_account};
use crate::events::Double;
use crate::intents::{from_now, random_id, storage, whole_seconds, Call, Replayable};
use crate::schema::{
    simulated_payment_intents as intents, simulated_transfer_reversals as reversals,
    simulated_transfers as transfers,
};
use ridepay_gateway::{
    CapabilityStatus, CreateTransfer, CreateTransferReversal, GatewayError, IntentStatus,
    ListIntents, ListTransferReversals, ListTransfers, Transfer, TransferPage, TransferReversal,
    TransferReversalPage, BALANCE_INSUFFICIENT,
};

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = transfers, check_for_backend(diesel::pg::Pg))]
struct StoredTransfer {
    id: String,
    gateway: Double,
    amount_cents: i64,
    currency: String,
    destination: String,
    source_transaction: String,
    transfer_group: Option<String>,
    metadata: Value,
    created_at: DateTime<Utc>,
    available_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = reversals, check_for_backend(diesel::pg::Pg))]
struct StoredReversal {
    id: String,
    transfer: String,
    amount_cents: i64,
    metadata: Value,
    created_at: DateTime<Utc>,
}

impl StoredReversal {
    fn reversal(&self, currency: &str) -> TransferReversal {
        TransferReversal {
            id: self.id.clone(),
            transfer: self.transfer.clone(),
            amount_cents: self.amount_cents,
            currency: currency.to_owned(),
            created: whole_seconds(self.created_at),
            metadata: serde_json::from_value(self.metadata.clone()).unwrap_or_default(),
        }
    }
}

impl StoredTransfer {
    /// The transfer with `reversed`, its reversals newest first.
    fn transfer(&self, reversed: &[StoredReversal]) -> Transfer {
        let amount_reversed_cents: i64 = reversed.iter().map(|r| r.amount_cents).sum();
        Transfer {
            id: self.id.clone(),
            created: whole_seconds(self.created_at),
            amount_cents: self.amount_cents,
            amount_reversed_cents,
            currency: self.currency.clone(),
            destination: self.destination.clone(),
            source_transaction: Some(self.source_transaction.clone()),
            transfer_group: self.transfer_group.clone(),
            metadata: serde_json::from_value(self.metadata.clone()).unwrap_or_default(),
            reversed: amount_reversed_cents == self.amount_cents,
            reversals: reversed
                .iter()
                .map(|reversal| reversal.reversal(&self.currency))
                .collect(),
        }
    }
}

impl Replayable for Transfer {}

impl Replayable for TransferReversal {}

fn metadata(pairs: &[(String, String)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(name, value)| (name.clone(), Value::String(value.clone())))
            .collect(),
    )
}

fn refused(message: String) -> GatewayError {
    GatewayError::Rejected { message }
}

/// `POST /v1/transfers` with a `source_transaction`: its funds pending in
/// the destination's balance for `pending_for`.
pub fn create(
    conn: &mut PgConnection,
    request: &CreateTransfer,
    double: Double,
    pending_for: Duration,
) -> Result<Transfer, GatewayError> {
    let call = Call::new("create_transfer", &request.idempotency_key, request);
    call.answer_judged(
        conn,
        |conn| judged(conn, request, double, pending_for),
        |made| made.transfer(&[]),
        |conn, made| {
            diesel::insert_into(transfers::table)
                .values(made)
                .execute(conn)
                .map(|_| ())
                .map_err(storage)
        },
    )
}

/// The transfer `request` makes, judged under the lock of the source
/// charge's PaymentIntent, which keeps two transfers of one charge from
/// both taking what is left of it; or Stripe's refusal.
fn judged(
    conn: &mut PgConnection,
    request: &CreateTransfer,
    double: Double,
    pending_for: Duration,
) -> Result<StoredTransfer, GatewayError> {
    let destination = &request.destination;
    let account = crate::accounts::retrieve(conn, destination, double)?.ok_or_else(|| {
        refused(format!(
            "resource_missing: No such destination: '{destination}'"
        ))
    })?;
    if account.transfers != Some(CapabilityStatus::Active) {
        return Err(refused(
            "insufficient_capabilities_for_transfer: Your destination account needs to have at \
             least one of the following capabilities enabled: transfers, crypto_transfers, \
             legacy_payments"
                .to_owned(),
        ));
    }
    let charge = &request.source_transaction;
    let source: Option<(String, String, i64, IntentStatus, Option<String>)> = intents::table
        .filter(intents::latest_charge.eq(charge))
        .filter(intents::gateway.eq(double))
        .select((
            intents::id,
            intents::currency,
            intents::amount_received_cents,
            intents::status,
            intents::transfer_group,
        ))
        .for_update()
        .first(conn)
        .optional()
        .map_err(storage)?;
    let Some((intent, currency, received, status, group)) = source else {
        return Err(refused(format!(
            "resource_missing: No such charge: '{charge}'"
        )));
    };
    if status != IntentStatus::Succeeded || received == 0 {
        return Err(refused(format!(
            "parameter_invalid: source_transaction {charge} is not a succeeded charge: \
             only captured funds can be transferred"
        )));
    }
    if request.currency != currency {
        return Err(refused(format!(
            "parameter_invalid: The currency of source_transaction's balance transaction \
             ({currency}) must be the same as the transfer currency ({})",
            request.currency
        )));
    }
    let left = received - transferred_net(conn, charge)?;
    if request.amount_cents > left {
        return Err(refused(format!(
            "amount_too_large: The transfer amount ({}) exceeds the {left} left untransferred \
             of source_transaction {charge}",
            request.amount_cents
        )));
    }
    let now = Utc::now();
    Ok(StoredTransfer {
        id: random_id("tr_sim_"),
        gateway: double,
        amount_cents: request.amount_cents,
        currency,
        destination: destination.clone(),
        source_transaction: charge.clone(),
        transfer_group: Some(group.unwrap_or_else(|| format!("group_{intent}"))),
        metadata: metadata(&request.metadata),
        created_at: now,
        available_at: from_now(pending_for),
    })
}

/// What the transfers of `charge` took of it, less what their reversals
/// gave back.
fn transferred_net(conn: &mut PgConnection, charge: &str) -> Result<i64, GatewayError> {
    let sent: Vec<i64> = transfers::table
        .filter(transfers::source_transaction.eq(charge))
        .select(transfers::amount_cents)
        .load(conn)
        .map_err(storage)?;
    let back: Vec<i64> = reversals::table
        .inner_join(transfers::table)
        .filter(transfers::source_transaction.eq(charge))
        .select(reversals::amount_cents)
        .load(conn)
        .map_err(storage)?;
    Ok(sent.iter().sum::<i64>() - back.iter().sum::<i64>())
}

/// The reversals of the transfers `ids`, newest first, by transfer.
fn reversals_of(
    conn: &mut PgConnection,
    ids: &[&str],
) -> Result<BTreeMap<String, Vec<StoredReversal>>, GatewayError> {
    let found: Vec<StoredReversal> = reversals::table
        .filter(reversals::transfer.eq_any(ids))
        .order((reversals::created_at.desc(), reversals::id.desc()))
        .select(StoredReversal::as_select())
        .load(conn)
        .map_err(storage)?;
    let mut by_transfer: BTreeMap<String, Vec<StoredReversal>> = BTreeMap::new();
    for reversal in found {
        by_transfer
            .entry(reversal.transfer.clone())
            .or_default()
            .push(reversal);
    }
    Ok(by_transfer)
}

/// `GET /v1/transfers`: the double's transfers to `destination`, since
/// `created_gte`, of `transfer_group` (each when given), newest first, a
/// page after `starting_after`. It never lags.
pub fn list(
    conn: &mut PgConnection,
    request: &ListTransfers,
    double: Double,
) -> Result<TransferPage, GatewayError> {
    let limit = request.limit.clamp(1, ListIntents::MAX_LIMIT);
    let mut query = transfers::table
        .filter(transfers::gateway.eq(double))
        .into_boxed();
    if let Some(destination) = &request.destination {
        query = query.filter(transfers::destination.eq(destination));
    }
    if let Some(since) = request.created_gte {
        query = query.filter(transfers::created_at.ge(whole_seconds(since)));
    }
    if let Some(group) = &request.transfer_group {
        query = query.filter(transfers::transfer_group.eq(group));
    }
    if let Some(id) = &request.starting_after {
        let at: DateTime<Utc> = transfers::table
            .find(id)
            .filter(transfers::gateway.eq(double))
            .select(transfers::created_at)
            .first(conn)
            .optional()
            .map_err(storage)?
            .ok_or_else(|| refused(format!("resource_missing: No such transfer: '{id}'")))?;
        query = query.filter(
            transfers::created_at
                .lt(at)
                .or(transfers::created_at.eq(at).and(transfers::id.lt(id))),
        );
    }
    let mut found: Vec<StoredTransfer> = query
        .order((transfers::created_at.desc(), transfers::id.desc()))
        .limit(i64::from(limit) + 1)
        .select(StoredTransfer::as_select())
        .load(conn)
        .map_err(storage)?;
    let has_more = found.len() > usize::from(limit);
    found.truncate(usize::from(limit));
    let ids: Vec<&str> = found.iter().map(|transfer| transfer.id.as_str()).collect();
    let mut reversed = reversals_of(conn, &ids)?;
    Ok(TransferPage {
        transfers: found
            .iter()
            .map(|transfer| transfer.transfer(&reversed.remove(&transfer.id).unwrap_or_default()))
            .collect(),
        has_more,
    })
}

/// `GET /v1/transfers/{id}/reversals`: the reversals of the double's
/// transfer, newest first, a page after the reversal `starting_after`;
/// `None` when the double holds no such transfer. It never lags.
pub fn list_reversals(
    conn: &mut PgConnection,
    request: &ListTransferReversals,
    double: Double,
) -> Result<Option<TransferReversalPage>, GatewayError> {
    let Some(transfer) = stored_transfer(conn, &request.transfer, double)? else {
        return Ok(None);
    };
    // A transfer has a few reversals: paged here rather than in SQL.
    let mut newest_first = reversals_of(conn, &[&transfer.id])?
        .remove(&transfer.id)
        .unwrap_or_default();
    if let Some(after) = &request.starting_after {
        let at = newest_first
            .iter()
            .position(|reversal| &reversal.id == after)
            .ok_or_else(|| {
                refused(format!(
                    "resource_missing: No such transfer_reversal: '{after}'"
                ))
            })?;
        newest_first.drain(..=at);
    }
    let limit = usize::from(request.limit.clamp(1, ListIntents::MAX_LIMIT));
    let has_more = newest_first.len() > limit;
    Ok(Some(TransferReversalPage {
        reversals: newest_first
            .iter()
            .take(limit)
            .map(|reversal| reversal.reversal(&transfer.currency))
            .collect(),
        has_more,
    }))
}

fn stored_transfer(
    conn: &mut PgConnection,
    id: &str,
    double: Double,
) -> Result<Option<StoredTransfer>, GatewayError> {
    transfers::table
        .find(id)
        .filter(transfers::gateway.eq(double))
        .select(StoredTransfer::as_select())
        .first(conn)
        .optional()
        .map_err(storage)
}

/// `POST /v1/transfers/{id}/reversals`: taken from the destination's
/// available balance, refused with `balance_insufficient` when it is short.
pub fn reverse(
    conn: &mut PgConnection,
    request: &CreateTransferReversal,
    double: Double,
) -> Result<TransferReversal, GatewayError> {
    let call = Call::new(
        "create_transfer_reversal",
        &request.idempotency_key,
        request,
    );
    call.answer_judged(
        conn,
        |conn| judged_reversal(conn, request, double),
        |(reversal, currency)| reversal.reversal(currency),
        |conn, (reversal, _)| {
            diesel::insert_into(reversals::table)
                .values(reversal)
                .execute(conn)
                .map(|_| ())
                .map_err(storage)
        },
    )
}

/// The reversal `request` makes, and its transfer's currency, judged under
/// the lock of the destination account, which keeps two reversals (or a
/// reversal and a payout) from both taking what is available; or Stripe's
/// refusal.
fn judged_reversal(
    conn: &mut PgConnection,
    request: &CreateTransferReversal,
    double: Double,
) -> Result<(StoredReversal, String), GatewayError> {
    let id = &request.transfer;
    let missing = || refused(format!("resource_missing: No such transfer: '{id}'"));
    let transfer = stored_transfer(conn, id, double)?.ok_or_else(missing)?;
    locked_account(conn, &transfer.destination)?;
    let left = transfer.amount_cents - reversed_of(conn, id)?;
    if request.amount_cents > left {
        return Err(refused(format!(
            "amount_too_large: The reversal amount ({}) is greater than the {left} left to \
             reverse of transfer {id}",
            request.amount_cents
        )));
    }
    let available = balance_now(conn, &transfer.destination)?.available_in(&transfer.currency);
    if request.amount_cents > available {
        return Err(refused(format!(
            "{BALANCE_INSUFFICIENT}: The destination account's available balance \
             ({available} {}) is too low to reverse {} of transfer {id}",
            transfer.currency, request.amount_cents
        )));
    }
    let reversal = StoredReversal {
        id: random_id("trr_sim_"),
        transfer: id.clone(),
        amount_cents: request.amount_cents,
        metadata: metadata(&request.metadata),
        created_at: Utc::now(),
    };
    Ok((reversal, transfer.currency))
}

fn reversed_of(conn: &mut PgConnection, transfer: &str) -> Result<i64, GatewayError> {
    let amounts: Vec<i64> = reversals::table
        .filter(reversals::transfer.eq(transfer))
        .select(reversals::amount_cents)
        .load(conn)
        .map_err(storage)?;
    Ok(amounts.iter().sum())
}
