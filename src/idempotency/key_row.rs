//! The `idempotency_keys` row as a request reads it (`KeyState`), and the
//! response stored with a finished key, replayed byte for byte. What the
//! response holds (statuses, headers, bodies) is made by `wire`; the whole
//! row, as workers and operators read it, is `key_record`.

use std::io::Write;

use chrono::{DateTime, Utc};
use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::pg::{Pg, PgValue};
use diesel::prelude::*;
use diesel::serialize::{self, IsNull, Output, ToSql};
use diesel::sql_types::Jsonb;
use diesel::AsExpression;

use crate::ids::{KeyId, UserId};
use crate::schema::idempotency_keys;

/// JSONB's binary format, as Diesel exchanges it: a version byte, then JSON
/// text.
pub(super) const JSONB_FORMAT_VERSION: u8 = 1;

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
    pub fn load(conn: &mut PgConnection, id: KeyId) -> QueryResult<KeyState> {
        idempotency_keys::table
            .find(id)
            .select(KeyState::as_select())
            .first(conn)
    }

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
