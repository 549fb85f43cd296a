//! A Stripe event, as far as ridepay reads it, and the `stripe_events` rows
//! that record each one once.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use crate::schema::stripe_events;

/// The event types whose charge ridepay fetches and reconciles.
pub const CHARGE_EVENTS: [&str; 5] = [
    "charge.succeeded",
    "charge.failed",
    "charge.refunded",
    "charge.refund.updated",
    "charge.dispute.created",
];

/// 9999-12-31T23:59:59Z.
const LATEST_CREATED: i64 = 253_402_300_799;

/// Text a `TEXT` column takes: 1 to 255 characters and no NUL, which
/// PostgreSQL refuses in text.
fn storable(text: &str) -> bool {
    (1..=255).contains(&text.chars().count()) && !text.contains('\0')
}

#[derive(Debug, Clone, Deserialize)]
struct Envelope {
    id: String,
    #[serde(rename = "type")]
    event_type: String,
    created: i64,
    data: Data,
}

#[derive(Debug, Clone, Deserialize)]
struct Data {
    object: Value,
}

/// An event's identity and the charge it is about. Nothing else of the
/// payload is trusted: the charge is fetched from the gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: String,
    pub event_type: String,
    pub created: DateTime<Utc>,
    /// For the charge events: the charge (the object itself, or for a refund
    /// or a dispute, the charge it belongs to).
    pub charge_id: Option<String>,
}

impl Event {
    pub fn parse(body: &[u8]) -> Option<Event> {
        let envelope: Envelope = serde_json::from_slice(body).ok()?;
        if !storable(&envelope.id) || !storable(&envelope.event_type) {
            return None;
        }
        // PostgreSQL's timestamps reach fewer years than chrono's: an event
        // time outside 1970 to 9999 is refused here, not by the database
        // (a 503 there would make the sender redeliver it forever).
        let created = Some(envelope.created)
            .filter(|created| (0..=LATEST_CREATED).contains(created))
            .and_then(|created| DateTime::from_timestamp(created, 0))?;
        let charge_id = if !CHARGE_EVENTS.contains(&envelope.event_type.as_str()) {
            None
        } else if envelope.event_type.starts_with("charge.refund.")
            || envelope.event_type.starts_with("charge.dispute.")
        {
            envelope
                .data
                .object
                .get("charge")?
                .as_str()
                .map(str::to_owned)
        } else {
            envelope.data.object.get("id")?.as_str().map(str::to_owned)
        };
        if charge_id.as_deref().is_some_and(|id| !storable(id)) {
            return None;
        }
        Some(Event {
            id: envelope.id,
            event_type: envelope.event_type,
            created,
            charge_id,
        })
    }

    /// A label of bounded cardinality for metrics.
    pub fn type_label(&self) -> &str {
        if CHARGE_EVENTS.contains(&self.event_type.as_str()) {
            &self.event_type
        } else {
            "other"
        }
    }
}

/// What became of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    Applied,
    /// Not a type ridepay acts on, or a charge it does not know.
    Ignored,
    /// A newer event about the same charge was applied already.
    Superseded,
    /// Recorded before: nothing changed.
    Duplicate,
}

impl Disposition {
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Applied => "applied",
            Disposition::Ignored => "ignored",
            Disposition::Superseded => "superseded",
            Disposition::Duplicate => "duplicate",
        }
    }
}

pub fn is_recorded(conn: &mut PgConnection, id: &str) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(stripe_events::table.find(id))).get_result(conn)
}

/// Records the event once; false when it already was (a concurrent
/// delivery of the same event won).
pub fn record(
    conn: &mut PgConnection,
    event: &Event,
    disposition: Disposition,
) -> QueryResult<bool> {
    let inserted = diesel::insert_into(stripe_events::table)
        .values((
            stripe_events::id.eq(&event.id),
            stripe_events::event_type.eq(&event.event_type),
            stripe_events::event_created.eq(event.created),
            stripe_events::charge_id.eq(&event.charge_id),
            stripe_events::result.eq(disposition.as_str()),
        ))
        .on_conflict_do_nothing()
        .execute(conn)?;
    Ok(inserted == 1)
}

pub fn set_disposition(
    conn: &mut PgConnection,
    id: &str,
    disposition: Disposition,
) -> QueryResult<()> {
    diesel::update(stripe_events::table.find(id))
        .set(stripe_events::result.eq(disposition.as_str()))
        .execute(conn)?;
    Ok(())
}

/// Whether an event about the same charge, created after this one, was
/// applied already.
pub fn newer_applied(conn: &mut PgConnection, event: &Event) -> QueryResult<bool> {
    let Some(charge_id) = &event.charge_id else {
        return Ok(false);
    };
    diesel::select(diesel::dsl::exists(
        stripe_events::table
            .filter(stripe_events::charge_id.eq(charge_id))
            .filter(stripe_events::event_created.gt(event.created))
            .filter(stripe_events::result.eq(Disposition::Applied.as_str())),
    ))
    .get_result(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_charge_of_each_kind_of_event_is_found() {
        let charge = br#"{"id": "evt_1", "type": "charge.succeeded", "created": 10, "data": {"object": {"id": "ch_1"}}}"#;
        let refund = br#"{"id": "evt_2", "type": "charge.refund.updated", "created": 10, "data": {"object": {"id": "re_1", "charge": "ch_1"}}}"#;
        let other = br#"{"id": "evt_3", "type": "customer.created", "created": 10, "data": {"object": {"id": "cus_1"}}}"#;
        assert_eq!(
            Event::parse(charge).unwrap().charge_id.as_deref(),
            Some("ch_1")
        );
        assert_eq!(
            Event::parse(refund).unwrap().charge_id.as_deref(),
            Some("ch_1")
        );
        let other = Event::parse(other).unwrap();
        assert_eq!(
            (other.charge_id.as_deref(), other.type_label()),
            (None, "other")
        );
        assert_eq!(Event::parse(b"{}"), None);
    }
}
