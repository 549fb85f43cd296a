//! The lease on a key row, and the fenced commits of the steps run under
//! it.

use diesel::dsl::{now, Eq, Filter};
use diesel::prelude::*;

use super::finishing::{self, Finishing, FinishingStatement};
use super::key_row::StoredResponse;
use super::recovery_point::RecoveryPoints;
use super::request::{GatewayCalls, RidepayKey};
use crate::db::CacheStatement;
use crate::ids::{KeyId, UserId};
use crate::public_ids::{IdSecret, PublicId};
use crate::schema::idempotency_keys::dsl as keys;
use crate::service_error::ServiceError;

pub(super) mod after_failure;
pub(super) mod resumed;

/// The key row's changes when it finishes with `response`.
macro_rules! finished_with {
    ($points:ty, $response:expr) => {
        (
            keys::recovery_point.eq(<$points>::FINISHED.as_str()),
            keys::response_status.eq(i16::try_from($response.status).ok()),
            keys::response_headers.eq(&$response.headers),
            keys::response_body.eq(&$response.body),
            keys::locked_at.eq(None::<chrono::DateTime<chrono::Utc>>),
            keys::last_run_at.eq(now),
            keys::updated_at.eq(now),
        )
    };
}

type HeldRow =
    Filter<Filter<keys::idempotency_keys, Eq<keys::id, KeyId>>, Eq<keys::lease_epoch, i64>>;
type FencedRow = Filter<HeldRow, Eq<keys::recovery_point, &'static str>>;

/// A lease's fencing epoch, drawn at random rather than counted: no two
/// holders share one, even across a failover that lost or reused key rows.
pub(crate) fn fresh_epoch() -> i64 {
    rand::Rng::gen_range(&mut rand::thread_rng(), 1..i64::MAX)
}

/// Proof of holding a key's lease at a given fencing epoch, and the recovery
/// point reached. Every step commit checks all three against the row: if
/// another worker has taken the lease since, the epoch differs, zero rows
/// match, and the step rolls back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease<P> {
    key_id: KeyId,
    user_id: UserId,
    epoch: i64,
    /// How the key's gateway calls are made.
    calls: GatewayCalls,
    /// Where the request is.
    point: P,
    /// Where the key row says it is: ahead of `point` only for a key
    /// inserted in this transaction at the point its first step reaches.
    stored: P,
}

impl<P: RecoveryPoints> Lease<P> {
    pub(crate) fn new(
        key_id: KeyId,
        user_id: UserId,
        epoch: i64,
        point: P,
        calls: GatewayCalls,
    ) -> Self {
        Lease {
            key_id,
            user_id,
            epoch,
            calls,
            point,
            stored: point,
        }
    }

    /// The lease of a key the claim inserted at `stored` (in the flow, the
    /// point its first step reaches, in the same transaction): reaching it
    /// writes nothing more, so a new key is written once per transaction.
    pub(crate) fn inserted_at(
        key_id: KeyId,
        user_id: UserId,
        epoch: i64,
        stored: P,
        ridepay_key: RidepayKey,
    ) -> Self {
        let calls = GatewayCalls::first(ridepay_key);
        Lease {
            stored,
            ..Lease::new(key_id, user_id, epoch, P::STARTED, calls)
        }
    }

    pub fn key_id(&self) -> KeyId {
        self.key_id
    }

    pub fn user_id(&self) -> UserId {
        self.user_id
    }

    pub fn epoch(&self) -> i64 {
        self.epoch
    }

    /// How the key's gateway calls are made.
    pub fn gateway_calls(&self) -> GatewayCalls {
        self.calls
    }

    /// Inserts the request's row of kind `T` under the first id derived
    /// from the request that `insert` finds free (`None`: taken, by the row
    /// of this key's use before its retention ended). Made again after a
    /// failover lost it, the row gets the id its client was given.
    pub fn insert_under_derived_id<T: PublicId, R, E>(
        &self,
        secret: &IdSecret,
        mut insert: impl FnMut(T) -> Result<Option<R>, E>,
    ) -> Result<R, E> {
        let mut ordinal = 0;
        loop {
            if let Some(row) = insert(secret.derive(self.calls.from.as_bytes(), ordinal))? {
                return Ok(row);
            }
            ordinal += 1;
        }
    }

