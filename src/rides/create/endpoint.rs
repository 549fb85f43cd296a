//! `POST /api/rides` on the idempotency flow: which phase runs from which
//! recovery point, and what the phases hand each other in memory. A retry,
//! or the completer, resumes from the recovery point the key reached.

use std::cell::RefCell;

use diesel::PgConnection;

use super::phases::{self, RideLease};
use super::recovery_point::RecoveryPoint;
use super::request::RideParams;
use crate::context::ServiceContext;
use crate::idempotency::endpoint::Endpoint;
use crate::idempotency::flow::{Called, Phases, Transition};
use crate::idempotency::Finishing;
use crate::payments::{self, GatewayError, PaymentIntent};
use crate::rides::model::{self, Ride};
use crate::service_error::ServiceError;

/// The endpoint (`endpoint::run::<RideEndpoint>` serves a request,
/// `endpoint::Keys<RideEndpoint>` its keys for the completer).
pub struct RideEndpoint;

impl Endpoint for RideEndpoint {
    type Point = RecoveryPoint;
    type Params = RideParams;
    type Context = ServiceContext;
    type Phases<'a> = RidePhases<'a>;

    fn phases<'a>(context: &'a ServiceContext, params: &'a RideParams) -> RidePhases<'a> {
        RidePhases::new(context, params)
    }

    fn canonical_under(params: &RideParams, version: u32) -> Option<Vec<u8>> {
        match version {
            1 => params.version_1_form(),
            _ => None,
        }
    }
}

/// The endpoint's phases, for one request.
pub struct RidePhases<'a> {
    context: &'a ServiceContext,
    params: &'a RideParams,
    /// The ride as the last phase left it, so the next one need not read it
    /// back (a checkout and a query); None when resuming from the database.
    ride: RefCell<Option<Ride>>,
    /// What the gateway answered, for the phase that records it.
    answered: RefCell<Option<Result<PaymentIntent, GatewayError>>>,
}

impl<'a> RidePhases<'a> {
    fn new(context: &'a ServiceContext, params: &'a RideParams) -> Self {
        RidePhases {
            context,
            params,
            ride: RefCell::new(None),
            answered: RefCell::new(None),
        }
    }

    fn ride(&self, conn: &mut PgConnection, lease: &RideLease) -> Result<Ride, ServiceError> {
        match self.ride.take() {
            Some(ride) => Ok(ride),
            None => Ok(model::find_by_key(conn, lease.key_id())?),
        }
    }

    fn keep(&self, ride: Ride) {
        *self.ride.borrow_mut() = Some(ride);
    }
}

impl Phases for RidePhases<'_> {
    type Point = RecoveryPoint;

    fn atomic(
        &self,
        conn: &mut PgConnection,
        lease: &RideLease,
        point: RecoveryPoint,
    ) -> Result<Transition<RecoveryPoint>, ServiceError> {
        match point {
            // A ride without a card to pay with is refused here, which rolls
            // the claim back too: nothing is written, the key not consumed.
            RecoveryPoint::Started => {
                self.keep(phases::create_ride(
                    conn,
                    lease,
                    self.params,
                    &self.context.return_url,
                )?);
                Ok(Transition::Advance(RecoveryPoint::RideCreated))
            }
            RecoveryPoint::RideCreated => {
                let ride = self.ride(conn, lease)?;
                let answer = self.answered.take().expect("the payment is made first");
                let recorded = match answer {
                    Ok(intent) => phases::record_payment(conn, &ride, &intent)?,
                    Err(failure) => Err(failure),
                };
                match recorded {
                    Ok(ride) => {
                        self.keep(ride);
                        Ok(Transition::Advance(RecoveryPoint::ChargeCompleted))
                    }
                    Err(failure) => Ok(Transition::Finish(phases::finish_unpaid(
                        conn, &ride, &failure,
                    )?)),
                }
            }
            RecoveryPoint::ChargeCompleted => {
                let ride = self.ride(conn, lease)?;
                Ok(Transition::Finish(phases::finish_answered(&ride)))
            }
            RecoveryPoint::Finished => Err(anyhow::anyhow!("no phase runs from finished").into()),
        }
    }

    /// A payment the gateway answered finishes with the ride's one change
    /// (a rejection, or a ride read back on resuming, in a transaction).
    fn finishing(
        &self,
        _lease: &RideLease,
        point: RecoveryPoint,
    ) -> Result<Option<Finishing>, ServiceError> {
        let (ride, answered) = (self.ride.borrow(), self.answered.borrow());
        match (point, ride.as_ref(), answered.as_ref()) {
            (RecoveryPoint::RideCreated, Some(ride), Some(Ok(intent))) => {
                phases::payment_finishing(ride, intent)
            }
            _ => Ok(None),
        }
    }

    fn call(
        &self,
        lease: &RideLease,
        _point: RecoveryPoint,
    ) -> Result<Called<RecoveryPoint>, ServiceError> {
        let ride = match self.ride.take() {
            Some(ride) => ride,
            None => model::find_by_key(&mut *self.context.pool.get()?, lease.key_id())?,
        };
        // No pooled connection is held while the gateway works.
        let answer = phases::pay(
            self.context.gateway.as_ref(),
            self.context.installation_id,
            lease,
            &ride,
        );
        self.keep(ride);
        *self.answered.borrow_mut() = Some(payments::final_outcome(answer)?);
        Ok(Called::Made)
    }
}
