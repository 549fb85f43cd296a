//! The platform's reads of the ledger: its accounts with their balances,
//! and its transactions, newest first, with their entries. A rider's key
//! reads none of it.

use std::collections::HashMap;

use diesel::dsl::{exists, sql};
use diesel::prelude::*;
use diesel::sql_types::BigInt;

use crate::pages::{from_cursor, Cursor};
use crate::public_ids::{LedgerTransactionPublicId, RidePublicId};
use crate::schema::{ledger_accounts, ledger_entries, ledger_transactions, rides};
use crate::service_error::ServiceError;
use crate::users::User;
use crate::validation::FieldError;
use crate::wire::ledger::{AccountJson, EntryJson, TransactionJson};

/// The ledger is the platform's to read.
const READ_THE_LEDGER: &str = "read the ledger";

/// Up to `limit` accounts in the order of their codes, after the code
/// `after`, and whether there are more.
pub fn accounts_page(
    conn: &mut PgConnection,
    user: &User,
    limit: i64,
    after: Option<String>,
) -> Result<(Vec<AccountJson>, bool), ServiceError> {
    user.platform_only(READ_THE_LEDGER)?;
    let mut accounts = balances(conn, after, Some(limit + 1))?;
    let has_more = accounts.len() as i64 > limit;
    accounts.truncate(limit as usize);
    Ok((accounts, has_more))
}

/// Accounts with their balances (sums of their entries, read through the
/// entries' account index) in the order of their codes, after the code
/// `after`, at most `limit` of them.
pub fn balances(
    conn: &mut PgConnection,
    after: Option<String>,
    limit: Option<i64>,
) -> QueryResult<Vec<AccountJson>> {
    let mut query = ledger_accounts::table
        .left_join(ledger_entries::table)
        .group_by(ledger_accounts::id)
        .select((
            ledger_accounts::code,
            ledger_accounts::kind,
            ledger_accounts::currency,
            sql::<BigInt>("coalesce(sum(ledger_entries.amount_cents), 0)::bigint"),
        ))
        .order(ledger_accounts::code.asc())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(ledger_accounts::code.gt(after));
    }
    if let Some(limit) = limit {
        query = query.limit(limit);
    }
    let rows: Vec<(String, String, String, i64)> = query.load(conn)?;
    Ok(rows
        .into_iter()
        .map(|(code, kind, currency, balance_cents)| AccountJson {
            code,
            kind,
            currency,
            balance_cents,
        })
        .collect())
}

/// Which transactions a list shows: a ride's, an account's, or all.
pub struct TransactionFilter {
    pub ride: Option<RidePublicId>,
    pub account: Option<String>,
}

/// Up to `limit` transactions, newest first, from `cursor`, with their
/// entries, and whether there are more.
pub fn transactions_page(
    conn: &mut PgConnection,
    user: &User,
    filter: TransactionFilter,
    limit: i64,
    cursor: Cursor<LedgerTransactionPublicId>,
) -> Result<(Vec<TransactionJson>, bool), ServiceError> {
    user.platform_only(READ_THE_LEDGER)?;
    let unknown = |field: &str, what: &str| {
        ServiceError::Invalid(vec![FieldError::new(field, format!("names no {what}"))])
    };
    let ride = match filter.ride {
        None => None,
        Some(ride) => Some(
            rides::table
                .filter(rides::public_id.eq(ride))
                .select(rides::id)
                .first::<i64>(conn)
                .optional()?
                .ok_or_else(|| unknown("ride_id", "ride"))?,
        ),
    };
    let account = match filter.account {
        None => None,
        Some(code) => Some(
            ledger_accounts::table
                .filter(ledger_accounts::code.eq(code))
                .select(ledger_accounts::id)
                .first::<i64>(conn)
                .optional()?
                .ok_or_else(|| unknown("account", "account"))?,
        ),
    };
    let listed = || {
        let mut query = ledger_transactions::table.into_boxed();
        if let Some(ride) = ride {
            query = query.filter(ledger_transactions::ride_id.eq(ride));
        }
        if let Some(account) = account {
            query = query.filter(exists(
                ledger_entries::table
                    .filter(ledger_entries::transaction_id.eq(ledger_transactions::id))
                    .filter(ledger_entries::account_id.eq(account)),
            ));
        }
        query
    };
    let cursor = cursor.resolve("ledger transaction", |id| {
        Ok(listed()
            .filter(ledger_transactions::public_id.eq(id))
            .select(ledger_transactions::id)
            .first::<i64>(conn)
            .optional()?)
    })?;
    let query = listed()
        .select((
            ledger_transactions::id,
            ledger_transactions::public_id,
            ledger_transactions::kind,
            ledger_transactions::source,
            ledger_transactions::ride_id,
            ledger_transactions::reverses,
            ledger_transactions::created_at,
        ))
        .limit(limit + 1);
    let rows: Vec<TransactionRow> =
        from_cursor!(query, ledger_transactions::id, cursor).load(conn)?;
    let (rows, has_more) = cursor.page(rows, limit);
    Ok((with_entries(conn, rows)?, has_more))
}

type TransactionRow = (
    i64,
    LedgerTransactionPublicId,
    String,
    String,
    Option<i64>,
    Option<i64>,
    chrono::DateTime<chrono::Utc>,
);

/// The page's transactions as the API shows them: their rides' and the
/// reversed transactions' public ids, and their entries, read in three
/// queries whatever the page's size.
fn with_entries(
    conn: &mut PgConnection,
    rows: Vec<TransactionRow>,
) -> QueryResult<Vec<TransactionJson>> {
    let ids: Vec<i64> = rows.iter().map(|row| row.0).collect();
    let ride_ids: Vec<i64> = rows.iter().filter_map(|row| row.4).collect();
    let reversed_ids: Vec<i64> = rows.iter().filter_map(|row| row.5).collect();
    let rides: HashMap<i64, RidePublicId> = rides::table
        .filter(rides::id.eq_any(ride_ids))
        .select((rides::id, rides::public_id))
        .load(conn)?
        .into_iter()
        .collect();
    let reversed: HashMap<i64, LedgerTransactionPublicId> = ledger_transactions::table
        .filter(ledger_transactions::id.eq_any(reversed_ids))
        .select((ledger_transactions::id, ledger_transactions::public_id))
        .load(conn)?
        .into_iter()
        .collect();
    let mut entries: HashMap<i64, Vec<EntryJson>> = HashMap::new();
    let rows_of_entries: Vec<(i64, String, String, i64)> = ledger_entries::table
        .inner_join(ledger_accounts::table)
        .filter(ledger_entries::transaction_id.eq_any(&ids))
        .select((
            ledger_entries::transaction_id,
            ledger_accounts::code,
            ledger_accounts::currency,
            ledger_entries::amount_cents,
        ))
        .order((ledger_entries::transaction_id, ledger_accounts::code))
        .load(conn)?;
    for (transaction, account, currency, amount_cents) in rows_of_entries {
        entries.entry(transaction).or_default().push(EntryJson {
            account,
            currency,
            amount_cents,
        });
    }
    Ok(rows
        .into_iter()
        .map(
            |(id, public_id, kind, source, ride_id, reverses, created_at)| TransactionJson {
                id: public_id,
                kind,
                source,
                ride_id: ride_id.and_then(|ride| rides.get(&ride).copied()),
                reverses: reverses.and_then(|reversed_id| reversed.get(&reversed_id).copied()),
                created_at,
                entries: entries.remove(&id).unwrap_or_default(),
            },
        )
        .collect())
}
