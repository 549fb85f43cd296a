//! `POST /api/rides/{id}/cancel` on the idempotency flow: the ride taken
//! for the key (Started), then its PaymentIntent cancelled
//! (`requested_by_customer`: the hold is released) or, with a fee, the fee
//! captured from the hold, the rest released as with any capture
//! (CancellationStarted).

use diesel::PgConnection;
use serde::{Deserialize, Serialize};

use crate::context::ServiceContext;
use crate::idempotency::{
    CallOf, Called, Endpoint, Finishing, FoundOf, Lease, StoredResponse, Transition, TransitionOf,
};
use crate::payments::{gateway_key, CancelIntent, IntentStatus, PaymentGateway};
use crate::public_ids::{PathId, RidePublicId};
use crate::rides::lock::{self, TakeRide};
use crate::rides::model::{self, Ride, RideStatus, MAX_AMOUNT_CENTS};
use crate::rides::settle::{self, HoldOutcome};
use crate::rides::transitions::{may_follow, settlement};
use crate::service_error::{Refusal, ServiceError};
use crate::validation::{parse_body, FieldError};
use crate::wire;
use crate::wire::problem::{Problem, ProblemKind};
use crate::wire::ride_actions::CancelBody;

crate::recovery_points! {
    /// How far a cancellation has got. A retry (or the completer) resumes
    /// here.
    pub enum RecoveryPoint for "rides.cancel" {
        /// The ride is the key's to cancel; the PaymentIntent may or may not
        /// have been cancelled (or its fee captured).
        CancellationStarted = "cancellation_started", call "cancel";
    }
}

/// A validated cancellation. Its JSON form is the canonical request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelParams {
    // In sorted order, as the canonical form needs.
    pub cancellation_fee_cents: i64,
    pub ride_id: PathId<RidePublicId>,
}

impl CancelParams {
    pub fn parse(
        ride_id: PathId<RidePublicId>,
        body: &[u8],
    ) -> Result<CancelParams, Vec<FieldError>> {
        let fee = if body.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            parse_body::<CancelBody>(body, expected)
                .map_err(|err| vec![err])?
                .cancellation_fee_cents
        };
        match fee.unwrap_or(0) {
            fee if !(0..=MAX_AMOUNT_CENTS).contains(&fee) => Err(vec![FieldError::new(
                "cancellation_fee_cents",
                format!("must be between 0 and {MAX_AMOUNT_CENTS} (minor units)"),
            )]),
            cancellation_fee_cents => Ok(CancelParams {
                cancellation_fee_cents,
                ride_id,
            }),
        }
    }
}

fn expected(field: &str) -> Option<&'static str> {
    (field == "cancellation_fee_cents").then_some("must be an integer number of minor units")
}

/// The endpoint. Its steps hand on the ride the key took.
pub struct CancelEndpoint;

impl Endpoint for CancelEndpoint {
    type Point = RecoveryPoint;
    type Params = CancelParams;
    type Context = ServiceContext;
    type Known = Ride;
    type Answer = HoldOutcome;

    fn start(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &CancelLease,
        params: &CancelParams,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        Ok(Transition::Advance(
            RecoveryPoint::CancellationStarted,
            begin(conn, lease, params)?,
        ))
    }

    fn load(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &CancelLease,
        params: &CancelParams,
        _point: RecoveryPoint,
    ) -> Result<Ride, ServiceError> {
        lock::taken(conn, params.ride_id, lease.key_id())
    }

    /// Holds no pooled connection while the gateway works.
    fn call(
        cx: &ServiceContext,
        lease: &CancelLease,
        params: &CancelParams,
        _point: RecoveryPoint,
        ride: Ride,
    ) -> Result<CallOf<Self>, ServiceError> {
        let answer = cancel(cx.gateway.as_ref(), lease, &ride, params)?;
        Ok(Called::Answered(ride, answer))
    }

    /// The cancellation or the fee's capture, judged from the
    /// PaymentIntent now.
    fn look_up(
        cx: &ServiceContext,
        _lease: &CancelLease,
        params: &CancelParams,
        _point: RecoveryPoint,
        ride: Ride,
    ) -> Result<FoundOf<Self>, ServiceError> {
        let done = match params.cancellation_fee_cents {
            0 => IntentStatus::Canceled,
            _ => IntentStatus::Succeeded,
        };
        settle::found_in_intent(cx.gateway.as_ref(), ride, |now| now.status == done)
    }

