//! A Patroni cluster on loopback, as a ride company would run its
//! database: one etcd and two PostgreSQL nodes under Patroni, a synchronous
//! standby (`synchronous_mode: true`, not strict), in a fresh temp folder,
//! PostgreSQL as the `postgres` user when the tests run as root. Everything
//! is stopped and deleted when the cluster is dropped. The harness awaits
//! Patroni's REST API and never promotes anything itself.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use diesel::{Connection, PgConnection, RunQueryDsl};
use nix::sys::signal::{kill, Signal};
use nix::unistd::{Pid, Uid, User};

/// What the tests need installed: Debian's `patroni`, `etcd-server` and a
/// PostgreSQL server.
pub struct Tools {
    patroni: PathBuf,
    etcd: PathBuf,
    pub pg_bin: PathBuf,
}

impl Tools {
    /// The tools, or `None` (saying which is missing) outside CI; under
    /// `CI=true` a missing tool fails the test.
    pub fn find() -> Option<Tools> {
        let on_path = |name: &str| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join(name))
                    .find(|path| path.is_file())
            })
        };
        let pg_bin = std::fs::read_dir("/usr/lib/postgresql")
            .ok()
            .and_then(|dirs| {
                dirs.filter_map(|dir| dir.ok().map(|dir| dir.path().join("bin")))
                    .filter(|bin| bin.join("postgres").exists())
                    .max()
            });
        match (on_path("patroni"), on_path("etcd"), pg_bin) {
            (Some(patroni), Some(etcd), Some(pg_bin)) => Some(Tools {
                patroni,
                etcd,
                pg_bin,
            }),
            missing => {
                let reason = format!(
                    "needs patroni ({}), etcd ({}) and a PostgreSQL server ({}): \
                     apt-get install patroni etcd-server postgresql",
                    found(&missing.0),
                    found(&missing.1),
                    found(&missing.2)
                );
                assert!(std::env::var("CI").as_deref() != Ok("true"), "{reason}");
                eprintln!("skipped: {reason}");
                None
            }
        }
    }
}

fn found(path: &Option<PathBuf>) -> &'static str {
    if path.is_some() {
        "found"
    } else {
        "missing"
    }
}

/// A free loopback port (free when asked).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The status of `GET path` on a loopback REST API; `None` when it does not
/// answer.
pub fn get_status(port: u16, path: &str) -> Option<u16> {
    let mut stream =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut head = [0; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// Polls `done` every 100 ms for at most `limit`.
pub fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Which of the nodes whose REST APIs are at `rest_ports` Patroni names
/// primary, waiting up to `limit` for one that is not `except`.
pub fn await_primary_among(rest_ports: &[u16], except: Option<usize>, limit: Duration) -> usize {
    let mut primary = None;
    wait_for("a primary", limit, || {
        primary = rest_ports
            .iter()
            .enumerate()
            .position(|(i, port)| Some(i) != except && get_status(*port, "/primary") == Some(200));
        primary.is_some()
    });
    primary.unwrap()
}

/// The postmaster of `data_dir` (from its pid file) and the processes it
/// started.
fn postgres_processes(data_dir: &Path) -> Vec<Pid> {
    let Some(postmaster) = std::fs::read_to_string(data_dir.join("postmaster.pid"))
        .ok()
        .and_then(|text| text.lines().next()?.trim().parse::<i32>().ok())
    else {
        return Vec::new();
    };
    let mut processes = vec![Pid::from_raw(postmaster)];
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        // `pid (name) state ppid ...`: the name may hold spaces.
        let parent = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|stat| {
                let after_name = &stat[stat.rfind(')')? + 1..];
                after_name.split_whitespace().nth(1)?.parse::<i32>().ok()
            });
        if parent == Some(postmaster) {
            processes.push(Pid::from_raw(pid));
        }
    }
    processes
}

/// A machine crash of the PostgreSQL of `data_dir`: every one of its
/// processes SIGKILLed.
pub fn kill_postgres(data_dir: &Path) {
    for pid in postgres_processes(data_dir) {
        let _ = kill(pid, Signal::SIGKILL);
    }
}

pub const SUPERUSER_PASSWORD: &str = "ha-superuser";
const REPLICATION_PASSWORD: &str = "ha-replication";

pub struct Node {
    pub pg_port: u16,
    pub rest_port: u16,
    data_dir: PathBuf,
    patroni: Option<Child>,
}

impl Node {
    /// A superuser connection string for `database` on this node.
    pub fn superuser_url(&self, database: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres password={SUPERUSER_PASSWORD} \
             dbname={database} connect_timeout=3",
            self.pg_port
        )
    }

    fn postgres_processes(&self) -> Vec<Pid> {
        postgres_processes(&self.data_dir)
    }
}

