//! The database going away under load: sessions terminated, and an immediate
//! (crash) restart of a PostgreSQL of this test's own. Affected requests get a
//! 503 and nothing final is stored for them; the server recovers by itself; a
//! retry of every key ends with one ride and one charge.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use diesel::RunQueryDsl;
use futures_util::stream::{self, StreamExt};
use ridepay::embedded_postgres::{connect_with_retry, EmbeddedPostgres, StopMode};

use crate::common::app::{database_only, on_database, ride_with, Answer, TestApp};
use crate::common::server_process::ServerProcess;
use crate::common::wait::eventually;

const KEYS: usize = 120;

/// Each key's ride has its own amount, so a mix-up would show.
fn body_for(key: &str) -> String {
    let n: i64 = key.trim_start_matches("fault-").parse().unwrap();
    ride_with(serde_json::json!({ "amount_cents": 500 + n }))
}

/// Sends KEYS rides, 8 at a time, counting them in `done`; returns each key's
/// first answer (None where the connection broke).
async fn load(app: &TestApp, address: &str, done: &AtomicUsize) -> Vec<(String, Option<Answer>)> {
    stream::iter(0..KEYS)
        .map(|i| async move {
            let key = format!("fault-{i}");
            let body = body_for(&key);
            let answer = app
                .try_post_ride_to(address, &app.user.api_key, &key, &body)
                .await
                .ok();
            done.fetch_add(1, Ordering::SeqCst);
            (key, answer)
        })
        .buffer_unordered(8)
        .collect()
        .await
}

/// Waits until the load is under way, then faults, and checks that the fault
/// came and went while requests were still running.
async fn fault_during(done: &AtomicUsize, fault: impl FnOnce()) {
    while done.load(Ordering::SeqCst) < 10 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    fault();
    assert!(
        done.load(Ordering::SeqCst) < KEYS,
        "the load ended before the fault did"
    );
}

/// Every first answer is a success or a 503, and nothing final is stored for
/// a 503 unless the fault struck between the commit and its acknowledgement
/// (the database committed, the server never heard): then a retry replays
/// the stored answer. Retries finish every key exactly once.
async fn assert_recovered(app: &TestApp, address: &str, first: Vec<(String, Option<Answer>)>) {
    let mut failed = 0;
    let mut unacknowledged = Vec::new();
    for (key, answer) in &first {
        match answer {
            Some(answer) if answer.status == 201 => {}
            Some(answer) => {
                assert_eq!(
                    answer.status,
                    503,
                    "{key}: {}",
                    String::from_utf8_lossy(&answer.body)
                );
                assert_eq!(
                    answer.header("content-type"),
                    Some("application/problem+json")
                );
                if app.key_state(key)["response_status"] != serde_json::Value::Null {
                    unacknowledged.push(key.clone());
                }
                failed += 1;
            }
            None => failed += 1,
        }
    }
    // The server may ride a fault out without failing anyone, and how many
    // requests a fault catches between their commit and its acknowledgement
    // is the machine's speed: what holds is that each of those replays.
    eprintln!(
        "{failed} of {KEYS} first attempts failed, {} after their commit",
        unacknowledged.len()
    );
    for (key, _) in &first {
        let body = body_for(key);
        let mut last = None;
        for _ in 0..100 {
            match app
                .try_post_ride_to(address, &app.user.api_key, key, &body)
                .await
            {
                Ok(answer) if answer.status == 201 => {
                    if unacknowledged.contains(key) {
                        assert_eq!(answer.header("idempotent-replayed"), Some("true"), "{key}");
                    }
                    last = None;
                    break;
                }
                other => {
                    last = Some(other.map(|a| String::from_utf8_lossy(&a.body).into_owned()));
                    tokio::time::sleep(Duration::from_millis(200)).await
                }
            }
        }
        assert!(
            last.is_none(),
            "{key} never finished: {last:?} {}",
            app.key_state(key)
        );
    }
    let keys = KEYS as i64;
    assert_eq!(app.counts(), (keys, keys, keys));
    assert_eq!(
        app.count("idempotency_keys WHERE recovery_point = 'finished'"),
        keys
    );
    assert_eq!(
        app.count("rides r JOIN simulated_payment_intents p ON p.id = r.payment_intent_id WHERE p.amount_received_cents = r.amount_cents"),
        keys
    );
}

#[tokio::test]
async fn terminated_sessions_under_load_get_503s_and_every_key_finishes_once() {
    let app = database_only();
    let server = ServerProcess::start(&app.database_url, &[("SIMULATED_GATEWAY_LATENCY_MS", "20")]);
    let database = app.database_url.rsplit('/').next().unwrap().to_owned();
    let done = AtomicUsize::new(0);
    let mut admin = app.db();
    let killer = fault_during(&done, || {
        for _ in 0..5 {
            diesel::sql_query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = $1 AND application_name = 'ridepay' AND pid <> pg_backend_pid()",
            )
            .bind::<diesel::sql_types::Text, _>(&database)
            .execute(&mut admin)
            .unwrap();
            std::thread::sleep(Duration::from_millis(50));
        }
    });

    let (first, ()) = tokio::join!(load(&app, &server.address, &done), killer);

    assert_recovered(&app, &server.address, first).await;
}

