//! What the answer to a gateway call does to the key that made it, the same
//! for every endpoint with an external effect.

use diesel::PgConnection;

use super::GatewayError;
use crate::db::DbPool;
use crate::idempotency::{in_transaction, Lease, RecoveryPoints, StoredResponse};
use crate::service_error::ServiceError;

/// Stores the endpoint's answer to the gateway's, on a new checkout: a
/// success is recorded by `succeeded` and a final failure (a decline, a
/// rejection) by `failed`, each in one transaction with Finished, since
/// nothing external happens between recording and finishing. Any other
/// failure is a 503 that leaves the key where it stands, for a retry under the
/// same derived key.
pub fn store_outcome<P: RecoveryPoints, T>(
    pool: &DbPool,
    lease: &mut Lease<P>,
    outcome: Result<T, GatewayError>,
    succeeded: impl FnOnce(&mut PgConnection, &mut Lease<P>, T) -> Result<StoredResponse, ServiceError>,
    failed: impl FnOnce(
        &mut PgConnection,
        &mut Lease<P>,
        &GatewayError,
    ) -> Result<StoredResponse, ServiceError>,
) -> Result<StoredResponse, ServiceError> {
    match outcome {
        Ok(made) => in_transaction(&mut *pool.get()?, lease, |conn, lease| {
            succeeded(conn, lease, made)
        }),
        Err(failure @ (GatewayError::Declined { .. } | GatewayError::Rejected { .. })) => {
            in_transaction(&mut *pool.get()?, lease, |conn, lease| {
                failed(conn, lease, &failure)
            })
        }
        Err(failure) => Err(failure.into_unavailable()),
    }
}
