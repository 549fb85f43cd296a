//! The `refunds` table, and the refunded amount and status of a ride they
//! change.

use chrono::{DateTime, Utc};
use diesel::prelude::*;

use crate::db::CacheStatement;

use crate::ids::{KeyId, RefundId, RideId, UserId};
use crate::payments::RefundState;
use crate::rides::model::{Ride, RideStatus};
use crate::schema::{refunds, rides};
use crate::wire::refund::RefundJson;

ridepay_diesel_helpers::text_enum! {
    /// A refund's status, stored as text (with a CHECK).
    pub enum RefundStatus {
        /// Created and its amount reserved; the gateway has not confirmed it.
        Pending = "pending",
        Succeeded = "succeeded",
        /// The gateway refused it, or it failed after it was accepted (even
        /// after succeeding): the amount is given back to the ride.
        Failed = "failed",
        /// Cancelled at the gateway before it settled: nothing refunded.
        Canceled = "canceled",
    }
}

impl RefundStatus {
    /// A gateway refund's status, as ridepay records it.
    pub fn of(state: RefundState) -> RefundStatus {
        match state {
            RefundState::Pending | RefundState::RequiresAction => RefundStatus::Pending,
            RefundState::Succeeded => RefundStatus::Succeeded,
            RefundState::Failed => RefundStatus::Failed,
            RefundState::Canceled => RefundStatus::Canceled,
        }
    }

    /// Whether `next` may follow: a refund only settles, and a success may
    /// still fail; nothing comes back from failed or canceled.
    pub fn may_become(self, next: RefundStatus) -> bool {
        use RefundStatus::*;
        matches!(
            (self, next),
            (Pending, Succeeded | Failed | Canceled) | (Succeeded, Failed | Canceled)
        )
    }
}

/// A refund of (part of) a ride's charge.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = refunds, check_for_backend(diesel::pg::Pg))]
pub struct Refund {
    pub id: RefundId,
    pub ride_id: RideId,
    pub user_id: UserId,
    pub idempotency_key_id: Option<KeyId>,
    pub amount_cents: i64,
    pub currency: String,
    /// `requested_by_customer`, `duplicate`, `fraudulent`, or null.
    pub reason: Option<String>,
    /// `pending` (its amount reserved until the gateway settles it),
    /// `succeeded`, `failed` or `canceled`.
    pub status: RefundStatus,
    /// The gateway's refund, once made.
    pub gateway_refund_id: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl serde::Serialize for Refund {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json().serialize(serializer)
    }
}

impl Refund {
    /// The refund as the API shows it.
    pub fn json(&self) -> RefundJson<'_> {
        RefundJson {
            id: self.id,
            ride_id: self.ride_id,
            amount_cents: self.amount_cents,
            currency: &self.currency,
            reason: self.reason.as_deref(),
            status: self.status.as_str(),
            gateway_refund_id: self.gateway_refund_id.as_deref(),
            created_at: self.created_at,
        }
    }
}

#[derive(Debug, Insertable)]
#[diesel(table_name = refunds)]
// NULL, not DEFAULT, for a `None`: one SQL text whatever the refund (db::cached).
#[diesel(treat_none_as_default_value = false)]
pub struct NewRefund<'a> {
    pub ride_id: RideId,
    pub user_id: UserId,
    pub idempotency_key_id: Option<KeyId>,
    pub amount_cents: i64,
    pub currency: &'a str,
    pub reason: Option<&'a str>,
    pub status: RefundStatus,
    pub gateway_refund_id: Option<&'a str>,
}

pub fn insert(conn: &mut PgConnection, refund: &NewRefund<'_>) -> QueryResult<Refund> {
    diesel::insert_into(refunds::table)
        .values(refund)
        .returning(Refund::as_returning())
        .cached_as(insert)
        .get_result(conn)
}

/// The refund created under an idempotency key row.
pub fn find_by_key(conn: &mut PgConnection, key_id: KeyId) -> QueryResult<Refund> {
    refunds::table
        .filter(refunds::idempotency_key_id.eq(key_id))
        .select(Refund::as_select())
        .first(conn)
}

/// One refund of one of the user's rides.
pub fn find_for_user(
    conn: &mut PgConnection,
    user_id: UserId,
    ride_id: RideId,
    id: RefundId,
) -> QueryResult<Option<Refund>> {
    refunds::table
        .filter(refunds::id.eq(id))
        .filter(refunds::ride_id.eq(ride_id))
        .filter(refunds::user_id.eq(user_id))
        .select(Refund::as_select())
        .first(conn)
        .optional()
}

/// A ride's refunds, oldest first.
pub fn list_for_ride(conn: &mut PgConnection, ride_id: RideId) -> QueryResult<Vec<Refund>> {
    refunds::table
        .filter(refunds::ride_id.eq(ride_id))
        .order(refunds::id.asc())
        .select(Refund::as_select())
        .load(conn)
}

