//! The checks of the webhooks the user's receiver took: every one verified,
//! every event of every ride delivered at least once (order is not
//! promised), the highest sequence delivered per ride carrying the ride as
//! it ended, and nothing delivered to another user's receiver; and of the
//! installation's receipts: every capture, cancellation and tip of every
//! user's rides delivered and verified, and nothing else.

use std::collections::{HashMap, HashSet};

use diesel::sql_types::{BigInt, Bytea, Text};
use diesel::{PgConnection, QueryableByName, RunQueryDsl};
use ridepay::public_ids::RidePublicId;
use serde_json::Value;

use super::report::{AuditReport, CHECKS};
use crate::chaos::receiver::Taken;

#[derive(QueryableByName)]
struct EventRow {
    #[diesel(sql_type = Text)]
    id: String,
}

#[derive(QueryableByName)]
struct RideRow {
    /// The id events name the ride by, as the API spells it.
    #[diesel(sql_type = Bytea)]
    public_id: RidePublicId,
    #[diesel(sql_type = BigInt)]
    event_sequence: i64,
    #[diesel(sql_type = diesel::sql_types::Jsonb)]
    ride: Value,
}

/// The events of a ride that go to the platform's destinations alone.
const PLATFORM_ONLY: &str = "'ride.driver_paid', 'ride.driver_transfer_failed'";

/// What of a ride the audit holds its last event to: fields the API renders
/// straight from the ride's columns of the same names.
const FINAL_FIELDS: [&str; 4] = [
    "status",
    "amount_captured_cents",
    "amount_refunded_cents",
    "tip_cents",
];

pub(super) fn check_webhooks(
    report: &mut AuditReport,
    conn: &mut PgConnection,
    user_id: i64,
    taken: &[Taken],
    bystanders: &[Taken],
) -> anyhow::Result<()> {
    let mut delivered: HashSet<String> = HashSet::new();
    // Per ride, by its id as the events spell it (`ride_...`): the highest
    // sequence delivered, and the ride it carried.
    let mut last: HashMap<String, (i64, Value)> = HashMap::new();
    for delivery in taken {
        if let Err(why) = &delivery.verified {
            report.flag(CHECKS[20], why.clone());
            continue;
        }
        let event: Value = serde_json::from_slice(&delivery.body)?;
        delivered.insert(event["id"].as_str().unwrap_or_default().to_owned());
        let (Some(ride_id), Some(sequence)) = (
            event["data"]["ride"]["id"].as_str(),
            event["sequence"].as_i64(),
        ) else {
            continue;
        };
        let entry = last.entry(ride_id.to_owned()).or_insert((0, Value::Null));
        if sequence > entry.0 {
            *entry = (sequence, event["data"]["ride"].clone());
        }
    }
    let events: Vec<EventRow> = diesel::sql_query(format!(
        "SELECT id FROM webhook_events WHERE user_id = $1 AND ride_id IS NOT NULL \
         AND type NOT IN ({PLATFORM_ONLY})"
    ))
    .bind::<BigInt, _>(user_id)
    .load(conn)?;
    report.webhook_events = events.len();
    report.webhook_deliveries_taken = taken.len();
    for event in events.iter().filter(|event| !delivered.contains(&event.id)) {
        report.flag(CHECKS[21], event.id.clone());
    }
    let fields: Vec<String> = FINAL_FIELDS
        .iter()
        .map(|field| format!("'{field}', {field}"))
        .collect();
    // The ride's last event its user's destination receives: a driver's
    // pay counts in the ride's sequence, but goes to the platform alone.
    let rides: Vec<RideRow> = diesel::sql_query(format!(
        "SELECT public_id, \
             (SELECT coalesce(max(e.sequence), 0) FROM webhook_events AS e \
              WHERE e.ride_id = rides.id AND e.type NOT IN ({PLATFORM_ONLY})) AS event_sequence, \
             jsonb_build_object({}) AS ride FROM rides \
         WHERE user_id = $1 AND event_sequence > 0",
        fields.join(", ")
    ))
    .bind::<BigInt, _>(user_id)
    .load(conn)?;
    for ride in rides {
        let (sequence, sent) = last
            .remove(&ride.public_id.to_string())
            .unwrap_or((0, Value::Null));
        let same = FINAL_FIELDS
            .iter()
            .all(|field| sent[field] == ride.ride[field]);
        if sequence != ride.event_sequence || !same {
            report.flag(
                CHECKS[22],
                format!(
                    "ride {}: last event {sequence} of {}, carrying {:?}, ride {:?}",
                    ride.public_id, ride.event_sequence, sent["status"], ride.ride["status"]
                ),
            );
        }
    }
    for stray in bystanders {
        report.flag(
            CHECKS[23],
            String::from_utf8_lossy(&stray.body)
                .chars()
                .take(200)
                .collect(),
        );
    }
    Ok(())
}

/// The event types the installation's receipts destination takes.
const RECEIPT_TYPES: [&str; 3] = ["ride.captured", "ride.canceled", "ride.tipped"];

pub(super) fn check_receipts(
    report: &mut AuditReport,
    conn: &mut PgConnection,
    taken: &[Taken],
) -> anyhow::Result<()> {
    let mut delivered: HashSet<String> = HashSet::new();
    for delivery in taken {
        let event: Value = serde_json::from_slice(&delivery.body)?;
        let kind = event["type"].as_str().unwrap_or_default();
        match &delivery.verified {
            Err(why) => report.flag(CHECKS[24], format!("unverified: {why}")),
            Ok(()) if !RECEIPT_TYPES.contains(&kind) => {
                report.flag(CHECKS[24], format!("{kind} sent as a receipt"))
            }
            Ok(()) => {
                delivered.insert(event["id"].as_str().unwrap_or_default().to_owned());
            }
        }
    }
    let events: Vec<EventRow> = diesel::sql_query(
        "SELECT id FROM webhook_events WHERE ride_id IS NOT NULL AND type = ANY($1)",
    )
    .bind::<diesel::sql_types::Array<Text>, _>(&RECEIPT_TYPES[..])
    .load(conn)?;
    report.receipt_events = events.len();
    report.receipts_taken = taken.len();
    for event in events.iter().filter(|event| !delivered.contains(&event.id)) {
        report.flag(CHECKS[24], format!("{} never delivered", event.id));
    }
    Ok(())
}
