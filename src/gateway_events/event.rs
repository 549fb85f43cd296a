//! A Stripe event, as far as ridepay reads it, and the `stripe_events` rows
//! that record each one once.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use crate::payments::Payment;
use crate::schema::stripe_events;

/// The PaymentIntent events ridepay applies: each moves the ride by the
/// intent as the gateway holds it now.
pub const INTENT_EVENTS: [&str; 5] = [
    "payment_intent.succeeded",
    "payment_intent.amount_capturable_updated",
    "payment_intent.payment_failed",
    "payment_intent.canceled",
    "payment_intent.processing",
];

/// The refund events: Stripe sends `charge.refund.updated` up to API
/// version 2024-10-28 and `refund.updated` from then on; both are taken.
pub const REFUND_EVENTS: [&str; 3] = ["charge.refunded", "charge.refund.updated", "refund.updated"];

pub const DISPUTE_EVENT: &str = "charge.dispute.created";

/// The Connect events about a connected account (a driver's), which
/// name the account at the top level; each leads to the account fetched.
pub const ACCOUNT_EVENTS: [&str; 2] = ["account.updated", "capability.updated"];

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
    /// The connected account a Connect event is about.
    account: Option<String>,
    #[serde(default)]
    livemode: bool,
}

#[derive(Debug, Clone, Deserialize)]
struct Data {
    object: Value,
}

/// What an event is about, checked with the gateway before anything
/// changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A PaymentIntent's status.
    Intent(String),
    /// The refunds of a payment.
    Refunds(Payment),
    /// A dispute of a payment.
    Dispute(Payment),
    /// A connected account (`acct_...`).
    Account(String),
}

impl Subject {
    /// The id the event is recorded under.
    pub fn id(&self) -> &str {
        match self {
            Subject::Intent(id) | Subject::Account(id) => id,
            Subject::Refunds(payment) | Subject::Dispute(payment) => payment.id(),
        }
    }
}

/// An event's identity and what it is about. Nothing else of the payload
/// is trusted: the subject is fetched from the gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: String,
    pub event_type: String,
    pub created: DateTime<Utc>,
    /// None for a type ridepay does not act on.
    pub subject: Option<Subject>,
    /// Whether it happened in live mode (as opposed to test mode).
    pub livemode: bool,
}

/// The payment a refund, a charge or a dispute belongs to: its
/// PaymentIntent, or for a charge made through the Charges API, the charge.
fn payment_of(object: &Value, charge_field: &str) -> Option<Payment> {
    let text = |field: &str| object.get(field).and_then(Value::as_str).map(str::to_owned);
    match text("payment_intent") {
        Some(intent) => Some(Payment::Intent(intent)),
        None => text(charge_field).map(Payment::Charge),
    }
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
        let object = &envelope.data.object;
        let kind = envelope.event_type.as_str();
        let subject = if INTENT_EVENTS.contains(&kind) {
            Some(Subject::Intent(object.get("id")?.as_str()?.to_owned()))
        } else if kind == "charge.refunded" {
            Some(Subject::Refunds(payment_of(object, "id")?))
        } else if REFUND_EVENTS.contains(&kind) {
            Some(Subject::Refunds(payment_of(object, "charge")?))
        } else if kind == DISPUTE_EVENT {
            Some(Subject::Dispute(payment_of(object, "charge")?))
        } else if ACCOUNT_EVENTS.contains(&kind) {
            envelope.account.clone().map(Subject::Account)
        } else {
            None
        };
        if subject
            .as_ref()
            .is_some_and(|subject| !storable(subject.id()))
        {
            return None;
        }
        Some(Event {
            id: envelope.id,
            event_type: envelope.event_type,
            created,
            subject,
            livemode: envelope.livemode,
        })
    }

    /// A label of bounded cardinality for metrics.
    pub fn type_label(&self) -> &str {
        if self.subject.is_some() {
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
    /// Not a type ridepay acts on, or a payment it does not know.
    Ignored,
    /// Recorded before: nothing changed.
    Duplicate,
}

impl Disposition {
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Applied => "applied",
            Disposition::Ignored => "ignored",
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
            stripe_events::subject.eq(event.subject.as_ref().map(Subject::id)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subject_of_each_kind_of_event_is_found() {
        let subject = |body: &str| Event::parse(body.as_bytes()).map(|event| event.subject);
        let intent = |id: &str| Payment::Intent(id.to_owned());
        assert_eq!(
            subject(
                r#"{"id": "evt_1", "type": "payment_intent.succeeded", "created": 10, "data": {"object": {"id": "pi_1"}}}"#
            ),
            Some(Some(Subject::Intent("pi_1".to_owned())))
        );
        assert_eq!(
            subject(
                r#"{"id": "evt_2", "type": "charge.refunded", "created": 10, "data": {"object": {"id": "ch_1", "payment_intent": "pi_1"}}}"#
            ),
            Some(Some(Subject::Refunds(intent("pi_1"))))
        );
        assert_eq!(
            subject(
                r#"{"id": "evt_3", "type": "refund.updated", "created": 10, "data": {"object": {"id": "re_1", "charge": "ch_1", "payment_intent": null}}}"#
            ),
            Some(Some(Subject::Refunds(Payment::Charge("ch_1".to_owned()))))
        );
        assert_eq!(
            subject(
                r#"{"id": "evt_4", "type": "charge.dispute.created", "created": 10, "data": {"object": {"id": "dp_1", "charge": "ch_1", "payment_intent": "pi_1"}}}"#
            ),
            Some(Some(Subject::Dispute(intent("pi_1"))))
        );
        assert_eq!(
            subject(
                r#"{"id": "evt_6", "type": "account.updated", "created": 10, "account": "acct_1", "data": {"object": {"id": "acct_1"}}}"#
            ),
            Some(Some(Subject::Account("acct_1".to_owned())))
        );
        // Not a Connect event: no account named.
        assert_eq!(
            subject(
                r#"{"id": "evt_7", "type": "account.updated", "created": 10, "data": {"object": {"id": "acct_1"}}}"#
            ),
            Some(None)
        );
        let other = Event::parse(br#"{"id": "evt_5", "type": "customer.created", "created": 10, "data": {"object": {"id": "cus_1"}}}"#).unwrap();
        assert_eq!((&other.subject, other.type_label()), (&None, "other"));
        assert_eq!(Event::parse(b"{}"), None);
    }
}