    fn record(
        _cx: &ServiceContext,
        conn: &mut PgConnection,
        lease: &CancelLease,
        _params: &CancelParams,
        ride: Ride,
        answer: HoldOutcome,
    ) -> Result<TransitionOf<Self>, ServiceError> {
        Ok(Transition::Finish(finish_canceled(
            conn, &ride, lease, &answer,
        )?))
    }

    /// A cancellation the gateway made finishes with the ride's one change
    /// (a refusal in a transaction).
    fn finishing(
        _cx: &ServiceContext,
        lease: &CancelLease,
        ride: &Ride,
        answer: &HoldOutcome,
    ) -> Result<Option<Finishing>, ServiceError> {
        Ok(settle::finishing(
            ride,
            lease.key_id(),
            RideStatus::Canceled,
            answer,
        ))
    }
}

/// Name the effects in their derived gateway keys.
pub const CANCEL_KEY_PURPOSE: &str = "ride-cancel";
pub const FEE_KEY_PURPOSE: &str = "ride-cancellation-fee";

pub type CancelLease = Lease<RecoveryPoint>;

/// Started -> CancellationStarted: the ride, `authorized` (a fee at most
/// what the hold covers) or `requires_action` (no fee: nothing is held),
/// taken for the key.
fn begin(
    conn: &mut PgConnection,
    lease: &CancelLease,
    params: &CancelParams,
) -> Result<Ride, ServiceError> {
    let ride = lock::take(
        conn,
        lease.user_id(),
        params.ride_id,
        lease.key_id(),
        &TakeRide {
            verb: "cancelled",
            audit_action: "ride.cancellation_started",
            allowed: &[RideStatus::Authorized, RideStatus::RequiresAction],
            expired: Refusal::InvalidRideState,
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
fn cancel(
    gateway: &dyn PaymentGateway,
    lease: &CancelLease,
    ride: &Ride,
    params: &CancelParams,
) -> Result<HoldOutcome, ServiceError> {
    if params.cancellation_fee_cents > 0 {
        return settle::capture(
            gateway,
            FEE_KEY_PURPOSE,
            lease.gateway_calls(),
            ride,
            params.cancellation_fee_cents,
        );
    }
    let intent_id = settle::intent_of(ride)?;
    let answer = gateway.cancel_intent(&CancelIntent {
        idempotency_key: gateway_key(lease.gateway_calls(), CANCEL_KEY_PURPOSE),
        intent_id: intent_id.clone(),
        cancellation_reason: "requested_by_customer".to_owned(),
    });
    settle::hold_outcome(gateway, &intent_id, IntentStatus::Canceled, answer)
}

/// CancellationStarted -> Finished: the ride `canceled` (200; a fee
/// captured). A cancellation the gateway refuses is a 422
/// `invalid-ride-state`, stored, and the ride takes the state the gateway
/// holds (`expired` for a hold that lapsed).
fn finish_canceled(
    conn: &mut PgConnection,
    ride: &Ride,
    lease: &CancelLease,
    answer: &HoldOutcome,
) -> Result<StoredResponse, ServiceError> {
    let refused = |detail: String| {
        Problem::new(ProblemKind::InvalidRideState, detail)
            .with_extension("ride_id", ride.public_id)
    };
    match answer {
        HoldOutcome::Made(intent) => {
            settle::finish_settled(conn, ride, lease.key_id(), RideStatus::Canceled, intent)
        }
        HoldOutcome::Lapsed(intent) => {
            settle::expire(conn, ride, intent)?;
            Ok(wire::problem::stored(&refused(format!(
                "ride {}'s hold lapsed before it was cancelled; nothing was charged",
                ride.public_id
            ))))
        }
        HoldOutcome::Refused(refusal, now) => {
            let stored =
                settle::finish_refused(conn, ride, lease.key_id(), refused(refusal.to_string()))?;
            if let Some(settled) = now.as_ref().and_then(|now| settlement(ride.status, now)) {
                model::settle(conn, ride.id, may_follow(settled.status), &settled)?;
            }
            Ok(stored)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fee_defaults_to_nothing_and_is_never_negative() {
        let parse = |body: &str| CancelParams::parse(PathId::Legacy(7), body.as_bytes());
        assert_eq!(parse("").unwrap().cancellation_fee_cents, 0);
        assert_eq!(parse("{}").unwrap().cancellation_fee_cents, 0);
        assert_eq!(
            parse(r#"{"cancellation_fee_cents": 500}"#)
                .unwrap()
                .cancellation_fee_cents,
            500
        );
        for body in [r#"{"cancellation_fee_cents": -1}"#, r#"{"fee": 1}"#, "[]"] {
            assert!(parse(body).is_err(), "{body}");
        }
    }
}
