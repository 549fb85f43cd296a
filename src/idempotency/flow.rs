//! The request flow every idempotent endpoint shares: a lock-free lookup, the
//! claim (in one transaction with the endpoint's first phase), the endpoint's
//! remaining phases, and the lease released where a failure left it.

use diesel::{Connection, PgConnection};

use super::claim::{self, Claim, IdempotentRequest, Lookup};
use super::lease::{in_transaction, Lease};
use super::policy::KeyPolicy;
use super::record::{KeyRecord, KeyState};
use super::recovery_point::RecoveryPoints;
use super::stored_response::StoredResponse;
use crate::db::{DbConn, DbPool};
use crate::service_error::ServiceError;

/// The answer to an idempotent request, and whether it is a replay.
#[derive(Debug)]
pub struct Outcome {
    pub response: StoredResponse,
    pub replayed: bool,
}

impl Outcome {
    fn replayed(response: StoredResponse) -> Outcome {
        Outcome {
            response,
            replayed: true,
        }
    }
}

/// An endpoint's phases, as the flow runs them.
pub trait Phases {
    type Point: RecoveryPoints;

    /// Started -> the endpoint's first point, in the caller's transaction:
    /// the claim's, for a new key, so that an error here (a request the
    /// endpoint refuses) rolls the claim back too and the key is not consumed.
    fn first(
        &self,
        conn: &mut PgConnection,
        lease: &mut Lease<Self::Point>,
    ) -> Result<(), ServiceError>;

    /// From the endpoint's own points on: the response once it is stored, or
    /// `None` to go round again at the point reached.
    fn later(&self, lease: &mut Lease<Self::Point>)
        -> Result<Option<StoredResponse>, ServiceError>;

    /// Between the claim's commit and the later phases (a crash point).
    fn claimed(&self) {}
}

/// Runs `request`, on `conn` until the claim commits: replays, 409s and 422s
/// come from the lookup or the claim; a key claimed at `started` runs the
/// first phase in the claim's transaction (nothing external happens between
/// them); then the phases drive the lease to Finished.
pub fn run<E: Phases>(
    pool: &DbPool,
    mut conn: DbConn,
    policy: &KeyPolicy,
    request: &IdempotentRequest<'_>,
    phases: &E,
) -> Result<Outcome, ServiceError> {
    match claim::lookup::<E::Point>(&mut conn, request, policy)? {
        Lookup::Replay(response) => return Ok(Outcome::replayed(response)),
        Lookup::InUse => return Err(ServiceError::KeyInUse),
        Lookup::Reused => return Err(ServiceError::KeyReused),
        Lookup::NeedsAttention => return Err(ServiceError::NeedsAttention),
        Lookup::Claimable => {}
    }
    let claimed = conn.transaction(|conn| {
        let mut claimed = claim::claim::<E::Point>(conn, request, policy)?;
        if let Claim::Acquired(lease) = &mut claimed {
            if lease.recovery_point() == E::Point::STARTED {
                phases.first(conn, lease)?;
            }
        }
        Ok::<_, ServiceError>(claimed)
    })?;
    drop(conn);
    match claimed {
        Claim::Acquired(lease) => {
            phases.claimed();
            Ok(Outcome {
                response: drive(pool, lease, phases)?,
                replayed: false,
            })
        }
        Claim::Replay(response) => Ok(Outcome::replayed(response)),
        Claim::InUse => Err(ServiceError::KeyInUse),
        Claim::Reused => Err(ServiceError::KeyReused),
        Claim::NeedsAttention => Err(ServiceError::NeedsAttention),
    }
}

/// Drives a claimed key from its recovery point to Finished, releasing the
/// lease where a failure leaves it. A key found finished answers with its
/// stored response.
pub fn drive<E: Phases>(
    pool: &DbPool,
    lease: Lease<E::Point>,
    phases: &E,
) -> Result<StoredResponse, ServiceError> {
    release_on_failure(pool, lease, |lease| loop {
        let point = lease.recovery_point();
        if point == E::Point::FINISHED {
            return stored_response(&mut *pool.get()?, lease.key_id());
        }
        if point == E::Point::STARTED {
            in_transaction(&mut *pool.get()?, lease, |conn, lease| {
                phases.first(conn, lease)
            })?;
            continue;
        }
        if let Some(response) = phases.later(lease)? {
            return Ok(response);
        }
    })
}

/// Runs `phases` on the lease; on any failure but a lost lease, gives the
/// lease up where it stands, so a retry (or the completer) can resume at once
/// instead of waiting for it to expire.
fn release_on_failure<P: RecoveryPoints>(
    pool: &DbPool,
    mut lease: Lease<P>,
    phases: impl FnOnce(&mut Lease<P>) -> Result<StoredResponse, ServiceError>,
) -> Result<StoredResponse, ServiceError> {
    let result = phases(&mut lease);
    if let Err(err) = &result {
        if !matches!(err, ServiceError::LeaseLost) {
            let released = pool
                .get()
                .map_err(ServiceError::from)
                .and_then(|mut conn| lease.release(&mut conn));
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

/// The response stored with a finished key.
fn stored_response(conn: &mut PgConnection, key_id: i64) -> Result<StoredResponse, ServiceError> {
    KeyRecord::load(conn, key_id)?
        .state
        .take_stored_response()
        .ok_or_else(|| anyhow::anyhow!("finished key {key_id} has no response").into())
}

/// Takes the lease of an unfinished key whose lease is free or expired, for a
/// caller other than the key's client or the completer (a webhook that
/// learnt the outcome of the key's external effect, say). `None` when the
/// key is finished, or its lease is held, or another transaction has the row
/// locked.
pub fn take_over<P: RecoveryPoints>(
    conn: &mut PgConnection,
    key_id: i64,
    policy: &KeyPolicy,
) -> Result<Option<Lease<P>>, ServiceError> {
    use crate::schema::idempotency_keys::dsl as keys;
    use diesel::prelude::*;
    let Some((record, db_now)) = keys::idempotency_keys
        .find(key_id)
        .select((KeyState::as_select(), crate::db::database_now()))
        .for_update()
        .skip_locked()
        .first::<(KeyState, chrono::DateTime<chrono::Utc>)>(conn)
        .optional()?
    else {
        return Ok(None);
    };
    if record.recovery_point == super::FINISHED || !policy.lease_expired(record.locked_at, db_now) {
        return Ok(None);
    }
    Ok(Some(claim::take_lease(conn, &record)?))
}
