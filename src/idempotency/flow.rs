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
pub enum Transition<P, C> {
    /// The request reached this recovery point, and what the phase learnt
    /// that the next one would otherwise read back, if anything.
    Advance(P, Option<C>),
    /// The request's answer, to store: the key is finished.
    Finish(StoredResponse),
}

/// What a call came to.
#[derive(Debug)]
pub enum Called<P, C, A> {
    /// The gateway answered for good: [`Phases::record`] records the answer
    /// (`A`), with what the phases know (`C`).
    Answered(C, A),
    /// Nothing needed calling from this point (a hold that already covers
    /// the fare needs no raising), so there is nothing to record: the flow
    /// goes straight on to this point's step, with no transaction and the
    /// key left where it is. A resume from there decides the same.
    NotNeeded(P, C),
}

/// What a call of `E`'s came to.
pub type CallOf<E> = Called<<E as Phases>::Point, <E as Phases>::Known, <E as Phases>::Answer>;

/// What the gateway's lists say a call made, when its answer was a
/// failure saved under its key (reconciliation's lookup).
#[derive(Debug)]
pub enum Found<C, A> {
    /// It was made: the answer, as the gateway holds it now, which
    /// [`Phases::record`] records as it records any answer.
    Made(C, A),
    /// Proven never made. `refused` is the answer that ends the key without
    /// it (a stored 502), once the call may no longer be sent again.
    Absent { known: C, refused: A },
}

impl<C, A> Found<C, A> {
    /// The same finding, its answers wrapped by `wrap` (in the answer of a
    /// phase with several calls, say).
    pub fn map<B>(self, wrap: impl Fn(A) -> B) -> Found<C, B> {
        match self {
            Found::Made(known, answer) => Found::Made(known, wrap(answer)),
            Found::Absent { known, refused } => Found::Absent {
                known,
                refused: wrap(refused),
            },
        }
    }
}

/// What a lookup of `E`'s found.
pub type FoundOf<E> = Found<<E as Phases>::Known, <E as Phases>::Answer>;

/// What reconciliation did with a key left to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// The call was made: recorded.
    Recorded,
    /// Proven not made: sent again under the next generation's key.
    Reissued,
    /// Proven not made, past the deadline for sending it again: ended
    /// with a stored 502.
    Refused,
}

/// An endpoint's phases, one per recovery point, as the flow runs them: what
/// runs from each point is the point's [`Step`]. Each phase returns what it
/// learnt, and the flow hands it to the next; a key resumed from the
/// database starts with nothing, and a phase handed nothing reads what it
/// needs.
pub trait Phases {
    type Point: RecoveryPoints;
    /// What the phases learn of the request's rows and hand on (the ride
    /// they wrote, say), so that the next phase need not read it back.
    type Known;
    /// What a call's answer was, by value, for the phase that records it.
    type Answer;

    /// The atomic phase from `point` (a point whose step is atomic), in the
    /// caller's transaction. From Started that is the claim's own, so a
    /// request the endpoint refuses there rolls the claim back too and the
    /// key is not consumed.
    fn atomic(
        &self,
        conn: &mut PgConnection,
        lease: &Lease<Self::Point>,
        point: Self::Point,
        known: Option<Self::Known>,
    ) -> Result<Transition<Self::Point, Self::Known>, ServiceError>;

    /// The call made from `point`, holding no connection. An error leaves
    /// the key at `point`, for a retry that makes the same call under the
    /// same derived key.
    fn call(
        &self,
        lease: &Lease<Self::Point>,
        point: Self::Point,
        known: Option<Self::Known>,
    ) -> Result<CallOf<Self>, ServiceError>;

    /// The atomic phase that records what a call answered, in the caller's
    /// transaction: the answer says which call it was.
    fn record(
        &self,
        conn: &mut PgConnection,
        lease: &Lease<Self::Point>,
        known: Self::Known,
        answer: Self::Answer,
    ) -> Result<Transition<Self::Point, Self::Known>, ServiceError>;

    /// What the call from `point` made, found in the gateway's lists (never
    /// its search alone, which may lag), for a call answered by a failure
    /// the gateway saved under its key. Holds no connection while the
    /// gateway is asked. An error proves nothing either way.
    fn look_up(
        &self,
        lease: &Lease<Self::Point>,
        point: Self::Point,
        known: Option<Self::Known>,
    ) -> Result<FoundOf<Self>, ServiceError>;

