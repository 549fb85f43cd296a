//! The release before, measured in the same run (`--baseline-bin`): its
//! binary serving a database of its own on the same PostgreSQL, its new-key
//! and completion scenarios run right after this release's in every round,
//! so that both meet the same machine. What a change costs PostgreSQL per
//! request is read from the two (`Results::release_table`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use diesel::PgConnection;

use super::load::{self, Finished, LoadResult, Scenario, Target};
use super::measurement::{counts_statements, Probe, Usage};
use super::session::{
    hold_rides, riders, server_env, COMPLETION_BODY, WARM_UP, WARM_UP_CONNECTIONS,
};
use crate::client::ride_body;
use crate::database::{BesideDatabase, Database};
use crate::process::Announced;
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
    server: Announced,
    paid: Arc<Target>,
    held: Arc<Target>,
    completion: Arc<Target>,
    /// Rides made so far, for nothing but the load's bookkeeping.
    made: Arc<Finished>,
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
        let riders = riders(&ridepay, first, rider_count)?;
        let server = ridepay.serve(&server_env(), None)?;
        let target = |body: bytes::Bytes| {
            Arc::new(Target {
                address: server.address.clone(),
                api_keys: riders.iter().map(|rider| rider.api_key.clone()).collect(),
                body,
            })
        };
        let paid = target(ride_body(2000, Some("pm_card_visa"), "automatic"));
        let held = target(ride_body(2000, Some("pm_card_visa"), "manual"));
        let completion = target(bytes::Bytes::from_static(COMPLETION_BODY.as_bytes()));
        let warm_up = runtime.block_on(load::run(
            Scenario::NewKey,
            paid.clone(),
            Arc::new(Finished::for_riders(riders.len())),
            WARM_UP_CONNECTIONS,
            WARM_UP,
        ))?;
        let to_complete = hold_rides(runtime, &held, WARM_UP_CONNECTIONS, WARM_UP / 2)?;
        runtime.block_on(load::run(
            Scenario::Complete,
            completion.clone(),
            to_complete,
            WARM_UP_CONNECTIONS,
            WARM_UP / 2,
        ))?;
        let mut conn = ridepay::embedded_postgres::connect_with_retry(&beside.url)?;
        let count_statements = counts_statements(&mut conn);
        Ok(Baseline {
            server,
            paid,
            held,
            completion,
            made: Arc::new(warm_up.created),
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
        hold_rides(runtime, &self.held, connections, duration)
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
        let (target, rides) = match scenario {
            Scenario::Complete => (&self.completion, to_complete),
            _ => (&self.paid, &self.made),
        };
        let probe = Probe::start(
            &mut self.conn,
            Some(&self.server),
            postmaster,
            self.count_statements,
        )?;
        let result = runtime.block_on(load::run(
            scenario,
            target.clone(),
            rides.clone(),
            connections,
            duration,
        ))?;
        let usage = probe.finish(&mut self.conn, Some(&self.server))?;
        if scenario == Scenario::NewKey {
            let mut more = (*self.made).clone();
            more.extend(&result.created);
            self.made = Arc::new(more);
        }
        Ok((result, usage))
    }
}
