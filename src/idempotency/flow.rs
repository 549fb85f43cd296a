//! The request flow every idempotent endpoint shares: a lock-free lookup, the
//! claim (in one transaction with the endpoint's first steps), each call to
//! the outside world between transactions, the steps that record what it
//! said, and the lease released where a failure left it. An endpoint
//! supplies only its steps; the flow decides what runs when, writes the key
//! row, and fires the crash points.

use diesel::{Connection, PgConnection};

use super::claim::{self, Claim, IdempotentRequest};
use super::endpoint::{Called, Endpoint, FlowContext, LeaseOf, Transition, TransitionOf};
use super::key_row::{KeyState, StoredResponse};
use super::lease::after_failure::release_on_failure;
use super::lease::{in_transaction, resumed};
use super::recovery_point::{RecoveryPoints, Step};
use super::request::{CanonicalRequest, IdempotencyKey};
use crate::crash;
use crate::db::DbConn;
use crate::ids::KeyId;
use crate::service_error::ServiceError;

/// The answer to an idempotent request, and whether it is a replay.
#[derive(Debug)]
pub struct Outcome {
    pub response: StoredResponse,
    pub replayed: bool,
}

/// Serves one request of endpoint `E` for the caller whose API key hashes
/// to `api_key_hash` (`Unauthorized` for none), on `conn` until the claim
/// commits: `path` as sent, `params` as validated. The caller and their key
/// row are read in one statement, so a replay, a 409 or a 422 costs that
/// one; a key claimed at `started` runs its first steps in the claim's
/// transaction; then the steps drive the lease to Finished.
pub fn serve<E: Endpoint>(
    cx: &E::Context,
    mut conn: DbConn,
    api_key_hash: &[u8],
    key: &IdempotencyKey,
    path: &str,
    params: &E::Params,
) -> Result<Outcome, ServiceError> {
    let (caller, found) =
        claim::find_caller_key(&mut conn, api_key_hash, key)?.ok_or(ServiceError::Unauthorized)?;
    if !E::CALLERS.contains(&caller.role) {
        let refused = format!("a {} key may not make this request", caller.role);
        return Err(ServiceError::Forbidden(refused));
    }
    E::admit(&mut conn, caller.id, params)?;
    let canonical = CanonicalRequest::of(params);
    let installation = cx.installation_id();
    let request = IdempotentRequest::post(caller, installation, key, path, &canonical);
    if let Some(response) = claim::lookup::<E::Point>(&request, found, cx.key_policy())? {
        return Ok(Outcome {
            response,
            replayed: true,
        });
    }
    let (claimed, reached) = conn.transaction(|conn| {
        let mut lease =
            match claim::claim_with_first_step::<E::Point>(conn, &request, cx.key_policy())? {
                Claim::Acquired(lease) => lease,
                Claim::Replay(response) => return Ok((Err(response), None)),
            };
        let mut reached = None;
        if lease.recovery_point() == E::Point::STARTED {
            crash::point(crash::AFTER_CLAIM);
            let first = E::start(cx, conn, &lease, params)?;
            reached = Some(steps_in_transaction::<E>(
                cx, conn, &mut lease, params, first,
            )?);
        }
        Ok::<_, ServiceError>((Ok(lease), reached))
    })?;
    drop(conn);
    let lease = match claimed {
        Ok(lease) => lease,
        Err(response) => {
            return Ok(Outcome {
                response,
                replayed: true,
            })
        }
    };
    let response = match reached {
        Some(Transition::Finish(response)) => response,
        Some(Transition::Advance(point, known)) => {
            crash::after(point.as_str());
            drive_from::<E>(cx, lease, params, Some(known))?
        }
        None => drive_from::<E>(cx, lease, params, None)?,
    };
    Ok(Outcome {
        response,
        replayed: false,
    })
}

