//! The load generator: virtual users on one async runtime, each with one
//! keep-alive connection and one request at a time, recording every latency.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use tokio::sync::Barrier;

use crate::client::{Answer, RideClient};

/// A transport error makes a virtual user pause this long, so a failing
/// server is not hammered in a tight loop.
const ERROR_PAUSE: Duration = Duration::from_millis(10);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// `POST /api/rides` with a fresh key per request.
    NewKey,
    /// `POST /api/rides` with keys already finished.
    Replay,
    /// Every virtual user sends the same fresh key at once, round after round.
    Storm,
    /// `GET /api/rides/{id}`.
    Get,
    /// `POST /api/rides/{id}/complete` with a fresh key, of rides held
    /// beforehand, each completed once.
    Complete,
    /// The same, of rides held and assigned to an active driver
    /// beforehand: each completion owes the driver a transfer, which the
    /// server's transfer worker makes while the load runs.
    CompleteAssigned,
    /// `POST /api/rides/{id}/driver` with a fresh key, as the platform, of
    /// rides held beforehand: not measured, it readies `CompleteAssigned`.
    Assign,
}

impl Scenario {
    /// Those measured.
    pub const ALL: [Scenario; 6] = [
        Scenario::NewKey,
        Scenario::Complete,
        Scenario::CompleteAssigned,
        Scenario::Replay,
        Scenario::Storm,
        Scenario::Get,
    ];

    /// Whether each request changes a ride made beforehand, once.
    pub fn changes_rides(self) -> bool {
        matches!(
            self,
            Scenario::Complete | Scenario::CompleteAssigned | Scenario::Assign
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            Scenario::NewKey => "new-key POST",
            Scenario::Complete => "completion POST",
            Scenario::CompleteAssigned => "completion POST, assigned",
            Scenario::Assign => "assignment POST",
            Scenario::Replay => "replay POST",
            Scenario::Storm => "one-key storm",
            Scenario::Get => "GET ride",
        }
    }
}

/// The server, the riders the load runs as, and the bodies their POSTs
/// send: virtual user `i` is rider `i % riders`, except in the storm, where
/// all share rider 0 (keys are scoped per user); rider `r` sends
/// `bodies[r % bodies.len()]`.
pub struct Target {
    pub address: String,
    pub api_keys: Vec<String>,
    pub bodies: Vec<bytes::Bytes>,
}

