//! The platform's reads of its drivers: one, a page of them, and each one's
//! balances as the ledger holds them.

use std::collections::HashMap;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bytea, Text};

use super::model::{self, Driver, OnboardingToken};
use super::pages::{page_url, START};
use crate::pages::{from_cursor, Cursor};
use crate::public_ids::DriverPublicId;
use crate::schema::drivers;
use crate::service_error::ServiceError;
use crate::wire::driver::{BalanceJson, DriverJson};

/// Drivers are the platform's to read.
pub const READ_DRIVERS: &str = "read drivers";

/// A page of drivers, newest first.
pub fn page(
    conn: &mut PgConnection,
    limit: i64,
    cursor: Cursor<DriverPublicId>,
) -> Result<(Vec<DriverJson>, bool), ServiceError> {
    let cursor = cursor.resolve("driver", |id| {
        Ok(drivers::table
            .filter(drivers::public_id.eq(id))
            .select(drivers::id)
            .first::<i64>(conn)
            .optional()?)
    })?;
    let query = drivers::table
        .into_boxed()
        .select(Driver::as_select())
        .limit(limit + 1);
    let query = from_cursor!(query, drivers::id, cursor);
    let (drivers, has_more) = cursor.page(query.load(conn)?, limit);
    let mut balances = balances(conn, &drivers)?;
    let data = drivers
        .into_iter()
        .map(|driver| {
            let balances = balances.remove(&driver.public_id).unwrap_or_default();
            shown(driver, None, balances)
        })
        .collect();
    Ok((data, has_more))
}

/// A new token, and where the driver's pages are (`DriverContext::pages`).
pub type NewToken<'a> = (&'a OnboardingToken, &'a str);

/// The driver as the API shows them; with the URL of their start page
/// under a new token when the answer made it.
pub fn json(
    conn: &mut PgConnection,
    driver: Driver,
    token: Option<NewToken>,
) -> QueryResult<DriverJson> {
    let balances = balances(conn, std::slice::from_ref(&driver))?
        .remove(&driver.public_id)
        .unwrap_or_default();
    Ok(shown(driver, token, balances))
}

fn shown(driver: Driver, token: Option<NewToken>, balances: Vec<BalanceJson>) -> DriverJson {
    DriverJson {
        id: driver.public_id,
        status: driver.status.as_str(),
        onboarding_url: token.map(|(token, pages)| page_url(pages, &token.text, START)),
        onboarding_url_expires_at: token.map(|(token, _)| token.expires_at),
        email: driver.email,
        country: driver.country,
        account_id: driver.account_id,
        balances,
        created_at: driver.created_at,
    }
}

#[derive(QueryableByName)]
struct Balance {
    #[diesel(sql_type = Text)]
    driver: String,
    #[diesel(sql_type = Text)]
    currency: String,
    #[diesel(sql_type = BigInt)]
    balance: i64,
    #[diesel(sql_type = BigInt)]
    transferred: i64,
}

/// Each driver's payable accounts (`driver:<id>:payable:<cur>`) in the
/// ledger, with their balances and the transfers less reversals posted to
/// them, in one statement (`driver` is the accounts' code).
fn balances(
    conn: &mut PgConnection,
    drivers: &[Driver],
) -> QueryResult<HashMap<DriverPublicId, Vec<BalanceJson>>> {
    let ids: HashMap<String, DriverPublicId> = drivers
        .iter()
        .map(|driver| (model::payable_code(driver.public_id), driver.public_id))
        .collect();
    let public_ids: Vec<DriverPublicId> = ids.values().copied().collect();
    let rows: Vec<Balance> = diesel::sql_query(
        "SELECT d.payable_code AS driver, a.currency, \
             coalesce(sum(e.amount_cents), 0)::bigint AS balance, \
             coalesce(sum(e.amount_cents) FILTER \
                 (WHERE t.kind IN ('transfer', 'transfer_reversal')), 0)::bigint AS transferred \
         FROM drivers d \
         JOIN ledger_accounts a ON a.code = d.payable_code || ':' || a.currency \
         LEFT JOIN ledger_entries e ON e.account_id = a.id \
         LEFT JOIN ledger_transactions t ON t.id = e.transaction_id \
         WHERE d.public_id = ANY($1) \
         GROUP BY d.payable_code, a.currency ORDER BY a.currency",
    )
    .bind::<Array<Bytea>, _>(public_ids)
    .load(conn)?;
    let mut balances: HashMap<DriverPublicId, Vec<BalanceJson>> = HashMap::new();
    for row in rows {
        if let Some(id) = ids.get(&row.driver) {
            balances.entry(*id).or_default().push(BalanceJson {
                currency: row.currency,
                payable_cents: -row.balance,
                transferred_cents: row.transferred,
            });
        }
    }
    Ok(balances)
}
