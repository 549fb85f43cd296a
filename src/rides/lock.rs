//! The per-key ride lock: a ride is taken by one key at a time
//! (`rides.settling_key_id`) to complete, cancel or tip it, so two keys
//! never act on one hold, and the gateway's events about its PaymentIntent
//! wait for the key that acts.

use diesel::prelude::*;
use serde_json::json;

use super::model::{Ride, RideStatus};
use crate::audit;
use crate::db::{recorded, CacheStatement};
use crate::ids::{KeyId, RideId, UserId};
use crate::public_ids::{named, PathId, RidePublicId};
use crate::schema::rides;
use crate::service_error::{Refusal, ServiceError};

/// What a key takes a ride for.
pub struct TakeRide {
    /// In the refusal: "only a ride authorized can be `verb`".
    pub verb: &'static str,
    /// The audit record of the taking.
    pub audit_action: &'static str,
    pub allowed: &'static [RideStatus],
    /// How a ride whose hold lapsed is refused.
    pub expired: Refusal,
}

/// The ride, the caller's, for `key` to complete or cancel: it must be in
/// one of the allowed statuses and taken by no other key. Taken, the
/// gateway's events about its PaymentIntent wait for the key to record what
/// it did. Refused here, in the claim's transaction: nothing is written,
/// the key not consumed. Another user's ride is not found, as a ride that
/// does not exist is.
pub fn take(
    conn: &mut PgConnection,
    user: UserId,
    ride_id: PathId<RidePublicId>,
    key: KeyId,
    taking: &TakeRide,
) -> Result<Ride, ServiceError> {
    // One array parameter (`= ANY`) whatever the statuses: one SQL text.
    let allowed: Vec<&str> = taking
        .allowed
        .iter()
        .map(|status| status.as_str())
        .collect();
    let taken = recorded(
        diesel::update(
            rides::table
                .filter(named!(rides, ride_id))
                .filter(rides::user_id.eq(user))
                .filter(rides::status.eq_any(allowed))
                .filter(
                    rides::settling_key_id
                        .is_null()
                        .or(rides::settling_key_id.eq(key)),
                ),
        )
        .set(rides::settling_key_id.eq(key))
        .returning(Ride::as_returning()),
    )
    .with(audit::of_changed(
        user,
        taking.audit_action,
        "ride",
        json!({ "idempotency_key_id": key }),
    ))
    .cached_as(take)
    .get_result::<Ride>(conn)
    .optional()?;
    match taken {
        Some(ride) => Ok(ride),
        None => Err(not_taken(conn, user, ride_id, taking)?),
    }
}

/// Why `take` found no ride to take.
fn not_taken(
    conn: &mut PgConnection,
    user: UserId,
    ride_id: PathId<RidePublicId>,
    taking: &TakeRide,
) -> Result<ServiceError, ServiceError> {
    let Some(ride) = super::reads::find_for_user(conn, user, ride_id)? else {
        return Ok(ServiceError::NotFound);
    };
    if ride.status == RideStatus::Expired {
        return Ok(ServiceError::refused(
            taking.expired,
            format!(
                "the card's authorization for ride {} lapsed; nothing was charged",
                ride.public_id
            ),
        ));
    }
    if !taking.allowed.contains(&ride.status) {
        return Ok(ServiceError::refused(
            Refusal::InvalidRideState,
            format!(
                "ride {} is {}; only a ride {} can be {}",
                ride.public_id,
                ride.status,
                taking
                    .allowed
                    .iter()
                    .map(|status| status.as_str())
                    .collect::<Vec<_>>()
                    .join(" or "),
                taking.verb
            ),
        ));
    }
    Ok(ServiceError::refused(
        Refusal::InvalidRideState,
        format!(
            "ride {} is being completed, cancelled or tipped by another request",
            ride.public_id
        ),
    ))
}

/// Gives the ride back, unchanged, when the key ends without settling it.
pub fn release(conn: &mut PgConnection, ride_id: RideId, key: KeyId) -> QueryResult<()> {
    diesel::update(
        rides::table
            .filter(rides::id.eq(ride_id))
            .filter(rides::settling_key_id.eq(key)),
    )
    .set(rides::settling_key_id.eq(None::<KeyId>))
    .execute(conn)?;
    Ok(())
}

/// The ride taken by `key`, as a key resumed past Started finds it: nothing
/// else changes a ride while a key has it taken.
pub fn taken(
    conn: &mut PgConnection,
    ride_id: PathId<RidePublicId>,
    key: KeyId,
) -> Result<Ride, ServiceError> {
    let ride: Ride = rides::table
        .filter(named!(rides, ride_id))
        .select(Ride::as_select())
        .for_update()
        .first(conn)?;
    if ride.settling_key_id != Some(key) {
        // Only the key's own lease holder releases it.
        return Err(ServiceError::LeaseLost);
    }
    Ok(ride)
}
