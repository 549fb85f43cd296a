//! `ridepay ledger backfill-fees`: the gateway's fees on the charges that
//! captured rides' money before the ledger started. Their captures are in
//! the opening transactions, their fees nowhere: each ride's PaymentIntents
//! (the fare's and a tip's) are read again with their balance transactions,
//! and a fee recorded in `opening_fees` is posted by the database, once
//! (the row's key is the balance transaction), however often this runs.

use diesel::dsl::exists;
use diesel::prelude::*;
use serde::Serialize;

use crate::context::ServiceContext;
use crate::payments::lookup::patiently;
use crate::payments::PaymentIntent;
use crate::schema::{charges, ledger_transactions, opening_fees, rides};
use crate::service_error::ServiceError;

/// Rides read per query.
const RIDES_PER_PAGE: i64 = 500;

/// What a backfill did.
#[derive(Debug, Default, Serialize)]
pub struct Backfilled {
    /// Rides whose capture is in an opening transaction.
    pub rides: usize,
    pub fees_posted: usize,
    /// Payments with no fee to post: paid through the Charges API before
    /// PaymentIntents, settled in another currency, already posted, or
    /// gone from the gateway.
    pub skipped: usize,
}

pub fn backfill(context: &ServiceContext) -> Result<Backfilled, ServiceError> {
    let mut done = Backfilled::default();
    let mut after = 0;
    loop {
        let page: Vec<(i64, Option<String>, Option<String>)> = rides::table
            .filter(rides::id.gt(after))
            .filter(exists(
                ledger_transactions::table
                    .filter(ledger_transactions::ride_id.eq(rides::id.nullable()))
                    .filter(ledger_transactions::kind.eq("opening")),
            ))
            .order(rides::id)
            .limit(RIDES_PER_PAGE)
            .select((
                rides::id,
                rides::payment_intent_id,
                rides::tip_payment_intent_id,
            ))
            .load(&mut *context.pool.get()?)?;
        let Some(&(last, _, _)) = page.last() else {
            return Ok(done);
        };
        after = last;
        for (ride_id, fare, tip) in page {
            done.rides += 1;
            if fare.is_none() {
                done.skipped += 1;
            }
            for intent_id in fare.iter().chain(&tip) {
                let posted = match patiently(|| context.gateway.retrieve_intent(intent_id))? {
                    Some(intent) => post_fee(context, ride_id, &intent)?,
                    None => false,
                };
                if posted {
                    done.fees_posted += 1;
                } else {
                    done.skipped += 1;
                }
            }
        }
    }
}

/// Records the fee on `intent`'s charge, unless the charge is recorded
/// already (captured since the ledger started) or has no fee in its own
/// currency: whether it did.
fn post_fee(
    context: &ServiceContext,
    ride_id: i64,
    intent: &PaymentIntent,
) -> Result<bool, ServiceError> {
    let (Some(charge), Some(txn)) = (intent.captured_charge(), intent.settled_in_own_currency())
    else {
        return Ok(false);
    };
    if txn.fee_cents == 0 {
        return Ok(false);
    }
    let mut conn = context.pool.get()?;
    let recorded = diesel::select(exists(charges::table.find(charge))).get_result(&mut conn)?;
    if recorded {
        return Ok(false);
    }
    let inserted = diesel::insert_into(opening_fees::table)
        .values((
            opening_fees::balance_transaction_id.eq(&txn.id),
            opening_fees::charge_id.eq(charge),
            opening_fees::ride_id.eq(ride_id),
            opening_fees::fee_cents.eq(txn.fee_cents),
            opening_fees::currency.eq(&intent.currency),
        ))
        .on_conflict_do_nothing()
        .execute(&mut conn)?;
    Ok(inserted == 1)
}
