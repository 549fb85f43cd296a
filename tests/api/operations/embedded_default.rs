//! `cargo run` with nothing set: a private PostgreSQL in the data folder, a
//! demo user whose key and curl line are printed, a clean stop on SIGTERM, and
//! a restart that attaches to the same cluster, even after a kill that left a
//! stale `postmaster.pid`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::common::app::{database_only, TestApp, RIDE};
use crate::common::ids::Id;
use crate::common::server_process::ServerProcess;

fn start(data_dir: &Path) -> (ServerProcess, String) {
    let server = ServerProcess::start(
        "",
        &[
            ("RIDEPAY_DATA_DIR", data_dir.to_str().unwrap()),
            ("IDEMPOTENCY_LEASE_SECS", "30"),
        ],
    );
    let key_line = server
        .printed_line("ridepay_sk_", Duration::from_secs(30))
        .expect("the demo user's key is printed");
    let curl = server.printed_line("curl -i -X POST", Duration::from_secs(5));
    assert!(
        curl.is_some_and(|line| line.contains(&server.address)),
        "a curl line for this address"
    );
    (server, key_line.trim().to_owned())
}

fn cluster(data_dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(data_dir.join("cluster.json")).unwrap()).unwrap()
}

fn postmaster_pid(data_dir: &Path) -> Option<i32> {
    let root = PathBuf::from(cluster(data_dir)["root"].as_str().unwrap());
    let text = std::fs::read_to_string(root.join("data/postmaster.pid")).ok()?;
    text.lines().next()?.trim().parse().ok()
}

/// Alive and not a zombie waiting for a parent that does not reap.
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

#[tokio::test]
async fn cargo_run_with_nothing_set_serves_a_demo_user_and_stops_its_postgres_cleanly() {
    let data_dir = std::env::temp_dir().join(format!(
        "ridepay-test-embedded-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let mut app: TestApp = database_only();
    let (mut server, key) = start(&data_dir);
    app.address = server.address.clone();
    app.user.api_key = key.clone();

    let created = app.post_ride("demo-1", RIDE).await;
    assert_eq!(
        created.status,
        201,
        "{}",
        String::from_utf8_lossy(&created.body)
    );
    let port = cluster(&data_dir)["port"].clone();
    let pid = postmaster_pid(&data_dir).expect("a running postmaster");

    server.terminate();
    assert!(server.wait_for_exit(Duration::from_secs(30)).success());
    assert!(
        postmaster_pid(&data_dir).is_none(),
        "PostgreSQL was stopped cleanly"
    );
    assert!(!running(pid), "the postmaster exited");

    // A restart attaches to the same cluster and prints the same demo key,
    // so a key printed by one instance stays good when another starts.
    let (mut server, new_key) = start(&data_dir);
    assert_eq!(cluster(&data_dir)["port"], port);
    assert_eq!(new_key, key);
    app.address = server.address.clone();
    app.user.api_key = new_key;
    let replay = app.post_ride("demo-1", RIDE).await;
    assert_eq!(replay.body, created.body);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));

    // Killed hard, with its PostgreSQL: the next start copes with the stale
    // postmaster.pid.
    let pid = postmaster_pid(&data_dir).unwrap();
    server.kill();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        postmaster_pid(&data_dir).is_some(),
        "the pid file is left behind"
    );
    let (mut server, third_key) = start(&data_dir);
    app.address = server.address.clone();
    app.user.api_key = third_key;
    assert_eq!(
        app.get(&format!("/api/rides/{}", Id::of(&created.json()["id"])))
            .await
            .status,
        200
    );

    server.terminate();
    assert!(server.wait_for_exit(Duration::from_secs(30)).success());
    let root = PathBuf::from(cluster(&data_dir)["root"].as_str().unwrap());
    std::fs::remove_dir_all(&data_dir).ok();
    std::fs::remove_dir_all(root).ok();
}
