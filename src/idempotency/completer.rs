//! The completer: drives keys whose client went away (lease expired, or
//! released after a transient failure) to Finished, through the same step
//! functions a retry uses, from the stored canonical request. Safe on every
//! instance at once: candidates are claimed with `FOR UPDATE SKIP LOCKED` and a
//! new fencing epoch.

use diesel::dsl::now;
use diesel::prelude::*;

use super::existing_key::{gateway_calls, parse_point, take_fresh_epoch, KeyPolicy};
use super::key_record::KeyRecord;
use super::key_row::StoredResponse;
use super::lease::Lease;
use super::recovery_point::{RecoveryPoints, FINISHED};
use crate::backoff::Backoff;
use crate::db::{self, DbPool};
use crate::ids::KeyId;
use crate::schema::idempotency_keys::dsl as keys;
use crate::service_error::ServiceError;

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

/// An endpoint whose keys the completer can finish: the
/// [`KeyRows`](super::resume::KeyRows) of every
/// [`Endpoint`](super::endpoint::Endpoint), as trait objects, so the
/// completer can hold them in one list.
pub trait Resumable: Send + Sync {
    /// The name its keys record.
    fn endpoint(&self) -> &'static str;

    /// Whether the key's external effect may still have to be made.
    fn awaits_external_effect(&self, record: &KeyRecord) -> Result<bool, ServiceError>;

    /// Drives the claimed key to Finished.
    fn resume(&self, key: ClaimedKey) -> Result<StoredResponse, ServiceError>;

    /// Resolves the claimed key, left to reconciliation (`resume::resolve`).
    fn reconcile(
        &self,
        key: ClaimedKey,
        past_deadline: bool,
        dry_run: bool,
    ) -> Result<Resolution, ServiceError>;
}

/// A key the completer holds the lease of.
#[derive(Debug)]
pub struct ClaimedKey {
    pub record: KeyRecord,
    pub(super) epoch: i64,
}

impl ClaimedKey {
    /// The lease, typed with the owning endpoint's recovery points.
    pub(crate) fn lease<P: RecoveryPoints>(&self) -> Result<Lease<P>, ServiceError> {
        Ok(Lease::new(
            self.record.id,
            self.record.user_id,
            self.epoch,
            parse_point::<P>(&self.record)?,
            gateway_calls(&self.record)?,
        ))
    }

    /// The canonical request stored with the key, read back.
    pub(crate) fn params<T: serde::de::DeserializeOwned>(&self) -> Result<T, ServiceError> {
        serde_json::from_value(self.record.request_params.clone()).map_err(|err| {
            anyhow::anyhow!("key {} holds an unreadable request: {err}", self.record.id).into()
        })
    }
}

#[derive(Debug, Clone)]
pub struct CompleterSettings {
    pub policy: KeyPolicy,
    /// Keys looked at per pass, at most.
    pub batch_size: usize,
    /// Failed attempts before a key is left for an operator.
    pub max_attempts: i32,
    pub backoff: Backoff,
}

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CompleterReport {
    pub finished: usize,
    pub failed: usize,
    pub needs_attention: usize,
    pub lease_lost: usize,
    /// Keys whose call was answered by a failure saved under its key.
    pub reconciling: usize,
}

/// One pass: claims and finishes up to `batch_size` abandoned keys.
pub fn run_once(
    pool: &DbPool,
    endpoints: &[&dyn Resumable],
    settings: &CompleterSettings,
) -> Result<CompleterReport, ServiceError> {
    let mut report = CompleterReport::default();
    // Each key at most once a pass, however short its backoff.
    let mut tried = Vec::new();
    for _ in 0..settings.batch_size {
        let mut conn = pool.get()?;
        let Some((key, endpoint)) =
            claim_next(&mut conn, endpoints, settings, &tried, &mut report)?
        else {
            break;
        };
        drop(conn);
        let key_id = key.record.id;
        tried.push(key_id);
        match endpoint.resume(key) {
            Ok(_) => {
                log::info!("completer finished idempotency key {key_id}");
                report.finished += 1;
                count("finished");
            }
            Err(ServiceError::LeaseLost) => {
                report.lease_lost += 1;
                count("lease_lost");
            }
            // Left to reconciliation by the flow; not a failed attempt.
            Err(ServiceError::AwaitingReconciliation { .. }) => {
                report.reconciling += 1;
                count("reconciling");
            }
            Err(err) => {
                report.failed += 1;
                count("failed");
                if record_failure(&mut *pool.get()?, key_id, &err, settings)? {
                    report.needs_attention += 1;
                }
            }
        }
    }
    Ok(report)
}