/// `drive`, with what the steps before learnt, if they ran here.
pub(super) fn drive_from<E: Endpoint>(
    cx: &E::Context,
    lease: LeaseOf<E>,
    params: &E::Params,
    known: Option<E::Known>,
) -> Result<StoredResponse, ServiceError> {
    release_on_failure(cx, lease, |lease| {
        run_steps::<E>(cx, lease, params, known, None)
    })
}

/// The steps from the lease's point to Finished: each call, then the steps
/// that record it. `known` is what the steps before learnt, if they ran
/// here (else the endpoint loads it, once, where the first step needs it);
/// `answered` a call's answer already in hand (found by reconciliation),
/// recorded before anything is called.
pub(super) fn run_steps<E: Endpoint>(
    cx: &E::Context,
    lease: &mut LeaseOf<E>,
    params: &E::Params,
    mut known: Option<E::Known>,
    mut answered: Option<(E::Known, E::Answer)>,
) -> Result<StoredResponse, ServiceError> {
    loop {
        let point = lease.recovery_point();
        if point == E::Point::FINISHED {
            return stored_response(&mut *cx.pool().get()?, lease.key_id());
        }
        if let (None, Step::Call(call)) = (&answered, point.step()) {
            let now = match known.take() {
                Some(now) => now,
                None => resumed::load::<E>(cx, &mut *cx.pool().get()?, lease, params, point)?,
            };
            let called = E::call(cx, lease, params, point, now)?;
            crash::after(call);
            match called {
                Called::NotNeeded(next, still) => {
                    lease.pass_to(next);
                    known = Some(still);
                    continue;
                }
                Called::Answered(learnt, answer) => {
                    if let Some(finishing) = E::finishing(cx, lease, &learnt, &answer)? {
                        crash_where_passed::<E::Point>(point);
                        return lease.finish_with(&mut *cx.pool().get()?, finishing);
                    }
                    answered = Some((learnt, answer));
                }
            }
        }
        let reached = in_transaction(&mut *cx.pool().get()?, lease, |conn, lease| {
            let first = match (answered.take(), known.take()) {
                (Some((learnt, answer)), _) => E::record(cx, conn, lease, params, learnt, answer)?,
                (None, _) if point == E::Point::STARTED => E::start(cx, conn, lease, params)?,
                (None, Some(now)) => E::atomic(cx, conn, lease, params, point, now)?,
                (None, None) => {
                    let now = resumed::load::<E>(cx, conn, lease, params, point)?;
                    E::atomic(cx, conn, lease, params, point, now)?
                }
            };
            steps_in_transaction::<E>(cx, conn, lease, params, first)
        })?;
        match reached {
            Transition::Finish(response) => return Ok(response),
            Transition::Advance(next, learnt) => {
                crash::after(next.as_str());
                known = Some(learnt);
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

/// Goes on from the transition of the transaction's first step, in the
/// caller's transaction: the atomic steps after it for as long as the next
/// one is atomic too; then the one fenced write of the key row: the point
/// reached (one whose step is a call), or the response and Finished.
fn steps_in_transaction<E: Endpoint>(
    cx: &E::Context,
    conn: &mut PgConnection,
    lease: &mut LeaseOf<E>,
    params: &E::Params,
    mut transition: TransitionOf<E>,
) -> Result<TransitionOf<E>, ServiceError> {
    loop {
        match transition {
            Transition::Finish(response) => {
                lease.finish(conn, &response)?;
                return Ok(Transition::Finish(response));
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
                transition = E::atomic(cx, conn, lease, params, next, known)?;
            }
            Transition::Advance(next, known) => {
                lease.advance(conn, next)?;
                return Ok(Transition::Advance(next, known));
            }
        }
    }
}

/// The response stored with a finished key.
fn stored_response(conn: &mut PgConnection, key_id: KeyId) -> Result<StoredResponse, ServiceError> {
    KeyState::load(conn, key_id)?
        .take_stored_response()
        .ok_or_else(|| anyhow::anyhow!("finished key {key_id} has no response").into())
}
