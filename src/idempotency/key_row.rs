//! The `idempotency_keys` row, the queries on it that take no lease, and
//! the response stored with a finished key, replayed byte for byte. What
//! the response holds (statuses, headers, bodies) is made by `wire`.

use std::io::Write;

use chrono::{DateTime, Utc};
use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::pg::{Pg, PgValue};
use diesel::prelude::*;
use diesel::serialize::{self, IsNull, Output, ToSql};
use diesel::sql_types::Jsonb;
use diesel::AsExpression;
use serde_json::Value;

use super::request::JSONB_FORMAT_VERSION;
use crate::ids::{KeyId, UserId};
use crate::schema::idempotency_keys;

/// What deciding a request's fate needs of a key row: the fingerprint, the
/// lease, the recovery point and the stored response. Replays and 409s read
/// only this, not the request's parameters.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = idempotency_keys, check_for_backend(diesel::pg::Pg))]
pub struct KeyState {
    pub id: KeyId,
    pub user_id: UserId,
    pub request_fingerprint: String,
    pub lease_epoch: i64,
    pub locked_at: Option<DateTime<Utc>>,
    pub recovery_point: String,
    pub response_status: Option<i16>,
    pub response_headers: Option<StoredHeaders>,
    pub response_body: Option<Vec<u8>>,
    pub created_at: DateTime<Utc>,
    pub needs_attention_at: Option<DateTime<Utc>>,
    /// How its gateway calls are made (`GatewayCalls`).
    pub call_version: i16,
    pub ridepay_key: Option<String>,
    /// The live generation of its gateway calls (`GatewayCalls`).
    pub call_generation: i16,
    /// When a call's answer was a failure the gateway saved under its key:
    /// the key waits for reconciliation.
    pub outcome_unknown_at: Option<DateTime<Utc>>,
}

impl KeyState {
    /// The stored response, when the key is finished, moved out of the row
    /// rather than copied: a replay needs nothing else of it.
    pub fn take_stored_response(&mut self) -> Option<StoredResponse> {
        Some(StoredResponse {
            status: u16::try_from(self.response_status?).ok()?,
            headers: self.response_headers.take()?,
            body: self.response_body.take()?,
        })
    }
}

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
        .filter(idempotency_keys::recovery_point.ne(super::recovery_point::FINISHED))
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
        .filter(idempotency_keys::recovery_point.ne(super::recovery_point::FINISHED))
        .select(diesel::dsl::min(idempotency_keys::created_at))
        .first(conn)?;
    Ok(oldest
        .map(|created| (now - created).to_std().unwrap_or_default())
        .unwrap_or_default())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResponse {
    pub status: u16,
    pub headers: StoredHeaders,
    pub body: Vec<u8>,
}

/// The headers in the order they were sent (`Content-Type`, `Location`, ...),
/// stored as a JSON array of `[name, value]` pairs. Read and written without
/// a `serde_json::Value` in between, since every replay reads them.
#[derive(Debug, Clone, PartialEq, Eq, AsExpression, FromSqlRow, serde::Serialize)]
#[diesel(sql_type = Jsonb)]
pub struct StoredHeaders(pub Vec<(String, String)>);

impl ToSql<Jsonb, Pg> for StoredHeaders {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        out.write_all(&[JSONB_FORMAT_VERSION])?;
        serde_json::to_writer(out, &self.0)?;
        Ok(IsNull::No)
    }
}

impl FromSql<Jsonb, Pg> for StoredHeaders {
    fn from_sql(value: PgValue<'_>) -> deserialize::Result<Self> {
        match value.as_bytes().split_first() {
            Some((&JSONB_FORMAT_VERSION, json)) => Ok(StoredHeaders(serde_json::from_slice(json)?)),
            _ => Err("unsupported JSONB format version".into()),
        }
    }
}