/// A cluster of the test's own, migrated, so a restart touches no other
/// test, and a test app on it.
struct OwnCluster {
    dir: std::path::PathBuf,
    cluster: EmbeddedPostgres,
    database_url: String,
    app: TestApp,
}

impl OwnCluster {
    fn start() -> OwnCluster {
        let dir = std::env::temp_dir().join(format!(
            "ridepay-test-restart-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let cluster = EmbeddedPostgres::ensure_running(&dir).unwrap();
        cluster.stop_when_process_exits(&dir).unwrap();
        let database_url = cluster.service_url();
        ridepay::db::run_migrations(&mut connect_with_retry(&database_url).unwrap()).unwrap();
        let app = on_database(database_url.clone());
        OwnCluster {
            dir,
            cluster,
            database_url,
            app,
        }
    }

    /// Stops PostgreSQL as a crash would and starts a new postmaster, which
    /// too must stop when the tests end.
    fn restart_immediately(&self) {
        tokio::task::block_in_place(|| {
            self.cluster.stop(StopMode::Immediate).unwrap();
            EmbeddedPostgres::ensure_running(&self.dir)
                .unwrap()
                .stop_when_process_exits(&self.dir)
                .unwrap();
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_immediate_postgres_restart_under_load_gets_503s_and_every_key_finishes_once() {
    let own = OwnCluster::start();
    let (app, database_url) = (&own.app, &own.database_url);
    let server = ServerProcess::start(database_url, &[("SIMULATED_GATEWAY_LATENCY_MS", "20")]);
    let done = AtomicUsize::new(0);
    let restart = fault_during(&done, || own.restart_immediately());

    let (first, ()) = tokio::join!(load(app, &server.address, &done), restart);

    assert_recovered(app, &server.address, first).await;
}

/// A new ride that did not answer 201.
struct Failed {
    key: String,
    /// Its status, 0 for no answer.
    status: u16,
    request_id: Option<String>,
}

/// Sends `count` new rides, 8 at a time, and returns those that are not 201.
async fn failed_rides(app: &TestApp, address: &str, prefix: &str, count: usize) -> Vec<Failed> {
    stream::iter(0..count)
        .map(|i| async move {
            let key = format!("{prefix}-{i}");
            let answer = app
                .try_post_ride_to(address, &app.user.api_key, &key, &body_for("fault-1"))
                .await;
            match answer {
                Ok(answer) if answer.status == 201 => None,
                Ok(answer) => Some(Failed {
                    request_id: answer.header("x-request-id").map(str::to_owned),
                    status: answer.status,
                    key,
                }),
                Err(_) => Some(Failed {
                    key,
                    status: 0,
                    request_id: None,
                }),
            }
        })
        .buffer_unordered(8)
        .filter_map(std::future::ready)
        .collect()
        .await
}

/// The statuses of `failed_rides` (a broken connection as 0).
async fn failures_of_rides(app: &TestApp, address: &str, prefix: &str, count: usize) -> Vec<u16> {
    let failed = failed_rides(app, address, prefix, count).await;
    failed.iter().map(|failed| failed.status).collect()
}

/// What only the machine's speed decides: a request that waited for a
/// connection, a lock or a statement longer than its limit.
const TIMEOUTS: [&str; 3] = [
    "timed out waiting for connection",
    "canceling statement due to statement timeout",
    "canceling statement due to lock timeout",
];

/// The pool checks an idle connection without a round trip, yet a backend
/// that was terminated while its connection sat idle costs no request: the
/// pool finds it closed at checkout and opens another. No request meets a
/// terminated session; one the machine kept waiting past a limit (the
/// server logs why) is a 503 that its retry turns into the ride.
#[tokio::test]
async fn idle_connections_whose_sessions_were_terminated_cost_no_request() {
    let app = database_only();
    let log = std::env::temp_dir().join(format!(
        "ridepay-idle-connections-{}.log",
        uuid::Uuid::new_v4().simple()
    ));
    let server = ServerProcess::start_logged(&app.database_url, &[("RUST_LOG", "error")], &log);
    let database = app.database_url.rsplit('/').next().unwrap().to_owned();
    // Every pooled connection opened and left idle.
    assert_eq!(
        failures_of_rides(&app, &server.address, "warm", 40).await,
        Vec::<u16>::new()
    );
    let terminated = terminate_service_sessions(&mut app.db(), &database).await;
    assert!(terminated >= 4, "{terminated}");

    let failed = failed_rides(&app, &server.address, "after", 40).await;
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    for failed in &failed {
        let why = failed
            .request_id
            .as_deref()
            .and_then(|id| logged.lines().find(|line| line.contains(id)))
            .unwrap_or("nothing logged");
        assert!(
            failed.status == 503 && TIMEOUTS.iter().any(|timeout| why.contains(timeout)),
            "{} answered {}: {why}",
            failed.key,
            failed.status
        );
        app.retry_body_until_final(&server.address, &failed.key, &body_for("fault-1"))
            .await
            .assert_status(201);
    }
    std::fs::remove_file(&log).ok();
}

/// Likewise after PostgreSQL restarted (immediately, as after a crash) while
/// the server was idle: once it is back, no request fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_from_before_a_postgres_restart_cost_no_request() {
    let own = OwnCluster::start();
    let (app, database_url) = (&own.app, &own.database_url);
    let server = ServerProcess::start(database_url, &[]);
    assert_eq!(
        failures_of_rides(app, &server.address, "warm", 40).await,
        Vec::<u16>::new()
    );

    own.restart_immediately();
    connect_with_retry(database_url).unwrap();

    assert_eq!(
        failures_of_rides(app, &server.address, "after", 40).await,
        Vec::<u16>::new()
    );
}

/// A server that turns read-only (a primary demoted, or made read-only for a
/// switchover) answers 25006 on every write: each such request is a 503,
/// never a 500, and the pool drops the connection that met it, so once the
/// database takes writes again, the service does too, by itself, without
/// waiting for its connections to age out.
#[tokio::test]
async fn a_server_turned_read_only_gets_503s_and_the_pool_lets_its_connections_go() {
    let app = database_only();
    let server = ServerProcess::start(&app.database_url, &[]);
    let database = app.database_url.rsplit('/').next().unwrap().to_owned();
    let admin = || {
        let mut conn = app.db();
        // The database's own default would bind this session too.
        diesel::sql_query("SET default_transaction_read_only = off")
            .execute(&mut conn)
            .unwrap();
        conn
    };
    assert_eq!(
        failures_of_rides(&app, &server.address, "warm", 20).await,
        Vec::<u16>::new()
    );
    // Every session the service opens from now on is read-only: its pooled
    // ones are ended, and it opens others.
    diesel::sql_query(format!(
        "ALTER DATABASE \"{database}\" SET default_transaction_read_only = on"
    ))
    .execute(&mut admin())
    .unwrap();
    assert!(terminate_service_sessions(&mut admin(), &database).await > 0);

    let refused = failures_of_rides(&app, &server.address, "read-only", 20).await;
    assert_eq!(refused, vec![503; 20], "read-only answers");

    diesel::sql_query(format!(
        "ALTER DATABASE \"{database}\" RESET default_transaction_read_only"
    ))
    .execute(&mut admin())
    .unwrap();
    // The read-only sessions are still open: each is dropped when a write
    // meets 25006 on it. Awaited: twenty rides in a row made.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let (mut in_a_row, mut sent) = (0, 0);
    while in_a_row < 20 {
        assert!(
            std::time::Instant::now() < deadline,
            "the service still fails writes a minute after the database took them again"
        );
        let key = format!("writable-{sent}");
        sent += 1;
        let answer = app
            .try_post_ride_to(
                &server.address,
                &app.user.api_key,
                &key,
                &body_for("fault-1"),
            )
            .await
            .unwrap();
        match answer.status {
            201 => in_a_row += 1,
            503 => in_a_row = 0,
            other => panic!("{other}: {}", String::from_utf8_lossy(&answer.body)),
        }
    }
}

/// Ends the service's sessions on `database` (with no request in flight,
/// all idle but a background worker's), waits until their backends are
/// gone (their end then waits in the sockets), and says how many there
/// were.
async fn terminate_service_sessions(conn: &mut diesel::PgConnection, database: &str) -> usize {
    #[derive(diesel::QueryableByName)]
    struct Backend {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        pid: i32,
    }
    let ended: Vec<i32> = diesel::sql_query(
        "WITH service AS MATERIALIZED (SELECT pid FROM pg_stat_activity WHERE datname = $1 \
         AND application_name = 'ridepay') \
         SELECT pid FROM service WHERE pg_terminate_backend(pid)",
    )
    .bind::<diesel::sql_types::Text, _>(database)
    .load::<Backend>(conn)
    .unwrap()
    .into_iter()
    .map(|backend| backend.pid)
    .collect();
    let gone = eventually(Duration::from_secs(30), || {
        diesel::sql_query("SELECT pid FROM pg_stat_activity WHERE pid = ANY($1)")
            .bind::<diesel::sql_types::Array<diesel::sql_types::Integer>, _>(&ended)
            .load::<Backend>(conn)
            .unwrap()
            .is_empty()
    })
    .await;
    assert!(gone, "terminated backends still running");
    // A backend leaves pg_stat_activity while it is still exiting, its
    // FATAL sent but its socket not yet closed: until the process is gone,
    // its connection reads as open.
    let exited = eventually(Duration::from_secs(30), || {
        ended
            .iter()
            .all(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
    })
    .await;
    assert!(exited, "terminated backends still exiting");
    ended.len()
}
