//! The checks of a ride's life past its request: each ride captured at most
//! once and never for more than was authorized, no hold left once it is
//! completed or cancelled, what the clients were told done exactly, refunds
//! within what was captured, no ride left taken, each transition applied
//! once.

use std::collections::{BTreeMap, HashMap};

use diesel::sql_types::{BigInt, Text, Timestamptz};
use diesel::{PgConnection, RunQueryDsl};

use super::records::{
    ActionCount, GatewayRecords, Index, IntentTotal, KeyRow, Records, RideRow, RideTotal,
    SUCCEEDED, UNDONE_REFUNDS,
};
use super::report::{AuditReport, CHECKS};
use crate::chaos::history::{KeyHistory, Request};

/// The ride statuses, whose audit records (`ride.<status>`) are transitions;
/// a key taking a ride (`ride.completion_started`) may happen more than once.
const STATUSES: [&str; 11] = [
    "pending",
    "requires_action",
    "processing",
    "authorized",
    "captured",
    "canceled",
    "expired",
    "payment_declined",
    "payment_failed",
    "refunded",
    "disputed",
];

/// The records of the calls that end a ride's hold with money taken.
const FINISHING: [&str; 2] = ["ride.captured", "ride.canceled"];

/// Every capture call the gateway kept (refused ones too: ridepay should
/// never ask twice), per PaymentIntent of the campaign.
pub(super) fn capture_calls(
    gateway_records: &mut GatewayRecords,
    started: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<Vec<IntentTotal>> {
    Ok(diesel::sql_query(
        "SELECT i.id AS intent_id, count(*) AS count, \
         coalesce(sum((c.parameters->>'amount_to_capture_cents')::bigint), 0)::bigint AS cents \
         FROM simulated_intent_calls c \
         JOIN simulated_payment_intents i ON i.id = c.parameters->>'intent_id' \
         WHERE c.operation = 'capture' AND i.gateway = $1 AND i.created_at >= $2 \
         GROUP BY i.id",
    )
    .bind::<Text, _>(gateway_records.gateway)
    .bind::<Timestamptz, _>(started)
    .load(&mut gateway_records.conn)?)
}

pub(super) fn gateway_refunds(
    gateway_records: &mut GatewayRecords,
    started: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<Vec<IntentTotal>> {
    Ok(diesel::sql_query(format!(
        "SELECT payment_intent AS intent_id, count(*) AS count, \
         sum(amount_cents)::bigint AS cents FROM simulated_refunds \
         WHERE gateway = $1 AND created_at >= $2 AND payment_intent IS NOT NULL \
         AND status NOT IN {UNDONE_REFUNDS} GROUP BY payment_intent"
    ))
    .bind::<Text, _>(gateway_records.gateway)
    .bind::<Timestamptz, _>(started)
    .load(&mut gateway_records.conn)?)
}

pub(super) fn refunds(conn: &mut PgConnection, user_id: i64) -> anyhow::Result<Vec<RideTotal>> {
    Ok(diesel::sql_query(format!(
        "SELECT ride_id, sum(amount_cents)::bigint AS cents FROM refunds \
         WHERE user_id = $1 AND status NOT IN {UNDONE_REFUNDS} GROUP BY ride_id"
    ))
    .bind::<BigInt, _>(user_id)
    .load(conn)?)
}

pub(super) fn ride_records(
    conn: &mut PgConnection,
    user_id: i64,
) -> anyhow::Result<Vec<ActionCount>> {
    Ok(diesel::sql_query(
        "SELECT resource_id AS ride_id, action, count(*) AS count FROM audit_records \
         WHERE user_id = $1 AND resource_type = 'ride' GROUP BY resource_id, action",
    )
    .bind::<BigInt, _>(user_id)
    .load(conn)?)
}

/// From the records alone: captures, holds, amounts, refunds, takings and
/// transitions of every ride.
pub(super) fn check_rides(report: &mut AuditReport, records: &Records) {
    let index = records.index();
    let key_by_id = records.key_by_id();
    let refunded: HashMap<i64, i64> = records
        .refunds
        .iter()
        .map(|total| (total.ride_id, total.cents))
        .collect();
    for ride in &records.rides {
        let intent = index.intent_of(ride);
        // Overcapture takes up to the room the card allowed over the hold.
        let most = intent.map_or(ride.amount_authorized_cents, |intent| {
            ride.amount_authorized_cents.max(
                intent
                    .overcapture_max_cents
                    .unwrap_or(ride.amount_authorized_cents),
            )
        });
        if ride.fare_captured_cents() > most {
            report.flag(
                CHECKS[10],
                format!(
                    "ride {} ({}, {} of {}) captured {} of {} authorized",
                    ride.public_id,
                    ride.status,
                    ride.capture_method,
                    ride.amount_cents,
                    ride.amount_captured_cents,
                    ride.amount_authorized_cents
                ),
            );
        }
        if let Some(intent) = intent {
            if intent.amount_received_cents != ride.fare_captured_cents() {
                report.flag(
                    CHECKS[12],
                    format!(
                        "ride {} ({}) captured {}, PaymentIntent {} received {}",
                        ride.public_id,
                        ride.status,
                        ride.amount_captured_cents,
                        intent.id,
                        intent.amount_received_cents
                    ),
                );
            }
            let settled = matches!(ride.status.as_str(), "captured" | "canceled" | "refunded");
            let released = intent.amount_capturable_cents == 0
                && (intent.status == SUCCEEDED || intent.status == "canceled");
            if settled && !released {
                report.flag(
                    CHECKS[11],
                    format!(
                        "ride {} is {}, PaymentIntent {} is {} with {} capturable",
                        ride.public_id,
                        ride.status,
                        intent.id,
                        intent.status,
                        intent.amount_capturable_cents
                    ),
                );
            }
        }
        let refunds = refunded.get(&ride.id).copied().unwrap_or(0);
        if refunds.max(ride.amount_refunded_cents) > ride.amount_captured_cents {
            report.flag(
                CHECKS[15],
                format!(
                    "ride {} captured {}, refunded {} (refunds {refunds})",
                    ride.public_id, ride.amount_captured_cents, ride.amount_refunded_cents
                ),
            );
        }
        check_taken(report, ride, &key_by_id);
        check_tip_paid(report, ride, &index);
    }
    check_gateway(report, records);
    check_transitions(report, records);
}

/// A tip paid by a PaymentIntent of its own: that intent succeeded for
/// exactly the tip.
fn check_tip_paid(report: &mut AuditReport, ride: &RideRow, index: &Index<'_>) {
    let Some(tip_intent) = &ride.tip_payment_intent_id else {
        return;
    };
    let paid = index.intent_by_id.get(tip_intent.as_str());
    if !paid.is_some_and(|intent| {
        intent.status == SUCCEEDED && intent.amount_received_cents == ride.tip_cents
    }) {
        report.flag(
            CHECKS[19],
            format!(
                "ride {} records a tip of {} paid by {tip_intent}, which is {:?} with {:?} received",
                ride.public_id,
                ride.tip_cents,
                paid.map(|intent| &intent.status),
                paid.map(|intent| intent.amount_received_cents)
            ),
        );
    }
}

/// A ride still taken once its key is finished (or gone) is stuck: no
/// other key may complete or cancel it, and its events wait for good.
fn check_taken(report: &mut AuditReport, ride: &RideRow, key_by_id: &HashMap<i64, &KeyRow>) {
    let Some(key_id) = ride.settling_key_id else {
        return;
    };
    let key = key_by_id.get(&key_id);
    if key.is_none_or(|key| key.recovery_point == "finished") {
        report.flag(
            CHECKS[16],
            format!(
                "ride {} ({}) taken by key row {key_id}, {}",
                ride.public_id,
                ride.status,
                key.map_or("not in the database", |key| key.key.as_str())
            ),
        );
    }
}

/// From the gateway's side: one capture per PaymentIntent, never more
/// received than authorized, never more refunded than received.
fn check_gateway(report: &mut AuditReport, records: &Records) {
    for capture in records.captures.iter().filter(|capture| capture.count > 1) {
        report.flag(
            CHECKS[9],
            format!(
                "PaymentIntent {}: {} capture calls for {} in all",
                capture.intent_id, capture.count, capture.cents
            ),
        );
    }
    let refunded: HashMap<&str, &IntentTotal> = records
        .gateway_refunds
        .iter()
        .map(|total| (total.intent_id.as_str(), total))
        .collect();
    for intent in &records.intents {
        if intent.amount_received_cents > intent.capturable_at_most() {
            report.flag(
                CHECKS[10],
                format!(
                    "PaymentIntent {} received {} of {} authorized",
                    intent.id, intent.amount_received_cents, intent.amount_cents
                ),
            );
        }
        if let Some(refunds) = refunded.get(intent.id.as_str()) {
            if refunds.cents > intent.amount_received_cents {
                report.flag(
                    CHECKS[15],
                    format!(
                        "PaymentIntent {} received {}, {} refunds for {}",
                        intent.id, intent.amount_received_cents, refunds.count, refunds.cents
                    ),
                );
            }
        }
    }
}

/// From ridepay's audit trail: at most one record finishing a ride with its
/// money settled, and each transition recorded once.
fn check_transitions(report: &mut AuditReport, records: &Records) {
    let mut finishing: BTreeMap<i64, i64> = BTreeMap::new();
    for record in &records.ride_records {
        if FINISHING.contains(&record.action.as_str()) {
            *finishing.entry(record.ride_id).or_default() += record.count;
        }
        let transition = record
            .action
            .strip_prefix("ride.")
            .is_some_and(|status| STATUSES.contains(&status));
        if transition && record.count > 1 {
            report.flag(
                CHECKS[17],
                format!(
                    "ride {}: {} records {}",
                    records.ride_named(record.ride_id),
                    record.count,
                    record.action
                ),
            );
        }
    }
    for (ride_id, count) in finishing.into_iter().filter(|(_, count)| *count > 1) {
        report.flag(
            CHECKS[9],
            format!(
                "ride {}: {count} records of {FINISHING:?}",
                records.ride_named(ride_id)
            ),
        );
    }
}

/// Against what the clients were told: a ride acknowledged completed is
/// captured for exactly the final fare sent (and its tip), one acknowledged
/// cancelled is cancelled with exactly the fee, at ridepay and at the
/// gateway; one acknowledged tipped has that tip, unless its hold was
/// released since (which drops it).
pub(super) fn check_acknowledged(
    report: &mut AuditReport,
    records: &Records,
    histories: &[KeyHistory],
) {
    let index = records.index();
    for history in histories {
        let acknowledged = history
            .first_final
            .as_ref()
            .is_some_and(|first| first.status == 200);
        if let (
            Request::Tip {
                ride_id,
                amount_cents,
            },
            true,
        ) = (&history.request, acknowledged)
        {
            check_acknowledged_tip(report, &index, &history.key, ride_id, *amount_cents);
            continue;
        }
        let (Some(ride_id), Some(captured), true) = (
            history.request.ride_id(),
            history.request.captured_cents(),
            acknowledged,
        ) else {
            continue;
        };
        let (check, statuses): (_, &[&str]) = match history.request {
            Request::Complete { .. } => (CHECKS[13], &["captured", "refunded"]),
            _ => (CHECKS[14], &["canceled"]),
        };
        let ride = index.ride_by_public_id.get(ride_id);
        let intent = ride.and_then(|ride| index.intent_of(ride));
        // A completion captures the tip the ride had with the fare.
        let captured = match history.request {
            Request::Complete { .. } => captured + ride.map_or(0, |ride| ride.tip_cents),
            _ => captured,
        };
        let done = ride.is_some_and(|ride| {
            statuses.contains(&ride.status.as_str()) && ride.fare_captured_cents() == captured
        }) && intent.is_some_and(|intent| intent.amount_received_cents == captured);
        if !done {
            report.flag(
                check,
                format!(
                    "{}: sent {captured} for ride {ride_id}, which is {:?} with {:?} captured, \
                     PaymentIntent received {:?}",
                    history.key,
                    ride.map(|ride| &ride.status),
                    ride.map(|ride| ride.amount_captured_cents),
                    intent.map(|intent| intent.amount_received_cents)
                ),
            );
        }
    }
}

fn check_acknowledged_tip(
    report: &mut AuditReport,
    index: &Index<'_>,
    key: &str,
    ride_id: &str,
    amount_cents: i64,
) {
    let ride = index.ride_by_public_id.get(ride_id);
    let dropped = ride.is_some_and(|ride| matches!(ride.status.as_str(), "canceled" | "expired"));
    if !dropped && ride.map(|ride| ride.tip_cents) != Some(amount_cents) {
        report.flag(
            CHECKS[19],
            format!(
                "{key}: tipped {amount_cents} on ride {ride_id}, which is {:?} with a tip of {:?}",
                ride.map(|ride| &ride.status),
                ride.map(|ride| ride.tip_cents)
            ),
        );
    }
}
