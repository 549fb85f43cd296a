//! What a key resumed, rather than begun here, knows: read only once its
//! lease is confirmed where the holder left it. A failover may have lost
//! the key row, or handed its id to another request's row, whose rows must
//! never be read (and paid for) as this key's.

use diesel::prelude::*;

use super::Lease;
use crate::idempotency::endpoint::{Endpoint, LeaseOf};
use crate::idempotency::recovery_point::RecoveryPoints;
use crate::service_error::ServiceError;

impl<P: RecoveryPoints> Lease<P> {
    /// Refuses a lease no longer ours where we left it.
    pub(crate) fn confirm(&self, conn: &mut PgConnection) -> Result<(), ServiceError> {
        let held = diesel::select(diesel::dsl::exists(self.fenced())).get_result(conn)?;
        self.checked(held, self.point).map(drop)
    }
}

/// What `E`'s steps know at `point`, read for a lease confirmed first.
pub(crate) fn load<E: Endpoint>(
    cx: &E::Context,
    conn: &mut PgConnection,
    lease: &LeaseOf<E>,
    params: &E::Params,
    point: E::Point,
) -> Result<E::Known, ServiceError> {
    lease.confirm(conn)?;
    E::load(cx, conn, lease, params, point)
}
