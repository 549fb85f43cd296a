//! The `refunds` table, and the refunded amount and status of a ride they
//! change.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde::Deserialize;

use crate::db::CacheStatement;
use crate::public_ids::{named, PathId, RefundPublicId, RidePublicId};

use crate::ids::{KeyId, RefundId, RideId, UserId};
use crate::payments::{Payment, RefundState};
use crate::rides::model::{Ride, RideStatus};
use crate::schema::{refunds, rides};
use crate::wire::refund::{RefundEventJson, RefundJson, RefundPartJson};

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

/// A refund of (part of) a ride's payment: a whole refund, or the first
/// part of one that a second part (`part_of`) completes. Read from its
/// row, or from the row an event staged (`to_jsonb`).
#[derive(Debug, Clone, Queryable, Selectable, Deserialize)]
#[diesel(table_name = refunds, check_for_backend(diesel::pg::Pg))]
pub struct Refund {
    /// The row's key, for joins; the API never shows it.
    pub id: RefundId,
    /// The id the API shows, derived from the request that made the
    /// refund; a second part carries its refund's.
    pub public_id: RefundPublicId,
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
    /// The refund this is the second part of.
    pub part_of: Option<RefundId>,
    /// The PaymentIntent it gives money back from: the fare's or the tip's
    /// (null for refunds made before tips, of the ride's own payment).
    pub payment_intent_id: Option<String>,
}

impl Refund {
    /// The part as its events carry it, under its refund's id, with its
    /// ride's.
    pub fn event_json(&self, ride_id: RidePublicId) -> RefundEventJson<'_> {
        RefundEventJson {
            id: self.public_id,
            ride_id,
            amount_cents: self.amount_cents,
            currency: &self.currency,
            reason: self.reason.as_deref(),
            status: self.status.as_str(),
            payment_intent_id: self.payment_intent_id.as_deref(),
            gateway_refund_id: self.gateway_refund_id.as_deref(),
            created_at: self.created_at,
        }
    }

    /// What the part gives money back from.
    pub fn payment(&self, ride: &Ride) -> Option<Payment> {
        match &self.payment_intent_id {
            Some(intent) => Some(Payment::Intent(intent.clone())),
            // A ride paid through the Charges API: its charge.
            None => match (&ride.payment_intent_id, &ride.charge_id) {
                (Some(intent), _) => Some(Payment::Intent(intent.clone())),
                (None, charge) => charge.clone().map(Payment::Charge),
            },
        }
    }

    fn part_json(&self) -> RefundPartJson<'_> {
        RefundPartJson {
            payment_intent_id: self.payment_intent_id.as_deref(),
            amount_cents: self.amount_cents,
            status: self.status.as_str(),
            gateway_refund_id: self.gateway_refund_id.as_deref(),
        }
    }
}

/// A refund as the API shows it: its first part, and the second when it
/// was split between the fare's PaymentIntent and the tip's.
#[derive(Debug, Clone)]
pub struct RefundWithParts {
    pub first: Refund,
    pub second: Option<Refund>,
    /// Its ride's id, as the API shows it.
    pub ride_id: RidePublicId,
}

impl serde::Serialize for RefundWithParts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json().serialize(serializer)
    }
}

impl RefundWithParts {
    fn parts(&self) -> impl Iterator<Item = &Refund> {
        std::iter::once(&self.first).chain(&self.second)
    }

    /// Pending while any part is; succeeded (or canceled) when every part
    /// is; otherwise failed, the parts saying what moved.
    fn status(&self) -> RefundStatus {
        let statuses: Vec<RefundStatus> = self.parts().map(|part| part.status).collect();
        if statuses.contains(&RefundStatus::Pending) {
            RefundStatus::Pending
        } else if statuses.iter().all(|status| *status == statuses[0]) {
            statuses[0]
        } else {
            RefundStatus::Failed
        }
    }

    /// The refund as the API shows it.
    pub fn json(&self) -> RefundJson<'_> {
        let first = &self.first;
        RefundJson {
            id: first.public_id,
            ride_id: self.ride_id,
            amount_cents: self.parts().map(|part| part.amount_cents).sum(),
            currency: &first.currency,
            reason: first.reason.as_deref(),
            status: self.status().as_str(),
            gateway_refund_id: first.gateway_refund_id.as_deref(),
            parts: self.parts().map(Refund::part_json).collect(),
            created_at: first.created_at,
        }
    }
}

#[derive(Debug, Insertable)]
#[diesel(table_name = refunds)]
// NULL, not DEFAULT, for a `None`: one SQL text whatever the refund (db::cached).
#[diesel(treat_none_as_default_value = false)]
pub struct NewRefund<'a> {
    pub public_id: RefundPublicId,
    pub ride_id: RideId,
    pub user_id: UserId,
    pub idempotency_key_id: Option<KeyId>,
    pub amount_cents: i64,
    pub currency: &'a str,
    pub reason: Option<&'a str>,
    pub status: RefundStatus,
    pub gateway_refund_id: Option<&'a str>,
    pub part_of: Option<RefundId>,
    pub payment_intent_id: Option<&'a str>,
}