/// A gateway refund already recorded (made by ridepay, or learnt before).
pub fn find_by_gateway_id(
    conn: &mut PgConnection,
    gateway_refund_id: &str,
) -> QueryResult<Option<Refund>> {
    refunds::table
        .filter(refunds::gateway_refund_id.eq(gateway_refund_id))
        .select(Refund::as_select())
        .first(conn)
        .optional()
}

/// Locks the ride's row for the rest of the transaction: every change to
/// what remains to refund (a new refund, a refund recorded, a webhook) takes
/// this lock first, so concurrent ones are serialised.
pub fn lock_ride(conn: &mut PgConnection, ride_id: RideId) -> QueryResult<Ride> {
    rides::table
        .find(ride_id)
        .select(Ride::as_select())
        .for_update()
        .first(conn)
}

/// What remains to refund of a ride: what was captured, less what was
/// refunded, less what pending refunds have reserved. Call with the ride
/// locked.
pub fn remaining_cents(conn: &mut PgConnection, ride: &Ride) -> QueryResult<i64> {
    let reserved: i64 = refunds::table
        .filter(refunds::ride_id.eq(ride.id))
        .filter(refunds::status.eq(RefundStatus::Pending.as_str()))
        .select(refunds::amount_cents)
        .load::<i64>(conn)?
        .into_iter()
        .sum();
    Ok(ride.amount_captured_cents - ride.amount_refunded_cents - reserved)
}

/// Moves a refund from `from` to `status` (the same status, to record the
/// gateway's id of a refund still pending).
pub fn settle(
    conn: &mut PgConnection,
    refund_id: RefundId,
    from: RefundStatus,
    status: RefundStatus,
    gateway_refund_id: Option<&str>,
) -> QueryResult<Refund> {
    diesel::update(
        refunds::table
            .filter(refunds::id.eq(refund_id))
            .filter(refunds::status.eq(from.as_str())),
    )
    .set((
        refunds::status.eq(status.as_str()),
        refunds::gateway_refund_id.eq(gateway_refund_id),
        refunds::updated_at.eq(diesel::dsl::now),
    ))
    .returning(Refund::as_returning())
    .cached_as(settle)
    .get_result(conn)
}

/// Adds a refund made at the gateway to the ride (locked by the caller), or
/// with a negative amount takes back one that failed after it succeeded:
/// the refunded amount changes, and the ride is `refunded` exactly when
/// nothing of what was captured remains. The CHECK `amount_refunded_cents
/// <= amount_captured_cents` is the last guard against refunding more than
/// was captured.
pub fn add_refunded(
    conn: &mut PgConnection,
    ride_id: RideId,
    amount_cents: i64,
) -> QueryResult<Ride> {
    let ride: Ride = diesel::update(rides::table.find(ride_id))
        .set((
            rides::amount_refunded_cents.eq(rides::amount_refunded_cents + amount_cents),
            rides::updated_at.eq(diesel::dsl::now),
        ))
        .returning(Ride::as_returning())
        .cached_as(add_refunded)
        .get_result(conn)?;
    let all = ride.amount_refunded_cents == ride.amount_captured_cents;
    match ride.status {
        RideStatus::Captured if all => mark(conn, ride_id, RideStatus::Refunded),
        RideStatus::Refunded if !all => mark(conn, ride_id, RideStatus::Captured),
        _ => Ok(ride),
    }
}

fn mark(conn: &mut PgConnection, ride_id: RideId, status: RideStatus) -> QueryResult<Ride> {
    diesel::update(rides::table.find(ride_id))
        .set(rides::status.eq(status.as_str()))
        .returning(Ride::as_returning())
        .cached_as(mark)
        .get_result(conn)
}

/// What the gateway says of a refund, applied to the ridepay refund that
/// records it (the ride locked by the caller): the status moves on only
/// forward, and the ride's refunded amount follows.
pub fn follow(
    conn: &mut PgConnection,
    refund: &Refund,
    state: RefundState,
    gateway_refund_id: &str,
) -> QueryResult<()> {
    let next = RefundStatus::of(state);
    let unrecorded = next == refund.status && refund.gateway_refund_id.is_none();
    if !(unrecorded || refund.status.may_become(next)) {
        return Ok(());
    }
    settle(
        conn,
        refund.id,
        refund.status,
        next,
        Some(gateway_refund_id),
    )?;
    match (refund.status, next) {
        (RefundStatus::Pending, RefundStatus::Succeeded) => {
            add_refunded(conn, refund.ride_id, refund.amount_cents)?;
        }
        (RefundStatus::Succeeded, _) => {
            add_refunded(conn, refund.ride_id, -refund.amount_cents)?;
            log::warn!(
                "refund {} of ride {} ended {next} after it succeeded: its {} is given back",
                gateway_refund_id,
                refund.ride_id,
                refund.amount_cents
            );
        }
        _ => {}
    }
    Ok(())
}