type Candidate<'a> = (ClaimedKey, &'a dyn Resumable);

/// In one transaction: the oldest abandoned key no other worker is looking at,
/// leased to this worker with a new epoch.
fn claim_next<'a>(
    conn: &mut PgConnection,
    endpoints: &[&'a dyn Resumable],
    settings: &CompleterSettings,
    tried: &[KeyId],
    report: &mut CompleterReport,
) -> Result<Option<Candidate<'a>>, ServiceError> {
    conn.transaction(|conn| loop {
        let db_now = db::now(conn)?;
        let lease_cutoff = db_now - db::span(settings.policy.lease_timeout);
        let Some(record) = keys::idempotency_keys
            .filter(keys::recovery_point.ne(FINISHED))
            .filter(keys::needs_attention_at.is_null())
            // Reconciliation's: no retry under the same key can learn more.
            .filter(keys::outcome_unknown_at.is_null())
            .filter(keys::id.ne_all(tried))
            .filter(
                keys::locked_at
                    .is_null()
                    .or(keys::locked_at.le(lease_cutoff)),
            )
            .filter(
                keys::next_attempt_at
                    .is_null()
                    .or(keys::next_attempt_at.le(db_now)),
            )
            .order(keys::last_run_at.asc())
            .select(KeyRecord::as_select())
            .for_update()
            .skip_locked()
            .first(conn)
            .optional()?
        else {
            return Ok(None);
        };
        let Some(endpoint) = endpoints
            .iter()
            .copied()
            .find(|e| e.endpoint() == record.endpoint)
        else {
            needs_attention(conn, record.id, "no endpoint of this name is running here")?;
            report.needs_attention += 1;
            continue;
        };
        if endpoint.awaits_external_effect(&record)?
            && settings
                .policy
                .past_effect_deadline(record.created_at, db_now)
        {
            needs_attention(
                conn,
                record.id,
                "past the deadline for resuming an external effect; settle it by hand",
            )?;
            report.needs_attention += 1;
            continue;
        }
        let epoch = take_fresh_epoch(conn, &record)?;
        diesel::update(keys::idempotency_keys.find(record.id))
            .set(keys::attempts.eq(keys::attempts + 1))
            .execute(conn)?;
        return Ok(Some((ClaimedKey { record, epoch }, endpoint)));
    })
}

/// Backs the key off, or gives up on it after the attempt limit. Returns true
/// when it gave up.
fn record_failure(
    conn: &mut PgConnection,
    key_id: KeyId,
    err: &ServiceError,
    settings: &CompleterSettings,
) -> Result<bool, ServiceError> {
    let record = KeyRecord::load(conn, key_id)?;
    if record.attempts >= settings.max_attempts {
        needs_attention(
            conn,
            key_id,
            &format!("gave up after {} attempts: {err}", record.attempts),
        )?;
        return Ok(true);
    }
    let backoff = settings.backoff.after(record.attempts);
    log::warn!(
        "completer attempt {} on idempotency key {key_id} failed ({err}); next in {backoff:?}",
        record.attempts
    );
    let next_attempt_at = db::now(conn)? + db::span(backoff);
    diesel::update(keys::idempotency_keys.find(key_id))
        .set((
            keys::next_attempt_at.eq(next_attempt_at),
            keys::last_error.eq(err.to_string()),
            keys::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(false)
}

fn count(result: &str) {
    crate::telemetry::metrics::metrics()
        .completer
        .with_label_values(&[result])
        .inc();
}

fn needs_attention(conn: &mut PgConnection, key_id: KeyId, why: &str) -> Result<(), ServiceError> {
    log::error!("idempotency key {key_id} needs an operator: {why}");
    count("needs_attention");
    diesel::update(keys::idempotency_keys.find(key_id))
        .set((
            keys::needs_attention_at.eq(now),
            keys::last_error.eq(why),
            keys::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(())
}
