//! The phases of `POST /api/rides/{id}/cancel`: the ride taken for the key,
//! then its PaymentIntent cancelled (`requested_by_customer`: the hold is
//! released) or, with a fee, the fee captured from the hold (the rest is
//! released as with any capture).

use diesel::PgConnection;

use super::recovery_point::RecoveryPoint;
use super::request::CancelParams;
use crate::idempotency::{Lease, StoredResponse};
use crate::payments::{derived_key, CancelIntent, PaymentGateway};
use crate::problem::{Problem, ProblemKind};
use crate::rides::lifecycle::{self, Answer, Taking};
use crate::rides::model::{self, Ride, RideStatus};
use crate::rides::payment::{may_follow, settlement};
use crate::service_error::ServiceError;
use crate::validation::FieldError;

/// Name the effects in their derived gateway keys.
pub const CANCEL_KEY_PURPOSE: &str = "ride-cancel";
pub const FEE_KEY_PURPOSE: &str = "ride-cancellation-fee";

pub type CancelLease = Lease<RecoveryPoint>;

/// Started -> CancellationStarted: the ride, `authorized` (a fee at most
/// what the hold covers) or `requires_action` (no fee: nothing is held),
/// taken for the key.
pub fn begin(
    conn: &mut PgConnection,
    lease: &CancelLease,
    params: &CancelParams,
) -> Result<Ride, ServiceError> {
    let ride = lifecycle::take(
        conn,
        lease.user_id(),
        params.ride_id,
        lease.key_id(),
        &Taking {
            done: "cancelled",
            audit_action: "ride.cancellation_started",
            allowed: &[RideStatus::Authorized, RideStatus::RequiresAction],
            expired: ProblemKind::InvalidRideState,
        },
    )?;
    let fee = params.cancellation_fee_cents;
    let most = match ride.status {
        RideStatus::Authorized => ride.amount_authorized_cents,
        _ => 0,
    };
    if fee > most {
        return Err(ServiceError::Invalid(vec![FieldError::new(
            "cancellation_fee_cents",
            format!("must be at most {most}, what the ride's hold covers"),
        )]));
    }
    Ok(ride)
}

/// The cancellation at the gateway, or the fee's capture. Holds no
/// connection.
pub fn cancel(
    gateway: &dyn PaymentGateway,
    installation_id: uuid::Uuid,
    lease: &CancelLease,
    ride: &Ride,
    params: &CancelParams,
) -> Result<Answer, ServiceError> {
    if params.cancellation_fee_cents > 0 {
        return lifecycle::capture(
            gateway,
            installation_id,
            FEE_KEY_PURPOSE,
            lease.key_id(),
            ride,
            params.cancellation_fee_cents,
        );
    }
    let intent_id = lifecycle::intent_of(ride)?;
    let answer = gateway.cancel_intent(&CancelIntent {
        idempotency_key: derived_key(installation_id, CANCEL_KEY_PURPOSE, lease.key_id()),
        intent_id: intent_id.clone(),
        cancellation_reason: "requested_by_customer".to_owned(),
    });
    lifecycle::looked_into(gateway, &intent_id, answer)
}

/// CancellationStarted -> Finished: the ride `canceled` (200; a fee
/// captured). A cancellation the gateway refuses is a 422
/// `invalid-ride-state`, stored, and the ride takes the state the gateway
/// holds (`expired` for a hold that lapsed).
pub fn finish_canceled(
    conn: &mut PgConnection,
    ride: &Ride,
    lease: &CancelLease,
    answer: &Answer,
) -> Result<StoredResponse, ServiceError> {
    let refused = |detail: String| {
        Problem::new(ProblemKind::InvalidRideState, detail).with_extension("ride_id", ride.id)
    };
    match answer {
        Answer::Made(intent) => {
            lifecycle::finish_settled(conn, ride, lease.key_id(), RideStatus::Canceled, intent)
        }
        Answer::Lapsed(intent) => {
            lifecycle::expire(conn, ride, intent)?;
            Ok(StoredResponse::problem(&refused(format!(
                "ride {}'s hold lapsed before it was cancelled; nothing was charged",
                ride.id
            ))))
        }
        Answer::Refused(refusal, now) => {
            let stored = lifecycle::finish_refused(
                conn,
                ride,
                lease.key_id(),
                refused(refusal.to_string()),
            )?;
            if let Some(settled) = now.as_ref().and_then(|now| settlement(ride.status, now)) {
                model::settle(conn, ride.id, may_follow(settled.status), &settled)?;
            }
            Ok(stored)
        }
    }
}
