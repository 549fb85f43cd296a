//! The transactional outbox: jobs staged in the same transaction as the state
//! change they announce, so that a committed change is never left unannounced,
//! and the drainer that delivers them at least once.

pub mod drainer;
mod webhook;

use diesel::prelude::*;
use serde_json::Value;

use crate::schema::staged_jobs;

pub const RIDE_RECEIPT: &str = "ride_receipt";

pub fn stage(conn: &mut PgConnection, job_type: &str, payload: Value) -> QueryResult<()> {
    diesel::insert_into(staged_jobs::table)
        .values((
            staged_jobs::job_type.eq(job_type),
            staged_jobs::payload.eq(payload),
        ))
        .execute(conn)?;
    Ok(())
}
