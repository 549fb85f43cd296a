//! A key that exists already: the rules that decide what a request with it
//! gets (its stored answer, a refusal, or the lease), the timing those
//! rules keep, and the lease taken over with a new fencing epoch. A new
//! key's request never comes here: its row is inserted with the lease.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::dsl::now;
use diesel::prelude::*;

use super::key_row::{KeyState, StoredResponse};
use super::lease::{fresh_epoch, Lease};
use super::recovery_point::{RecoveryPoints, FINISHED};
use super::request::{digest, GatewayCalls, RidepayKey, CURRENT_CALL_VERSION, VERSION};
use crate::db::{span, CacheStatement};
use crate::schema::idempotency_keys::dsl as keys;
use crate::service_error::ServiceError;

/// The timing rules every idempotent endpoint shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyPolicy {
    /// After this, a held lease counts as abandoned and may be taken over.
    pub lease_timeout: Duration,
    /// After this (counted from the key's creation), no one resumes a key whose
    /// external effect is still to be made: gateways forget their idempotency
    /// keys (Stripe after 24 hours), and a call with a forgotten key could
    /// charge twice. Such keys are left for an operator.
    pub effect_deadline: Duration,
}

impl KeyPolicy {
    /// Whether a lease taken at `locked_at` is free by `db_now`, the
    /// database's clock.
    pub fn lease_expired(&self, locked_at: Option<DateTime<Utc>>, db_now: DateTime<Utc>) -> bool {
        locked_at.is_none_or(|locked_at| locked_at <= db_now - span(self.lease_timeout))
    }

    pub fn past_effect_deadline(&self, created_at: DateTime<Utc>, db_now: DateTime<Utc>) -> bool {
        created_at <= db_now - span(self.effect_deadline)
    }
}

/// The claim's rules, in order: a different request (`same_request`
/// false) is refused, a finished
/// one replayed (its stored response taken out of `record`), a live lease
/// respected, a key whose call's outcome only the gateway's lists can tell
/// left to reconciliation, and a key too old to resume safely left to an
/// operator. `None`: the request may run.
pub(super) fn claim_rules<P: RecoveryPoints>(
    same_request: bool,
    record: &mut KeyState,
    db_now: DateTime<Utc>,
    policy: &KeyPolicy,
) -> Result<Option<StoredResponse>, ServiceError> {
    if !same_request {
        return Err(ServiceError::KeyReused);
    }
    if record.recovery_point == FINISHED {
        let response = record.take_stored_response().ok_or_else(|| {
            anyhow::anyhow!("finished key {} has no readable response", record.id)
        })?;
        return Ok(Some(response));
    }
    if !policy.lease_expired(record.locked_at, db_now) {
        return Err(ServiceError::KeyInUse);
    }
    if record.call_version > CURRENT_CALL_VERSION {
        // A newer release's key (a rolling deploy): this one would not make
        // its calls the same way.
        return Err(ServiceError::NeedsAttention);
    }
    if record.outcome_unknown_at.is_some() {
        return Err(ServiceError::AwaitingReconciliation {
            reason: "a call's answer was a failure the gateway saved under its key".to_owned(),
        });
    }
    let awaits_effect = parse_point::<P>(record)?.awaits_external_effect();
    if record.needs_attention_at.is_some()
        || (awaits_effect && policy.past_effect_deadline(record.created_at, db_now))
    {
        return Err(ServiceError::NeedsAttention);
    }
    Ok(None)
}

/// Takes the lease of a row the caller holds locked, with a fresh fencing epoch
/// so that any earlier holder's next step commit is refused.
pub(super) fn take_lease<P: RecoveryPoints>(
    conn: &mut PgConnection,
    record: &KeyState,
) -> Result<Lease<P>, ServiceError> {
    let point = parse_point::<P>(record)?;
    let calls = gateway_calls(record)?;
    let epoch = take_fresh_epoch(conn, record)?;
    Ok(Lease::new(record.id, record.user_id, epoch, point, calls))
}

pub(crate) fn parse_point<P: RecoveryPoints>(record: &KeyState) -> Result<P, ServiceError> {
    P::parse(&record.recovery_point).ok_or_else(|| {
        ServiceError::Internal(anyhow::anyhow!(
            "key {} is at recovery point {:?}, unknown to its endpoint",
            record.id,
            record.recovery_point
        ))
    })
}

/// The lease itself: `locked_at = now()` and a fresh `lease_epoch`. Returns
/// the epoch.
pub(crate) fn take_fresh_epoch(
    conn: &mut PgConnection,
    record: &KeyState,
) -> Result<i64, ServiceError> {
    if record.locked_at.is_some() {
        crate::telemetry::metrics::idempotency_outcome("lease_takeover");
        log::warn!(
            "taking over the expired lease of idempotency key {} (epoch {})",
            record.id,
            record.lease_epoch
        );
    }
    Ok(diesel::update(keys::idempotency_keys.find(record.id))
        .set((
            keys::locked_at.eq(now),
            keys::lease_epoch.eq(fresh_epoch()),
            keys::last_run_at.eq(now),
            keys::updated_at.eq(now),
        ))
        .returning(keys::lease_epoch)
        .cached_as(take_fresh_epoch)
        .get_result(conn)?)
}

/// Whether `stored` is the fingerprint of this request. Every retry asks,
/// so the digest is compared in a stack buffer rather than as a new string.
pub(super) fn fingerprint_matches(
    method: &str,
    path: &str,
    canonical: &[u8],
    stored: &str,
) -> bool {
    let Some(stored_hex) = stored
        .strip_prefix(VERSION)
        .and_then(|rest| rest.strip_prefix(':'))
    else {
        return false;
    };
    let mut computed = [0u8; 64];
    hex::encode_to_slice(digest(VERSION, method, path, canonical), &mut computed)
        .expect("64 hex digits hold a SHA-256");
    computed.as_slice() == stored_hex.as_bytes()
}

/// How the calls of the key `record` holds are made. A version this
/// release does not know (a newer release's key, met during a rolling
/// deploy) is left alone: resent with other parameters, its calls would
/// not be the same calls.
pub(crate) fn gateway_calls(record: &KeyState) -> Result<GatewayCalls, ServiceError> {
    let from = match (record.call_version, &record.ridepay_key) {
        (2..=CURRENT_CALL_VERSION, Some(hex_text)) => RidepayKey::parse(hex_text)
            .ok_or_else(|| anyhow::anyhow!("key {} has an unreadable ridepay_key", record.id))?,
        (version, _) => {
            log::warn!(
                "idempotency key {} is of call version {version}, unknown to this \
                 release (2 to {CURRENT_CALL_VERSION}): left to a release that knows it",
                record.id
            );
            return Err(ServiceError::NeedsAttention);
        }
    };
    Ok(GatewayCalls {
        from,
        version: record.call_version,
        generation: record.call_generation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::idempotency::request::Fingerprint;

    #[test]
    fn a_stored_fingerprint_matches_only_the_same_request_of_this_version() {
        let stored = Fingerprint::compute("POST", "/things", b"{}");
        let matches = |canonical: &[u8], stored: &str| {
            fingerprint_matches("POST", "/things", canonical, stored)
        };
        assert!(matches(b"{}", stored.as_str()));
        assert!(!matches(b"{ }", stored.as_str()));
        assert!(!matches(b"{}", "v9:00"));
        assert!(!matches(b"{}", "garbage"));
        let version_1 = format!("v1:{}", hex::encode(digest("v1", "POST", "/things", b"{}")));
        assert!(!matches(b"{}", &version_1));
    }
}
