//! The claim: the caller and their key row found, and a new key inserted
//! with its lease taken; a key that exists already is answered by the
//! rules of `existing_key`.

use chrono::{DateTime, Utc};
use diesel::dsl::now;
use diesel::prelude::*;
use uuid::Uuid;

use super::existing_key::{claim_rules, fingerprint_matches, take_lease, KeyPolicy};
use super::key_row::{KeyState, StoredResponse};
use super::lease::{fresh_epoch, Lease};
use super::recovery_point::RecoveryPoints;
use super::request::{
    CanonicalRequest, Fingerprint, IdempotencyKey, RidepayKey, CURRENT_CALL_VERSION,
};
use crate::db::{database_now, CacheStatement};
use crate::ids::{KeyId, UserId};
use crate::schema::idempotency_keys::dsl as keys;
use crate::service_error::ServiceError;
use crate::users::Role;

/// An idempotent request, as the claim sees it: whose, under which key, and
/// what was asked, in canonical form.
#[derive(Debug, Clone)]
pub struct IdempotentRequest<'a> {
    pub user_id: UserId,
    /// The user's random public id and this installation's id: with the key
    /// and the fingerprint, what the key's gateway calls are derived from.
    user_public_id: Uuid,
    installation: Uuid,
    pub key: &'a IdempotencyKey,
    pub method: &'a str,
    /// The path as sent (`/api/rides/7/refunds`), not the route pattern.
    pub path: &'a str,
    /// The validated request with defaults applied: the fingerprint and every
    /// check against a stored one hash these bytes.
    pub params: &'a CanonicalRequest,
}

impl<'a> IdempotentRequest<'a> {
    /// A POST by `caller` to `path` (as sent), in `installation`.
    pub fn post(
        caller: Requester,
        installation: Uuid,
        key: &'a IdempotencyKey,
        path: &'a str,
        params: &'a CanonicalRequest,
    ) -> Self {
        IdempotentRequest {
            user_id: caller.id,
            user_public_id: caller.public_id,
            installation,
            key,
            method: "POST",
            path,
            params,
        }
    }

    fn fingerprint(&self) -> Fingerprint {
        Fingerprint::compute(self.method, self.path, self.params.as_bytes())
    }

    fn ridepay_key(&self, fingerprint: &Fingerprint) -> RidepayKey {
        RidepayKey::of(
            self.installation,
            self.user_public_id,
            self.key,
            fingerprint,
        )
    }

    /// Whether the key row's fingerprint names this request: a retry, not
    /// another request reusing the key.
    fn matches(&self, record: &KeyState) -> bool {
        let canonical = self.params.as_bytes();
        fingerprint_matches(
            self.method,
            self.path,
            canonical,
            &record.request_fingerprint,
        )
    }
}

/// The outcome of a claim that lets the request be answered: the lease, or
/// the stored answer to replay. Every other outcome (the key in use,
/// reused, left to an operator or to reconciliation) is the error that
/// answers it.
#[derive(Debug)]
pub enum Claim<P> {
    Acquired(Lease<P>),
    Replay(StoredResponse),
}

/// A key row as read with the database's clock.
pub type FoundKey = Option<(KeyState, DateTime<Utc>)>;

/// Who sent a request: their row, their random public id and their role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Queryable)]
pub struct Requester {
    pub id: UserId,
    pub public_id: Uuid,
    pub role: Role,
}

/// The caller whose API key hashes to `api_key_hash`, and their key row,
/// in one plain SELECT (no lock, no write): the authentication and the
/// lookup of every idempotent request, so that a replay or a 409 costs that
/// one statement. `None`: no such caller.
pub fn find_caller_key(
    conn: &mut PgConnection,
    api_key_hash: &[u8],
    key: &IdempotencyKey,
) -> Result<Option<(Requester, FoundKey)>, ServiceError> {
    use crate::schema::users;
    let found: Option<(Requester, Option<KeyState>, DateTime<Utc>)> = users::table
        .left_join(
            keys::idempotency_keys.on(keys::user_id.eq(users::id).and(keys::key.eq(key.as_str()))),
        )
        .filter(users::api_key_hash.eq(api_key_hash))
        .select((
            (users::id, users::public_id, users::role),
            Option::<KeyState>::as_select(),
            database_now(),
        ))
        .cached_as(find_caller_key)
        .get_result(conn)
        .optional()?;
    Ok(found.map(|(caller, state, db_now)| (caller, state.map(|state| (state, db_now)))))
}

