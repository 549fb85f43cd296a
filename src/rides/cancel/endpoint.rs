//! `POST /api/rides/{id}/cancel` on the idempotency flow.

use std::cell::RefCell;

use diesel::PgConnection;

use super::phases::{self, CancelLease};
use super::recovery_point::RecoveryPoint;
use super::request::CancelParams;
use crate::context::ServiceContext;
use crate::idempotency::endpoint::Endpoint;
use crate::idempotency::flow::{Called, Phases, Transition};
use crate::idempotency::Finishing;
use crate::rides::lifecycle::{self, Answer};
use crate::rides::model::RideStatus;
use crate::service_error::ServiceError;

pub struct CancelEndpoint;

impl Endpoint for CancelEndpoint {
    type Point = RecoveryPoint;
    type Params = CancelParams;
    type Context = ServiceContext;
    type Phases<'a> = CancelPhases<'a>;

    fn phases<'a>(context: &'a ServiceContext, params: &'a CancelParams) -> CancelPhases<'a> {
        CancelPhases {
            context,
            params,
            ride: lifecycle::TakenRide::new(params.ride_id, &context.pool),
            answer: RefCell::new(None),
        }
    }
}

/// The endpoint's phases, for one request.
pub struct CancelPhases<'a> {
    context: &'a ServiceContext,
    params: &'a CancelParams,
    /// The ride the first phase took.
    ride: lifecycle::TakenRide<'a>,
    answer: RefCell<Option<Answer>>,
}

impl Phases for CancelPhases<'_> {
    type Point = RecoveryPoint;

    fn atomic(
        &self,
        conn: &mut PgConnection,
        lease: &CancelLease,
        point: RecoveryPoint,
    ) -> Result<Transition<RecoveryPoint>, ServiceError> {
        match point {
            RecoveryPoint::Started => {
                self.ride.keep(phases::begin(conn, lease, self.params)?);
                Ok(Transition::Advance(RecoveryPoint::CancellationStarted))
            }
            RecoveryPoint::CancellationStarted => {
                let ride = self.ride.get(Some(conn), lease.key_id())?;
                let answer = self.answer.take().expect("the gateway is asked first");
                Ok(Transition::Finish(phases::finish_canceled(
                    conn, &ride, lease, &answer,
                )?))
            }
            RecoveryPoint::Finished => Err(anyhow::anyhow!("no phase runs from finished").into()),
        }
    }

    /// What the gateway made finishes with the ride's one change (a
    /// refusal, or a ride read back on resuming, in a transaction).
    fn finishing(
        &self,
        lease: &CancelLease,
        point: RecoveryPoint,
    ) -> Result<Option<Finishing>, ServiceError> {
        if point != RecoveryPoint::CancellationStarted {
            return Ok(None);
        }
        Ok(lifecycle::made_finishing(
            &self.ride,
            &self.answer,
            lease.key_id(),
            RideStatus::Canceled,
        ))
    }

    fn call(
        &self,
        lease: &CancelLease,
        _point: RecoveryPoint,
    ) -> Result<Called<RecoveryPoint>, ServiceError> {
        // No pooled connection is held while the gateway works.
        let ride = self.ride.get(None, lease.key_id())?;
        let answer = phases::cancel(
            self.context.gateway.as_ref(),
            self.context.installation_id,
            lease,
            &ride,
            self.params,
        )?;
        *self.answer.borrow_mut() = Some(answer);
        self.ride.keep(ride);
        Ok(Called::Made)
    }
}
