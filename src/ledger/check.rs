//! `ridepay ledger check`: the ledger's invariants read on a live database
//! (docs/OPERATIONS.md, "Checking the ledger"). Each transaction balances in each
//! currency, hashes to what its entries are, and is the template of the
//! movement its `source` names; every movement ridepay recorded is posted;
//! each ride's postings come to what the ride says it keeps; the triggers
//! that enforce all of it are there and enabled. Captures whose fee the
//! gateway has not told yet are listed apart, as pending, until they are
//! overdue.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Bytea, Nullable, Text, Timestamptz};
use serde::Serialize;

use crate::public_ids::RidePublicId;

/// What the check found. `violations` make it fail.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub violations: Vec<Violation>,
    /// Money the ledger posted as well as it can but an operator should
    /// look at: a charge the gateway settled in another currency than the
    /// ride's, and what the gateway moved for it in that currency.
    pub needs_attention: Vec<NeedsAttention>,
    pub fees_pending: Vec<FeePending>,
    /// The gateway's balance transactions ridepay posted nothing for, by
    /// type (`payout`, `adjustment`, a `charge` no ride records, ...).
    pub unposted: BTreeMap<String, u64>,
}

/// One broken invariant and what it is about: a transaction's `source`, a
/// movement's, a ride's id, or a trigger's `table.name`.
#[derive(Debug, Serialize)]
pub struct Violation {
    pub invariant: &'static str,
    pub subject: String,
    pub detail: String,
}

/// What needs an operator, and why: `settled_in_another_currency` (a
/// charge, named by its id) or `converted_by_the_gateway` (a charge or a
/// refund the gateway moved in another currency than the ledger posted).
#[derive(Debug, Serialize)]
pub struct NeedsAttention {
    pub reason: &'static str,
    pub subject: String,
    pub detail: String,
}

/// A capture whose balance transaction, and so its fee, ridepay has not
/// read yet.
#[derive(Debug, Serialize, QueryableByName)]
pub struct FeePending {
    #[diesel(sql_type = Text)]
    pub charge: String,
    #[diesel(sql_type = Bytea)]
    #[serde(serialize_with = "as_text")]
    pub ride_id: RidePublicId,
    #[diesel(sql_type = Timestamptz)]
    pub captured_at: DateTime<Utc>,
}

fn as_text<S: serde::Serializer>(id: &RidePublicId, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(id)
}

/// The invariants every check names, so that a metrics file shows each
/// one, found or not.
pub const INVARIANTS: [&str; 10] = [
    "unbalanced",
    "hash_mismatch",
    "unexplained",
    "not_its_template",
    "not_posted",
    "ride_disagrees",
    "trigger_disabled",
    "gateway_disagrees",
    "not_at_gateway",
    "driver_disagrees",
];

/// The triggers that keep the ledger whole, as `table.trigger`: turned off,
/// the ledger can be changed without a trace but this check's.
const GUARDING_TRIGGERS: [&str; 22] = [
    "ledger_transactions.ledger_transactions_balanced",
    "ledger_entries.ledger_entries_join_new",
    "ledger_accounts.ledger_accounts_append_only",
    "ledger_accounts.ledger_accounts_no_truncate",
    "ledger_transactions.ledger_transactions_append_only",
    "ledger_transactions.ledger_transactions_no_truncate",
    "ledger_entries.ledger_entries_append_only",
    "ledger_entries.ledger_entries_no_truncate",
    "charges.charges_post_to_ledger",
    "charges.charges_post_fee_to_ledger",
    "charges.charges_append_only",
    "charges.charges_transfer_owed",
    "transfers.transfers_post_to_ledger",
    "transfer_reversals.transfer_reversals_post_to_ledger",
    "refunds.refunds_post_new_to_ledger",
    "refunds.refunds_post_to_ledger",
    "released_payments.released_payments_post_to_ledger",
    "opening_fees.opening_fees_post_to_ledger",
    "opening_fees.opening_fees_append_only",
    "stray_transfers.stray_transfers_post_to_ledger",
    "stray_transfers.stray_transfers_post_reversal_to_ledger",
    "transfers.transfers_not_stray",
];

/// The start of the last `span`; without one, of everything.
pub fn since(span: Option<Duration>) -> DateTime<Utc> {
    span.map_or(DateTime::UNIX_EPOCH, |span| {
        Utc::now() - chrono::Duration::from_std(span).unwrap_or(chrono::Duration::MAX)
    })
}

