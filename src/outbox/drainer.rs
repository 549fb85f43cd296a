//! The outbox drainer. Jobs are claimed with a short lease column rather than a
//! row lock, so no lock is held across a delivery, and two instances never
//! deliver the same job at the same moment. A job is deleted only after it was
//! delivered: a crash in between means one more delivery, never none.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::dsl::{Eq, Filter, IsNotDistinctFrom};
use diesel::prelude::*;
use serde_json::Value;

use super::webhook::WebhookClient;
use super::JobHandler;
use crate::backoff::Backoff;
use crate::db::{self, DbPool};
use crate::schema::staged_jobs;
use crate::service_error::ServiceError;

pub struct DrainerSettings {
    pub webhook: Option<WebhookClient>,
    /// One per job type.
    pub handlers: Vec<Box<dyn JobHandler>>,
    /// How long a claimed job is this worker's; longer than a delivery can take.
    pub lease: Duration,
    pub batch_size: i64,
    pub backoff: Backoff,
}

impl DrainerSettings {
    pub fn new(
        webhook_url: Option<String>,
        handlers: Vec<Box<dyn JobHandler>>,
    ) -> anyhow::Result<Self> {
        let timeout = Duration::from_secs(10);
        Ok(DrainerSettings {
            handlers,
            webhook: webhook_url
                .map(|url| WebhookClient::new(url, timeout))
                .transpose()?,
            lease: timeout * 6,
            batch_size: 50,
            backoff: Backoff {
                base: Duration::from_secs(2),
                max: Duration::from_secs(15 * 60),
            },
        })
    }
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = staged_jobs, check_for_backend(diesel::pg::Pg))]
struct StagedJob {
    id: i64,
    job_type: String,
    payload: Value,
    attempts: i32,
    locked_until: Option<DateTime<Utc>>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DrainReport {
    pub delivered: usize,
    pub failed: usize,
}

/// One pass: claims due jobs, delivers each, and deletes or reschedules it.
pub fn run_once(pool: &DbPool, settings: &DrainerSettings) -> Result<DrainReport, ServiceError> {
    let jobs = claim_due(&mut *pool.get()?, settings)?;
    let mut report = DrainReport::default();
    for job in jobs {
        match deliver(pool, settings, &job) {
            Ok(()) => {
                diesel::delete(claimed(&job)).execute(&mut *pool.get()?)?;
                report.delivered += 1;
                count("delivered");
            }
            Err(err) => {
                let backoff = settings.backoff.after(job.attempts);
                log::warn!(
                    "outbox job {} ({}) attempt {} failed: {err:#}; next in {backoff:?}",
                    job.id,
                    job.job_type,
                    job.attempts
                );
                let mut conn = pool.get()?;
                let run_at = db::now(&mut conn)? + db::span(backoff);
                diesel::update(claimed(&job))
                    .set((
                        staged_jobs::locked_until.eq(None::<DateTime<Utc>>),
                        staged_jobs::run_at.eq(run_at),
                        staged_jobs::last_error.eq(format!("{err:#}")),
                    ))
                    .execute(&mut conn)?;
                report.failed += 1;
                count("failed");
            }
        }
    }
    Ok(report)
}

type ClaimedJob = Filter<
    Filter<staged_jobs::table, Eq<staged_jobs::id, i64>>,
    IsNotDistinctFrom<staged_jobs::locked_until, Option<DateTime<Utc>>>,
>;

fn count(result: &str) {
    crate::telemetry::metrics::metrics()
        .outbox
        .with_label_values(&[result])
        .inc();
}

/// The job, as long as this worker's claim on it still stands.
fn claimed(job: &StagedJob) -> ClaimedJob {
    staged_jobs::table
        .filter(staged_jobs::id.eq(job.id))
        .filter(staged_jobs::locked_until.is_not_distinct_from(job.locked_until))
}

fn claim_due(conn: &mut PgConnection, settings: &DrainerSettings) -> QueryResult<Vec<StagedJob>> {
    conn.transaction(|conn| {
        let now = db::now(conn)?;
        let ids: Vec<i64> = staged_jobs::table
            .filter(staged_jobs::run_at.le(now))
            .filter(
                staged_jobs::locked_until
                    .is_null()
                    .or(staged_jobs::locked_until.lt(now)),
            )
            .order((staged_jobs::run_at, staged_jobs::id))
            .limit(settings.batch_size)
            .select(staged_jobs::id)
            .for_update()
            .skip_locked()
            .load(conn)?;
        diesel::update(staged_jobs::table.filter(staged_jobs::id.eq_any(&ids)))
            .set((
                staged_jobs::locked_until.eq(now + db::span(settings.lease)),
                staged_jobs::attempts.eq(staged_jobs::attempts + 1),
            ))
            .returning(StagedJob::as_returning())
            .get_results(conn)
    })
}

fn deliver(pool: &DbPool, settings: &DrainerSettings, job: &StagedJob) -> anyhow::Result<()> {
    let handler = settings
        .handlers
        .iter()
        .find(|handler| handler.job_type() == job.job_type)
        .ok_or_else(|| anyhow::anyhow!("unknown job type {:?}", job.job_type))?;
    let message = handler.message(&mut *pool.get()?, &job.payload)?;
    match &settings.webhook {
        Some(webhook) => webhook.send(&format!("job_{}", job.id), &serde_json::to_vec(&message)?),
        None => handler.record(&mut *pool.get()?, job.id, &job.payload, &message),
    }
}
