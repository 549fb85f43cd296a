//! The doubles' events, in `simulated_events`: recorded in the transaction
//! of the change they announce, as Stripe records an event with each
//! change, and sent at least once: the simulated gateway's to ridepay's own
//! event handling in-process, the fake Stripe's over HTTP, signed. A sender
//! takes a batch for a while and marks each event sent; one that is not
//! marked is taken again when the while is over.

use std::time::Duration;

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double as Double8, Text};

use crate::schema::simulated_events;

ridepay_diesel_helpers::text_enum! {
    /// Which double a record belongs to: each sends only its own events.
    pub enum Double {
        Simulated = "simulated",
        Fake = "fake",
    }
}

ridepay_diesel_helpers::text_enum! {
    /// What an event is about.
    pub enum ObjectKind {
        PaymentIntent = "payment_intent",
        Refund = "refund",
        /// A dispute of a PaymentIntent's charge; the id is the intent's.
        Dispute = "dispute",
        /// A connected account; Stripe sends its events to Connect
        /// endpoints, apart from the platform's own.
        Account = "account",
    }
}

/// An event to send.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
#[diesel(table_name = simulated_events, check_for_backend(diesel::pg::Pg))]
pub struct SimulatedEvent {
    pub id: String,
    pub seq: i64,
    pub event_type: String,
    pub object_kind: ObjectKind,
    pub object_id: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// Forgets events sent more than an hour ago, so a long-running double
/// does not keep them all.
pub fn forget_sent(conn: &mut PgConnection) -> QueryResult<usize> {
    diesel::delete(
        simulated_events::table
            .filter(simulated_events::sent_at.lt(chrono::Utc::now() - chrono::Duration::hours(1))),
    )
    .execute(conn)
}

/// A new event's id.
pub(super) fn new_id() -> String {
    format!("evt_sim_{}", uuid::Uuid::new_v4().simple())
}

/// Records an event, in the caller's transaction.
pub fn record(
    conn: &mut PgConnection,
    double: Double,
    event_type: &str,
    kind: ObjectKind,
    object_id: &str,
) -> QueryResult<()> {
    diesel::insert_into(simulated_events::table)
        .values((
            simulated_events::id.eq(new_id()),
            simulated_events::gateway.eq(double),
            simulated_events::event_type.eq(event_type),
            simulated_events::object_kind.eq(kind),
            simulated_events::object_id.eq(object_id),
        ))
        .execute(conn)?;
    Ok(())
}

/// Takes up to `limit` unsent events of `double`, oldest first, for
/// `hold`, in the order they were recorded: no other sender takes them
/// meanwhile.
pub fn take(
    conn: &mut PgConnection,
    double: Double,
    limit: i64,
    hold: Duration,
) -> QueryResult<Vec<SimulatedEvent>> {
    // Diesel's update cannot take a locking subquery.
    let mut events: Vec<SimulatedEvent> = diesel::sql_query(
        "UPDATE simulated_events SET sending_until = now() + make_interval(secs => $3) \
         WHERE id IN (SELECT id FROM simulated_events \
             WHERE gateway = $1 AND sent_at IS NULL \
                 AND (sending_until IS NULL OR sending_until < now()) \
             ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED) \
         RETURNING id, seq, event_type, object_kind, object_id, created_at",
    )
    .bind::<Text, _>(double.as_str())
    .bind::<BigInt, _>(limit)
    .bind::<Double8, _>(hold.as_secs_f64())
    .load(conn)?;
    events.sort_by_key(|event| event.seq);
    Ok(events)
}

pub fn mark_sent(conn: &mut PgConnection, id: &str) -> QueryResult<()> {
    diesel::update(simulated_events::table.find(id))
        .set(simulated_events::sent_at.eq(diesel::dsl::now))
        .execute(conn)?;
    Ok(())
}
