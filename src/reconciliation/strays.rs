//! The gateway's transfers to drivers' accounts, matched to the transfers
//! rows that record them. One that carries this installation's metadata,
//! that no row records and that no row not recorded yet would record (its
//! `ridepay_key` is none of theirs) is a stray: a send that crashed before
//! it recorded its answer and was sent again under another key, a
//! duplicate. Once older than the grace period it gets a tombstone
//! (`stray_transfers`: the database posts it against `platform:suspense`
//! and refuses any row's record of it from then on), then is reversed
//! under a key derived from its id. A reversal the driver's available
//! balance cannot cover (`balance_insufficient`) leaves it in suspense, and
//! a later pass sends it again under the next generation's key.

use chrono::{DateTime, Utc};
use diesel::dsl::exists;
use diesel::prelude::*;
use diesel::sql_types::Text;

use super::summary::Summary;
use crate::context::ServiceContext;
use crate::drivers::transfer_keys::unrecorded_keys;
use crate::payments::lookup::patiently;
use crate::payments::{
    CreateTransferReversal, GatewayError, ListTransfers, Transfer, TransferReversal, GENERATION,
    INSTALLATION, RIDEPAY_KEY,
};
use crate::schema::{drivers, stray_transfers, transfers};
use crate::service_error::ServiceError;

/// How a pass looks at the drivers' transfers.
#[derive(Debug, Clone, Copy)]
pub struct StraySettings {
    /// A transfer no row records is a stray only once older than this (the
    /// orphans' grace, longer than the transfer worker's claim): one being
    /// sent and recorded now is not.
    pub grace: chrono::Duration,
    /// Where the listing starts, unless a stray still to reverse is older.
    pub window_start: DateTime<Utc>,
    pub dry_run: bool,
}

/// The metadata naming the stray a reversal takes back.
const STRAY: &str = "ridepay_stray";

/// The gateway's clock may be behind ours: a listing starts this much
/// earlier.
const CLOCK_MARGIN: chrono::TimeDelta = chrono::TimeDelta::minutes(5);

#[derive(Insertable)]
#[diesel(table_name = stray_transfers)]
struct NewStray<'a> {
    transfer_id: &'a str,
    driver_id: i64,
    amount_cents: i64,
    currency: &'a str,
    ridepay_key: &'a str,
    transfer_created_at: DateTime<Utc>,
}

/// A stray whose reversal is not made yet.
#[derive(Queryable, Selectable)]
#[diesel(table_name = stray_transfers, check_for_backend(diesel::pg::Pg))]
struct Unreversed {
    transfer_id: String,
    amount_cents: i64,
    generation: i16,
}

/// Lists the transfers to each driver paid in the window (or with a stray
/// still to reverse), page by page (`between` runs after each driver), and
/// deals with each.
pub fn pass(
    context: &ServiceContext,
    settings: &StraySettings,
    summary: &mut Summary,
    between: &mut dyn FnMut() -> Result<(), ServiceError>,
) -> Result<(), ServiceError> {
    let mut conn = context.pool.get()?;
    let graced = crate::db::now(&mut conn)? - settings.grace;
    // A stray comes from a send of a row: only drivers sent a transfer in
    // the window have one to find.
    let payees: Vec<(i64, String)> = drivers::table
        .filter(
            exists(
                transfers::table
                    .filter(transfers::driver_id.eq(drivers::id))
                    .filter(transfers::first_attempt_at.ge(settings.window_start)),
            )
            .or(exists(
                unreversed().filter(stray_transfers::driver_id.eq(drivers::id)),
            )),
        )
        .order(drivers::id)
        .select((drivers::id, drivers::account_id))
        .load(&mut conn)?;
    drop(conn);
    for (driver_id, account_id) in payees {
        let oldest: Option<DateTime<Utc>> = unreversed()
            .filter(stray_transfers::driver_id.eq(driver_id))
            .select(diesel::dsl::min(stray_transfers::transfer_created_at))
            .first(&mut *context.pool.get()?)?;
        let since = oldest.map_or(settings.window_start, |oldest| {
            oldest.min(settings.window_start)
        }) - CLOCK_MARGIN;
        let mut request = Some(ListTransfers::to_since(&account_id, since));
        while let Some(listing) = request {
            let page = patiently(|| context.gateway.list_transfers(&listing))?;
            request = listing.after(&page);
            for transfer in &page.transfers {
                look_at(context, driver_id, transfer, graced, settings, summary)?;
            }
        }
        between()?;
    }
    Ok(())
}