pub struct Cluster {
    dir: PathBuf,
    etcd: Child,
    pub nodes: Vec<Node>,
}

impl Cluster {
    /// Starts etcd and two nodes, and waits until one is the primary and
    /// the other its synchronous standby.
    pub fn start(tools: &Tools) -> Cluster {
        let dir =
            std::env::temp_dir().join(format!("ridepay-test-ha-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir(&dir).unwrap();
        let (etcd_client, etcd_peer) = (free_port(), free_port());
        let etcd = Command::new(&tools.etcd)
            .args(["--name", "ha", "--data-dir"])
            .arg(dir.join("etcd"))
            .arg(format!(
                "--listen-client-urls=http://127.0.0.1:{etcd_client}"
            ))
            .arg(format!(
                "--advertise-client-urls=http://127.0.0.1:{etcd_client}"
            ))
            .arg(format!("--listen-peer-urls=http://127.0.0.1:{etcd_peer}"))
            .arg(format!(
                "--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}"
            ))
            .arg(format!("--initial-cluster=ha=http://127.0.0.1:{etcd_peer}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start etcd");
        let mut cluster = Cluster {
            dir,
            etcd,
            nodes: Vec::new(),
        };
        wait_for("etcd", Duration::from_secs(30), || {
            get_status(etcd_client, "/health") == Some(200)
        });
        for name in ["node0", "node1"] {
            let node = cluster.start_node(tools, name, etcd_client);
            cluster.nodes.push(node);
            // The first bootstraps the cluster; the second copies it. The
            // suite's tests bootstrap their clusters at once, each an
            // initdb, which on two busy cores has taken over 90 s.
            let first = cluster.nodes.len() == 1;
            if first {
                cluster.await_primary(None, Duration::from_secs(180));
            }
        }
        let primary = cluster.await_primary(None, Duration::from_secs(30));
        let standby = &cluster.nodes[1 - primary];
        let rest = standby.rest_port;
        wait_for("a synchronous standby", Duration::from_secs(120), || {
            get_status(rest, "/synchronous") == Some(200)
        });
        cluster
    }

    fn start_node(&self, tools: &Tools, name: &str, etcd_client: u16) -> Node {
        let home = self.dir.join(name);
        std::fs::create_dir(&home).unwrap();
        let (pg_port, rest_port) = (free_port(), free_port());
        let data_dir = home.join("data");
        let config = format!(
            "scope: ridepay-ha\n\
             name: {name}\n\
             restapi:\n  listen: 127.0.0.1:{rest_port}\n  connect_address: 127.0.0.1:{rest_port}\n\
             etcd3:\n  hosts: 127.0.0.1:{etcd_client}\n\
             bootstrap:\n\
             \x20 dcs:\n    ttl: 20\n    loop_wait: 2\n    retry_timeout: 5\n\
             \x20   synchronous_mode: true\n    synchronous_mode_strict: false\n\
             \x20   postgresql:\n      use_pg_rewind: false\n\
             \x20 initdb:\n  - encoding: UTF8\n  - locale: C\n\
             \x20 pg_hba:\n  - local all all trust\n\
             \x20 - host replication replicator 127.0.0.1/32 scram-sha-256\n\
             \x20 - host all all 127.0.0.1/32 scram-sha-256\n\
             postgresql:\n\
             \x20 listen: 127.0.0.1:{pg_port}\n  connect_address: 127.0.0.1:{pg_port}\n\
             \x20 data_dir: {data}\n  bin_dir: {bin}\n  pgpass: {home}/pgpass\n\
             \x20 authentication:\n\
             \x20   superuser:\n      username: postgres\n      password: {SUPERUSER_PASSWORD}\n\
             \x20   replication:\n      username: replicator\n      password: {REPLICATION_PASSWORD}\n\
             \x20 parameters:\n    unix_socket_directories: {home}\n    max_connections: 60\n",
            data = data_dir.display(),
            bin = tools.pg_bin.display(),
            home = home.display(),
        );
        std::fs::write(home.join("patroni.yml"), config).unwrap();
        let mut command = Command::new(&tools.patroni);
        command
            .arg(home.join("patroni.yml"))
            .env("HOME", &home)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(home.join("patroni.log")).unwrap());
        // PostgreSQL will not run as root.
        if Uid::effective().is_root() {
            let postgres = User::from_name("postgres")
                .unwrap()
                .expect("a postgres user");
            for path in [
                &self.dir,
                &home,
                &home.join("patroni.yml"),
                &home.join("patroni.log"),
            ] {
                nix::unistd::chown(path.as_path(), Some(postgres.uid), Some(postgres.gid)).unwrap();
            }
            command
                .uid(postgres.uid.as_raw())
                .gid(postgres.gid.as_raw());
        }
        Node {
            pg_port,
            rest_port,
            data_dir,
            patroni: Some(command.spawn().expect("start patroni")),
        }
    }

    /// The node Patroni names primary, waiting up to `limit` for one that
    /// is not `except`.
    pub fn await_primary(&self, except: Option<usize>, limit: Duration) -> usize {
        await_primary_among(&self.rest_ports(), except, limit)
    }

    /// Each node's REST API port.
    pub fn rest_ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|node| node.rest_port).collect()
    }

