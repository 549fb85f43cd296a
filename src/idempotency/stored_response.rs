//! The response stored with a finished key and replayed byte for byte.

use std::io::Write;

use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::pg::{Pg, PgValue};
use diesel::serialize::{self, IsNull, Output, ToSql};
use diesel::sql_types::Jsonb;
use diesel::AsExpression;

use super::canonical::JSONB_FORMAT_VERSION;
use crate::problem::{Problem, PROBLEM_CONTENT_TYPE};

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

impl StoredResponse {
    /// A problem as the answer to store with a finished key.
    pub fn problem(problem: &Problem) -> Self {
        StoredResponse {
            status: problem.status(),
            headers: StoredHeaders(vec![(
                "Content-Type".to_owned(),
                PROBLEM_CONTENT_TYPE.to_owned(),
            )]),
            body: problem.body(),
        }
    }

    /// A 200 with a JSON body.
    pub fn ok(body: Vec<u8>) -> Self {
        StoredResponse {
            status: 200,
            headers: StoredHeaders(vec![(
                "Content-Type".to_owned(),
                "application/json".to_owned(),
            )]),
            body,
        }
    }

    /// A 201 with a JSON body and the `Location` of what was created.
    pub fn created(location: String, body: Vec<u8>) -> Self {
        Self::located(201, location, body)
    }

    /// A 202: created, and still under way at `location`.
    pub fn accepted(location: String, body: Vec<u8>) -> Self {
        Self::located(202, location, body)
    }

    fn located(status: u16, location: String, body: Vec<u8>) -> Self {
        StoredResponse {
            status,
            headers: StoredHeaders(vec![
                ("Content-Type".to_owned(), "application/json".to_owned()),
                ("Location".to_owned(), location),
            ]),
            body,
        }
    }
}

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
