//! Making the transfers ridepay owes its drivers (`POST /v1/transfers`),
//! by the transfer worker on every instance. Each transfer is claimed for
//! a while by one worker, sent holding no connection, and what the gateway
//! answered recorded under the claim (a worker that claimed it after fences
//! the first out). A driver ridepay does not know to be `active` gets no
//! call: the transfer is recorded `failed` and sent once they are active
//! again. Every send of a transfer is the same call: its gateway key is
//! derived from the ride, the source charge and the generation, never from
//! who sends it.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::dsl::AsExprOf;
use diesel::expression::{SqlLiteral, UncheckedBind};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Bytea, Nullable, SmallInt, Text, Timestamptz};

use super::model::{learn_status, DriverStatus};
use super::transfer_keys::{is_stray, transfer_key};
use crate::context::ServiceContext;
use crate::payments::{
    CreateTransfer, GatewayError, ListTransfers, Transfer, GENERATION, INSTALLATION, RIDEPAY_KEY,
};
use crate::public_ids::RidePublicId;
use crate::schema::transfers;
use crate::service_error::ServiceError;

/// How far before its first attempt a lost answer's transfer is looked
/// for: the gateway's clock may be behind ours.
const LOOKUP_MARGIN: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

/// Why a transfer was not sent to its driver.
pub const DRIVER_NOT_ACTIVE: &str = "driver_not_active";

/// A transfer claimed to be made.
#[derive(Debug, QueryableByName)]
struct Claimed {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = BigInt)]
    claim_epoch: i64,
    #[diesel(sql_type = Text)]
    source_charge: String,
    #[diesel(sql_type = Text)]
    currency: String,
    #[diesel(sql_type = BigInt)]
    amount_cents: i64,
    #[diesel(sql_type = SmallInt)]
    generation: i16,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    first_attempt_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Text)]
    account_id: String,
    #[diesel(sql_type = Text)]
    driver_status: String,
    #[diesel(sql_type = Timestamptz)]
    status_checked_at: DateTime<Utc>,
    #[diesel(sql_type = Bytea)]
    ride: RidePublicId,
    /// For a transfer owed again after its refund failed: the `trr_` id of
    /// the reversal it gives back.
    #[diesel(sql_type = Nullable<Text>)]
    gives_back: Option<String>,
}

/// What became of the transfers (or reversals) one pass claimed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Made {
    /// Made at the gateway, and recorded.
    pub made: usize,
    /// Refused by the gateway, or (a transfer) not sent to a driver not
    /// active.
    pub failed: usize,
    /// Left for a later pass.
    pub left: usize,
}

impl Made {
    /// Each of the `claimed` transfers (or reversals: `what`) made by
    /// `make` (`Some(true)`: made, `Some(false)`: failed, `None` or an
    /// error: left), and counted.
    pub(super) fn each<T>(
        what: &str,
        claimed: &[T],
        id: impl Fn(&T) -> i64,
        make: impl Fn(&T) -> Result<Option<bool>, ServiceError>,
    ) -> Made {
        if !claimed.is_empty() {
            crate::crash::after(&format!("{what}s_claimed"));
        }
        let mut made = Made::default();
        for one in claimed {
            match make(one) {
                Ok(Some(true)) => made.made += 1,
                Ok(Some(false)) => made.failed += 1,
                Ok(None) => made.left += 1,
                Err(err) => {
                    made.left += 1;
                    log::warn!("{what} {} not made yet: {err}", id(one));
                }
            }
        }
        made
    }
}

/// One pass: up to `batch` transfers owed (pending, or failed to a driver
/// the gateway has confirmed active since) claimed and made.
pub fn make_due(cx: &ServiceContext, batch: i64) -> Result<Made, ServiceError> {
    let claimed = claim(&mut *cx.pool.get()?, batch, cx.drivers.claim)?;
    Ok(Made::each("transfer", &claimed, |t| t.id, |t| make(cx, t)))
}

