//! Keys resumed without their client: driven on by the completer, resolved
//! by reconciliation from the gateway's lists, or taken over by a gateway
//! event that learnt what a key's call made. Each runs the same steps the
//! request's own flow (`flow`) does.

use chrono::{DateTime, Utc};
use diesel::prelude::*;

use super::completer::{ClaimedKey, Resolution, Resumable};
use super::endpoint::{Endpoint, FlowContext, LeaseOf};
use super::existing_key::{parse_point, take_lease, KeyPolicy};
use super::flow::{drive_from, run_steps};
use super::found::Found;
use super::key_record::KeyRecord;
use super::key_row::{KeyState, StoredResponse};
use super::lease::after_failure::release_on_failure;
use super::lease::resumed;
use super::lease::Lease;
use super::recovery_point::{RecoveryPoints, Step, FINISHED};
use crate::db::database_now;
use crate::ids::KeyId;
use crate::schema::idempotency_keys::dsl as keys;
use crate::service_error::ServiceError;

/// Drives a claimed key from its recovery point to Finished, releasing the
/// lease where a failure leaves it. A key found finished answers with its
/// stored response.
pub fn drive<E: Endpoint>(
    cx: &E::Context,
    lease: LeaseOf<E>,
    params: &E::Params,
) -> Result<StoredResponse, ServiceError> {
    drive_from::<E>(cx, lease, params, None)
}

/// Resolves a key left to reconciliation, whose lease the caller took:
/// what the call from its point made is looked up; made, it is recorded
/// as its answer would have been; proven not made, the call is sent again
/// under its next generation's key, or, `past_deadline`, the key ends with
/// the refusal the endpoint gives. Either way the steps then drive the key
/// on, as a retry would. `dry_run` looks and changes nothing.
pub fn resolve<E: Endpoint>(
    cx: &E::Context,
    lease: LeaseOf<E>,
    params: &E::Params,
    past_deadline: bool,
    dry_run: bool,
) -> Result<Resolution, ServiceError> {
    let point = lease.recovery_point();
    if !matches!(point.step(), Step::Call(_)) {
        // An event recorded what the call made meanwhile: the key goes on.
        if !dry_run {
            drive::<E>(cx, lease, params)?;
        }
        return Ok(Resolution::Recorded);
    }
    let known = resumed::load::<E>(cx, &mut *cx.pool().get()?, &lease, params, point)?;
    let found = match E::look_up(cx, &lease, params, point, known) {
        Ok(found) => found,
        // Proves nothing: the key waits for the next pass.
        Err(err) if !dry_run => {
            lease.leave_to_reconciliation(&mut *cx.pool().get()?)?;
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
    release_on_failure(cx, lease, |lease| {
        let (known, answered) = match found {
            Found::Made(known, answer) => (None, Some((known, answer))),
            Found::Absent { known, refused } if past_deadline => {
                resolution = Resolution::Refused;
                (None, Some((known, refused)))
            }
            Found::Absent { known, .. } => {
                lease.next_generation(&mut *cx.pool().get()?)?;
                resolution = Resolution::Reissued;
                (Some(known), None)
            }
        };
        run_steps::<E>(cx, lease, params, known, answered)
    })?;
    Ok(resolution)
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
    let Some((record, db_now)) = keys::idempotency_keys
        .find(key_id)
        .select((KeyState::as_select(), database_now()))
        .for_update()
        .skip_locked()
        .first::<(KeyState, DateTime<Utc>)>(conn)
        .optional()?
    else {
        return Ok(None);
    };
    if record.recovery_point == FINISHED || !policy.lease_expired(record.locked_at, db_now) {
        return Ok(None);
    }
    Ok(Some(take_lease(conn, &record)?))
}

/// The keys of endpoint `E`, for the completer and reconciliation.
pub struct KeyRows<E: Endpoint> {
    context: std::sync::Arc<E::Context>,
}

impl<E: Endpoint> KeyRows<E> {
    pub fn new(context: std::sync::Arc<E::Context>) -> Self {
        KeyRows { context }
    }
}

impl<E: Endpoint> Resumable for KeyRows<E> {
    fn endpoint(&self) -> &'static str {
        E::Point::ENDPOINT
    }

    fn awaits_external_effect(&self, record: &KeyRecord) -> Result<bool, ServiceError> {
        Ok(parse_point::<E::Point>(record)?.awaits_external_effect())
    }

    fn resume(&self, key: ClaimedKey) -> Result<StoredResponse, ServiceError> {
        let params: E::Params = key.params()?;
        drive::<E>(&self.context, key.lease()?, &params)
    }

    fn reconcile(
        &self,
        key: ClaimedKey,
        past_deadline: bool,
        dry_run: bool,
    ) -> Result<Resolution, ServiceError> {
        let params: E::Params = key.params()?;
        resolve::<E>(&self.context, key.lease()?, &params, past_deadline, dry_run)
    }
}