/// Checks what was posted or changed since `since` in the database alone
/// (`against_gateway` adds the gateway). A capture whose fee is still
/// unknown after `fee_grace` is a violation; before that it is pending.
pub fn check(
    conn: &mut PgConnection,
    since: DateTime<Utc>,
    fee_grace: Duration,
) -> QueryResult<Report> {
    let mut report = Report::default();
    let violations = &mut report.violations;
    violations.extend(unbalanced(conn, since)?);
    violations.extend(against_templates(conn, since)?);
    violations.extend(not_posted(conn, since)?);
    violations.extend(rides_disagreeing(conn, since)?);
    violations.extend(triggers_off(conn)?);
    report.needs_attention = settled_converted(conn, since)?;
    let overdue = Utc::now() - chrono::Duration::from_std(fee_grace).unwrap_or_default();
    for pending in fees_pending(conn, since)? {
        if pending.captured_at < overdue {
            report.violations.push(Violation {
                invariant: "not_posted",
                subject: format!("{}:fee", pending.charge),
                detail: format!(
                    "the fee of the charge of ride {}, captured at {}, is still unknown",
                    pending.ride_id, pending.captured_at
                ),
            });
        } else {
            report.fees_pending.push(pending);
        }
    }
    Ok(report)
}

#[derive(QueryableByName)]
struct Found {
    #[diesel(sql_type = Text)]
    invariant: String,
    #[diesel(sql_type = Text)]
    subject: String,
    #[diesel(sql_type = Text)]
    detail: String,
}

/// The violations `query` (an `invariant`, a `subject` and a `detail` per
/// row, `$1` the start of the span) finds.
fn found_since(
    conn: &mut PgConnection,
    since: DateTime<Utc>,
    query: &str,
) -> QueryResult<Vec<Violation>> {
    let rows = diesel::sql_query(query)
        .bind::<Timestamptz, _>(since)
        .load(conn)?;
    Ok(found(rows))
}

fn found(rows: Vec<Found>) -> Vec<Violation> {
    rows.into_iter()
        .map(|row| Violation {
            invariant: INVARIANTS
                .into_iter()
                .find(|name| *name == row.invariant)
                .expect("the queries name only the invariants listed"),
            subject: row.subject,
            detail: row.detail,
        })
        .collect()
}

fn unbalanced(conn: &mut PgConnection, since: DateTime<Utc>) -> QueryResult<Vec<Violation>> {
    found_since(
        conn,
        since,
        "SELECT 'unbalanced' AS invariant, t.source AS subject,
                'its ' || a.currency || ' entries sum to ' || sum(e.amount_cents) AS detail
         FROM ledger_transactions AS t
         JOIN ledger_entries AS e ON e.transaction_id = t.id
         JOIN ledger_accounts AS a ON a.id = e.account_id
         WHERE t.created_at >= $1
         GROUP BY t.id, a.currency
         HAVING sum(e.amount_cents) <> 0",
    )
}

