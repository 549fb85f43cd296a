//! `DATABASE_URL` in the forms libpq takes beyond one host in a URL: several
//! hosts (libpq tries each in turn, as it does to follow a failover with
//! `target_session_attrs=read-write`) and keyword/value pairs. The service
//! accepts each at start-up and serves through it, the first host named
//! being one that is down.

use ridepay::config::conninfo::Conninfo;

use crate::common::app::{on_database, spawn_server, RIDE};
use crate::common::test_databases::create_test_database;

/// A folder no PostgreSQL listens in: the host that is down.
const DOWN: &str = "/nonexistent/ridepay-down-host";

fn quoted(value: &str) -> String {
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The test database as keyword/value pairs, `DOWN` named before its host.
fn keyword_value(database_url: &str) -> String {
    let info = Conninfo::parse(database_url).unwrap();
    let (host, port) = (info.get("host").unwrap(), info.get("port").unwrap());
    format!(
        "host={} port={port},{port} user={} password={} dbname={} \
         target_session_attrs=read-write connect_timeout=5",
        quoted(&format!("{DOWN},{host}")),
        quoted(info.get("user").unwrap()),
        quoted(info.get("password").unwrap()),
        quoted(info.get("dbname").unwrap()),
    )
}

/// The test database as a URL with two hosts, `DOWN` first.
fn several_hosts(database_url: &str) -> String {
    let (credentials, rest) = database_url.split_once('@').unwrap();
    let down = DOWN.replace('/', "%2F");
    let (host_and_port, database) = rest.split_once('/').unwrap();
    let port = host_and_port.rsplit_once(':').unwrap().1;
    format!(
        "{credentials}@{down}:{port},{host_and_port}/{database}?target_session_attrs=read-write"
    )
}

#[tokio::test]
async fn a_url_with_several_hosts_and_keyword_value_pairs_both_serve_rides() {
    let database_url = create_test_database();
    for (form, url) in [
        ("several hosts", several_hosts(&database_url)),
        ("keyword/value", keyword_value(&database_url)),
    ] {
        let migrate = std::process::Command::new(env!("CARGO_BIN_EXE_ridepay"))
            .arg("migrate")
            .current_dir(std::env::temp_dir())
            .env_clear()
            .env("DATABASE_URL", &url)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&migrate.stderr);
        assert!(migrate.status.success(), "{form}: {stderr}");
        let password = Conninfo::parse(&url)
            .unwrap()
            .get("password")
            .unwrap()
            .to_owned();
        assert!(!stderr.contains(&password), "{stderr}");
        let mut app = on_database(database_url.clone());
        app.address = spawn_server(&url, |_| {}).await;
        let answer = app.post_ride(&format!("form {form}"), RIDE).await;
        assert_eq!(
            answer.status,
            201,
            "{form} ({url}): {:?}",
            String::from_utf8_lossy(&answer.body)
        );
    }
}
