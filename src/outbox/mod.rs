//! The transactional outbox: jobs staged in the same transaction as the state
//! change they announce, so that a committed change is never left unannounced,
//! and the drainer that delivers them at least once.

pub mod drainer;
mod webhook;

use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::query_builder::{AstPass, QueryFragment};
use diesel::sql_types::Text;
use serde_json::Value;

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

/// A job staged with the row a statement changes (`db::recorded`), when
/// `when` holds of it. `payload` and `when` are SQL over `changed`, the
/// row as the statement returns it, and fixed in the code: they name the
/// row's columns and hold no value.
pub struct StagedWith {
    pub job_type: &'static str,
    /// A `jsonb` expression: what the job names of the row.
    pub payload: &'static str,
    pub when: &'static str,
}

impl QueryFragment<Pg> for StagedWith {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("INSERT INTO staged_jobs (job_type, payload) SELECT ");
        out.push_bind_param::<Text, _>(self.job_type)?;
        out.push_sql(", ");
        out.push_sql(self.payload);
        out.push_sql(" FROM changed WHERE ");
        out.push_sql(self.when);
        Ok(())
    }
}
