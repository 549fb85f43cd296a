//! `POST /api/rides` as a sequence of atomic phases: claim, create the ride,
//! charge, record the charge, store the response. A retry, or a worker, resumes
//! from the recovery point the key reached.

use std::cell::RefCell;

use diesel::PgConnection;

use super::model::{self, Ride};
use super::phases::{self, RideLease};
use super::recovery_point::RecoveryPoint;
use super::request::RideParams;
use crate::context::ServiceContext;
use crate::crash;
use crate::db::DbConn;
use crate::idempotency::flow::{self, Outcome};
use crate::idempotency::{in_transaction, IdempotencyKey, IdempotentRequest, StoredResponse};
use crate::payments;
use crate::service_error::ServiceError;
use crate::users::User;

/// Creates and charges the ride, starting on `conn`, the connection its
/// caller was authenticated on.
pub fn create_ride(
    context: &ServiceContext,
    conn: DbConn,
    user: &User,
    key: &IdempotencyKey,
    path: &str,
    params: &RideParams,
) -> Result<Outcome, ServiceError> {
    let canonical = params.canonical();
    let request = IdempotentRequest::post(user.id, key, path, &canonical);
    flow::run(
        &context.pool,
        conn,
        &context.key_policy,
        &request,
        &RidePhases::new(context, params),
    )
}

/// Drives a claimed key from its recovery point to Finished. On any failure the
/// lease is released where it stands, so a retry can resume at once.
pub fn resume(
    context: &ServiceContext,
    lease: RideLease,
    params: &RideParams,
) -> Result<StoredResponse, ServiceError> {
    flow::drive(&context.pool, lease, &RidePhases::new(context, params))
}

/// The endpoint's phases, for one request.
struct RidePhases<'a> {
    context: &'a ServiceContext,
    params: &'a RideParams,
    /// The ride the first phase created. Only the later phases read it, and
    /// they run only once that phase's transaction has committed; the charge
    /// needs the ride, and reading it back would cost a checkout and a query.
    created: RefCell<Option<Ride>>,
}

impl<'a> RidePhases<'a> {
    fn new(context: &'a ServiceContext, params: &'a RideParams) -> Self {
        RidePhases {
            context,
            params,
            created: RefCell::new(None),
        }
    }
}

impl flow::Phases for RidePhases<'_> {
    type Point = RecoveryPoint;

    fn first(&self, conn: &mut PgConnection, lease: &mut RideLease) -> Result<(), ServiceError> {
        crash::point(crash::AFTER_CLAIM);
        // A ride without a source to charge is refused here, which rolls the
        // claim back too: nothing is written, the key not consumed.
        let ride = phases::create_ride(conn, lease, self.params)?;
        // Kept only for the later phases, which run after the commit.
        *self.created.borrow_mut() = Some(ride);
        Ok(())
    }

    fn claimed(&self) {
        crash::point(crash::AFTER_RIDE_CREATED);
    }

    fn later(&self, lease: &mut RideLease) -> Result<Option<StoredResponse>, ServiceError> {
        match lease.recovery_point() {
            // The flow's own.
            RecoveryPoint::Started | RecoveryPoint::Finished => Ok(None),
            RecoveryPoint::RideCreated => {
                let ride = match self.created.take() {
                    Some(ride) => ride,
                    None => model::find_by_key(&mut *self.context.pool.get()?, lease.key_id())?,
                };
                // No pooled connection is held while the gateway works.
                let charged = phases::charge(
                    self.context.gateway.as_ref(),
                    self.context.installation_id,
                    lease,
                    &ride,
                );
                crash::point(crash::AFTER_CHARGE);
                payments::store_outcome(
                    &self.context.pool,
                    lease,
                    charged,
                    |conn, lease, charge| {
                        let charged = phases::record_charge(conn, lease, &ride, &charge)?;
                        crash::point(crash::AFTER_CHARGE_COMPLETED);
                        phases::finish_charged(conn, lease, &charged)
                    },
                    |conn, lease, failure| phases::finish_unpaid(conn, lease, &ride, failure),
                )
                .map(Some)
            }
            RecoveryPoint::ChargeCompleted => {
                in_transaction(&mut *self.context.pool.get()?, lease, |conn, lease| {
                    let ride = model::find_by_key(conn, lease.key_id())?;
                    phases::finish_charged(conn, lease, &ride)
                })
                .map(Some)
            }
        }
    }
}
