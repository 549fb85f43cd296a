//! `POST /api/rides/{id}/cancel` on the idempotency flow: the ride taken
//! for the key (Started), then its PaymentIntent cancelled
//! (`requested_by_customer`: the hold is released) or, with a fee, the fee
//! captured from the hold, the rest released as with any capture
//! (CancellationStarted).

use diesel::PgConnection;

use super::recovery_point::RecoveryPoint;
use super::request::CancelParams;
use crate::context::ServiceContext;
use crate::idempotency::endpoint::Endpoint;
use crate::idempotency::flow::{Called, FoundOf, Phases, Transition};
use crate::idempotency::{Finishing, Lease, StoredResponse};
use crate::payments::{derived_key, CancelIntent, IntentStatus, PaymentGateway};
use crate::problem::{Problem, ProblemKind};
use crate::rides::lifecycle::{self, Answer, TakeRide};
use crate::rides::model::{self, Ride, RideStatus};
use crate::rides::payment::{may_follow, settlement};
use crate::service_error::ServiceError;
use crate::validation::FieldError;

pub struct CancelEndpoint;

impl Endpoint for CancelEndpoint {
    type Point = RecoveryPoint;
    type Params = CancelParams;
    type Context = ServiceContext;
    type Phases<'a> = CancelPhases<'a>;

    fn phases<'a>(context: &'a ServiceContext, params: &'a CancelParams) -> CancelPhases<'a> {
        CancelPhases { context, params }
    }
}

/// The endpoint's phases, for one request. They hand on the ride the key
/// took.
pub struct CancelPhases<'a> {
    context: &'a ServiceContext,
    params: &'a CancelParams,
}

impl Phases for CancelPhases<'_> {
    type Point = RecoveryPoint;
    type Known = Ride;
    type Answer = Answer;

    fn atomic(
        &self,
        conn: &mut PgConnection,
        lease: &CancelLease,
        point: RecoveryPoint,
        _ride: Option<Ride>,
    ) -> Result<Transition<RecoveryPoint, Ride>, ServiceError> {
        match point {
            RecoveryPoint::Started => Ok(Transition::Advance(
                RecoveryPoint::CancellationStarted,
                Some(begin(conn, lease, self.params)?),
            )),
            _ => Err(anyhow::anyhow!("no atomic phase runs from {point:?}").into()),
        }
    }

    fn call(
        &self,
        lease: &CancelLease,
        _point: RecoveryPoint,
        ride: Option<Ride>,
    ) -> Result<Called<RecoveryPoint, Ride, Answer>, ServiceError> {
        let ride = lifecycle::ride_taken(ride, &self.context.pool, self.params.ride_id, lease)?;
        // No pooled connection is held while the gateway works.
        let answer = cancel(
            self.context.gateway.as_ref(),
            self.context.installation_id,
            lease,
            &ride,
            self.params,
        )?;
        Ok(Called::Answered(ride, answer))
    }

    /// The cancellation or the fee's capture, judged from the
    /// PaymentIntent now.
    fn look_up(
        &self,
        lease: &CancelLease,
        _point: RecoveryPoint,
        ride: Option<Ride>,
    ) -> Result<FoundOf<Self>, ServiceError> {
        let ride = lifecycle::ride_taken(ride, &self.context.pool, self.params.ride_id, lease)?;
        let done = match self.params.cancellation_fee_cents {
            0 => IntentStatus::Canceled,
            _ => IntentStatus::Succeeded,
        };
        lifecycle::judged(self.context.gateway.as_ref(), ride, |now| {
            now.status == done
        })
    }

    fn record(
        &self,
        conn: &mut PgConnection,
        lease: &CancelLease,
        ride: Ride,
        answer: Answer,
    ) -> Result<Transition<RecoveryPoint, Ride>, ServiceError> {
        Ok(Transition::Finish(finish_canceled(
            conn, &ride, lease, &answer,
        )?))
    }

    /// A cancellation the gateway made finishes with the ride's one change
    /// (a refusal in a transaction).
    fn finishing(
        &self,
        lease: &CancelLease,
        ride: &Ride,
        answer: &Answer,
    ) -> Result<Option<Finishing>, ServiceError> {
        Ok(lifecycle::finishing(
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
    let ride = lifecycle::take(
        conn,
        lease.user_id(),
        params.ride_id,
        lease.key_id(),
        &TakeRide {
            verb: "cancelled",
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
fn cancel(
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
            lease.gateway_calls(),
            ride,
            params.cancellation_fee_cents,
        );
    }
    let intent_id = lifecycle::intent_of(ride)?;
    let answer = gateway.cancel_intent(&CancelIntent {
        idempotency_key: derived_key(installation_id, lease.gateway_calls(), CANCEL_KEY_PURPOSE),
        intent_id: intent_id.clone(),
        cancellation_reason: "requested_by_customer".to_owned(),
    });
    lifecycle::looked_into(gateway, &intent_id, IntentStatus::Canceled, answer)
}

/// CancellationStarted -> Finished: the ride `canceled` (200; a fee
/// captured). A cancellation the gateway refuses is a 422
/// `invalid-ride-state`, stored, and the ride takes the state the gateway
/// holds (`expired` for a hold that lapsed).
fn finish_canceled(
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
