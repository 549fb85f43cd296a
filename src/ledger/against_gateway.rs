//! The gateway account against the gateway's own balance transactions,
//! object by object: what the ledger posted to `gateway:*` for a charge
//! (its capture, less its fee) or a refund (and its failure) is what the
//! gateway's balance moved for it, and every charge and refund the ledger
//! posted is at the gateway. What the gateway lists that ridepay posted
//! nothing for (payouts, disputes, a payment no ride records) is counted
//! by type, apart from the invariants. Each driver's transfers are
//! compared with the gateway's too (`transfers_against_gateway`).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text, Timestamptz};

use super::check::{NeedsAttention, Report, Violation};
use crate::payments::lookup::patiently;
use crate::payments::{ListBalanceTransactions, PaymentGateway};
use crate::schema::installation;
use crate::service_error::ServiceError;

/// The gateway's clock may run behind the database's: its list starts
/// this much before the ledger's span.
const CLOCK_MARGIN: chrono::Duration = chrono::Duration::minutes(5);

/// What the gateway's balance moved for one charge or refund: the type of
/// its first balance transaction listed, their sums, and whether the
/// gateway converted it into another currency.
struct Moved {
    kind: String,
    net_cents: i64,
    amount_cents: i64,
    converted: bool,
}

/// Compares the postings made since `since` (from the ledger's start at
/// the earliest) with the gateway's balance transactions, adding what it
/// finds to `report`.
pub fn compare(
    conn: &mut PgConnection,
    gateway: &dyn PaymentGateway,
    since: DateTime<Utc>,
    report: &mut Report,
) -> Result<(), ServiceError> {
    // What came before the ledger is in its openings, not posted object by
    // object.
    let started: DateTime<Utc> = installation::table
        .select(installation::ledger_started_at)
        .first(conn)?;
    let since = since.max(started);
    // The ledger is read first: whatever it holds, the gateway had made
    // before it, so the list read after it has it.
    let mut posted = posted_since(conn, since)?;
    super::transfers_against_gateway::compare(conn, gateway, report)?;
    let fee_pending: HashSet<&str> = report
        .fees_pending
        .iter()
        .map(|pending| pending.charge.as_str())
        .collect();
    let mut moved: HashMap<String, Moved> = HashMap::new();
    let mut request = ListBalanceTransactions::since(Some(since - CLOCK_MARGIN));
    loop {
        let page = patiently(|| gateway.list_balance_transactions(&request))?;
        for listed in &page.transactions {
            let object = match (listed.kind.as_str(), &listed.source) {
                ("charge" | "refund" | "refund_failure", Some(source)) => source,
                _ => {
                    *report.unposted.entry(listed.kind.clone()).or_default() += 1;
                    continue;
                }
            };
            let entry = moved.entry(object.clone()).or_insert_with(|| Moved {
                kind: listed.kind.clone(),
                net_cents: 0,
                amount_cents: 0,
                converted: false,
            });
            entry.net_cents += listed.transaction.net_cents;
            entry.amount_cents += listed.transaction.amount_cents;
            entry.converted |= listed.transaction.exchange_rate.is_some();
        }
        match request.after(&page) {
            Some(next) => request = next,
            None => break,
        }
    }
    for (object, moved) in moved {
        let Some(ledger) = posted.remove(&object) else {
            *report.unposted.entry(moved.kind).or_default() += 1;
            continue;
        };
        // A charge whose fee is not known yet has its capture posted alone.
        let expected = if fee_pending.contains(object.as_str()) {
            moved.amount_cents
        } else {
            moved.net_cents
        };
        if ledger != expected && moved.converted {
            // The ledger posts a refund, and a capture whose balance
            // transaction it has not read, in the ride's currency.
            report.needs_attention.push(NeedsAttention {
                reason: "converted_by_the_gateway",
                subject: object,
                detail: format!(
                    "the gateway's balance moved {expected} in the currency it settled in, \
                     the ledger's gateway account {ledger} in the ride's"
                ),
            });
        } else if ledger != expected {
            report.violations.push(Violation {
                invariant: "gateway_disagrees",
                subject: object,
                detail: format!(
                    "the gateway's balance moved {expected} for it, the ledger's gateway account {ledger}"
                ),
            });
        }
    }
    for (object, ledger) in posted {
        if ledger != 0 {
            report.violations.push(Violation {
                invariant: "not_at_gateway",
                subject: object,
                detail: format!("the ledger moved the gateway account {ledger} for what the gateway does not list"),
            });
        }
    }
    Ok(())
}

/// What the ledger posted to `gateway:*` since `since` (not before its
/// start: the openings hold what came before), by the gateway object it
/// was for: a charge (`ch_`: its capture, its conversion and its fee) or a
/// refund (`re_`, with its failure).
fn posted_since(
    conn: &mut PgConnection,
    since: DateTime<Utc>,
) -> QueryResult<HashMap<String, i64>> {
    #[derive(QueryableByName)]
    struct Posted {
        #[diesel(sql_type = Text)]
        object: String,
        #[diesel(sql_type = BigInt)]
        amount: i64,
    }
    let rows: Vec<Posted> = diesel::sql_query(
        "SELECT object.id AS object, sum(e.amount_cents)::bigint AS amount
         FROM ledger_transactions AS t
         JOIN installation ON t.created_at > installation.ledger_started_at
         JOIN ledger_entries AS e ON e.transaction_id = t.id
         JOIN ledger_accounts AS a ON a.id = e.account_id AND a.kind = 'asset'
         CROSS JOIN LATERAL (
             SELECT CASE t.kind
                 WHEN 'fee' THEN coalesce(
                     (SELECT c.id FROM charges AS c
                      WHERE c.ride_id = t.ride_id AND c.created_at >= $1
                        AND c.balance_transaction_id || ':fee' = t.source),
                     (SELECT rp.charge_id FROM released_payments AS rp
                      WHERE t.ride_id IS NULL
                        AND rp.balance_transaction_id || ':fee' = t.source))
                 ELSE split_part(t.source, ':', 1) END AS id) AS object
         WHERE t.created_at >= $1 AND object.id IS NOT NULL
           AND t.kind IN ('capture', 'fx', 'fee', 'refund', 'refund_failed')
         GROUP BY object.id",
    )
    .bind::<Timestamptz, _>(since)
    .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|row| (row.object, row.amount))
        .collect())
}