    /// The recording of `answer` when it finishes the key with one change
    /// whose answer is known before the change is sent: the flow sends the
    /// change with the key's final write as one statement, with no
    /// transaction around it (`Finishing`). `None`, the default, runs
    /// `record` in a transaction.
    fn finishing(
        &self,
        _lease: &Lease<Self::Point>,
        _known: &Self::Known,
        _answer: &Self::Answer,
    ) -> Result<Option<Finishing>, ServiceError> {
        Ok(None)
    }
}

/// Where a transaction of atomic phases left the key.
enum Reached<C> {
    /// At a point whose step is a call, with what the phases learnt.
    Call(Option<C>),
    Finished(StoredResponse),
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
        Lookup::Reconciling => return Err(reconciling()),
        Lookup::Claimable => {}
    }
    let (claimed, reached) = conn.transaction(|conn| {
        let mut claimed = claim::claim_with_first_phase::<E::Point>(conn, request, policy)?;
        let mut reached = Reached::Call(None);
        if let Claim::Acquired(lease) = &mut claimed {
            if lease.recovery_point() == E::Point::STARTED {
                crash::point(crash::AFTER_CLAIM);
                let first = phases.atomic(conn, lease, E::Point::STARTED, None)?;
                reached = atomic_phases(conn, lease, phases, first)?;
            }
        }
        Ok::<_, ServiceError>((claimed, reached))
    })?;
    drop(conn);
    let lease = match claimed {
        Claim::Acquired(lease) => lease,
        Claim::Replay(response) => return Ok(Outcome::replayed(response)),
        Claim::InUse => return Err(ServiceError::KeyInUse),
        Claim::Reused => return Err(ServiceError::KeyReused),
        Claim::NeedsAttention => return Err(ServiceError::NeedsAttention),
        Claim::Reconciling => return Err(reconciling()),
    };
    let response = match reached {
        Reached::Finished(response) => response,
        Reached::Call(known) => {
            crash::after(lease.recovery_point().as_str());
            drive_knowing(pool, lease, phases, known)?
        }
    };
    Ok(Outcome {
        response,
        replayed: false,
    })
}