    /// A machine crash of node `i`: its Patroni and its PostgreSQL (the
    /// postmaster and every process it started) SIGKILLed together.
    pub fn crash(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        let postgres = node.postgres_processes();
        if let Some(mut patroni) = node.patroni.take() {
            let _ = patroni.kill();
            let _ = patroni.wait();
        }
        for pid in postgres {
            let _ = kill(pid, Signal::SIGKILL);
        }
    }

    /// Sends `signal` to every process of node `i`'s PostgreSQL (SIGSTOP:
    /// a server that stops answering, its Patroni still running).
    pub fn signal_postgres(&self, i: usize, signal: Signal) {
        for pid in self.nodes[i].postgres_processes() {
            let _ = kill(pid, signal);
        }
    }

    /// A connection string naming every node, which follows the primary
    /// (libpq tries each host until one takes writes).
    pub fn url_of_every_node(&self, user: &str, password: &str, database: &str) -> String {
        let ports: Vec<String> = self.nodes.iter().map(|n| n.pg_port.to_string()).collect();
        let hosts = vec!["127.0.0.1"; self.nodes.len()].join(",");
        format!(
            "host={hosts} port={} user={user} password={password} dbname={database} \
             target_session_attrs=read-write connect_timeout=2",
            ports.join(",")
        )
    }

    /// Creates `user` (with `password`) and a database it owns, on the
    /// primary.
    pub fn create_database(&self, user: &str, password: &str, database: &str) {
        let primary = &self.nodes[self.await_primary(None, Duration::from_secs(30))];
        let mut conn = PgConnection::establish(&primary.superuser_url("postgres")).unwrap();
        for statement in [
            format!("CREATE ROLE {user} LOGIN PASSWORD '{password}'"),
            format!("CREATE DATABASE {database} OWNER {user}"),
        ] {
            diesel::sql_query(statement).execute(&mut conn).unwrap();
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.crash(i);
        }
        let _ = self.etcd.kill();
        let _ = self.etcd.wait();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// HAProxy on loopback sending each new connection to whichever of
/// `backends` (host port, Patroni REST port) Patroni names primary, and
/// ending the sessions of a backend that stops being it; stopped when
/// dropped.
pub struct HaProxy {
    child: Child,
    pub port: u16,
    dir: PathBuf,
}

impl HaProxy {
    /// `None` when HAProxy is missing (and not under `CI=true`).
    pub fn start(backends: &[(u16, u16)]) -> Option<HaProxy> {
        let binary = PathBuf::from("/usr/sbin/haproxy");
        if !binary.exists() {
            let reason = "needs HAProxy: apt-get install haproxy";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{reason}");
            eprintln!("skipped: {reason}");
            return None;
        }
        let dir = std::env::temp_dir().join(format!(
            "ridepay-test-haproxy-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir(&dir).unwrap();
        let port = free_port();
        let servers: String = backends
            .iter()
            .enumerate()
            .map(|(i, (backend, rest))| {
                format!("  server node{i} 127.0.0.1:{backend} check port {rest}\n")
            })
            .collect();
        std::fs::write(
            dir.join("haproxy.cfg"),
            format!(
                "global\n  maxconn 200\n\
                 defaults\n  mode tcp\n  timeout connect 2s\n  timeout client 5m\n  timeout server 5m\n\
                 listen postgres\n  bind 127.0.0.1:{port}\n  option httpchk GET /primary\n\
                 \x20 http-check expect status 200\n\
                 \x20 default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions\n\
                 {servers}"
            ),
        )
        .unwrap();
        let child = Command::new(&binary)
            .args(["-db", "-f"])
            .arg(dir.join("haproxy.cfg"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start haproxy");
        let proxy = HaProxy { child, port, dir };
        wait_for("HAProxy", Duration::from_secs(30), || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Some(proxy)
    }
}

impl Drop for HaProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
