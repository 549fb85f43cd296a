//! A connected account's balance, as Stripe keeps it per currency: what
//! transfers sent it is `pending` until their funds become available, then
//! `available`, less what reversals took back and payouts paid out. Tests
//! move the clock on (`make_available`) and pay it out as an automatic
//! payout would (`pay_out`).

use std::collections::BTreeMap;

use chrono::Utc;
use diesel::prelude::*;

use crate::events::Double;
use crate::intents::{random_id, storage, transaction};
use crate::schema::{
    simulated_accounts as accounts, simulated_payouts as payouts,
    simulated_transfer_reversals as reversals, simulated_transfers as transfers,
};
use ridepay_gateway::{Balance, BalanceAmount, GatewayError};

fn no_such_account(id: &str) -> GatewayError {
    GatewayError::Rejected {
        message: format!("resource_missing: No such account: '{id}'"),
    }
}

/// The account `id`'s country, its row locked until the caller's
/// transaction ends: what keeps a reversal and a payout from both taking
/// what is available.
pub(crate) fn locked_account(conn: &mut PgConnection, id: &str) -> Result<String, GatewayError> {
    accounts::table
        .find(id)
        .select(accounts::country)
        .for_update()
        .first(conn)
        .optional()
        .map_err(storage)?
        .ok_or_else(|| no_such_account(id))
}

/// The currency an account's balance shows when nothing moved through it:
/// its country's.
fn default_currency(country: &str) -> &'static str {
    match country {
        "GB" => "gbp",
        "IE" | "FR" => "eur",
        _ => "usd",
    }
}

/// The account `id`'s balance now, per currency.
pub(crate) fn balance_now(conn: &mut PgConnection, id: &str) -> Result<Balance, GatewayError> {
    let now = Utc::now();
    let sent: Vec<(String, i64, bool)> = transfers::table
        .filter(transfers::destination.eq(id))
        .select((
            transfers::currency,
            transfers::amount_cents,
            transfers::available_at.le(now),
        ))
        .load(conn)
        .map_err(storage)?;
    let reversed: Vec<(String, i64)> = reversals::table
        .inner_join(transfers::table)
        .filter(transfers::destination.eq(id))
        .select((transfers::currency, reversals::amount_cents))
        .load(conn)
        .map_err(storage)?;
    let paid_out: Vec<(String, i64)> = payouts::table
        .filter(payouts::account.eq(id))
        .select((payouts::currency, payouts::amount_cents))
        .load(conn)
        .map_err(storage)?;
    // Per currency: (available, pending).
    let mut by_currency: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for (currency, cents, available) in sent {
        let entry = by_currency.entry(currency).or_default();
        if available {
            entry.0 += cents;
        } else {
            entry.1 += cents;
        }
    }
    for (currency, cents) in reversed.into_iter().chain(paid_out) {
        by_currency.entry(currency).or_default().0 -= cents;
    }
    if by_currency.is_empty() {
        let country: String = accounts::table
            .find(id)
            .select(accounts::country)
            .first(conn)
            .map_err(storage)?;
        by_currency.insert(default_currency(&country).to_owned(), (0, 0));
    }
    let amounts = |pick: fn(&(i64, i64)) -> i64| {
        by_currency
            .iter()
            .map(|(currency, amounts)| BalanceAmount {
                currency: currency.clone(),
                amount_cents: pick(amounts),
            })
            .collect()
    };
    Ok(Balance {
        available: amounts(|amounts| amounts.0),
        pending: amounts(|amounts| amounts.1),
    })
}

/// `GET /v1/balance` as the account `id` of `double`.
pub fn retrieve(
    conn: &mut PgConnection,
    id: &str,
    double: Double,
) -> Result<Balance, GatewayError> {
    let held: bool = diesel::select(diesel::dsl::exists(
        accounts::table
            .find(id)
            .filter(accounts::gateway.eq(double)),
    ))
    .get_result(conn)
    .map_err(storage)?;
    if !held {
        return Err(no_such_account(id));
    }
    balance_now(conn, id)
}

/// Makes every pending amount of the account `id` available now, as time
/// would. Any account, of either double; its balance after.
pub fn make_available(conn: &mut PgConnection, id: &str) -> Result<Balance, GatewayError> {
    transaction(conn, |conn| {
        locked_account(conn, id)?;
        let now = Utc::now();
        diesel::update(
            transfers::table
                .filter(transfers::destination.eq(id))
                .filter(transfers::available_at.gt(now)),
        )
        .set(transfers::available_at.eq(now))
        .execute(conn)
        .map_err(storage)?;
        balance_now(conn, id)
    })
}

/// Pays out the account `id`'s whole available balance, as Stripe's
/// automatic payouts do, so that nothing is left for a reversal to take.
/// Any account, of either double; its balance after.
pub fn pay_out(conn: &mut PgConnection, id: &str) -> Result<Balance, GatewayError> {
    transaction(conn, |conn| {
        locked_account(conn, id)?;
        let paid: Vec<_> = balance_now(conn, id)?
            .available
            .into_iter()
            .filter(|amount| amount.amount_cents > 0)
            .map(|amount| {
                (
                    payouts::id.eq(random_id("po_sim_")),
                    payouts::account.eq(id),
                    payouts::currency.eq(amount.currency),
                    payouts::amount_cents.eq(amount.amount_cents),
                )
            })
            .collect();
        diesel::insert_into(payouts::table)
            .values(&paid)
            .execute(conn)
            .map_err(storage)?;
        balance_now(conn, id)
    })
}