fn claim(conn: &mut PgConnection, batch: i64, claim: Duration) -> QueryResult<Vec<Claimed>> {
    diesel::sql_query(
        "UPDATE transfers AS t
         SET claimed_until = now() + make_interval(secs => $2),
             claim_epoch = t.claim_epoch + 1,
             first_attempt_at = coalesce(t.first_attempt_at, now())
         FROM drivers AS d, rides AS r
         WHERE t.id IN (
                 SELECT due.id FROM transfers AS due JOIN drivers AS payee ON payee.id = due.driver_id
                 WHERE (due.status = 'pending'
                        OR (due.status = 'failed' AND payee.status = 'active'
                            AND payee.status_checked_at > due.updated_at))
                   AND (due.claimed_until IS NULL OR due.claimed_until < now())
                 ORDER BY due.id LIMIT $1
                 FOR UPDATE OF due SKIP LOCKED)
           AND d.id = t.driver_id AND r.id = t.ride_id
         RETURNING t.id, t.claim_epoch, t.source_charge, t.currency, t.amount_cents,
                   t.generation, t.first_attempt_at, d.account_id, d.status AS driver_status,
                   d.status_checked_at, r.public_id AS ride,
                   (SELECT rv.gateway_reversal_id FROM transfer_reversals AS rv
                    WHERE rv.id = t.reowes_reversal_id) AS gives_back",
    )
    .bind::<BigInt, _>(batch)
    .bind::<diesel::sql_types::Double, _>(claim.as_secs_f64())
    .load(conn)
}

/// The transfer made, and recorded: `Some(true)` paid, `Some(false)`
/// failed, `None` left for a later pass.
fn make(cx: &ServiceContext, transfer: &Claimed) -> Result<Option<bool>, ServiceError> {
    if !payable_now(cx, transfer)? {
        record_failed(cx, transfer, DRIVER_NOT_ACTIVE, false)?;
        return Ok(Some(false));
    }
    let key = transfer_key(
        cx.installation_id,
        transfer.ride,
        &transfer.source_charge,
        transfer.gives_back.as_deref(),
    );
    let answer = cx.gateway.create_transfer(&CreateTransfer {
        idempotency_key: format!("ridepay-transfer-{key}-g{}", transfer.generation),
        amount_cents: transfer.amount_cents,
        currency: transfer.currency.clone(),
        destination: transfer.account_id.clone(),
        source_transaction: transfer.source_charge.clone(),
        metadata: vec![
            (INSTALLATION.to_owned(), cx.installation_id.to_string()),
            (RIDEPAY_KEY.to_owned(), key.clone()),
            (GENERATION.to_owned(), transfer.generation.to_string()),
        ],
    });
    crate::crash::after("transfer");
    match answer {
        Ok(made) => record_paid(cx, transfer, &made).map(|()| Some(true)),
        Err(GatewayError::SavedFailure { .. }) => match look_up(cx, transfer, &key)? {
            Some(made) => record_paid(cx, transfer, &made).map(|()| Some(true)),
            // Proven not made: the next pass sends it under a new key.
            None => release(cx, transfer, true).map(|()| None),
        },
        Err(refusal @ (GatewayError::Rejected { .. } | GatewayError::Declined { .. })) => {
            record_failed(cx, transfer, &refusal.to_string(), true)?;
            Ok(Some(false))
        }
        Err(failure) => {
            log::warn!("transfer {} not made yet: {failure}", transfer.id);
            release(cx, transfer, false).map(|()| None)
        }
    }
}

/// Whether the driver is `active`, as last learnt, or, when that is older
/// than `DRIVER_STATUS_MAX_AGE_SECS`, as the gateway says now (an event may
/// have been lost).
fn payable_now(cx: &ServiceContext, transfer: &Claimed) -> Result<bool, ServiceError> {
    let active = transfer.driver_status == DriverStatus::Active.as_str();
    let age = (Utc::now() - transfer.status_checked_at)
        .to_std()
        .unwrap_or_default();
    if !active || age <= cx.drivers.status_max_age {
        return Ok(active);
    }
    let account = cx
        .gateway
        .retrieve_account(&transfer.account_id)
        .map_err(crate::payments::unavailable)?;
    let can_be_paid = account
        .as_ref()
        .is_some_and(|account| account.can_be_paid());
    let learnt = learn_status(&mut *cx.pool.get()?, &transfer.account_id, can_be_paid)?;
    Ok(learnt.is_some_and(|driver| driver.status == DriverStatus::Active))
}

