//! The ledger: what the database refuses of it, the opening transactions,
//! what each of a ride's money movements posts, and the platform's reads.

mod check;
mod guards;
mod opening;
mod postings;
mod reads;

use diesel::sql_types::{BigInt, Text};
use diesel::RunQueryDsl;

use crate::common::app::TestApp;
use crate::common::ids::Id;

/// A transaction's kind and its entries (account code, amount), in the
/// order of the codes.
pub type Posting = (String, Vec<(String, i64)>);

pub fn posting(kind: &str, entries: &[(&str, i64)]) -> Posting {
    let entries = entries
        .iter()
        .map(|(code, amount)| (code.to_string(), *amount))
        .collect();
    (kind.to_owned(), entries)
}

/// The ride's ledger transactions, in the order they were posted.
pub fn postings(app: &TestApp, ride_id: Id) -> Vec<Posting> {
    postings_where(app, &format!("t.ride_id = {}", ride_id.row_key()))
}

/// The transactions no ride names (a released payment's), in the order
/// they were posted.
pub fn postings_without_ride(app: &TestApp) -> Vec<Posting> {
    postings_where(app, "t.ride_id IS NULL")
}

fn postings_where(app: &TestApp, condition: &str) -> Vec<Posting> {
    #[derive(diesel::QueryableByName)]
    struct Entry {
        #[diesel(sql_type = BigInt)]
        transaction_id: i64,
        #[diesel(sql_type = Text)]
        kind: String,
        #[diesel(sql_type = Text)]
        code: String,
        #[diesel(sql_type = BigInt)]
        amount_cents: i64,
    }
    let entries: Vec<Entry> = diesel::sql_query(format!(
        "SELECT t.id AS transaction_id, t.kind, a.code, e.amount_cents \
         FROM ledger_transactions t JOIN ledger_entries e ON e.transaction_id = t.id \
         JOIN ledger_accounts a ON a.id = e.account_id \
         WHERE {condition} ORDER BY t.id, a.code COLLATE \"C\""
    ))
    .load(&mut app.db())
    .unwrap();
    let mut postings: Vec<(i64, Posting)> = Vec::new();
    for entry in entries {
        match postings.last_mut() {
            Some((id, (_, lines))) if *id == entry.transaction_id => {
                lines.push((entry.code, entry.amount_cents))
            }
            _ => postings.push((
                entry.transaction_id,
                (entry.kind, vec![(entry.code, entry.amount_cents)]),
            )),
        }
    }
    postings.into_iter().map(|(_, posting)| posting).collect()
}

/// The doubles' fee on a charge of `amount_cents`: Stripe's standard card
/// price, 2.9 % rounded half up, and 30.
pub fn fee_of(amount_cents: i64) -> i64 {
    (amount_cents * 29 + 500) / 1000 + 30
}

/// The ledger is exact: `ridepay ledger check` finds nothing in the
/// database (each transaction its movement's, every movement posted, each
/// ride's postings its amounts) and every ride's charge has its capture and
/// fee posted once (a charge before the ledger, its fee when backfilled).
pub fn assert_exact(app: &TestApp, context: &str) {
    let report = ridepay::ledger::check::check(
        &mut app.db(),
        ridepay::ledger::check::since(None),
        std::time::Duration::from_secs(3600),
    )
    .unwrap();
    assert!(
        report.violations.is_empty() && report.fees_pending.is_empty(),
        "{context}: {report:?}"
    );
    let rides_postings = |kind: &str| {
        app.count(&format!(
            "ledger_transactions WHERE kind = '{kind}' AND ride_id IS NOT NULL"
        ))
    };
    let charges = app.count("charges");
    assert_eq!(rides_postings("capture"), charges, "{context}: captures");
    assert_eq!(
        rides_postings("fee"),
        charges + app.count("opening_fees"),
        "{context}: fees"
    );
}
