//! The checks of PaymentIntents, rides and what the clients saw.

use super::records::{Index, IntentRow, KeyRow, Records, DECLINED, SUCCEEDED};
use std::collections::BTreeMap;

use super::report::{AuditReport, CHECKS};
use crate::chaos::history::{Expected, KeyHistory, Request};

pub(crate) fn count_status(intents: &[IntentRow], status: &str) -> usize {
    intents.iter().filter(|i| i.status == status).count()
}

/// From the gateway's side: every PaymentIntent names a request, one per
/// request (the client key and what it asked: `ridepay_key`) and per ride,
/// each payment on a captured ride, each decline on a declined one, and
/// each one a ride records unless reconciliation released it.
pub(crate) fn check_intents(report: &mut AuditReport, records: &Records) {
    let rides_naming = records.rides_naming();
    let mut per_request: BTreeMap<&str, usize> = BTreeMap::new();
    for intent in &records.intents {
        let released = records.released.contains(&intent.id);
        match &intent.ridepay_key {
            // A payment released is no longer one of its request's.
            Some(_) if released => {}
            Some(ridepay_key) => *per_request.entry(ridepay_key).or_default() += 1,
            None => report.flag(CHECKS[0], format!("{} names no request", intent.id)),
        }
        let named_by = |status: &str| {
            rides_naming
                .get(intent.id.as_str())
                .is_some_and(|rides| rides.iter().any(|r| r.status == status))
        };
        let described = || {
            format!(
                "{} ({}, ridepay_key {})",
                intent.id,
                intent.status,
                intent.ridepay_key.as_deref().unwrap_or("?")
            )
        };
        let paid_by_a_ride = rides_naming
            .get(intent.id.as_str())
            .is_some_and(|rides| rides.iter().any(|r| r.paid()));
        if intent.status == SUCCEEDED && !paid_by_a_ride && !released {
            report.flag(CHECKS[1], described());
        }
        // A decline or a cancelled intent holds nothing.
        let holds_or_took = ![DECLINED, "canceled"].contains(&intent.status.as_str());
        if holds_or_took && !rides_naming.contains_key(intent.id.as_str()) && !released {
            report.flag(CHECKS[18], described());
        }
        if intent.status == DECLINED && !named_by("payment_declined") {
            report.flag(
                CHECKS[8],
                format!("{}: no declined ride names it", described()),
            );
        }
    }
    for (ridepay_key, count) in per_request.into_iter().filter(|(_, count)| *count > 1) {
        report.flag(
            CHECKS[0],
            format!("request {ridepay_key}: {count} PaymentIntents"),
        );
    }
    for (intent, rides) in rides_naming.iter().filter(|(_, rides)| rides.len() > 1) {
        let ids: Vec<String> = rides.iter().map(|r| r.public_id.to_string()).collect();
        report.flag(
            CHECKS[0],
            format!("PaymentIntent {intent} on rides {ids:?}"),
        );
    }
}

/// From ridepay's side: every PaymentIntent a ride names is the gateway's,
/// for the ride's amount (or the hold it was raised to), and a ride paid at
/// once is paid in full.
pub(crate) fn check_rides(report: &mut AuditReport, records: &Records) {
    let intent_by_id = records.intent_by_id();
    for ride in &records.rides {
        let intent = ride
            .payment_intent_id
            .as_deref()
            .map(|id| (id, intent_by_id.get(id)));
        match intent {
            Some((id, None)) => report.flag(
                CHECKS[2],
                format!(
                    "ride {} names PaymentIntent {id}, unknown to the gateway",
                    ride.public_id
                ),
            ),
            Some((_, Some(intent)))
                if intent.amount_cents != ride.amount_cents
                    && intent.amount_cents != ride.amount_authorized_cents =>
            {
                report.flag(
                    CHECKS[3],
                    format!(
                        "ride {} is {} but PaymentIntent {} is {}",
                        ride.public_id, ride.amount_cents, intent.id, intent.amount_cents
                    ),
                )
            }
            _ => {}
        }
        if ride.status != "captured" {
            continue;
        }
        match intent {
            Some((_, Some(intent))) if intent.status == SUCCEEDED => {
                let received = intent.amount_received_cents;
                // A completed ride is captured for its final fare, which
                // the lifecycle checks hold against what its client sent.
                let paid_at_once = ride.capture_method == "automatic";
                if paid_at_once
                    && (received, ride.fare_captured_cents())
                        != (ride.amount_cents, ride.amount_cents)
                {
                    report.flag(
                        CHECKS[3],
                        format!(
                            "ride {} is {}, captured {}; PaymentIntent {} received {received}",
                            ride.public_id,
                            ride.amount_cents,
                            ride.amount_captured_cents,
                            intent.id
                        ),
                    );
                }
            }
            Some((id, Some(intent))) => report.flag(
                CHECKS[2],
                format!(
                    "ride {} is captured but PaymentIntent {id} is {}",
                    ride.public_id, intent.status
                ),
            ),
            Some((_, None)) => {}
            None => report.flag(
                CHECKS[2],
                format!(
                    "ride {} is captured without a PaymentIntent",
                    ride.public_id
                ),
            ),
        }
    }
}

