//! One ridepay server under load, this release's or the release before's:
//! its riders, the bodies it is sent, and the rides it has made; on this
//! release, a platform and an active driver rides are assigned to.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};

use super::load::{self, Finished, LoadResult, Scenario, Target};
use crate::client::{ride_body, RegisteredDriver, RideClient};
use crate::process::Announced;
use crate::ridepay::{var, ApiUser, Ridepay};

/// Not measured: fills the server's connection pool and PostgreSQL's caches,
/// and makes the first keys to replay.
const WARM_UP: Duration = Duration::from_secs(2);
const WARM_UP_CONNECTIONS: usize = 8;

/// A completion captures less than the ride's 2000 cents hold, so that it
/// never raises the hold first.
const COMPLETION_BODY: &str = r#"{"final_amount_cents": 1500}"#;

pub struct Served {
    pub server: Announced,
    pub riders: Vec<ApiUser>,
    paid: Arc<Target>,
    held: Arc<Target>,
    completion: Arc<Target>,
    /// The platform assigning rides to its driver; `None` on the release
    /// before, which has no drivers.
    assignment: Option<Arc<Target>>,
    /// Rides paid so far: the keys the replay, storm and GET scenarios reuse.
    made: Arc<Finished>,
}

/// An assignment load runs until its rides are all assigned, within this.
const ASSIGNING_LIMIT: Duration = Duration::from_secs(600);

impl Served {
    /// `ridepay` serving `rider_count` riders (`first` and new ones), and,
    /// `with_drivers`, a platform with an active driver for each rider;
    /// warmed up on new rides and completions.
    pub fn start(
        ridepay: &Ridepay,
        first: ApiUser,
        rider_count: usize,
        with_drivers: bool,
        runtime: &tokio::runtime::Runtime,
    ) -> anyhow::Result<Served> {
        let server = ridepay.serve(&server_env(), None)?;
        let riders = riders(ridepay, first, rider_count)?;
        let assignment = if with_drivers {
            let platform = ridepay.create_platform_user(&format!(
                "platform-{}@ridepay.dev",
                uuid::Uuid::new_v4().simple()
            ))?;
            // A driver drives one ride at a time: rider `i`'s rides, which
            // virtual user `i` completes one after another, go to driver
            // `i`, as no two of one driver's completions would run at once.
            let mut bodies = Vec::new();
            for _ in &riders {
                let driver =
                    runtime.block_on(active_driver(ridepay, &server.address, &platform))?;
                bodies.push(
                    serde_json::json!({ "driver_id": driver })
                        .to_string()
                        .into(),
                );
            }
            Some(Arc::new(Target {
                address: server.address.clone(),
                // Rider `i`'s rides are assigned by virtual user `i`.
                api_keys: vec![platform.api_key; riders.len()],
                bodies,
            }))
        } else {
            None
        };
        let target = |body: bytes::Bytes| {
            Arc::new(Target {
                address: server.address.clone(),
                api_keys: riders.iter().map(|rider| rider.api_key.clone()).collect(),
                bodies: vec![body],
            })
        };
        let mut served = Served {
            paid: target(ride_body(2000, Some("pm_card_visa"), "automatic")),
            held: target(ride_body(2000, Some("pm_card_visa"), "manual")),
            completion: target(bytes::Bytes::from_static(COMPLETION_BODY.as_bytes())),
            assignment,
            made: Arc::new(Finished::for_riders(riders.len())),
            server,
            riders,
        };
        served.run(
            runtime,
            Scenario::NewKey,
            &Arc::default(),
            WARM_UP_CONNECTIONS,
            WARM_UP,
        )?;
        let to_complete = served.hold(runtime, WARM_UP_CONNECTIONS, WARM_UP / 2)?;
        served.run(
            runtime,
            Scenario::Complete,
            &to_complete,
            WARM_UP_CONNECTIONS,
            WARM_UP / 2,
        )?;
        Ok(served)
    }

    /// Rides held, for a completion load of `duration` at `connections`.
    pub fn hold(
        &self,
        runtime: &tokio::runtime::Runtime,
        connections: usize,
        duration: Duration,
    ) -> anyhow::Result<Arc<Finished>> {
        let made = runtime.block_on(load::run(
            Scenario::NewKey,
            self.held.clone(),
            Arc::new(Finished::for_riders(self.held.api_keys.len())),
            connections,
            duration,
        ))?;
        Ok(Arc::new(made.created))
    }