/// Each transaction against its hash and against the entries the movement
/// its `source` names would post: a capture, its conversion and a fee from
/// the charge (or
/// the fee of one before the ledger), a refund from the refund (against
/// the driver's payable and the commission once its charge was reallocated
/// to them), its
/// failure as the refund's entries undone, those of a payment no ride records from its release, an opening
/// from the ride it opened (its amount is checked with the ride's), a
/// reallocation from the transfer owed for its charge (the driver's
/// entitlement then, the rest to the commission), a transfer from the
/// transfer made, a reversal from the reversal made, a stray transfer and
/// its reversal from its tombstone.
fn against_templates(conn: &mut PgConnection, since: DateTime<Utc>) -> QueryResult<Vec<Violation>> {
    #[derive(QueryableByName)]
    struct Checked {
        #[diesel(sql_type = Text)]
        source: String,
        #[diesel(sql_type = Text)]
        kind: String,
        #[diesel(sql_type = Bool)]
        hash_matches: bool,
        #[diesel(sql_type = Nullable<Text>)]
        expected_kind: Option<String>,
        #[diesel(sql_type = Bool)]
        matches_template: bool,
    }
    let rows: Vec<Checked> = diesel::sql_query(
        "SELECT t.source, t.kind,
                t.entries_hash = sha256(convert_to(actual.canonical, 'UTF8')) AS hash_matches,
                expected.kind AS expected_kind,
                coalesce(expected.kind = t.kind
                         AND actual.canonical
                             = ridepay_ledger_canonical(expected.codes, expected.amounts)
                         AND t.reverses IS NOT DISTINCT FROM expected.reverses, false)
                    AS matches_template
         FROM ledger_transactions AS t
         CROSS JOIN LATERAL (
             SELECT ridepay_ledger_canonical(array_agg(a.code), array_agg(e.amount_cents))
                 AS canonical
             FROM ledger_entries AS e JOIN ledger_accounts AS a ON a.id = e.account_id
             WHERE e.transaction_id = t.id) AS actual
         LEFT JOIN LATERAL (
             SELECT 'capture' AS kind, NULL::bigint AS reverses,
                    ARRAY['gateway:' || c.currency, 'platform:unassigned:' || c.currency] AS codes,
                    ARRAY[c.amount_cents, -c.amount_cents] AS amounts
             FROM charges AS c
             WHERE c.ride_id = t.ride_id AND t.source = c.id || ':capture'
             UNION ALL
             SELECT 'fx', NULL,
                    ARRAY['fx:' || c.currency, 'gateway:' || c.currency,
                          'gateway:' || c.settled_currency, 'fx:' || c.settled_currency],
                    ARRAY[c.amount_cents, -c.amount_cents, c.settled_cents, -c.settled_cents]
             FROM charges AS c
             WHERE c.ride_id = t.ride_id AND c.settled_currency IS NOT NULL
               AND t.source = c.id || ':fx'
             UNION ALL
             SELECT 'fee', NULL,
                    ARRAY['platform:fees:' || settled.currency, 'gateway:' || settled.currency],
                    ARRAY[c.fee_cents, -c.fee_cents]
             FROM charges AS c
             CROSS JOIN LATERAL (VALUES (coalesce(c.settled_currency, c.currency)))
                 AS settled (currency)
             WHERE c.ride_id = t.ride_id AND c.fee_cents > 0
               AND t.source = c.balance_transaction_id || ':fee'
             UNION ALL
             SELECT 'refund', NULL,
                    ARRAY['gateway:' || r.currency, 'platform:unassigned:' || r.currency],
                    ARRAY[-r.amount_cents, r.amount_cents]
             FROM refunds AS r
             WHERE r.ride_id = t.ride_id AND t.source = r.gateway_refund_id || ':refund'
               AND NOT EXISTS (
                   SELECT FROM charges AS c
                   JOIN ledger_transactions AS reallocated
                     ON reallocated.source = c.id || ':reallocation' AND reallocated.id < t.id
                   WHERE c.ride_id = r.ride_id
                     AND ridepay_charge_intent(c.id) IS NOT DISTINCT FROM
                         coalesce(r.payment_intent_id, (SELECT ride.payment_intent_id
                                                        FROM rides AS ride
                                                        WHERE ride.id = r.ride_id)))
             UNION ALL
             SELECT 'refund', NULL, parts.codes, parts.amounts
             FROM refunds AS r
             JOIN transfers AS tr ON tr.ride_id = r.ride_id AND tr.reowes_reversal_id IS NULL
             JOIN charges AS c ON c.id = tr.source_charge
             JOIN drivers AS d ON d.id = tr.driver_id
             CROSS JOIN LATERAL (
                 SELECT coalesce(sum(e.amount_cents), 0)::bigint AS taken
                 FROM ledger_entries AS e JOIN ledger_accounts AS a ON a.id = e.account_id
                 WHERE e.transaction_id = t.id
                   AND a.code = d.payable_code || ':' || r.currency) AS driver
             CROSS JOIN LATERAL (
                 SELECT array_agg(share.code) AS codes, array_agg(share.amount) AS amounts
                 FROM unnest(ARRAY['gateway:' || r.currency, d.payable_code || ':' || r.currency,
                                   'platform:commission:' || r.currency],
                             ARRAY[-r.amount_cents, driver.taken, r.amount_cents - driver.taken])
                     AS share (code, amount)
                 WHERE share.amount <> 0) AS parts
             WHERE r.ride_id = t.ride_id AND t.source = r.gateway_refund_id || ':refund'
               AND EXISTS (SELECT FROM ledger_transactions AS reallocated
                           WHERE reallocated.source = c.id || ':reallocation'
                             AND reallocated.id < t.id)
               AND ridepay_charge_intent(c.id) IS NOT DISTINCT FROM
                   coalesce(r.payment_intent_id, (SELECT ride.payment_intent_id FROM rides AS ride
                                                  WHERE ride.id = r.ride_id))
             UNION ALL
             SELECT 'refund_failed', refunded.id, undone.codes, undone.amounts
             FROM refunds AS r
             JOIN ledger_transactions AS refunded
               ON refunded.source = r.gateway_refund_id || ':refund'
             CROSS JOIN LATERAL (
                 SELECT array_agg(a.code) AS codes, array_agg(-e.amount_cents) AS amounts
                 FROM ledger_entries AS e JOIN ledger_accounts AS a ON a.id = e.account_id
                 WHERE e.transaction_id = refunded.id) AS undone
             WHERE r.ride_id = t.ride_id AND r.status IN ('failed', 'canceled')
               AND t.source = r.gateway_refund_id || ':failed'
             UNION ALL
             SELECT 'fee', NULL,
                    ARRAY['platform:fees:' || f.currency, 'gateway:' || f.currency],
                    ARRAY[f.fee_cents, -f.fee_cents]
             FROM opening_fees AS f
             WHERE f.ride_id = t.ride_id AND t.source = f.balance_transaction_id || ':fee'
             UNION ALL
             SELECT 'capture', NULL,
                    ARRAY['gateway:' || rp.currency, 'platform:suspense:' || rp.currency],
                    ARRAY[rp.captured_cents, -rp.captured_cents]
             FROM released_payments AS rp
             WHERE t.ride_id IS NULL AND rp.released_at IS NOT NULL
               AND t.source = rp.charge_id || ':capture'
             UNION ALL
             SELECT 'fee', NULL,
                    ARRAY['platform:fees:' || rp.currency, 'gateway:' || rp.currency],
                    ARRAY[rp.fee_cents, -rp.fee_cents]
             FROM released_payments AS rp
             WHERE t.ride_id IS NULL AND rp.released_at IS NOT NULL AND rp.fee_cents > 0
               AND t.source = rp.balance_transaction_id || ':fee'
             UNION ALL
             SELECT 'refund', NULL,
                    ARRAY['gateway:' || rp.currency, 'platform:suspense:' || rp.currency],
                    ARRAY[-rp.amount_cents, rp.amount_cents]
             FROM released_payments AS rp
             WHERE t.ride_id IS NULL AND rp.released_at IS NOT NULL
               AND t.source = rp.refund_id || ':refund'
             UNION ALL
             SELECT 'reallocation', NULL, parts.codes, parts.amounts
             FROM transfers AS tr
             JOIN drivers AS d ON d.id = tr.driver_id
             CROSS JOIN LATERAL (
                 SELECT e.amount_cents AS kept
                 FROM ledger_entries AS e JOIN ledger_accounts AS a ON a.id = e.account_id
                 WHERE e.transaction_id = t.id
                   AND a.code = 'platform:unassigned:' || tr.currency) AS moved
             CROSS JOIN LATERAL (
                 SELECT array_agg(share.code) AS codes, array_agg(share.amount) AS amounts
                 FROM unnest(ARRAY['platform:unassigned:' || tr.currency,
                                   d.payable_code || ':' || tr.currency,
                                   'platform:commission:' || tr.currency],
                             ARRAY[moved.kept, -tr.entitled_cents,
                                   tr.entitled_cents - moved.kept])
                     AS share (code, amount)
                 WHERE share.amount <> 0) AS parts
             WHERE tr.ride_id = t.ride_id AND t.source = tr.source_charge || ':reallocation'
               AND tr.reowes_reversal_id IS NULL
             UNION ALL
             SELECT 'transfer', NULL,
                    ARRAY[d.payable_code || ':' || tr.currency, 'gateway:' || tr.currency],
                    ARRAY[tr.amount_cents, -tr.amount_cents]
             FROM transfers AS tr JOIN drivers AS d ON d.id = tr.driver_id
             WHERE tr.ride_id = t.ride_id AND t.source = tr.gateway_transfer_id || ':transfer'
             UNION ALL
             SELECT 'transfer_reversal', NULL,
                    ARRAY[d.payable_code || ':' || rv.currency, 'gateway:' || rv.currency],
                    ARRAY[-rv.amount_cents, rv.amount_cents]
             FROM transfer_reversals AS rv
             JOIN transfers AS tr ON tr.id = rv.transfer_id
             JOIN drivers AS d ON d.id = rv.driver_id
             WHERE tr.ride_id = t.ride_id AND t.source = rv.gateway_reversal_id || ':reversal'
             UNION ALL
             SELECT moved.kind, NULL,
                    ARRAY['platform:suspense:' || s.currency, 'gateway:' || s.currency],
                    ARRAY[moved.suspense, -moved.suspense]
             FROM stray_transfers AS s
             CROSS JOIN LATERAL (
                 VALUES ('stray_transfer', s.transfer_id || ':stray_transfer', s.amount_cents),
                        ('stray_reversal', s.reversal_id || ':stray_reversal', -s.reversed_cents))
                 AS moved (kind, source, suspense)
             WHERE t.ride_id IS NULL AND t.source = moved.source
             UNION ALL
             SELECT 'opening', NULL,
                    ARRAY['gateway:' || ride.currency, 'platform:unassigned:' || ride.currency],
                    ARRAY[opened.amount, -opened.amount]
             FROM rides AS ride
             JOIN installation ON t.created_at = installation.ledger_started_at
             CROSS JOIN LATERAL (
                 SELECT e.amount_cents AS amount
                 FROM ledger_entries AS e JOIN ledger_accounts AS a ON a.id = e.account_id
                 WHERE e.transaction_id = t.id AND a.code = 'gateway:' || ride.currency) AS opened
             WHERE ride.id = t.ride_id
               AND ((t.source = 'opening:ride:' || ride.id || ':captured' AND opened.amount > 0)
                    OR t.source = 'opening:ride:' || ride.id || ':refunded')
         ) AS expected ON true
         WHERE t.created_at >= $1",
    )
    .bind::<Timestamptz, _>(since)
    .load(conn)?;
    let mut violations = Vec::new();
    for row in rows {
        if !row.hash_matches {
            violations.push(Violation {
                invariant: "hash_mismatch",
                subject: row.source.clone(),
                detail: "its entries are not those it was posted with".to_owned(),
            });
        }
        match row.expected_kind {
            None => violations.push(Violation {
                invariant: "unexplained",
                subject: row.source,
                detail: format!("no movement ridepay recorded is this {}", row.kind),
            }),
            Some(expected) if !row.matches_template => violations.push(Violation {
                invariant: "not_its_template",
                subject: row.source,
                detail: format!("this {} is not the {expected} its movement posts", row.kind),
            }),
            Some(_) => {}
        }
    }
    Ok(violations)
}