fn unreversed() -> diesel::dsl::Filter<
    stray_transfers::table,
    diesel::dsl::EqAny<stray_transfers::status, [&'static str; 2]>,
> {
    stray_transfers::table
        .filter(stray_transfers::status.eq_any(["pending", "balance_insufficient"]))
}

/// One transfer: recorded, left to the worker, already a stray (reversed
/// if it is not yet), or found one now.
fn look_at(
    context: &ServiceContext,
    driver_id: i64,
    transfer: &Transfer,
    graced: DateTime<Utc>,
    settings: &StraySettings,
    summary: &mut Summary,
) -> Result<(), ServiceError> {
    let ours = transfer.metadata.get(INSTALLATION) == Some(&context.installation_id.to_string());
    let Some(ridepay_key) = transfer.metadata.get(RIDEPAY_KEY).filter(|_| ours) else {
        return Ok(());
    };
    let mut conn = context.pool.get()?;
    let tombstoned: Option<Unreversed> = unreversed()
        .filter(stray_transfers::transfer_id.eq(&transfer.id))
        .select(Unreversed::as_select())
        .first(&mut conn)
        .optional()?;
    if let Some(stray) = tombstoned {
        drop(conn);
        return reverse(context, &stray, transfer, settings.dry_run, summary);
    }
    if transfer.created > graced
        || transfer.reversible_cents() == 0
        || !is_stray_now(&mut conn, context, driver_id, transfer, ridepay_key)?
    {
        return Ok(());
    }
    if settings.dry_run {
        summary.strays_found += 1;
        return Ok(());
    }
    let found = NewStray {
        transfer_id: &transfer.id,
        driver_id,
        amount_cents: transfer.reversible_cents(),
        currency: &transfer.currency,
        ridepay_key,
        transfer_created_at: transfer.created,
    };
    let tombstoned = conn.transaction(|conn| -> Result<bool, ServiceError> {
        diesel::sql_query("SELECT ridepay_transfer_id_lock($1) IS NULL")
            .bind::<Text, _>(&transfer.id)
            .execute(conn)?;
        // Looked at again under the lock a row's record of it takes.
        if !is_stray_now(conn, context, driver_id, transfer, ridepay_key)? {
            return Ok(false);
        }
        Ok(diesel::insert_into(stray_transfers::table)
            .values(&found)
            .on_conflict_do_nothing()
            .execute(conn)?
            == 1)
    })?;
    drop(conn);
    if !tombstoned {
        return Ok(());
    }
    summary.strays_found += 1;
    log::warn!(
        "reconciliation found transfer {} ({} {}) to driver account {} stray: no transfer \
         records it; it is reversed",
        transfer.id,
        found.amount_cents,
        transfer.currency,
        transfer.destination
    );
    let stray = Unreversed {
        transfer_id: transfer.id.clone(),
        amount_cents: found.amount_cents,
        generation: 0,
    };
    reverse(context, &stray, transfer, false, summary)
}

/// Whether no row records `transfer` and none not recorded yet would.
fn is_stray_now(
    conn: &mut PgConnection,
    context: &ServiceContext,
    driver_id: i64,
    transfer: &Transfer,
    ridepay_key: &str,
) -> Result<bool, ServiceError> {
    let recorded: bool = diesel::select(exists(
        transfers::table.filter(transfers::gateway_transfer_id.eq(&transfer.id)),
    ))
    .get_result(conn)?;
    Ok(!recorded
        && !unrecorded_keys(conn, context.installation_id, driver_id)?.contains(ridepay_key))
}

/// Reverses what the stray had left when found, under the key of its
/// generation, unless the transfer as listed shows a reversal of it made
/// already (an answer lost, a 500 the gateway saved): that one is recorded.
fn reverse(
    context: &ServiceContext,
    stray: &Unreversed,
    transfer: &Transfer,
    dry_run: bool,
    summary: &mut Summary,
) -> Result<(), ServiceError> {
    let made = transfer
        .reversals
        .iter()
        .find(|reversal| reversal.metadata.get(STRAY) == Some(&transfer.id));
    // A dry run counts what the listing shows made; what a call would do
    // it cannot know.
    if dry_run {
        summary.strays_reversed += usize::from(made.is_some());
        return Ok(());
    }
    let answer = match made {
        Some(made) => Ok(made.clone()),
        None => context
            .gateway
            .create_transfer_reversal(&CreateTransferReversal {
                idempotency_key: format!(
                    "ridepay-stray-reversal-{}-g{}",
                    transfer.id, stray.generation
                ),
                transfer: transfer.id.clone(),
                amount_cents: stray.amount_cents.min(transfer.reversible_cents()),
                metadata: vec![
                    (INSTALLATION.to_owned(), context.installation_id.to_string()),
                    (STRAY.to_owned(), transfer.id.clone()),
                    (GENERATION.to_owned(), stray.generation.to_string()),
                ],
            }),
    };
    let mut conn = context.pool.get()?;
    let id = &stray.transfer_id;
    match answer {
        Ok(reversal) => {
            record_reversed(&mut conn, id, &reversal)?;
            summary.strays_reversed += 1;
        }
        Err(short) if short.is_balance_insufficient() => {
            // Refused: nothing was made under this key; the next pass sends
            // it under the next one.
            record_outcome(&mut conn, id, "balance_insufficient", &short, true)?;
            log::warn!(
                "stray transfer {} stays in suspense: the driver's available balance cannot \
                 cover its reversal yet",
                transfer.id
            );
            summary.strays_in_suspense += 1;
        }
        Err(refusal @ (GatewayError::Rejected { .. } | GatewayError::Declined { .. })) => {
            record_outcome(&mut conn, id, "refused", &refusal, false)?;
            log::error!(
                "reconciliation cannot reverse stray transfer {}: {refusal}",
                transfer.id
            );
            summary.needs_attention += 1;
        }
        // The replay of an earlier call's 500: the listing read before this
        // call, after that one, shows no reversal of it, so it made
        // nothing, and only the next key can.
        Err(saved @ GatewayError::SavedFailure { .. }) => {
            record_outcome(&mut conn, id, "pending", &saved, true)?;
            summary.unresolved += 1;
        }
        // The same key again next pass, which the gateway deduplicates.
        Err(other) => {
            log::warn!(
                "the reversal of stray transfer {} is not confirmed yet: {other}",
                transfer.id
            );
            summary.unresolved += 1;
        }
    }
    Ok(())
}

fn record_reversed(
    conn: &mut PgConnection,
    id: &str,
    reversal: &TransferReversal,
) -> QueryResult<()> {
    diesel::update(unreversed().filter(stray_transfers::transfer_id.eq(id)))
        .set((
            stray_transfers::status.eq("reversed"),
            stray_transfers::reversal_id.eq(&reversal.id),
            stray_transfers::reversed_cents.eq(reversal.amount_cents),
            stray_transfers::failure_reason.eq(None::<String>),
            stray_transfers::updated_at.eq(diesel::dsl::now),
        ))
        .execute(conn)?;
    Ok(())
}

/// Not reversed this time, and why; under the next generation's key next
/// time when this one can make nothing more.
fn record_outcome(
    conn: &mut PgConnection,
    id: &str,
    status: &str,
    why: &GatewayError,
    next_generation: bool,
) -> QueryResult<()> {
    let reason: String = why.to_string().chars().take(500).collect();
    diesel::update(unreversed().filter(stray_transfers::transfer_id.eq(id)))
        .set((
            stray_transfers::status.eq(status),
            stray_transfers::failure_reason.eq(reason),
            stray_transfers::generation
                .eq(stray_transfers::generation + i16::from(next_generation)),
            stray_transfers::updated_at.eq(diesel::dsl::now),
        ))
        .execute(conn)?;
    Ok(())
}