    /// Rides held and assigned to the driver, for a completion load of
    /// `duration` at `connections`.
    pub fn hold_assigned(
        &self,
        runtime: &tokio::runtime::Runtime,
        connections: usize,
        duration: Duration,
    ) -> anyhow::Result<Arc<Finished>> {
        let assignment = self
            .assignment
            .clone()
            .context("this server has no driver to assign rides to")?;
        let held = self.hold(runtime, connections, duration)?;
        let assigned = runtime.block_on(load::run(
            Scenario::Assign,
            assignment,
            held.clone(),
            connections,
            ASSIGNING_LIMIT,
        ))?;
        let refused = assigned.requests - assigned.statuses.get(&200).copied().unwrap_or(0);
        if refused > 0 || assigned.transport_errors > 0 {
            bail!(
                "assigning the held rides: {:?}, {} transport errors",
                assigned.statuses,
                assigned.transport_errors
            );
        }
        Ok(held)
    }

    /// One run of `scenario`; `to_complete` the rides a completion load
    /// completes (held, or held and assigned).
    pub fn run(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        scenario: Scenario,
        to_complete: &Arc<Finished>,
        connections: usize,
        duration: Duration,
    ) -> anyhow::Result<LoadResult> {
        let (target, rides) = match scenario {
            Scenario::Complete | Scenario::CompleteAssigned => (&self.completion, to_complete),
            _ => (&self.paid, &self.made),
        };
        let result = runtime.block_on(load::run(
            scenario,
            target.clone(),
            rides.clone(),
            connections,
            duration,
        ))?;
        if scenario == Scenario::NewKey {
            let mut more = (*self.made).clone();
            more.extend(&result.created);
            self.made = Arc::new(more);
        }
        Ok(result)
    }
}

/// The environment of a measured server: its background workers off, so
/// that no pass lands in a measured window, but the transfer worker, woken
/// by each completion of an assigned ride to make its transfer (the
/// release before has none); and no rate limits.
fn server_env() -> Vec<(String, String)> {
    vec![
        var("COMPLETER_ENABLED", false),
        var("RECONCILE_ENABLED", false),
        var("OUTBOX_ENABLED", false),
        var("REAPER_ENABLED", false),
        // The gateway's events are applied after the answer, by a worker:
        // work of the gateway's, not of the request measured.
        var("SIMULATED_GATEWAY_EVENTS_ENABLED", false),
        // One rider sends thousands of requests a second here.
        var("RATE_LIMIT_PER_SECOND", 0),
        var("RATE_LIMIT_ADDRESS_PER_SECOND", 0),
    ]
}

/// A driver registered by `platform` on the server at `address`, their
/// account activated at the simulated gateway, and learnt active by the
/// server as when they come back to their return page: their id.
async fn active_driver(
    ridepay: &Ridepay,
    address: &str,
    platform: &ApiUser,
) -> anyhow::Result<String> {
    let client = RideClient::new(&platform.api_key, Duration::from_secs(30))?;
    let email = format!("driver-{}@ridepay.dev", uuid::Uuid::new_v4().simple());
    let body = serde_json::json!({ "email": email, "country": "US" });
    let registered = client
        .post(address, "/api/drivers", &email, body.to_string().into())
        .await?;
    let driver = RegisteredDriver::from_answer(&registered)?;
    ridepay.gateway_control(&ridepay.database_url, "activate-account", &driver.account)?;
    if !client
        .get(address, &driver.return_path)
        .await?
        .says_driver_active()
    {
        bail!("the driver's return page does not say they are active");
    }
    Ok(driver.id)
}

/// `first` and new riders up to `count`, with consecutive ids, which the
/// pgbench replay of a new ride mirrors.
fn riders(ridepay: &Ridepay, first: ApiUser, count: usize) -> anyhow::Result<Vec<ApiUser>> {
    let mut riders = vec![first];
    while riders.len() < count.max(1) {
        let rider = ridepay.create_user(&format!(
            "rider-{}@ridepay.dev",
            uuid::Uuid::new_v4().simple()
        ))?;
        if rider.user_id != riders[0].user_id + riders.len() as i64 {
            bail!("rider ids are not consecutive; pgbench could not mirror the riders");
        }
        riders.push(rider);
    }
    Ok(riders)
}