/// Movements recorded since `since` with no transaction: a charge's
/// capture or fee, a refund the gateway made, or its failure, what a
/// released payment moved, and a stray transfer and its reversal.
fn not_posted(conn: &mut PgConnection, since: DateTime<Utc>) -> QueryResult<Vec<Violation>> {
    found_since(
        conn,
        since,
        "SELECT 'not_posted' AS invariant, movement.source AS subject,
                movement.what || ' is recorded but not posted' AS detail
         FROM (
             SELECT c.id || ':capture' AS source, 'the capture' AS what
             FROM charges AS c WHERE c.created_at >= $1
             UNION ALL
             SELECT c.balance_transaction_id || ':fee', 'the gateway''s fee'
             FROM charges AS c WHERE c.created_at >= $1 AND c.fee_cents > 0
             UNION ALL
             SELECT c.id || ':fx', 'the conversion of a charge settled in another currency'
             FROM charges AS c WHERE c.created_at >= $1 AND c.settled_currency IS NOT NULL
             UNION ALL
             SELECT r.gateway_refund_id || ':refund', 'the refund'
             FROM refunds AS r
             WHERE r.updated_at >= $1 AND r.status IN ('pending', 'succeeded')
               AND r.gateway_refund_id IS NOT NULL
             UNION ALL
             SELECT r.gateway_refund_id || ':failed', 'the failure of a posted refund'
             FROM refunds AS r
             WHERE r.updated_at >= $1 AND r.status IN ('failed', 'canceled')
               AND EXISTS (SELECT FROM ledger_transactions AS refunded
                           WHERE refunded.source = r.gateway_refund_id || ':refund')
             UNION ALL
             SELECT tr.gateway_transfer_id || ':transfer', 'a transfer to a driver'
             FROM transfers AS tr
             WHERE tr.updated_at >= $1 AND tr.gateway_transfer_id IS NOT NULL
             UNION ALL
             SELECT rv.gateway_reversal_id || ':reversal', 'a transfer reversal'
             FROM transfer_reversals AS rv
             WHERE rv.updated_at >= $1 AND rv.gateway_reversal_id IS NOT NULL
             UNION ALL
             SELECT tr.source_charge || ':reallocation', 'the driver''s share of a charge'
             FROM transfers AS tr
             WHERE tr.created_at >= $1 AND tr.entitled_cents > 0 AND tr.reowes_reversal_id IS NULL
             UNION ALL
             SELECT f.balance_transaction_id || ':fee', 'the fee of a charge before the ledger'
             FROM opening_fees AS f WHERE f.created_at >= $1
             UNION ALL
             SELECT moved.source, 'a stray transfer or its reversal'
             FROM stray_transfers AS s
             CROSS JOIN LATERAL (VALUES (s.transfer_id || ':stray_transfer'),
                                        (s.reversal_id || ':stray_reversal')) AS moved (source)
             WHERE s.updated_at >= $1 AND moved.source IS NOT NULL
             UNION ALL
             SELECT moved.source, 'what a released payment moved'
             FROM released_payments AS rp
             CROSS JOIN LATERAL (VALUES (rp.charge_id || ':capture'),
                                        (rp.balance_transaction_id || ':fee'),
                                        (rp.refund_id || ':refund')) AS moved (source)
             WHERE rp.released_at >= $1 AND moved.source IS NOT NULL
               AND (rp.fee_cents > 0 OR moved.source <> rp.balance_transaction_id || ':fee')
         ) AS movement
         WHERE NOT EXISTS (SELECT FROM ledger_transactions AS t WHERE t.source = movement.source)",
    )
}

