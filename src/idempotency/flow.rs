//! The request flow every idempotent endpoint shares: a lock-free lookup, the
//! claim (in one transaction with the endpoint's first atomic phases), each
//! call to the outside world between transactions, the atomic phases that
//! record what it said, and the lease released where a failure left it. An
//! endpoint supplies only its phases; the flow decides what runs when, writes
//! the key row, and fires the crash points.

use diesel::{Connection, PgConnection};

use super::claim::{self, Claim, IdempotentRequest, Lookup};
use super::finishing::Finishing;
use super::lease::{in_transaction, Lease};
use super::policy::KeyPolicy;
use super::record::{KeyRecord, KeyState};
use super::recovery_point::{RecoveryPoints, Step, FINISHED};
use super::stored_response::StoredResponse;
use crate::crash;
use crate::db::{DbConn, DbPool};
use crate::ids::KeyId;
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

/// What an atomic phase ends with. The flow writes it to the key row, fenced,
/// once at the end of the phase's transaction (as rocket-rides-atomic's
/// `atomic_phase` does with its phase's result).
#[derive(Debug)]
pub enum Transition<P> {
    /// The request reached this recovery point.
    Advance(P),
    /// The request's answer, to store: the key is finished.
    Finish(StoredResponse),
}

/// What a call came to.
#[derive(Debug)]
pub enum Called<P> {
    /// The call was made: the atomic phase from the same point records what
    /// it answered.
    Made,
    /// Nothing needed calling from this point (a hold that already covers
    /// the fare needs no raising), so there is nothing to record: the flow
    /// goes straight on to this point's step, with no transaction and the
    /// key left where it is. A resume from there decides the same.
    NotNeeded(P),
}

/// An endpoint's phases, one per recovery point, as the flow runs them: what
/// runs from each point is the point's [`Step`].
pub trait Phases {
    type Point: RecoveryPoints;

    /// The atomic phase from `point`, in the caller's transaction. From
    /// Started that is the claim's own, so a request the endpoint refuses
    /// there rolls the claim back too and the key is not consumed. From a
    /// point whose step is a call, it records what the call answered.
    fn atomic(
        &self,
        conn: &mut PgConnection,
        lease: &Lease<Self::Point>,
        point: Self::Point,
    ) -> Result<Transition<Self::Point>, ServiceError>;

    /// The call made from `point`, holding no connection. A final answer
    /// (what it made, or a refusal for good) is kept for `atomic` from the
    /// same point; an error leaves the key at `point`, for a retry that makes
    /// the same call under the same derived key.
    fn call(
        &self,
        lease: &Lease<Self::Point>,
        point: Self::Point,
    ) -> Result<Called<Self::Point>, ServiceError>;

    /// The atomic phase from `point` after its call, when it finishes the
    /// key with one change whose answer is known before the change is sent
    /// (from what the call and the phases before it left in memory): the
    /// flow sends the change with the key's final write as one statement,
    /// with no transaction around it (`Finishing`). `None`, the default,
    /// runs `atomic` in a transaction.
    fn finishing(
        &self,
        _lease: &Lease<Self::Point>,
        _point: Self::Point,
    ) -> Result<Option<Finishing>, ServiceError> {
        Ok(None)
    }
}

/// Runs `request`, on `conn` until the claim commits: replays, 409s and 422s
/// come from the lookup or the claim; a key claimed at `started` runs its
/// atomic phases in the claim's transaction (nothing external happens between
/// them); then the phases drive the lease to Finished.
pub fn run<E: Phases>(
    pool: &DbPool,
    mut conn: DbConn,
    policy: &KeyPolicy,
    request: &IdempotentRequest<'_>,
    lookup: Lookup,
    phases: &E,
) -> Result<Outcome, ServiceError> {
    match lookup {
        Lookup::Replay(response) => return Ok(Outcome::replayed(response)),
        Lookup::InUse => return Err(ServiceError::KeyInUse),
        Lookup::Reused => return Err(ServiceError::KeyReused),
        Lookup::NeedsAttention => return Err(ServiceError::NeedsAttention),
        Lookup::Claimable => {}
    }
    let (claimed, finished) = conn.transaction(|conn| {
        let mut claimed = claim::claim_with_first_phase::<E::Point>(conn, request, policy)?;
        let mut finished = None;
        if let Claim::Acquired(lease) = &mut claimed {
            if lease.recovery_point() == E::Point::STARTED {
                crash::point(crash::AFTER_CLAIM);
                finished = atomic_phases(conn, lease, phases)?;
            }
        }
        Ok::<_, ServiceError>((claimed, finished))
    })?;
    drop(conn);
    match claimed {
        Claim::Acquired(_) if finished.is_some() => Ok(Outcome {
            response: finished.expect("checked"),
            replayed: false,
        }),
        Claim::Acquired(lease) => {
            crash::after(lease.recovery_point().as_str());
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
        if let Step::Call(call) = point.step() {
            let called = phases.call(lease, point)?;
            crash::after(call);
            if let Called::NotNeeded(next) = called {
                lease.pass_to(next);
                continue;
            }
            if let Some(finishing) = phases.finishing(lease, point)? {
                // The atomic points the statement passes through: a crash
                // at one is a crash before the statement is sent, as it
                // would be a rollback of their transaction.
                for passed in E::Point::ALL
                    .iter()
                    .skip_while(|passed| **passed != point)
                    .skip(1)
                    .take_while(|passed| {
                        **passed != E::Point::FINISHED && passed.step() == Step::Atomic
                    })
                {
                    crash::after(passed.as_str());
                }
                return lease.finish_with(&mut *pool.get()?, finishing);
            }
        }
        let finished = in_transaction(&mut *pool.get()?, lease, |conn, lease| {
            atomic_phases(conn, lease, phases)
        })?;
        match finished {
            Some(response) => return Ok(response),
            None => crash::after(lease.recovery_point().as_str()),
        }
    })
}

/// The atomic phases from the lease's recovery point, in the caller's
/// transaction, for as long as the next one is atomic too; then the one
/// fenced write of the key row: the point reached, or the response and
/// Finished. Returns the response when the key finished.
pub fn atomic_phases<E: Phases>(
    conn: &mut PgConnection,
    lease: &mut Lease<E::Point>,
    phases: &E,
) -> Result<Option<StoredResponse>, ServiceError> {
    let mut point = lease.recovery_point();
    loop {
        match phases.atomic(conn, lease, point)? {
            Transition::Finish(response) => {
                lease.finish(conn, &response)?;
                return Ok(Some(response));
            }
            Transition::Advance(next) if next == E::Point::FINISHED => {
                return Err(anyhow::anyhow!(
                    "{} advanced to finished without a response",
                    E::Point::ENDPOINT
                )
                .into());
            }
            Transition::Advance(next) if next.step() == Step::Atomic => {
                crash::after(next.as_str());
                point = next;
            }
            Transition::Advance(next) => {
                lease.advance(conn, next)?;
                return Ok(None);
            }
        }
    }
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
fn stored_response(conn: &mut PgConnection, key_id: KeyId) -> Result<StoredResponse, ServiceError> {
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
    key_id: KeyId,
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
    if record.recovery_point == FINISHED || !policy.lease_expired(record.locked_at, db_now) {
        return Ok(None);
    }
    Ok(Some(claim::take_lease(conn, &record)?))
}
