//! `POST /api/rides/{id}/complete` on the idempotency flow: which phase runs
//! from which recovery point, and what the phases hand each other in memory.
//! A retry, or the completer, resumes from the recovery point the key
//! reached.

use std::cell::RefCell;

use diesel::PgConnection;

use super::phases::{self, CompleteLease, Raised, CAPTURE_KEY_PURPOSE};
use super::recovery_point::RecoveryPoint;
use super::request::CompleteParams;
use crate::context::ServiceContext;
use crate::idempotency::endpoint::Endpoint;
use crate::idempotency::flow::{Called, Phases, Transition};
use crate::idempotency::Finishing;
use crate::rides::lifecycle::{self, Answer};
use crate::rides::model::RideStatus;
use crate::service_error::ServiceError;

pub struct CompleteEndpoint;

impl Endpoint for CompleteEndpoint {
    type Point = RecoveryPoint;
    type Params = CompleteParams;
    type Context = ServiceContext;
    type Phases<'a> = CompletePhases<'a>;

    fn phases<'a>(context: &'a ServiceContext, params: &'a CompleteParams) -> CompletePhases<'a> {
        CompletePhases {
            context,
            params,
            ride: lifecycle::TakenRide::new(params.ride_id, &context.pool),
            raised: RefCell::new(None),
            captured: RefCell::new(None),
        }
    }
}

/// The endpoint's phases, for one request.
pub struct CompletePhases<'a> {
    context: &'a ServiceContext,
    params: &'a CompleteParams,
    ride: lifecycle::TakenRide<'a>,
    raised: RefCell<Option<Raised>>,
    captured: RefCell<Option<Answer>>,
}

impl Phases for CompletePhases<'_> {
    type Point = RecoveryPoint;

    fn atomic(
        &self,
        conn: &mut PgConnection,
        lease: &CompleteLease,
        point: RecoveryPoint,
    ) -> Result<Transition<RecoveryPoint>, ServiceError> {
        match point {
            RecoveryPoint::Started => {
                self.ride.keep(phases::begin(conn, lease, self.params)?);
                Ok(Transition::Advance(RecoveryPoint::CompletionStarted))
            }
            RecoveryPoint::CompletionStarted => {
                let ride = self.ride.get(Some(conn), lease.key_id())?;
                match self.raised.take().expect("the hold is raised first") {
                    Ok(raised) => {
                        let ride = phases::record_raise(conn, &ride, &raised)?;
                        self.ride.keep(ride);
                        Ok(Transition::Advance(RecoveryPoint::HoldCovers))
                    }
                    Err(refused) => Ok(Transition::Finish(phases::finish_raise_refused(
                        conn, &ride, lease, &refused,
                    )?)),
                }
            }
            RecoveryPoint::HoldCovers => {
                let ride = self.ride.get(Some(conn), lease.key_id())?;
                let captured = self.captured.take().expect("the capture is made first");
                Ok(Transition::Finish(phases::finish_captured(
                    conn, &ride, lease, &captured,
                )?))
            }
            RecoveryPoint::Finished => Err(anyhow::anyhow!("no phase runs from finished").into()),
        }
    }

    /// What the gateway made finishes with the ride's one change (a
    /// refusal, or a ride read back on resuming, in a transaction).
    fn finishing(
        &self,
        lease: &CompleteLease,
        point: RecoveryPoint,
    ) -> Result<Option<Finishing>, ServiceError> {
        if point != RecoveryPoint::HoldCovers {
            return Ok(None);
        }
        Ok(lifecycle::made_finishing(
            &self.ride,
            &self.captured,
            lease.key_id(),
            RideStatus::Captured,
        ))
    }

    fn call(
        &self,
        lease: &CompleteLease,
        point: RecoveryPoint,
    ) -> Result<Called<RecoveryPoint>, ServiceError> {
        // No pooled connection is held while the gateway works.
        let ride = self.ride.get(None, lease.key_id())?;
        let gateway = self.context.gateway.as_ref();
        let called = match point {
            RecoveryPoint::CompletionStarted if phases::covered(&ride, self.params) => {
                Called::NotNeeded(RecoveryPoint::HoldCovers)
            }
            RecoveryPoint::CompletionStarted => {
                let raised = phases::raise(
                    gateway,
                    self.context.installation_id,
                    lease,
                    &ride,
                    self.params,
                )?;
                *self.raised.borrow_mut() = Some(raised);
                Called::Made
            }
            _ => {
                let captured = lifecycle::capture(
                    gateway,
                    self.context.installation_id,
                    CAPTURE_KEY_PURPOSE,
                    lease.key_id(),
                    &ride,
                    self.params.final_amount_cents,
                )?;
                *self.captured.borrow_mut() = Some(captured);
                Called::Made
            }
        };
        self.ride.keep(ride);
        Ok(called)
    }
}