/// Each ride changed since `since`: what its transactions left owed out of
/// its captures (captured, less refunded; unassigned, or its driver's and
/// the commission once it has a driver) is what the ride keeps: captured
/// less refunded, less the refunds the gateway has made and not yet
/// settled.
fn rides_disagreeing(conn: &mut PgConnection, since: DateTime<Utc>) -> QueryResult<Vec<Violation>> {
    #[derive(QueryableByName)]
    struct Disagreeing {
        #[diesel(sql_type = Bytea)]
        ride: RidePublicId,
        #[diesel(sql_type = BigInt)]
        kept: i64,
        #[diesel(sql_type = BigInt)]
        posted: i64,
    }
    let rows: Vec<Disagreeing> = diesel::sql_query(
        "SELECT ride.public_id AS ride,
                (ride.amount_captured_cents - ride.amount_refunded_cents - unsettled.amount)::bigint
                    AS kept,
                (-posted.amount)::bigint AS posted
         FROM rides AS ride
         CROSS JOIN LATERAL (
             SELECT coalesce(sum(r.amount_cents), 0) AS amount FROM refunds AS r
             WHERE r.ride_id = ride.id AND r.status = 'pending'
               AND r.gateway_refund_id IS NOT NULL) AS unsettled
         CROSS JOIN LATERAL (
             SELECT coalesce(sum(e.amount_cents), 0) AS amount
             FROM ledger_transactions AS t
             JOIN ledger_entries AS e ON e.transaction_id = t.id
             JOIN ledger_accounts AS a ON a.id = e.account_id
             WHERE t.ride_id = ride.id AND t.kind NOT IN ('transfer', 'transfer_reversal')
               AND (a.code IN ('platform:unassigned:' || ride.currency,
                               'platform:commission:' || ride.currency)
                    OR a.code LIKE 'driver:%:payable:' || ride.currency))
             AS posted
         WHERE ride.updated_at >= $1
           AND ride.amount_captured_cents - ride.amount_refunded_cents - unsettled.amount
               <> -posted.amount",
    )
    .bind::<Timestamptz, _>(since)
    .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|row| Violation {
            invariant: "ride_disagrees",
            subject: row.ride.to_string(),
            detail: format!(
                "the ride keeps {} of what it captured, its postings {}",
                row.kept, row.posted
            ),
        })
        .collect())
}