/// Against what the clients saw: every answer as the payment method implies,
/// stored and replayed as first given, and the ride behind a ride key's
/// answer as answered.
pub(crate) fn check_histories(
    report: &mut AuditReport,
    records: &Records,
    histories: &[KeyHistory],
) {
    let index = records.index();
    for history in histories {
        if let Some(mismatch) = &history.replay_mismatch {
            report.flag(CHECKS[5], format!("{}: {mismatch}", history.key));
        }
        let row = index.key_by_name.get(history.key.as_str()).copied();
        if let Request::Ride {
            amount_cents,
            expected,
        } = history.request
        {
            check_ride_key(report, &index, history, row, amount_cents, expected);
        }
        let Some(first) = &history.first_final else {
            continue;
        };
        // A hold that lapsed refuses a completion or cancellation (422).
        let lapsed = first.status == 422
            && history
                .request
                .ride_id()
                .and_then(|id| index.ride_by_public_id.get(id))
                .is_some_and(|ride| ride.status == "expired");
        if first.status != history.request.expected_status() && !lapsed {
            report.flag(
                CHECKS[7],
                format!(
                    "{}: {} {} for {:?}",
                    history.key,
                    first.status,
                    first.problem_slug().unwrap_or_default(),
                    history.request
                ),
            );
        }
        if let Some(row) = row {
            let stored_same = row.response_status == Some(first.status as i16)
                && row.response_body.as_deref() == Some(first.body.as_slice());
            if row.recovery_point == "finished" && !stored_same {
                report.flag(CHECKS[6], history.key.clone());
            }
        }
    }
}

/// A ride key: its ride for the amount asked, in a status the payment
/// method leads to, and, acknowledged, paid, held or declined as answered.
pub(crate) fn check_ride_key(
    report: &mut AuditReport,
    index: &Index,
    history: &KeyHistory,
    row: Option<&KeyRow>,
    amount_cents: i64,
    expected: Expected,
) {
    if let Some(ride) = row.and_then(|row| index.ride_by_key.get(&row.id)) {
        if ride.amount_cents != amount_cents {
            report.flag(
                CHECKS[3],
                format!(
                    "{}: asked {amount_cents}, ride {} has {}",
                    history.key, ride.public_id, ride.amount_cents
                ),
            );
        }
        let finished = row.is_some_and(|row| row.recovery_point == "finished");
        if finished && !expected.ride_statuses().contains(&ride.status.as_str()) {
            report.flag(
                CHECKS[7],
                format!(
                    "{}: ride {} is {} for {expected:?}",
                    history.key, ride.public_id, ride.status
                ),
            );
        }
    }
    let Some(first) = &history.first_final else {
        return;
    };
    // The ride the answer names, by the id as the answer spells it, is the
    // key's own.
    let answered = first
        .ride_id()
        .and_then(|id| index.ride_by_public_id.get(&id))
        .filter(|answered| row.is_some_and(|row| answered.idempotency_key_id == Some(row.id)));
    match (expected, first.status) {
        (Expected::Captured, 201) => {
            let paid = answered.is_some_and(|ride| {
                matches!(ride.status.as_str(), "captured" | "refunded")
                    && index.intent_of(ride).is_some_and(|intent| {
                        intent.status == SUCCEEDED
                            && intent.amount_received_cents == ride.amount_cents
                    })
            });
            if !paid {
                report.flag(
                    CHECKS[2],
                    format!("{}: ride {:?}", history.key, first.ride_id()),
                );
            }
        }
        (Expected::Authorized | Expected::AuthorizedNoRaise, 201) => {
            let held = first.text("status").as_deref() == Some("authorized")
                && answered.is_some_and(|ride| index.intent_of(ride).is_some());
            if !held {
                report.flag(
                    CHECKS[2],
                    format!(
                        "{}: ride {:?} answered {:?}",
                        history.key,
                        first.ride_id(),
                        first.text("status")
                    ),
                );
            }
        }
        (Expected::Declined, 402) => {
            let declined = answered.is_some_and(|ride| {
                ride.status == "payment_declined"
                    && index.intent_of(ride).is_some_and(|intent| {
                        intent.status == DECLINED && intent.amount_received_cents == 0
                    })
            });
            if !declined {
                report.flag(
                    CHECKS[8],
                    format!(
                        "{}: ride {:?} is {:?}, PaymentIntent {:?}",
                        history.key,
                        first.ride_id(),
                        answered.map(|ride| &ride.status),
                        answered.and_then(|ride| ride.payment_intent_id.as_deref())
                    ),
                );
            }
        }
        _ => {}
    }
}