/// Inserts the refund (or part); `None` if its id is taken by another
/// refund.
pub fn insert(conn: &mut PgConnection, refund: &NewRefund<'_>) -> QueryResult<Option<Refund>> {
    diesel::insert_into(refunds::table)
        .values(refund)
        .on_conflict(refunds::public_id)
        .filter_target(refunds::part_of.is_null())
        .do_nothing()
        .returning(Refund::as_returning())
        .cached_as(insert)
        .get_result(conn)
        .optional()
}

/// The refund created under an idempotency key row.
pub fn find_by_key(conn: &mut PgConnection, key_id: KeyId) -> QueryResult<Refund> {
    refunds::table
        .filter(refunds::idempotency_key_id.eq(key_id))
        .select(Refund::as_select())
        .first(conn)
}

/// The second part of a refund, if it was split.
pub fn second_part(conn: &mut PgConnection, first: RefundId) -> QueryResult<Option<Refund>> {
    refunds::table
        .filter(refunds::part_of.eq(first))
        .select(Refund::as_select())
        .first(conn)
        .optional()
}

/// A refund of `ride` with its second part, if any.
pub fn with_parts(
    conn: &mut PgConnection,
    ride: &Ride,
    first: Refund,
) -> QueryResult<RefundWithParts> {
    let second = second_part(conn, first.id)?;
    Ok(RefundWithParts {
        first,
        second,
        ride_id: ride.public_id,
    })
}

/// One refund of the ride (one of the caller's): a second part is not one.
pub fn find_of_ride(
    conn: &mut PgConnection,
    ride: &Ride,
    id: PathId<RefundPublicId>,
) -> QueryResult<Option<RefundWithParts>> {
    refunds::table
        .filter(named!(refunds, id))
        .filter(refunds::ride_id.eq(ride.id))
        .filter(refunds::part_of.is_null())
        .select(Refund::as_select())
        .first(conn)
        .optional()?
        .map(|first| with_parts(conn, ride, first))
        .transpose()
}

/// A ride's refunds, oldest first, each with its parts.
pub fn list_for_ride(conn: &mut PgConnection, ride: &Ride) -> QueryResult<Vec<RefundWithParts>> {
    let rows: Vec<Refund> = refunds::table
        .filter(refunds::ride_id.eq(ride.id))
        .order(refunds::id.asc())
        .select(Refund::as_select())
        .load(conn)?;
    let (firsts, seconds): (Vec<Refund>, Vec<Refund>) =
        rows.into_iter().partition(|row| row.part_of.is_none());
    Ok(firsts
        .into_iter()
        .map(|first| RefundWithParts {
            second: seconds
                .iter()
                .find(|second| second.part_of == Some(first.id))
                .cloned(),
            first,
            ride_id: ride.public_id,
        })
        .collect())
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

/// `lock_ride` for the user's ride a path names.
pub fn lock_named_ride(
    conn: &mut PgConnection,
    user: UserId,
    id: PathId<RidePublicId>,
) -> QueryResult<Option<Ride>> {
    rides::table
        .filter(named!(rides, id))
        .filter(rides::user_id.eq(user))
        .select(Ride::as_select())
        .for_update()
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

/// What remains to refund of a ride, by PaymentIntent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remaining {
    /// Of the fare's payment (with a tip the completion captured with it).
    pub fare_cents: i64,
    /// Of the tip's own PaymentIntent, for a tip after the capture.
    pub tip_cents: i64,
}

impl Remaining {
    pub fn total(self) -> i64 {
        self.fare_cents + self.tip_cents
    }
}

/// What remains to refund of a ride: what was captured, less what was
/// refunded, less what pending refunds have reserved; the tip's own
/// PaymentIntent apart from the fare's. Call with the ride locked.
pub fn remaining_cents(conn: &mut PgConnection, ride: &Ride) -> QueryResult<Remaining> {
    let taken: Vec<(String, i64, Option<String>)> = refunds::table
        .filter(refunds::ride_id.eq(ride.id))
        .filter(refunds::status.eq_any([
            RefundStatus::Pending.as_str(),
            RefundStatus::Succeeded.as_str(),
        ]))
        .select((
            refunds::status,
            refunds::amount_cents,
            refunds::payment_intent_id,
        ))
        .load(conn)?;
    let reserved: i64 = taken
        .iter()
        .filter(|(status, ..)| status == RefundStatus::Pending.as_str())
        .map(|(_, amount, _)| amount)
        .sum();
    let total = ride.amount_captured_cents - ride.amount_refunded_cents - reserved;
    let tip_cents = match &ride.tip_payment_intent_id {
        Some(tip_intent) => {
            let of_tip: i64 = taken
                .iter()
                .filter(|(_, _, intent)| intent.as_ref() == Some(tip_intent))
                .map(|(_, amount, _)| amount)
                .sum();
            ride.tip_cents - of_tip
        }
        None => 0,
    };
    Ok(Remaining {
        fare_cents: total - tip_cents,
        tip_cents,
    })
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