fn triggers_off(conn: &mut PgConnection) -> QueryResult<Vec<Violation>> {
    let rows = diesel::sql_query(
        "SELECT 'trigger_disabled' AS invariant, guarding.name AS subject,
                CASE WHEN tg.oid IS NULL THEN 'the trigger is missing'
                     ELSE 'the trigger is disabled' END AS detail
         FROM unnest($1::text[]) AS guarding (name)
         LEFT JOIN (pg_trigger AS tg JOIN pg_class AS c ON c.oid = tg.tgrelid)
             ON c.relname || '.' || tg.tgname = guarding.name
            AND c.relnamespace = current_schema()::regnamespace
         WHERE tg.oid IS NULL OR tg.tgenabled = 'D'",
    )
    .bind::<Array<Text>, _>(&GUARDING_TRIGGERS[..])
    .load(conn)?;
    Ok(found(rows))
}

/// The charges since `since` the gateway settled in another currency than
/// their ride's.
fn settled_converted(
    conn: &mut PgConnection,
    since: DateTime<Utc>,
) -> QueryResult<Vec<NeedsAttention>> {
    #[derive(QueryableByName)]
    struct Converted {
        #[diesel(sql_type = Text)]
        charge: String,
        #[diesel(sql_type = Bytea)]
        ride: RidePublicId,
        #[diesel(sql_type = BigInt)]
        amount_cents: i64,
        #[diesel(sql_type = Text)]
        currency: String,
        #[diesel(sql_type = BigInt)]
        settled_cents: i64,
        #[diesel(sql_type = Text)]
        settled_currency: String,
    }
    let rows: Vec<Converted> = diesel::sql_query(
        "SELECT c.id AS charge, ride.public_id AS ride, c.amount_cents, c.currency,
                c.settled_cents, c.settled_currency
         FROM charges AS c JOIN rides AS ride ON ride.id = c.ride_id
         WHERE c.settled_currency IS NOT NULL AND c.created_at >= $1
         ORDER BY c.created_at",
    )
    .bind::<Timestamptz, _>(since)
    .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|row| NeedsAttention {
            reason: "settled_in_another_currency",
            subject: row.charge,
            detail: format!(
                "ride {} captured {} {} and the gateway settled {} {}: its refunds and the \
                 driver's pay are in the ride's currency",
                row.ride, row.amount_cents, row.currency, row.settled_cents, row.settled_currency
            ),
        })
        .collect())
}