fn reconciling() -> ServiceError {
    ServiceError::AwaitingReconciliation {
        reason: "a call's answer was a failure the gateway saved under its key".to_owned(),
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
    drive_knowing(pool, lease, phases, None)
}

/// `drive`, with what the phases before learnt.
fn drive_knowing<E: Phases>(
    pool: &DbPool,
    lease: Lease<E::Point>,
    phases: &E,
    known: Option<E::Known>,
) -> Result<StoredResponse, ServiceError> {
    release_on_failure(pool, lease, |lease| {
        run_phases(pool, lease, phases, known, None)
    })
}

/// Resolves a key left to reconciliation, whose lease the caller took:
/// what the call from its point made is looked up; made, it is recorded
/// as its answer would have been; proven not made, the call is sent again
/// under its next generation's key, or, `past_deadline`, the key ends with
/// the refusal the phases give. Either way the phases then drive the key
/// on, as a retry would. `dry_run` looks and changes nothing.
pub fn resolve<E: Phases>(
    pool: &DbPool,
    lease: Lease<E::Point>,
    phases: &E,
    past_deadline: bool,
    dry_run: bool,
) -> Result<Resolution, ServiceError> {
    let point = lease.recovery_point();
    if !matches!(point.step(), Step::Call(_)) {
        // An event recorded what the call made meanwhile: the key goes on.
        if !dry_run {
            drive(pool, lease, phases)?;
        }
        return Ok(Resolution::Recorded);
    }
    let found = match phases.look_up(&lease, point, None) {
        Ok(found) => found,
        // Proves nothing: the key waits for the next pass.
        Err(err) if !dry_run => {
            lease.leave_to_reconciliation(&mut *pool.get()?)?;
            return Err(err);
        }
        Err(err) => return Err(err),
    };
    if dry_run {
        return Ok(match found {
            Found::Made(..) => Resolution::Recorded,
            Found::Absent { .. } if past_deadline => Resolution::Refused,
            Found::Absent { .. } => Resolution::Reissued,
        });
    }
    let mut resolution = Resolution::Recorded;
    release_on_failure(pool, lease, |lease| {
        let (known, answered) = match found {
            Found::Made(known, answer) => (None, Some((known, answer))),
            Found::Absent { known, refused } if past_deadline => {
                resolution = Resolution::Refused;
                (None, Some((known, refused)))
            }
            Found::Absent { known, .. } => {
                lease.next_generation(&mut *pool.get()?)?;
                resolution = Resolution::Reissued;
                (Some(known), None)
            }
        };
        run_phases(pool, lease, phases, known, answered)
    })?;
    Ok(resolution)
}

/// The phases from the lease's point to Finished: each call, then the
/// atomic phases that record it. `answered` is a call's answer already in
/// hand (found by reconciliation), recorded before anything is called.
fn run_phases<E: Phases>(
    pool: &DbPool,
    lease: &mut Lease<E::Point>,
    phases: &E,
    mut known: Option<E::Known>,
    mut answered: Option<(E::Known, E::Answer)>,
) -> Result<StoredResponse, ServiceError> {
    loop {
        let point = lease.recovery_point();
        if point == E::Point::FINISHED {
            return stored_response(&mut *pool.get()?, lease.key_id());
        }
        if let (None, Step::Call(call)) = (&answered, point.step()) {
            let called = phases.call(lease, point, known.take())?;
            crash::after(call);
            match called {
                Called::NotNeeded(next, still) => {
                    lease.pass_to(next);
                    known = Some(still);
                    continue;
                }
                Called::Answered(learnt, answer) => {
                    if let Some(finishing) = phases.finishing(lease, &learnt, &answer)? {
                        crash_where_passed::<E::Point>(point);
                        return lease.finish_with(&mut *pool.get()?, finishing);
                    }
                    answered = Some((learnt, answer));
                }
            }
        }
        let reached = in_transaction(&mut *pool.get()?, lease, |conn, lease| {
            let first = match answered.take() {
                Some((learnt, answer)) => phases.record(conn, lease, learnt, answer)?,
                None => phases.atomic(conn, lease, point, known.take())?,
            };
            atomic_phases(conn, lease, phases, first)
        })?;
        match reached {
            Reached::Finished(response) => return Ok(response),
            Reached::Call(learnt) => {
                crash::after(lease.recovery_point().as_str());
                known = learnt;
            }
        }
    }
}

/// The crash points of the atomic points after `point` that a finishing
/// statement passes through: a crash at one is a crash before the statement
/// is sent, as it would be a rollback of their transaction.
fn crash_where_passed<P: RecoveryPoints>(point: P) {
    for passed in P::ALL
        .iter()
        .skip_while(|passed| **passed != point)
        .skip(1)
        .take_while(|passed| **passed != P::FINISHED && passed.step() == Step::Atomic)
    {
        crash::after(passed.as_str());
    }
}

/// Goes on from the transition of the transaction's first phase, in the
/// caller's transaction: the atomic phases after it for as long as the next
/// one is atomic too; then the one fenced write of the key row: the point
/// reached, or the response and Finished.
fn atomic_phases<E: Phases>(
    conn: &mut PgConnection,
    lease: &mut Lease<E::Point>,
    phases: &E,
    mut transition: Transition<E::Point, E::Known>,
) -> Result<Reached<E::Known>, ServiceError> {
    loop {
        match transition {
            Transition::Finish(response) => {
                lease.finish(conn, &response)?;
                return Ok(Reached::Finished(response));
            }
            Transition::Advance(next, _) if next == E::Point::FINISHED => {
                return Err(anyhow::anyhow!(
                    "{} advanced to finished without a response",
                    E::Point::ENDPOINT
                )
                .into());
            }
            Transition::Advance(next, known) if next.step() == Step::Atomic => {
                crash::after(next.as_str());
                transition = phases.atomic(conn, lease, next, known)?;
            }
            Transition::Advance(next, known) => {
                lease.advance(conn, next)?;
                return Ok(Reached::Call(known));
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
            let waits = matches!(err, ServiceError::AwaitingReconciliation { .. });
            let released = pool.get().map_err(ServiceError::from).and_then(|mut conn| {
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