    pub fn recovery_point(&self) -> P {
        self.point
    }

    /// Goes on to `next` in memory only: nothing from the point before
    /// needed recording (`flow::Called::NotNeeded`). The row stays where it
    /// is, and the next write is fenced on it.
    pub(crate) fn pass_to(&mut self, next: P) {
        self.point = next;
    }

    /// Records that the step in the caller's transaction reached `next`.
    pub fn advance(&mut self, conn: &mut PgConnection, next: P) -> Result<(), ServiceError> {
        if next == self.stored {
            // The row was inserted there, in this transaction.
            self.point = next;
            return Ok(());
        }
        let updated = diesel::update(self.fenced())
            .set((
                keys::recovery_point.eq(next.as_str()),
                keys::last_run_at.eq(now),
                keys::updated_at.eq(now),
            ))
            .returning(keys::id)
            .cached_as(Self::advance)
            .get_result::<i64>(conn)
            .optional()?;
        self.point = self.checked(updated.is_some(), next)?;
        self.stored = next;
        Ok(())
    }

    /// Stores the response, marks the key finished and releases the lease, in
    /// the caller's transaction.
    pub fn finish(
        &mut self,
        conn: &mut PgConnection,
        response: &StoredResponse,
    ) -> Result<(), ServiceError> {
        let updated = diesel::update(self.fenced())
            .set(finished_with!(P, response))
            .returning(keys::id)
            .cached_as(Self::finish)
            .get_result::<i64>(conn)
            .optional()?;
        self.point = self.checked(updated.is_some(), P::FINISHED)?;
        self.stored = P::FINISHED;
        Ok(())
    }

    /// Sends `finishing`'s change with the key's final write, as one
    /// statement (`finishing`): the key finished with its response, or
    /// nothing written and the lease lost.
    pub(crate) fn finish_with(
        &mut self,
        conn: &mut PgConnection,
        finishing: Finishing,
    ) -> Result<StoredResponse, ServiceError> {
        let response = &finishing.response;
        let changed: i64 = FinishingStatement {
            fence: self.fenced().select(keys::id).for_update(),
            finishing: &finishing,
            finished: diesel::update(
                keys::idempotency_keys
                    .filter(keys::id.eq(self.key_id))
                    .filter(finishing::changed()),
            )
            .set(finished_with!(P, response)),
        }
        .get_result::<i64>(conn)?;
        self.point = self.checked(changed > 0_i64, P::FINISHED)?;
        self.stored = P::FINISHED;
        Ok(finishing.response)
    }

    /// The row, as long as the lease is still ours, wherever the key is.
    fn held(&self) -> HeldRow {
        keys::idempotency_keys
            .filter(keys::id.eq(self.key_id))
            .filter(keys::lease_epoch.eq(self.epoch))
    }

    /// The row, as long as it is still ours and where we left it.
    fn fenced(&self) -> FencedRow {
        self.held()
            .filter(keys::recovery_point.eq(self.stored.as_str()))
    }

    fn checked(&self, updated: bool, next: P) -> Result<P, ServiceError> {
        if updated {
            Ok(next)
        } else {
            crate::telemetry::metrics::idempotency_outcome("fencing_refused");
            log::warn!(
                "fencing refused {:?} -> {:?} on idempotency key {} at epoch {}",
                self.point,
                next,
                self.key_id,
                self.epoch
            );
            Err(ServiceError::LeaseLost)
        }
    }
}

/// Runs one atomic step (or two adjacent ones with no external effect between
/// them) in a single transaction. If it fails, the transaction rolls back and
/// so does the lease's in-memory recovery point.
pub fn in_transaction<P, T>(
    conn: &mut PgConnection,
    lease: &mut Lease<P>,
    step: impl FnOnce(&mut PgConnection, &mut Lease<P>) -> Result<T, ServiceError>,
) -> Result<T, ServiceError>
where
    P: RecoveryPoints,
{
    let before = *lease;
    let result = conn.transaction(|conn| step(conn, lease));
    if result.is_err() {
        *lease = before;
    }
    result
}