/// What the key, as `find_caller_key` read it, answers without a claim:
/// the stored answer to replay, or the error that answers the request; or
/// nothing, and the request goes on to the claim. The claim re-checks under
/// the row lock, so a stale read here can only send a request on to it.
pub fn lookup<P: RecoveryPoints>(
    request: &IdempotentRequest<'_>,
    found: FoundKey,
    policy: &KeyPolicy,
) -> Result<Option<StoredResponse>, ServiceError> {
    match found {
        None => Ok(None),
        Some((mut record, db_now)) => {
            claim_rules::<P>(request.matches(&record), &mut record, db_now, policy)
        }
    }
}

/// Claims the key inside the caller's transaction: `INSERT ... ON CONFLICT DO
/// NOTHING` (a new key is inserted with its lease already taken), else
/// `SELECT ... FOR UPDATE`, the checks, and a new lease with a fresh epoch.
pub fn claim<P: RecoveryPoints>(
    conn: &mut PgConnection,
    request: &IdempotentRequest<'_>,
    policy: &KeyPolicy,
) -> Result<Claim<P>, ServiceError> {
    claim_at(conn, request, policy, P::STARTED)
}

/// The claim of the flow, whose first step runs in the claim's own
/// transaction: a new key is inserted already at the point that step
/// reaches (the one after `started`; but a key is finished only with its
/// answer), so the key row is written once in that transaction. A refusal in
/// the step rolls the row back with it; the lease must not outlive the
/// transaction before the step has run.
pub(crate) fn claim_with_first_step<P: RecoveryPoints>(
    conn: &mut PgConnection,
    request: &IdempotentRequest<'_>,
    policy: &KeyPolicy,
) -> Result<Claim<P>, ServiceError> {
    let first = Some(P::ALL[1]).filter(|point| *point != P::FINISHED);
    claim_at(conn, request, policy, first.unwrap_or(P::STARTED))
}

/// A new key is inserted at `insert_at`.
fn claim_at<P: RecoveryPoints>(
    conn: &mut PgConnection,
    request: &IdempotentRequest<'_>,
    policy: &KeyPolicy,
    insert_at: P,
) -> Result<Claim<P>, ServiceError> {
    let fingerprint = request.fingerprint();
    let ridepay_key = request.ridepay_key(&fingerprint);
    let epoch = fresh_epoch();
    let inserted = diesel::insert_into(keys::idempotency_keys)
        .values((
            keys::user_id.eq(request.user_id),
            keys::key.eq(request.key.as_str()),
            keys::request_method.eq(request.method),
            keys::request_path.eq(request.path),
            keys::request_fingerprint.eq(fingerprint.as_str()),
            keys::call_version.eq(CURRENT_CALL_VERSION),
            keys::ridepay_key.eq(ridepay_key.to_hex()),
            keys::request_params.eq(request.params),
            keys::lease_epoch.eq(epoch),
            keys::locked_at.eq(now),
            keys::recovery_point.eq(insert_at.as_str()),
            keys::endpoint.eq(P::ENDPOINT),
        ))
        // No conflict target: a concurrent insert of the same request
        // collides on `ridepay_key` as well as on `(user_id, key)`, and a
        // target would make the second of those an error.
        .on_conflict_do_nothing()
        .returning(keys::id)
        .get_result::<KeyId>(conn)
        .optional()?;
    if let Some(key_id) = inserted {
        return Ok(Claim::Acquired(Lease::inserted_at(
            key_id,
            request.user_id,
            epoch,
            insert_at,
            ridepay_key,
        )));
    }

    // The key exists. Most often a duplicate is in flight: answer that from a
    // plain read, so a storm of duplicates does not queue on the row lock.
    let plain = keys::idempotency_keys
        .filter(keys::user_id.eq(request.user_id))
        .filter(keys::key.eq(request.key.as_str()))
        .select((KeyState::as_select(), database_now()));
    let (mut record, db_now) = plain.first::<(KeyState, DateTime<Utc>)>(conn)?;
    if let Some(replay) = claim_rules::<P>(request.matches(&record), &mut record, db_now, policy)? {
        return Ok(Claim::Replay(replay));
    }
    // It looks claimable: lock the row and apply the rules again, since another claim
    // may have won in between.
    let (mut record, db_now) = plain
        .for_update()
        .first::<(KeyState, DateTime<Utc>)>(conn)?;
    match claim_rules::<P>(request.matches(&record), &mut record, db_now, policy)? {
        None => Ok(Claim::Acquired(take_lease(conn, &record)?)),
        Some(replay) => Ok(Claim::Replay(replay)),
    }
}