fn fees_pending(conn: &mut PgConnection, since: DateTime<Utc>) -> QueryResult<Vec<FeePending>> {
    diesel::sql_query(
        "SELECT c.id AS charge, ride.public_id AS ride_id, c.created_at AS captured_at
         FROM charges AS c JOIN rides AS ride ON ride.id = c.ride_id
         WHERE c.fee_cents IS NULL AND c.created_at >= $1
         ORDER BY c.created_at",
    )
    .bind::<Timestamptz, _>(since)
    .load(conn)
}

/// The report as Prometheus text for a node exporter's textfile collector:
/// violations per invariant (every invariant, zero included), what needs
/// attention, fees pending, and when the check ran.
pub fn metrics(report: &Report) -> String {
    let mut text = String::from(
        "# HELP ridepay_ledger_violations Violations of the ledger's invariants the last check found.\n\
         # TYPE ridepay_ledger_violations gauge\n",
    );
    for invariant in INVARIANTS {
        let count = report
            .violations
            .iter()
            .filter(|violation| violation.invariant == invariant)
            .count();
        text.push_str(&format!(
            "ridepay_ledger_violations{{invariant=\"{invariant}\"}} {count}\n"
        ));
    }
    text.push_str(&format!(
        "# HELP ridepay_ledger_needs_attention Movements an operator should look at.\n\
         # TYPE ridepay_ledger_needs_attention gauge\n\
         ridepay_ledger_needs_attention {}\n\
         # HELP ridepay_ledger_fees_pending Captures whose gateway fee is not known yet.\n\
         # TYPE ridepay_ledger_fees_pending gauge\n\
         ridepay_ledger_fees_pending {}\n\
         # HELP ridepay_ledger_check_timestamp_seconds When the last check finished.\n\
         # TYPE ridepay_ledger_check_timestamp_seconds gauge\n\
         ridepay_ledger_check_timestamp_seconds {}\n",
        report.needs_attention.len(),
        report.fees_pending.len(),
        Utc::now().timestamp()
    ));
    text
}
