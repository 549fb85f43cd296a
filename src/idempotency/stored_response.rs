//! The response stored with a finished key and replayed byte for byte.
//! What it holds (statuses, headers, bodies) is made by `wire`.

use std::io::Write;

use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::pg::{Pg, PgValue};
use diesel::serialize::{self, IsNull, Output, ToSql};
use diesel::sql_types::Jsonb;
use diesel::AsExpression;

use super::canonical::JSONB_FORMAT_VERSION;

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