/// Any generation's transfer made under `key`, in the gateway's list of
/// the destination's transfers (a list never lags), but one reconciliation
/// found stray and reverses.
fn look_up(
    cx: &ServiceContext,
    transfer: &Claimed,
    key: &str,
) -> Result<Option<Transfer>, ServiceError> {
    let since = transfer.first_attempt_at.unwrap_or_else(Utc::now) - LOOKUP_MARGIN;
    let mut request = Some(ListTransfers::to_since(&transfer.account_id, since));
    while let Some(listing) = request {
        let page = cx
            .gateway
            .list_transfers(&listing)
            .map_err(crate::payments::unavailable)?;
        for made in &page.transfers {
            if made.metadata.get(RIDEPAY_KEY).map(String::as_str) == Some(key)
                && !is_stray(&mut *cx.pool.get()?, &made.id)?
            {
                return Ok(Some(made.clone()));
            }
        }
        request = listing.after(&page);
    }
    Ok(None)
}

/// The transfers row of `transfer` as this claim holds it.
macro_rules! claimed_row {
    ($transfer:expr) => {
        transfers::table
            .filter(transfers::id.eq($transfer.id))
            .filter(transfers::claim_epoch.eq($transfer.claim_epoch))
    };
}

fn record_paid(
    cx: &ServiceContext,
    transfer: &Claimed,
    made: &Transfer,
) -> Result<(), ServiceError> {
    // What the gateway made is recorded, whatever was owed as it was sent.
    diesel::update(claimed_row!(transfer).filter(ride_locked(transfer.id)))
        .set((
            transfers::status.eq("paid"),
            transfers::gateway_transfer_id.eq(&made.id),
            transfers::amount_cents.eq(made.amount_cents),
            transfers::failure_reason.eq(None::<String>),
            transfers::claimed_until.eq(None::<DateTime<Utc>>),
            transfers::updated_at.eq(diesel::dsl::now),
        ))
        .execute(&mut *cx.pool.get()?)?;
    Ok(())
}

/// Refused (or not sent): `failed`, sent again once the driver is active;
/// after a refusal, which proves nothing was made, under the next key.
fn record_failed(
    cx: &ServiceContext,
    transfer: &Claimed,
    reason: &str,
    refused: bool,
) -> Result<(), ServiceError> {
    let reason: String = reason.chars().take(500).collect();
    diesel::update(claimed_row!(transfer).filter(ride_locked(transfer.id)))
        .set((
            transfers::status.eq("failed"),
            transfers::failure_reason.eq(reason),
            transfers::generation.eq(transfers::generation + i16::from(refused)),
            transfers::claimed_until.eq(None::<DateTime<Utc>>),
            transfers::updated_at.eq(diesel::dsl::now),
        ))
        .execute(&mut *cx.pool.get()?)?;
    Ok(())
}

/// The condition that locks the ride of transfer `transfer_id` (`FOR
/// UPDATE`) as the statement filtering on it reaches the row it changes,
/// before that change's triggers lock the ride's transfer, its reversals
/// and its driver, in the order a refund's posting takes them: another
/// order could deadlock with it. Within the one statement that records an
/// answer, so that the record costs a single round trip.
pub(super) fn ride_locked(transfer_id: i64) -> RideLocked {
    diesel::dsl::sql::<Bool>(
        "EXISTS (SELECT 1 FROM rides WHERE id = (SELECT ride_id FROM transfers WHERE id = ",
    )
    .bind::<BigInt, _>(transfer_id)
    .sql(") FOR UPDATE)")
}

/// `ride_locked`'s condition.
pub(super) type RideLocked =
    SqlLiteral<Bool, UncheckedBind<SqlLiteral<Bool>, AsExprOf<i64, BigInt>>>;

/// Left owed for the next pass; `next_generation` once the gateway proved
/// the call under this key made nothing.
fn release(
    cx: &ServiceContext,
    transfer: &Claimed,
    next_generation: bool,
) -> Result<(), ServiceError> {
    diesel::update(claimed_row!(transfer))
        .set((
            transfers::generation.eq(transfers::generation + i16::from(next_generation)),
            transfers::claimed_until.eq(None::<DateTime<Utc>>),
        ))
        .execute(&mut *cx.pool.get()?)?;
    Ok(())
}
