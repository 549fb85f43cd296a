//! A real PgBouncer (Debian's) on loopback, for the tests that run the
//! service behind one: the main suite's and the failover tests'. Under
//! `CI=true` a missing PgBouncer fails a test; elsewhere it is skipped,
//! saying so.
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use diesel::{Connection, PgConnection};
use ridepay::config::conninfo::Conninfo;

/// The PgBouncer binary, if installed.
pub fn pgbouncer_binary() -> Option<PathBuf> {
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
pub struct PgBouncer {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl PgBouncer {
    /// `pool_mode` is PgBouncer's: `session` or `transaction`.
    pub fn start(binary: &Path, database_url: &str, pool_mode: &str) -> PgBouncer {
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
             auth_type = scram-sha-256\nauth_file = {users}\npool_mode = {pool_mode}\n\
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

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `database_url`'s database through the pooler.
    pub fn url(&self, database_url: &str) -> String {
        let info = Conninfo::parse(database_url).unwrap();
        format!(
            "host=127.0.0.1 port={} dbname={} user={} password={}",
            self.port(),
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
