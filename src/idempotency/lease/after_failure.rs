//! What becomes of a lease when a step fails: given up where the key
//! stands, so a retry (or the completer) resumes at once; left to
//! reconciliation after a failure the gateway saved under its key; or, once
//! reconciliation proved a call made nothing, moved on to the calls' next
//! generation.

use diesel::dsl::now;
use diesel::prelude::*;

use super::Lease;
use crate::idempotency::endpoint::FlowContext;
use crate::idempotency::recovery_point::RecoveryPoints;
use crate::idempotency::request::GatewayCalls;
use crate::schema::idempotency_keys::dsl as keys;
use crate::service_error::ServiceError;

/// Runs `steps` on the lease; on any failure but a lost lease, gives the
/// lease up where it stands, so a retry (or the completer) can resume at once
/// instead of waiting for it to expire.
pub(crate) fn release_on_failure<C: FlowContext, P: RecoveryPoints, T>(
    cx: &C,
    mut lease: Lease<P>,
    steps: impl FnOnce(&mut Lease<P>) -> Result<T, ServiceError>,
) -> Result<T, ServiceError> {
    let result = steps(&mut lease);
    if let Err(err) = &result {
        if !matches!(err, ServiceError::LeaseLost) {
            let waits = matches!(err, ServiceError::AwaitingReconciliation { .. });
            let released = cx
                .pool()
                .get()
                .map_err(ServiceError::from)
                .and_then(|mut conn| {
                    if waits {
                        lease.leave_to_reconciliation(&mut conn)
                    } else {
                        lease.release(&mut conn)
                    }
                });
            if let Err(release_err) = released {
                log::warn!(
                    "could not release idempotency key {} ({release_err}); it frees itself when the lease expires",
                    lease.key_id()
                );
            }
        }
    }
    result
}

impl<P: RecoveryPoints> Lease<P> {
    /// Gives the lease up at the current recovery point, so a retry (or the
    /// completer) can resume at once instead of waiting for it to expire.
    /// Does nothing if the lease was already lost.
    pub fn release(&self, conn: &mut PgConnection) -> Result<(), ServiceError> {
        diesel::update(self.held())
            .set((
                keys::locked_at.eq(None::<chrono::DateTime<chrono::Utc>>),
                keys::updated_at.eq(now),
            ))
            .execute(conn)?;
        Ok(())
    }

    /// Gives the lease up, leaving the key to reconciliation: the call from
    /// the current point was answered by a failure the gateway saved under
    /// its key. Does nothing if the lease was already lost.
    pub fn leave_to_reconciliation(&self, conn: &mut PgConnection) -> Result<(), ServiceError> {
        diesel::update(self.held())
            .set((
                keys::locked_at.eq(None::<chrono::DateTime<chrono::Utc>>),
                keys::outcome_unknown_at.eq(crate::db::database_now().nullable()),
                keys::updated_at.eq(now),
            ))
            .execute(conn)?;
        Ok(())
    }

    /// Moves the key's calls on to their next generation, fenced: only a
    /// holder of the lease who proved the current generation's call made
    /// nothing does (reconciliation).
    pub fn next_generation(&mut self, conn: &mut PgConnection) -> Result<(), ServiceError> {
        let next = GatewayCalls {
            generation: self.calls.generation + 1,
            ..self.calls
        };
        let updated = diesel::update(self.fenced())
            .set((
                keys::call_generation.eq(next.generation),
                keys::updated_at.eq(now),
            ))
            .execute(conn)?;
        self.checked(updated == 1, self.point)?;
        self.calls = next;
        Ok(())
    }
}
