//! Keys left to reconciliation: a call of theirs was answered by a failure
//! the gateway saved under its key, so no retry can learn what it did.
//! Each is claimed as the completer claims a key (`FOR UPDATE SKIP LOCKED`,
//! a new fencing epoch, safe on every instance at once) and resolved by its
//! endpoint's lookup (`resume::resolve`).

use std::time::Duration;

use diesel::prelude::*;

use super::completer::{ClaimedKey, Resolution, Resumable};
use super::existing_key::take_fresh_epoch;
use super::existing_key::KeyPolicy;
use super::key_record::KeyRecord;
use super::recovery_point::FINISHED;
use crate::db::{self, DbPool};
use crate::ids::KeyId;
use crate::schema::idempotency_keys::dsl as keys;
use crate::service_error::ServiceError;

/// How a pass treats the keys left to it.
#[derive(Debug, Clone, Copy)]
pub struct AwaitingSettings {
    pub policy: KeyPolicy,
    /// A key is looked up only once it has waited this long, so that the
    /// gateway's search (quick, but lagging) can find what its call made.
    pub search_lag: Duration,
    /// Keys looked at per pass, at most.
    pub batch_size: usize,
    /// Look, and change nothing.
    pub dry_run: bool,
}

/// What a pass did with the keys left to it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct AwaitingReport {
    /// The call was made: recorded as its answer.
    pub recorded: usize,
    /// Proven not made: sent again under its next generation's key.
    pub reissued: usize,
    /// Proven not made, too late to send again: a stored 502.
    pub refused: usize,
    /// The lookup proved nothing (the gateway failed, or rate-limited it):
    /// the key waits for the next pass.
    pub unresolved: usize,
}

/// One pass over the keys left to reconciliation; `between` runs after each
/// key (where the caller renews a lease of its own) and stops the pass with
/// its error.
pub fn reconcile(
    pool: &DbPool,
    endpoints: &[&dyn Resumable],
    settings: &AwaitingSettings,
    between: &mut dyn FnMut() -> Result<(), ServiceError>,
) -> Result<AwaitingReport, ServiceError> {
    let mut report = AwaitingReport::default();
    let mut tried = Vec::new();
    for _ in 0..settings.batch_size {
        let Some((key, past_deadline)) = claim_next(&mut *pool.get()?, settings, &tried)? else {
            break;
        };
        let key_id = key.record.id;
        tried.push(key_id);
        let Some(endpoint) = endpoints
            .iter()
            .find(|endpoint| endpoint.endpoint() == key.record.endpoint)
        else {
            log::warn!("idempotency key {key_id} belongs to no endpoint running here");
            report.unresolved += 1;
            continue;
        };
        match endpoint.reconcile(key, past_deadline, settings.dry_run) {
            Ok(resolution) => {
                log::info!("reconciliation resolved idempotency key {key_id}: {resolution:?}");
                match resolution {
                    Resolution::Recorded => report.recorded += 1,
                    Resolution::Reissued => report.reissued += 1,
                    Resolution::Refused => report.refused += 1,
                }
            }
            // Sent again, and again answered by a saved failure: the key
            // is left to the next pass, under its new generation.
            Err(ServiceError::AwaitingReconciliation { .. }) => report.reissued += 1,
            Err(err) => {
                log::warn!("reconciliation could not resolve idempotency key {key_id}: {err}");
                report.unresolved += 1;
            }
        }
        between()?;
    }
    Ok(report)
}

/// The next key left to reconciliation for at least the search lag, whose
/// lease is free or expired and which no other worker is looking at: its
/// lease taken with a new epoch and its mark cleared (a failure leaves it
/// to the next pass again), in one transaction; and whether it is past the
/// deadline for sending a call again. A dry run takes nothing.
fn claim_next(
    conn: &mut PgConnection,
    settings: &AwaitingSettings,
    tried: &[KeyId],
) -> Result<Option<(ClaimedKey, bool)>, ServiceError> {
    conn.transaction(|conn| {
        let db_now = db::now(conn)?;
        let lease_cutoff = db_now - db::span(settings.policy.lease_timeout);
        let query = keys::idempotency_keys
            .filter(keys::outcome_unknown_at.le(db_now - db::span(settings.search_lag)))
            .filter(keys::recovery_point.ne(FINISHED))
            .filter(keys::id.ne_all(tried))
            .filter(
                keys::locked_at
                    .is_null()
                    .or(keys::locked_at.le(lease_cutoff)),
            )
            .order(keys::outcome_unknown_at.asc())
            .select(KeyRecord::as_select());
        let record = if settings.dry_run {
            query.first(conn).optional()?
        } else {
            query.for_update().skip_locked().first(conn).optional()?
        };
        let Some(record) = record else {
            return Ok(None);
        };
        let past_deadline = settings
            .policy
            .past_effect_deadline(record.created_at, db_now);
        if settings.dry_run {
            let epoch = record.lease_epoch;
            return Ok(Some((ClaimedKey { record, epoch }, past_deadline)));
        }
        let epoch = take_fresh_epoch(conn, &record)?;
        diesel::update(keys::idempotency_keys.find(record.id))
            .set(keys::outcome_unknown_at.eq(None::<chrono::DateTime<chrono::Utc>>))
            .execute(conn)?;
        Ok(Some((ClaimedKey { record, epoch }, past_deadline)))
    })
}
