//! `POST /api/webhook_endpoints/{id}/deliveries/{delivery_id}/retry`: a
//! delivery made due at once, whatever came of it before. The sender makes
//! the attempt; its attempts count on, so one that fails with no attempt of
//! the schedule left ends the delivery `failed` again.

use diesel::PgConnection;

use super::{delivery_answer, destination, ActionParams, DestinationAction};
use crate::idempotency::StoredResponse;
use crate::ids::UserId;
use crate::service_error::ServiceError;
use crate::user_webhooks::deliveries;

crate::recovery_points! {
    /// How far a retry has got: it is written in the claim's transaction.
    pub enum RecoveryPoint for "webhook_deliveries.retry" {
        /// The delivery is due again; the answer is not stored yet.
        Requeued = "requeued", atomic;
    }
}

pub struct Retry;

/// The endpoint this action is.
pub type RetryEndpoint = super::Action<Retry>;

impl DestinationAction for Retry {
    type Point = RecoveryPoint;
    const WRITTEN: RecoveryPoint = RecoveryPoint::Requeued;

    fn write(
        conn: &mut PgConnection,
        user: UserId,
        params: &ActionParams,
    ) -> Result<bool, ServiceError> {
        let Some(delivery) = params.delivery_id else {
            return Ok(false);
        };
        let destination = destination(conn, user, params)?;
        Ok(deliveries::requeue(conn, destination.id, delivery)?)
    }

    fn answer(
        conn: &mut PgConnection,
        user: UserId,
        params: &ActionParams,
    ) -> Result<StoredResponse, ServiceError> {
        let delivery = params.delivery_id.ok_or(ServiceError::NotFound)?;
        let destination = destination(conn, user, params)?;
        delivery_answer(conn, &destination, delivery)
    }
}
