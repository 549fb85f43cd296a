//! The reaper: deletes keys finished longer ago than the retention, in
//! batches, and never an unfinished one. Rides keep their data; their
//! `idempotency_key_id` becomes NULL. A key string reused after its row is
//! reaped starts a new, independent request; its gateway keys are the first
//! request's (they derive from what the client sent), so the retention
//! counts from the key's end, after its last gateway call, and outlasts the
//! gateway's memory of keys.

use std::time::Duration;

use diesel::prelude::*;

use super::recovery_point::FINISHED;
use crate::db;
use crate::schema::idempotency_keys::dsl as keys;

const BATCH: i64 = 1_000;

/// Deletes every key finished more than `retention` ago; returns how
/// many. Each batch is its own short transaction, so the reaper never holds
/// many locks, and SKIP LOCKED lets instances reap side by side.
pub fn reap(conn: &mut PgConnection, retention: Duration) -> QueryResult<usize> {
    let cutoff = db::now(conn)? - db::span(retention);
    let mut deleted = 0;
    loop {
        let batch = conn.transaction(|conn| {
            let ids: Vec<i64> = keys::idempotency_keys
                .filter(keys::recovery_point.eq(FINISHED))
                .filter(keys::updated_at.lt(cutoff))
                .select(keys::id)
                .limit(BATCH)
                .for_update()
                .skip_locked()
                .load(conn)?;
            diesel::delete(keys::idempotency_keys.filter(keys::id.eq_any(&ids))).execute(conn)
        })?;
        deleted += batch;
        crate::telemetry::metrics::metrics()
            .reaper_deleted
            .inc_by(batch as u64);
        if batch < BATCH as usize {
            return Ok(deleted);
        }
    }
}
