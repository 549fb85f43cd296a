//! Behind a real PgBouncer in transaction mode (Debian's 1.18, which cannot
//! keep prepared statements: one server session serves many clients, one
//! transaction at a time), with `DATABASE_PREPARED_STATEMENTS=off` and
//! migrations on `DATABASE_DIRECT_URL`: every ride is made as its own
//! request asked (no statement runs with another client's), replays are
//! byte-identical, and every server session has the service's limits, which
//! no `SET` could give it here. Under `CI=true` a missing PgBouncer fails
//! the test; elsewhere it is skipped, saying so.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use diesel::{Connection, PgConnection, RunQueryDsl};
use futures_util::stream::{self, StreamExt};
use ridepay::config::conninfo::Conninfo;

use crate::helpers::{database_only, ride_with};
use crate::server_process::ServerProcess;

/// The PgBouncer binary, if installed.
fn pgbouncer_binary() -> Option<PathBuf> {
    let found = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"]
        .into_iter()
        .map(PathBuf::from)
        .find(|path| path.exists());
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "PgBouncer is not installed (apt-get install pgbouncer)"
        );
        eprintln!("skipped: PgBouncer is not installed (apt-get install pgbouncer)");
    }
    found
}

/// A PgBouncer in transaction mode in front of the database of
/// `database_url`, stopped when dropped.
struct PgBouncer {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl PgBouncer {
    fn start(binary: &Path, database_url: &str) -> PgBouncer {
        let info = Conninfo::parse(database_url).unwrap();
        let field = |name: &str| info.get(name).unwrap().to_owned();
        let dir = std::env::temp_dir().join(format!(
            "ridepay-test-pgbouncer-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir(&dir).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let (user, password, database) = (field("user"), field("password"), field("dbname"));
        // Two server sessions for all of the service's connections: every
        // client's transactions share them.
        let config = format!(
            "[databases]\n{database} = host={} port={} dbname={database}\n\n\
             [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
             auth_type = scram-sha-256\nauth_file = {users}\npool_mode = transaction\n\
             default_pool_size = 2\nmax_client_conn = 100\nlogfile = {log}\npidfile = {pid}\n",
            field("host"),
            field("port"),
            users = dir.join("users.txt").display(),
            log = dir.join("pgbouncer.log").display(),
            pid = dir.join("pgbouncer.pid").display(),
        );
        std::fs::write(dir.join("pgbouncer.ini"), config).unwrap();
        std::fs::write(
            dir.join("users.txt"),
            format!("\"{user}\" \"{password}\"\n"),
        )
        .unwrap();
        let mut command = Command::new(binary);
        command.arg(dir.join("pgbouncer.ini"));
        // PgBouncer will not run as root: it runs as the PostgreSQL user,
        // which may reach the server's socket.
        if nix::unistd::Uid::effective().is_root() {
            let postgres = nix::unistd::User::from_name("postgres").unwrap().unwrap();
            nix::unistd::chown(&dir, Some(postgres.uid), None).unwrap();
            for file in ["pgbouncer.ini", "users.txt"] {
                nix::unistd::chown(&dir.join(file), Some(postgres.uid), None).unwrap();
            }
            command.args(["-u", "postgres"]);
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pooler = PgBouncer { child, dir, port };
        let url = pooler.url(database_url);
        let listening = std::time::Instant::now() + Duration::from_secs(30);
        while PgConnection::establish(&url).is_err() {
            assert!(
                std::time::Instant::now() < listening,
                "PgBouncer did not start: {}",
                std::fs::read_to_string(pooler.dir.join("pgbouncer.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        pooler
    }

    /// `database_url`'s database through the pooler.
    fn url(&self, database_url: &str) -> String {
        let info = Conninfo::parse(database_url).unwrap();
        format!(
            "host=127.0.0.1 port={} dbname={} user={} password={}",
            self.port,
            info.get("dbname").unwrap(),
            info.get("user").unwrap(),
            info.get("password").unwrap(),
        )
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_pgbouncer_in_transaction_mode_every_ride_is_its_own_and_sessions_keep_their_limits()
{
    let Some(binary) = pgbouncer_binary() else {
        return;
    };
    let app = database_only();
    let pooler = PgBouncer::start(&binary, &app.database_url);
    let pooled = pooler.url(&app.database_url);
    let server = ServerProcess::start(
        &pooled,
        &[
            ("DATABASE_DIRECT_URL", &app.database_url),
            ("DATABASE_PREPARED_STATEMENTS", "off"),
            ("DATABASE_STATEMENT_TIMEOUT_MS", "4321"),
            ("DATABASE_POOL_SIZE", "8"),
        ],
    );
    let app = &app;

    // Each key's ride has its own amount: a statement run with another
    // client's parameters would show as a ride of the wrong amount.
    let answers: Vec<(i64, crate::helpers::Answer)> = stream::iter(0..60)
        .map(|i| {
            let address = server.address.clone();
            async move {
                let amount = 1000 + i;
                let body = ride_with(serde_json::json!({ "amount_cents": amount }));
                let answer = app
                    .post_ride_to(&address, &app.user.api_key, &format!("pooled-{i}"), &body)
                    .await;
                (amount, answer)
            }
        })
        .buffer_unordered(12)
        .collect()
        .await;
    for (amount, answer) in &answers {
        assert_eq!(answer.status, 201, "{}", answer.body_text());
        assert_eq!(answer.json()["amount_cents"], *amount);
        let replay = app
            .post_ride_to(
                &server.address,
                &app.user.api_key,
                &format!("pooled-{}", amount - 1000),
                &ride_with(serde_json::json!({ "amount_cents": amount })),
            )
            .await;
        assert_eq!(replay.body, answer.body);
        assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    }
    assert_eq!(app.counts(), (60, 60, 60));

    // The server sessions PgBouncer opened have the service's limit from
    // their start, as the role's default: nothing was SET on them.
    let mut through_pooler = PgConnection::establish(&pooled).unwrap();
    #[derive(diesel::QueryableByName)]
    struct Setting {
        #[diesel(sql_type = diesel::sql_types::Text)]
        statement_timeout: String,
    }
    let setting: Setting = diesel::sql_query("SHOW statement_timeout")
        .get_result(&mut through_pooler)
        .unwrap();
    assert_eq!(setting.statement_timeout, "4321ms");
}
