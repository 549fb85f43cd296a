//! The platform's reads of its drivers: one, a page of them, and each one's
//! balances as the ledger holds them.

use std::collections::HashMap;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Text};
use serde::Deserialize;

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

/// The driver as the API shows them, with `balances`.
pub fn shown(driver: Driver, token: Option<NewToken>, balances: Vec<BalanceJson>) -> DriverJson {
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

/// A driver's payable account in one currency, as
/// `ridepay_driver_balances` reads it (for an answer, or for the event a
/// change of the driver stages).
#[derive(QueryableByName, Deserialize)]
pub struct Balance {
    #[diesel(sql_type = Text)]
    payable_code: String,
    #[diesel(sql_type = Text)]
    currency: String,
    #[diesel(sql_type = BigInt)]
    balance: i64,
    #[diesel(sql_type = BigInt)]
    transferred: i64,
}

impl Balance {
    pub fn json(self) -> BalanceJson {
        BalanceJson {
            currency: self.currency,
            payable_cents: -self.balance,
            transferred_cents: self.transferred,
        }
    }
}

/// Each driver's balances, in one statement.
fn balances(
    conn: &mut PgConnection,
    drivers: &[Driver],
) -> QueryResult<HashMap<DriverPublicId, Vec<BalanceJson>>> {
    let ids: HashMap<String, DriverPublicId> = drivers
        .iter()
        .map(|driver| (model::payable_code(driver.public_id), driver.public_id))
        .collect();
    let row_ids: Vec<i64> = drivers.iter().map(|driver| driver.id).collect();
    let rows: Vec<Balance> =
        diesel::sql_query("SELECT * FROM ridepay_driver_balances($1) ORDER BY currency")
            .bind::<Array<BigInt>, _>(row_ids)
            .load(conn)?;
    let mut balances: HashMap<DriverPublicId, Vec<BalanceJson>> = HashMap::new();
    for row in rows {
        if let Some(id) = ids.get(&row.payable_code) {
            balances.entry(*id).or_default().push(row.json());
        }
    }
    Ok(balances)
}
