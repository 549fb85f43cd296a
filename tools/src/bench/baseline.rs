//! The release before, measured in the same run (`--baseline-bin`): its
//! binary serving a database of its own on the same PostgreSQL, its new-key
//! and completion scenarios run right after this release's in every round,
//! so that both meet the same machine. What a change costs PostgreSQL per
//! request is read from the two (`Results::release_table`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use diesel::PgConnection;

use super::load::{Finished, LoadResult, Scenario};
use super::measurement::{counts_statements, Probe, Usage};
use super::served::Served;
use crate::database::{BesideDatabase, Database};
use crate::ridepay::Ridepay;

/// What the two releases are compared on.
pub const COMPARED: [Scenario; 2] = [Scenario::NewKey, Scenario::Complete];

/// The name of a scenario's measurement on the release before.
pub fn before(scenario: Scenario) -> &'static str {
    match scenario {
        Scenario::NewKey => "new-key POST, release before",
        Scenario::Complete => "completion POST, release before",
        _ => unreachable!("only new-key and completion are compared"),
    }
}

pub struct Baseline {
    served: Served,
    /// To its own database, for the statements it counts.
    conn: PgConnection,
    count_statements: bool,
    /// Dropped last, once the server is gone.
    _database: BesideDatabase,
}

impl Baseline {
    /// The release before at `binary`, on a new database beside `database`,
    /// with `rider_count` riders, warmed up as this release is.
    pub fn start(
        binary: &Path,
        database: &Database,
        rider_count: usize,
        runtime: &tokio::runtime::Runtime,
    ) -> anyhow::Result<Baseline> {
        let beside = database.create_beside("baseline")?;
        let ridepay = Ridepay {
            binary: binary.to_owned(),
            database_url: beside.url.clone(),
            log_level: "warn".to_owned(),
        };
        let first = ridepay.create_user(&format!(
            "baseline-{}@ridepay.dev",
            uuid::Uuid::new_v4().simple()
        ))?;
        let served = Served::start(&ridepay, first, rider_count, false, runtime)?;
        let mut conn = ridepay::embedded_postgres::connect_with_retry(&beside.url)?;
        let count_statements = counts_statements(&mut conn);
        Ok(Baseline {
            served,
            conn,
            count_statements,
            _database: beside,
        })
    }

    /// Rides held on the release before, for its completion load of
    /// `duration` at `connections`.
    pub fn hold(
        &self,
        runtime: &tokio::runtime::Runtime,
        connections: usize,
        duration: Duration,
    ) -> anyhow::Result<Arc<Finished>> {
        self.served.hold(runtime, connections, duration)
    }

    /// One run of `scenario` on the release before, with its usage;
    /// `to_complete` the rides a completion load completes.
    pub fn run(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        scenario: Scenario,
        to_complete: &Arc<Finished>,
        connections: usize,
        duration: Duration,
        postmaster: Option<u32>,
    ) -> anyhow::Result<(LoadResult, Usage)> {
        let server = Some(&self.served.server);
        let probe = Probe::start(&mut self.conn, server, postmaster, self.count_statements)?;
        let result = self
            .served
            .run(runtime, scenario, to_complete, connections, duration)?;
        let usage = probe.finish(&mut self.conn, Some(&self.served.server))?;
        Ok((result, usage))
    }
}
