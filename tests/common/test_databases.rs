//! A PostgreSQL per test process (the suite's own, unless
//! `TEST_DATABASE_URL` names one), and a database per test cloned from a
//! migrated template.
use std::sync::OnceLock;

use diesel::{Connection, PgConnection, RunQueryDsl};
use ridepay::embedded_postgres::{connect_with_retry, EmbeddedPostgres};

pub struct DatabaseServer {
    /// A maintenance database URL of a role that may create databases.
    maintenance_url: String,
    template: String,
}

static SERVER: OnceLock<DatabaseServer> = OnceLock::new();

fn database_server() -> &'static DatabaseServer {
    SERVER.get_or_init(|| {
        let maintenance_url = match std::env::var("TEST_DATABASE_URL") {
            Ok(url) if !url.is_empty() => url,
            _ => start_own_cluster(),
        };
        let template = create_template(&maintenance_url);
        DatabaseServer {
            maintenance_url,
            template,
        }
    })
}

/// A throwaway cluster that stops, and is deleted, when this process ends.
fn start_own_cluster() -> String {
    let dir = std::env::temp_dir().join(format!(
        "ridepay-test-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let cluster = EmbeddedPostgres::ensure_running(&dir).expect("start the test PostgreSQL");
    cluster
        .stop_when_process_exits(&dir)
        .expect("arrange for the test PostgreSQL to stop");
    cluster.superuser_url("postgres")
}

/// A migrated template named after the migrations, so test processes sharing a
/// server (TEST_DATABASE_URL) build it once and never use a stale one.
fn create_template(maintenance_url: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut entries: Vec<_> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for dir in entries {
        for file in ["up.sql", "down.sql"] {
            hasher.update(std::fs::read(dir.join(file)).unwrap_or_default());
        }
    }
    let template = format!("ridepay_template_{}", &hex::encode(hasher.finalize())[..16]);
    let mut conn = connect_with_retry(maintenance_url).expect("connect to the test server");
    diesel::sql_query("SELECT pg_advisory_lock(4242)")
        .execute(&mut conn)
        .unwrap();
    if !database_exists(&mut conn, &template) {
        let building = format!("{template}_building");
        diesel::sql_query(format!("DROP DATABASE IF EXISTS {building}"))
            .execute(&mut conn)
            .unwrap();
        diesel::sql_query(format!("CREATE DATABASE {building}"))
            .execute(&mut conn)
            .unwrap();
        {
            let mut template_conn =
                PgConnection::establish(&with_database(maintenance_url, &building)).unwrap();
            ridepay::db::run_migrations(&mut template_conn).expect("migrate the template");
        }
        diesel::sql_query(format!("ALTER DATABASE {building} RENAME TO {template}"))
            .execute(&mut conn)
            .unwrap();
    }
    diesel::sql_query("SELECT pg_advisory_unlock(4242)")
        .execute(&mut conn)
        .unwrap();
    template
}

fn database_exists(conn: &mut PgConnection, name: &str) -> bool {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    diesel::sql_query("SELECT count(*) AS count FROM pg_database WHERE datname = $1")
        .bind::<diesel::sql_types::Text, _>(name)
        .get_result::<Count>(conn)
        .unwrap()
        .count
        > 0
}

/// `url` with its database replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    let (base, _) = url.rsplit_once('/').expect("a database URL has a path");
    let query = url
        .split_once('?')
        .map(|(_, q)| format!("?{q}"))
        .unwrap_or_default();
    format!("{base}/{database}{query}")
}

/// The maintenance database URL of the tests' server.
pub fn maintenance_url() -> &'static str {
    &database_server().maintenance_url
}

/// A fresh database cloned from the migrated template.
pub fn create_test_database() -> String {
    let server = database_server();
    let name = format!("test_{}", uuid::Uuid::new_v4().simple());
    let mut conn = connect_with_retry(&server.maintenance_url).unwrap();
    diesel::sql_query(format!(
        "CREATE DATABASE {name} TEMPLATE {}",
        server.template
    ))
    .execute(&mut conn)
    .expect("clone the template");
    with_database(&server.maintenance_url, &name)
}

/// Applies the pending migrations up to version `last` (`20261203000030`)
/// and no further, as the release that ended there did.
pub fn migrate_until(conn: &mut PgConnection, last: &str) {
    use diesel_migrations::MigrationHarness;
    loop {
        let pending = conn.pending_migrations(ridepay::db::MIGRATIONS).unwrap();
        let Some(next) = pending.first() else {
            return;
        };
        if next.name().version().to_string().as_str() > last {
            return;
        }
        conn.run_migration(next).unwrap();
    }
}
