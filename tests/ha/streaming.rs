//! Two plain PostgreSQL servers on loopback, a primary and an asynchronous
//! standby streaming from it (Patroni would demote a standby promoted by
//! hand, so none here), in a fresh temp folder, as the `postgres` user when
//! the tests run as root; killed and deleted when dropped.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use diesel::{Connection, PgConnection, RunQueryDsl};
use nix::unistd::{Uid, User};

use crate::patroni::{free_port, Tools};

pub struct Server {
    pub port: u16,
    data_dir: PathBuf,
}

impl Server {
    pub fn superuser_url(&self, database: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname={database}",
            self.port
        )
    }
}

pub struct Pair {
    dir: PathBuf,
    pg_bin: PathBuf,
    pub primary: Server,
    pub standby: Server,
}

/// Runs a PostgreSQL program as the server's user.
fn postgres_command(program: &Path) -> Command {
    let mut command = Command::new(program);
    command.stdout(Stdio::null()).stderr(Stdio::null());
    if Uid::effective().is_root() {
        let postgres = User::from_name("postgres")
            .unwrap()
            .expect("a postgres user");
        command
            .uid(postgres.uid.as_raw())
            .gid(postgres.gid.as_raw());
    }
    command
}

fn run(mut command: Command, what: &str) {
    let status = command.status().unwrap();
    assert!(status.success(), "{what} failed");
}

impl Pair {
    /// A primary, and a standby made from a base backup of it, streaming.
    pub fn start(tools: &Tools) -> Pair {
        let dir = std::env::temp_dir().join(format!(
            "ridepay-test-async-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir(&dir).unwrap();
        if Uid::effective().is_root() {
            let postgres = User::from_name("postgres").unwrap().unwrap();
            nix::unistd::chown(&dir, Some(postgres.uid), Some(postgres.gid)).unwrap();
        }
        let pg_bin = tools.pg_bin.clone();
        let primary = Server {
            port: free_port(),
            data_dir: dir.join("primary"),
        };
        let mut initdb = postgres_command(&pg_bin.join("initdb"));
        initdb
            .args(["--auth=trust", "--username=postgres", "--locale=C", "-D"])
            .arg(&primary.data_dir);
        run(initdb, "initdb");
        std::fs::write(
            primary.data_dir.join("postgresql.auto.conf"),
            format!(
                "listen_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{}'\n\
                 wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\n",
                primary.port,
                dir.display()
            ),
        )
        .unwrap();
        std::fs::write(
            primary.data_dir.join("pg_hba.conf"),
            "local all all trust\nhost all all 127.0.0.1/32 trust\n\
             host replication all 127.0.0.1/32 trust\n",
        )
        .unwrap();
        let pair_dir = dir.clone();
        let mut pair = Pair {
            dir: pair_dir,
            pg_bin,
            standby: Server {
                port: free_port(),
                data_dir: dir.join("standby"),
            },
            primary,
        };
        pair.pg_ctl(&pair.primary.data_dir.clone(), &["start", "-w"]);
        let mut backup = postgres_command(&pair.pg_bin.join("pg_basebackup"));
        backup
            .args([
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-R",
                "-X",
                "stream",
                "-p",
            ])
            .arg(pair.primary.port.to_string())
            .arg("-D")
            .arg(&pair.standby.data_dir);
        run(backup, "pg_basebackup");
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(pair.standby.data_dir.join("postgresql.auto.conf"))
            .unwrap();
        std::io::Write::write_all(
            &mut conf,
            format!("port = {}\n", pair.standby.port).as_bytes(),
        )
        .unwrap();
        pair.pg_ctl(&pair.standby.data_dir.clone(), &["start", "-w"]);
        pair
    }

    fn pg_ctl(&mut self, data_dir: &Path, args: &[&str]) {
        let mut pg_ctl = postgres_command(&self.pg_bin.join("pg_ctl"));
        pg_ctl
            .arg("-D")
            .arg(data_dir)
            .arg("-l")
            .arg(data_dir.with_extension("log"))
            .args(args);
        run(pg_ctl, &format!("pg_ctl {args:?}"));
    }

    /// Creates `user` and a database it owns, on the primary.
    pub fn create_database(&self, user: &str, database: &str) {
        let mut conn = PgConnection::establish(&self.primary.superuser_url("postgres")).unwrap();
        for statement in [
            format!("CREATE ROLE {user} LOGIN"),
            format!("CREATE DATABASE {database} OWNER {user}"),
        ] {
            diesel::sql_query(statement).execute(&mut conn).unwrap();
        }
    }

    /// Both servers, for libpq to find the one that takes writes.
    pub fn url(&self, user: &str, database: &str) -> String {
        format!(
            "host=127.0.0.1,127.0.0.1 port={},{} user={user} dbname={database} \
             target_session_attrs=read-write connect_timeout=2",
            self.primary.port, self.standby.port
        )
    }

    /// The standby stops receiving WAL (`primary_conninfo = ''`): from now
    /// on the primary's commits reach only the primary.
    pub fn stop_streaming(&self) {
        let mut conn = PgConnection::establish(&self.standby.superuser_url("postgres")).unwrap();
        for statement in [
            "ALTER SYSTEM SET primary_conninfo = ''",
            "SELECT pg_reload_conf()",
        ] {
            diesel::sql_query(statement).execute(&mut conn).unwrap();
        }
    }

    /// The primary crashes: its postmaster and every process it started
    /// SIGKILLed.
    pub fn crash_primary(&self) {
        crate::patroni::kill_postgres(&self.primary.data_dir);
    }

    /// The standby becomes the primary.
    pub fn promote_standby(&mut self) {
        let data_dir = self.standby.data_dir.clone();
        self.pg_ctl(&data_dir, &["promote", "-w"]);
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        crate::patroni::kill_postgres(&self.primary.data_dir);
        crate::patroni::kill_postgres(&self.standby.data_dir);
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