/// One request of a virtual user, its key made before the clock starts. A
/// replay borrows its finished key, and a read or a change of a ride its
/// id: the load generator shares the server's cores, so a copy per request
/// would count against the server.
enum Request<'a> {
    /// `POST /api/rides` under this key.
    Ride(Cow<'a, str>),
    /// `POST /api/rides/{id}/{action}` under this key.
    Change(&'a str, &'static str, String),
    /// `GET /api/rides/{id}`.
    Get(&'a str),
}

/// Keys finished and rides made by new-key runs, per rider, for replays,
/// reads and completions by the same rider.
#[derive(Debug, Default, Clone)]
pub struct Finished {
    pub riders: Vec<RiderFinished>,
}

#[derive(Debug, Default, Clone)]
pub struct RiderFinished {
    pub keys: Vec<String>,
    /// As paths name them: as the answers gave them (`ride_...`).
    pub ride_ids: Vec<String>,
}

impl Finished {
    pub fn for_riders(riders: usize) -> Finished {
        Finished {
            riders: vec![RiderFinished::default(); riders],
        }
    }

    pub fn extend(&mut self, other: &Finished) {
        for (mine, theirs) in self.riders.iter_mut().zip(&other.riders) {
            mine.keys.extend(theirs.keys.iter().cloned());
            mine.ride_ids.extend(theirs.ride_ids.iter().cloned());
        }
    }
}

#[derive(Debug, Default)]
pub struct LoadResult {
    pub requests: u64,
    pub elapsed: Duration,
    pub latencies: Vec<Duration>,
    /// Latencies of 409 answers.
    pub conflicts: Vec<Duration>,
    pub statuses: BTreeMap<u16, u64>,
    pub transport_errors: u64,
    pub created: Finished,
}

impl LoadResult {
    /// Another virtual user's, or another round's, answers added to these.
    pub fn add(&mut self, other: LoadResult) {
        self.requests += other.requests;
        self.elapsed += other.elapsed;
        self.latencies.extend(other.latencies);
        self.conflicts.extend(other.conflicts);
        for (status, count) in other.statuses {
            *self.statuses.entry(status).or_default() += count;
        }
        self.transport_errors += other.transport_errors;
        self.created.extend(&other.created);
    }
}

struct Shared {
    scenario: Scenario,
    target: Arc<Target>,
    finished: Arc<Finished>,
    deadline: Instant,
    barrier: Barrier,
    /// The storm's last round, or a virtual user out of rides to change.
    stop: AtomicBool,
    /// Per rider, the next of `finished`'s rides to change: riders shared
    /// by several virtual users (more connections than riders) must not
    /// change a ride twice.
    next_ride: Vec<AtomicUsize>,
    run_id: String,
}

impl Shared {
    fn next_ride_to_change(&self, rider: usize) -> Option<&str> {
        let index = self.next_ride[rider].fetch_add(1, Ordering::Relaxed);
        self.finished.riders[rider]
            .ride_ids
            .get(index)
            .map(String::as_str)
    }
}

/// Runs `scenario` with `connections` virtual users for `duration`.
pub async fn run(
    scenario: Scenario,
    target: Arc<Target>,
    finished: Arc<Finished>,
    connections: usize,
    duration: Duration,
) -> anyhow::Result<LoadResult> {
    let riders = target.api_keys.len();
    let unready = (0..connections.min(riders)).any(|rider| finished.riders[rider].keys.is_empty());
    if scenario != Scenario::NewKey && scenario != Scenario::Storm && unready {
        bail!(
            "{} needs a new-key run at as many connections first",
            scenario.name()
        );
    }
    let started = Instant::now();
    let shared = Arc::new(Shared {
        scenario,
        target,
        finished,
        deadline: started + duration,
        barrier: Barrier::new(connections),
        stop: AtomicBool::new(false),
        next_ride: (0..riders).map(|_| AtomicUsize::new(0)).collect(),
        run_id: uuid::Uuid::new_v4().simple().to_string(),
    });
    let users: Vec<_> = (0..connections)
        .map(|index| tokio::spawn(virtual_user(shared.clone(), index)))
        .collect();
    let mut total = LoadResult {
        created: Finished::for_riders(riders),
        ..LoadResult::default()
    };
    for user in users {
        total.add(user.await??);
    }
    total.elapsed = started.elapsed();
    // An assignment load runs until its rides are all assigned; a measured
    // one that runs out ends early, which is worth saying.
    if scenario.changes_rides()
        && scenario != Scenario::Assign
        && shared.stop.load(Ordering::SeqCst)
    {
        eprintln!(
            "{} at {connections} conns ran out of held rides after {:.1} s of {:.1} s",
            scenario.name(),
            total.elapsed.as_secs_f64(),
            duration.as_secs_f64()
        );
    }
    Ok(total)
}

async fn virtual_user(shared: Arc<Shared>, index: usize) -> anyhow::Result<LoadResult> {
    let riders = shared.target.api_keys.len();
    let rider = if shared.scenario == Scenario::Storm {
        0
    } else {
        index % riders
    };
    let client = RideClient::new(&shared.target.api_keys[rider], REQUEST_TIMEOUT)?;
    let mine = &shared.finished.riders[rider];
    let mut result = LoadResult {
        created: Finished::for_riders(riders),
        ..LoadResult::default()
    };
    let address = shared.target.address.as_str();
    for sequence in 0usize.. {
        let request = match shared.scenario {
            Scenario::Storm => {
                if !next_storm_round(&shared).await {
                    break;
                }
                Request::Ride(format!("storm-{}-{sequence}", shared.run_id).into())
            }
            _ if Instant::now() >= shared.deadline || shared.stop.load(Ordering::SeqCst) => break,
            Scenario::NewKey => {
                Request::Ride(format!("bench-{}", uuid::Uuid::new_v4().simple()).into())
            }
            Scenario::Replay => {
                Request::Ride(Cow::Borrowed(&mine.keys[sequence % mine.keys.len()]))
            }
            Scenario::Get => Request::Get(&mine.ride_ids[sequence % mine.ride_ids.len()]),
            // Every user stops with the first one out of rides, so that the
            // whole run is at its number of connections.
            Scenario::Complete | Scenario::CompleteAssigned | Scenario::Assign => {
                let action = if shared.scenario == Scenario::Assign {
                    "driver"
                } else {
                    "complete"
                };
                match shared.next_ride_to_change(rider) {
                    Some(id) => Request::Change(
                        id,
                        action,
                        format!("{action}-{}", uuid::Uuid::new_v4().simple()),
                    ),
                    None => {
                        shared.stop.store(true, Ordering::SeqCst);
                        break;
                    }
                }
            }
        };
        let body = shared.target.bodies[rider % shared.target.bodies.len()].clone();
        let sent = Instant::now();
        let answer = match &request {
            Request::Ride(key) => client.post_ride(address, key, body).await,
            Request::Change(id, action, key) => {
                let path = format!("/api/rides/{id}/{action}");
                client.post(address, &path, key, body).await
            }
            Request::Get(id) => client.get_ride(address, id).await,
        };
        let latency = sent.elapsed();
        match answer {
            Ok(answer) => record(
                &mut result,
                shared.scenario,
                rider,
                request,
                answer,
                latency,
            ),
            Err(_) => {
                result.transport_errors += 1;
                tokio::time::sleep(ERROR_PAUSE).await;
            }
        }
    }
    Ok(result)
}

/// Lines all virtual users up for the next storm round; false once the
/// deadline has passed. The leader decides, so all stop at the same round.
async fn next_storm_round(shared: &Shared) -> bool {
    if shared.barrier.wait().await.is_leader() {
        shared
            .stop
            .store(Instant::now() >= shared.deadline, Ordering::SeqCst);
    }
    shared.barrier.wait().await;
    !shared.stop.load(Ordering::SeqCst)
}

fn record(
    result: &mut LoadResult,
    scenario: Scenario,
    rider: usize,
    request: Request<'_>,
    answer: Answer,
    latency: Duration,
) {
    result.requests += 1;
    result.latencies.push(latency);
    *result.statuses.entry(answer.status).or_default() += 1;
    if answer.status == 409 {
        result.conflicts.push(latency);
    }
    if scenario == Scenario::NewKey && answer.status == 201 {
        if let (Request::Ride(key), Some(id)) = (request, answer.ride_path_id()) {
            let created = &mut result.created.riders[rider];
            created.keys.push(key.into_owned());
            created.ride_ids.push(id);
        }
    }
}
