//! Fees the ledger is missing: a capture recorded without its charge's
//! balance transaction (its call first sent before call version 4 and
//! resent as it was, so it did not ask for one) gets it from the gateway's
//! list of balance transactions, and so does one settled in another
//! currency than the ride's; the database posts the fee (and the
//! conversion) as the charge records it.

use diesel::prelude::*;

use super::Summary;
use crate::context::ServiceContext;
use crate::payments::ListBalanceTransactions;
use crate::schema::charges;
use crate::service_error::ServiceError;

/// Charges looked up per pass, at most, newest first.
const CHARGES_PER_PASS: i64 = 100;

pub(super) fn post_missing(
    context: &ServiceContext,
    dry_run: bool,
    summary: &mut Summary,
) -> Result<(), ServiceError> {
    let missing: Vec<(String, String)> = charges::table
        .filter(charges::fee_cents.is_null())
        .order(charges::created_at.desc())
        .limit(CHARGES_PER_PASS)
        .select((charges::id, charges::currency))
        .load(&mut *context.pool.get()?)?;
    for (charge, currency) in missing {
        let listed = context
            .gateway
            .list_balance_transactions(&ListBalanceTransactions::of_source(&charge));
        let found = match listed {
            Ok(page) => page
                .transactions
                .into_iter()
                .find(|listed| listed.kind == "charge"),
            Err(err) => {
                log::warn!("reconciliation cannot list the balance transaction of {charge}: {err}");
                summary.unresolved += 1;
                continue;
            }
        };
        let Some(found) = found else {
            summary.unresolved += 1;
            continue;
        };
        // The answer that recorded a capture records only a balance
        // transaction in the ride's currency (`ChargeRecord::of`); one in
        // another is recorded here, which posts its conversion too.
        let txn = found.transaction;
        let converted = txn.currency != currency;
        if !dry_run {
            diesel::update(
                charges::table
                    .find(&charge)
                    .filter(charges::fee_cents.is_null()),
            )
            .set((
                charges::balance_transaction_id.eq(&txn.id),
                charges::fee_cents.eq(txn.fee_cents),
                charges::settled_currency.eq(converted.then_some(&txn.currency)),
                charges::settled_cents.eq(converted.then_some(txn.amount_cents)),
            ))
            .execute(&mut *context.pool.get()?)?;
        }
        summary.fees_posted += 1;
    }
    Ok(())
}
