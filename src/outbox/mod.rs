//! The transactional outbox: jobs staged in the same transaction as the state
//! change they announce, so that a committed change is never left unannounced,
//! and the drainer that delivers them at least once.

pub mod drainer;
mod webhook;

use diesel::prelude::*;
use serde_json::Value;

use crate::schema::staged_jobs;

/// What a job of one type delivers. The endpoint that stages the job owns
/// it, so the outbox never names an endpoint; the application hands the
/// drainer every handler (`workers`).
pub trait JobHandler: Send + Sync {
    /// The `job_type` this handler's jobs are staged under.
    fn job_type(&self) -> &'static str;

    /// The message that announces the job's change, read from the database
    /// now (the payload names it, it does not carry it).
    fn message(&self, conn: &mut PgConnection, payload: &Value) -> anyhow::Result<Value>;

    /// Keeps the message where an operator can see it, when no webhook is
    /// set up to take it; a redelivery must not add a second copy.
    fn record(
        &self,
        conn: &mut PgConnection,
        job_id: i64,
        payload: &Value,
        message: &Value,
    ) -> anyhow::Result<()>;
}

pub fn stage(conn: &mut PgConnection, job_type: &str, payload: Value) -> QueryResult<()> {
    diesel::insert_into(staged_jobs::table)
        .values((
            staged_jobs::job_type.eq(job_type),
            staged_jobs::payload.eq(payload),
        ))
        .execute(conn)?;
    Ok(())
}
