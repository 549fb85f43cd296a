//! `POST /api/rides/{id}/refunds` on the idempotency flow: which phase runs
//! from which recovery point, and what the phases hand each other in memory.
//! A retry, or the completer, resumes from the recovery point the key
//! reached.

use std::cell::RefCell;

use diesel::PgConnection;

use super::model::{self, Refund};
use super::phases::{self, RefundLease};
use super::recovery_point::RecoveryPoint;
use super::request::RefundParams;
use crate::context::ServiceContext;
use crate::idempotency::endpoint::Endpoint;
use crate::idempotency::flow::{Called, Phases, Transition};
use crate::ids::UserId;
use crate::payments::{self, GatewayError};
use crate::rides;
use crate::service_error::ServiceError;

/// The endpoint (`endpoint::run::<RefundEndpoint>` serves a request,
/// `endpoint::Keys<RefundEndpoint>` its keys for the completer).
pub struct RefundEndpoint;

impl Endpoint for RefundEndpoint {
    type Point = RecoveryPoint;
    type Params = RefundParams;
    type Context = ServiceContext;
    type Phases<'a> = RefundPhases<'a>;

    fn phases<'a>(context: &'a ServiceContext, params: &'a RefundParams) -> RefundPhases<'a> {
        RefundPhases::new(context, params)
    }

    /// Another user's ride is not found, before the key is even looked at,
    /// so nothing about it (not even a key's state) is revealed.
    fn admit(
        conn: &mut PgConnection,
        user: UserId,
        params: &RefundParams,
    ) -> Result<(), ServiceError> {
        rides::model::find_for_user(conn, user, params.ride_id)?
            .map(drop)
            .ok_or(ServiceError::NotFound)
    }
}

/// The endpoint's phases, for one request.
pub struct RefundPhases<'a> {
    context: &'a ServiceContext,
    params: &'a RefundParams,
    /// The refund the gateway was asked for, for the phase that records it.
    refund: RefCell<Option<Refund>>,
    /// What the gateway answered.
    refunded: RefCell<Option<Result<payments::Refund, GatewayError>>>,
}

impl<'a> RefundPhases<'a> {
    fn new(context: &'a ServiceContext, params: &'a RefundParams) -> Self {
        RefundPhases {
            context,
            params,
            refund: RefCell::new(None),
            refunded: RefCell::new(None),
        }
    }
}

impl Phases for RefundPhases<'_> {
    type Point = RecoveryPoint;

    fn atomic(
        &self,
        conn: &mut PgConnection,
        lease: &RefundLease,
        point: RecoveryPoint,
    ) -> Result<Transition<RecoveryPoint>, ServiceError> {
        match point {
            // A refund not allowed is refused here, which rolls the claim
            // back too: nothing is written, the key not consumed.
            RecoveryPoint::Started => {
                phases::create_refund(conn, lease, self.params)?;
                Ok(Transition::Advance(RecoveryPoint::RefundCreated))
            }
            RecoveryPoint::RefundCreated => {
                let refund = self.refund.take().expect("the refund is asked for first");
                match self.refunded.take().expect("the refund is asked for first") {
                    Ok(made) => {
                        phases::record_refund(conn, &refund, &made)?;
                        Ok(Transition::Advance(RecoveryPoint::RefundCompleted))
                    }
                    Err(failure) => Ok(Transition::Finish(phases::finish_failed(
                        conn, &refund, &failure,
                    )?)),
                }
            }
            RecoveryPoint::RefundCompleted => {
                Ok(Transition::Finish(phases::finish_refunded(conn, lease)?))
            }
            RecoveryPoint::Finished => Err(anyhow::anyhow!("no phase runs from finished").into()),
        }
    }

    fn call(
        &self,
        lease: &RefundLease,
        _point: RecoveryPoint,
    ) -> Result<Called<RecoveryPoint>, ServiceError> {
        let (ride, refund) = {
            let mut conn = self.context.pool.get()?;
            let refund = model::find_by_key(&mut conn, lease.key_id())?;
            (rides::model::find_ride(&mut conn, refund.ride_id)?, refund)
        };
        // No pooled connection is held while the gateway works.
        let answer = phases::refund(
            self.context.gateway.as_ref(),
            self.context.installation_id,
            lease,
            &ride,
            &refund,
        );
        *self.refund.borrow_mut() = Some(refund);
        *self.refunded.borrow_mut() = Some(payments::final_outcome(answer)?);
        Ok(Called::Made)
    }
}
