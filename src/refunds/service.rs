//! `POST /api/rides/{id}/refunds` as a sequence of atomic phases: claim and
//! create the refund (one transaction), refund at the gateway, record it and
//! store the response (one transaction). A retry, or a worker, resumes from
//! the recovery point the key reached.

use diesel::PgConnection;

use super::model;
use super::phases::{self, RefundLease};
use super::recovery_point::RecoveryPoint;
use super::request::RefundParams;
use crate::context::ServiceContext;
use crate::crash;
use crate::db::DbConn;
use crate::idempotency::flow::{self, Outcome};
use crate::idempotency::{in_transaction, IdempotencyKey, IdempotentRequest, StoredResponse};
use crate::payments;
use crate::rides;
use crate::service_error::ServiceError;
use crate::users::User;

/// Refunds the ride, starting on `conn`, the connection its caller was
/// authenticated on.
pub fn create_refund(
    context: &ServiceContext,
    mut conn: DbConn,
    user: &User,
    key: &IdempotencyKey,
    path: &str,
    params: &RefundParams,
) -> Result<Outcome, ServiceError> {
    // Another user's ride is not found, before the key is even looked at, so
    // nothing about it (not even a key's state) is revealed.
    rides::model::find_for_user(&mut conn, user.id, params.ride_id)?
        .ok_or(ServiceError::NotFound)?;
    let canonical = params.canonical();
    let request = IdempotentRequest::post(user.id, key, path, &canonical);
    flow::run(
        &context.pool,
        conn,
        &context.key_policy,
        &request,
        &RefundPhases { context, params },
    )
}

/// Drives a claimed key from its recovery point to Finished. On any failure the
/// lease is released where it stands, so a retry can resume at once.
pub fn resume(
    context: &ServiceContext,
    lease: RefundLease,
    params: &RefundParams,
) -> Result<StoredResponse, ServiceError> {
    flow::drive(&context.pool, lease, &RefundPhases { context, params })
}

/// The endpoint's phases, for one request.
struct RefundPhases<'a> {
    context: &'a ServiceContext,
    params: &'a RefundParams,
}

impl flow::Phases for RefundPhases<'_> {
    type Point = RecoveryPoint;

    fn first(&self, conn: &mut PgConnection, lease: &mut RefundLease) -> Result<(), ServiceError> {
        // A refund not allowed is refused here, which rolls the claim back
        // too: nothing is written, the key not consumed.
        phases::create_refund(conn, lease, self.params).map(drop)
    }

    fn claimed(&self) {
        crash::point(crash::AFTER_REFUND_CREATED);
    }

    fn later(&self, lease: &mut RefundLease) -> Result<Option<StoredResponse>, ServiceError> {
        match lease.recovery_point() {
            // The flow's own.
            RecoveryPoint::Started | RecoveryPoint::Finished => Ok(None),
            RecoveryPoint::RefundCreated => {
                let (ride, refund) = {
                    let mut conn = self.context.pool.get()?;
                    let refund = model::find_by_key(&mut conn, lease.key_id())?;
                    (rides::model::find_ride(&mut conn, refund.ride_id)?, refund)
                };
                // No pooled connection is held while the gateway works.
                let refunded = phases::refund(
                    self.context.gateway.as_ref(),
                    self.context.installation_id,
                    lease,
                    &ride,
                    &refund,
                );
                crash::point(crash::AFTER_REFUND);
                payments::store_outcome(
                    &self.context.pool,
                    lease,
                    refunded,
                    |conn, lease, made| {
                        phases::record_refund(conn, lease, &refund, &made)?;
                        crash::point(crash::AFTER_REFUND_COMPLETED);
                        phases::finish_refunded(conn, lease)
                    },
                    |conn, lease, failure| phases::finish_failed(conn, lease, &refund, failure),
                )
                .map(Some)
            }
            RecoveryPoint::RefundCompleted => in_transaction(
                &mut *self.context.pool.get()?,
                lease,
                phases::finish_refunded,
            )
            .map(Some),
        }
    }
}
