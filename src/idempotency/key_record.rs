//! The whole `idempotency_keys` row, as workers and operators read it: its
//! state, the request it holds, and how its attempts went; and the queries
//! operators ask of keys.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde_json::Value;

use super::key_row::KeyState;
use super::recovery_point::FINISHED;
use crate::ids::{KeyId, UserId};
use crate::schema::idempotency_keys;

/// The whole row: its state, and the request it holds, for workers and
/// operators.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = idempotency_keys, check_for_backend(diesel::pg::Pg))]
pub struct KeyRecord {
    #[diesel(embed)]
    pub state: KeyState,
    pub key: String,
    /// The endpoint the key belongs to (`rides.create`).
    pub endpoint: String,
    pub request_method: String,
    pub request_path: String,
    pub request_params: Value,
    pub last_run_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub attempts: i32,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
}

/// A record reads as its state (`record.recovery_point`, `record.id`).
impl std::ops::Deref for KeyRecord {
    type Target = KeyState;

    fn deref(&self) -> &KeyState {
        &self.state
    }
}

impl KeyRecord {
    pub fn load(conn: &mut PgConnection, id: KeyId) -> QueryResult<KeyRecord> {
        idempotency_keys::table
            .find(id)
            .select(KeyRecord::as_select())
            .first(conn)
    }
}

/// Unfinished keys left for an operator, or not run for longer than `idle`,
/// oldest first.
pub fn stuck(conn: &mut PgConnection, idle: std::time::Duration) -> QueryResult<Vec<KeyRecord>> {
    let cutoff = crate::db::now(conn)? - crate::db::span(idle);
    idempotency_keys::table
        .filter(idempotency_keys::recovery_point.ne(FINISHED))
        .filter(
            idempotency_keys::needs_attention_at
                .is_not_null()
                .or(idempotency_keys::last_run_at.lt(cutoff)),
        )
        .order(idempotency_keys::created_at.asc())
        .select(KeyRecord::as_select())
        .load(conn)
}

/// A user's key row, read without any lock.
pub fn find(conn: &mut PgConnection, user_id: UserId, key: &str) -> QueryResult<Option<KeyRecord>> {
    idempotency_keys::table
        .filter(idempotency_keys::user_id.eq(user_id))
        .filter(idempotency_keys::key.eq(key))
        .select(KeyRecord::as_select())
        .first(conn)
        .optional()
}

/// How long the oldest unfinished key has waited (zero when none has), by
/// the database's clock: a gauge of work left behind.
pub fn oldest_unfinished_age(conn: &mut PgConnection) -> QueryResult<std::time::Duration> {
    let now = crate::db::now(conn)?;
    let oldest: Option<DateTime<Utc>> = idempotency_keys::table
        .filter(idempotency_keys::recovery_point.ne(FINISHED))
        .select(diesel::dsl::min(idempotency_keys::created_at))
        .first(conn)?;
    Ok(oldest
        .map(|created| (now - created).to_std().unwrap_or_default())
        .unwrap_or_default())
}
