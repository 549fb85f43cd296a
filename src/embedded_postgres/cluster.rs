//! The cluster itself: made with `initdb`, started and stopped with
//! `pg_ctl`, attached to only while its postmaster is alive and ours, and
//! reached on its socket.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::{anyhow, bail, Context};
use nix::fcntl::{Flock, FlockArg};
use nix::unistd::{Uid, User};
use serde::{Deserialize, Serialize};

use super::private_folders::{
    cluster_root, open_private_dir, socket_dir, write_private, SERVER_USER,
};
use super::service_role::{self, SERVICE_DATABASE, SERVICE_ROLE};

const SUPERUSER: &str = "postgres";
const CLUSTER_FILE: &str = "cluster.json";
/// Only a name, with no TCP: every cluster has a socket folder of its own.
const SOCKET_PORT: u16 = 5432;

/// What `cluster.json` records, so that every command run against the same data
/// folder attaches to the same cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ClusterRecord {
    root: PathBuf,
    /// The number in the socket's name (`.s.PGSQL.<port>`); nothing listens
    /// on TCP.
    port: u16,
    /// The superuser's.
    password: String,
    /// The service role's; absent in records of earlier releases.
    #[serde(default)]
    service_password: Option<String>,
    /// Where the socket is: the cluster's own folder, or a short private
    /// folder when that one's path is too long for a socket; absent in
    /// records of earlier releases, whose clusters listened on TCP.
    #[serde(default)]
    socket_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopMode {
    Fast,
    Immediate,
}

/// A running local cluster.
#[derive(Debug)]
pub struct EmbeddedPostgres {
    record: ClusterRecord,
    bin_dir: PathBuf,
    run_as: Option<User>,
    /// True when this process started the server (and so may stop it).
    started_here: bool,
}

impl EmbeddedPostgres {
    /// Attaches to the cluster of `data_dir`, creating and starting it when
    /// needed, with the service's role and database set up. Safe to call from
    /// several processes at once.
    pub fn ensure_running(data_dir: &Path) -> anyhow::Result<Self> {
        let bin_dir = find_bin_dir()?;
        fs::create_dir_all(data_dir)
            .with_context(|| format!("cannot create the data folder {}", data_dir.display()))?;
        let data_dir = data_dir
            .canonicalize()
            .with_context(|| format!("cannot resolve {}", data_dir.display()))?;
        let _lock = lock_folder(&data_dir)?;

        let run_as = server_user()?;
        let mut record = match read_record(&data_dir)? {
            Some(record) if record.root.join("data/PG_VERSION").exists() => {
                // The recorded folder may have vanished (a temp directory
                // cleared at boot) and been made again by someone else.
                open_private_dir(&record.root, run_as.as_ref())?;
                record
            }
            _ => init_cluster(&data_dir, &bin_dir, run_as.as_ref())?,
        };
        let socket_dir = socket_dir(
            &record.root,
            record.socket_dir.as_deref(),
            record.port,
            run_as.as_ref(),
        )?;
        let upgraded =
            record.socket_dir.as_ref() != Some(&socket_dir) || record.service_password.is_none();
        record.socket_dir = Some(socket_dir);
        record
            .service_password
            .get_or_insert_with(|| hex::encode(rand::random::<[u8; 16]>()));
        if upgraded {
            write_record(&data_dir, &record)?;
        }
        let mut cluster = EmbeddedPostgres {
            record,
            bin_dir,
            run_as,
            started_here: false,
        };
        if !cluster.accepts_connections() {
            if cluster.postmaster_is_ours() {
                // Ours, but not on this socket: a start by an earlier
                // release, which listened on TCP.
                cluster.stop(StopMode::Fast)?;
            }
            cluster.start()?;
            cluster.started_here = true;
        }
        service_role::prepare(&service_role::Admin {
            maintenance_url: cluster.superuser_url("postgres"),
            database_url: cluster.superuser_url(SERVICE_DATABASE),
            service_url: cluster.service_url(),
            service_password: cluster
                .record
                .service_password
                .as_deref()
                .unwrap_or_default(),
        })?;
        Ok(cluster)
    }

    /// The cluster of `data_dir` if it is running now; nothing is started.
    pub fn running(data_dir: &Path) -> anyhow::Result<Option<Self>> {
        let Ok(data_dir) = data_dir.canonicalize() else {
            return Ok(None);
        };
        let Some(record) = read_record(&data_dir)? else {
            return Ok(None);
        };
        let cluster = EmbeddedPostgres {
            record,
            bin_dir: find_bin_dir()?,
            run_as: server_user()?,
            started_here: false,
        };
        Ok(cluster.postmaster_is_ours().then_some(cluster))
    }

    /// A libpq URL for the service: its ordinary role, on its database.
    pub fn service_url(&self) -> String {
        let password = self
            .record
            .service_password
            .as_deref()
            .expect("ensure_running sets the service's password");
        self.url(SERVICE_ROLE, password, SERVICE_DATABASE)
    }

    /// A libpq URL for `database` as the superuser, for what the service's
    /// role may not do (create databases for tests, read every statement's
    /// statistics).
    pub fn superuser_url(&self, database: &str) -> String {
        self.url(SUPERUSER, &self.record.password, database)
    }

    /// The socket's folder goes where a host would, percent-encoded, as
    /// libpq reads it.
    fn url(&self, user: &str, password: &str, database: &str) -> String {
        format!(
            "postgres://{user}:{password}@{}:{}/{database}",
            percent_encode(self.socket_dir()),
            self.record.port
        )
    }

    pub fn socket_dir(&self) -> &Path {
        self.record
            .socket_dir
            .as_deref()
            .expect("ensure_running records the socket's folder")
    }

    pub fn started_here(&self) -> bool {
        self.started_here
    }

    /// The process id of the postmaster, from its lock file.
    pub fn postmaster_pid(&self) -> Option<i32> {
        let text = fs::read_to_string(self.data_path().join("postmaster.pid")).ok()?;
        text.lines().next()?.trim().parse().ok()
    }

    /// Stops the server. `Fast` ends sessions and rolls back in-flight
    /// transactions cleanly; `Immediate` is a crash (recovery runs at the next
    /// start), for fault tests.
    pub fn stop(&self, mode: StopMode) -> anyhow::Result<()> {
        let mode = match mode {
            StopMode::Fast => "fast",
            StopMode::Immediate => "immediate",
        };
        let output = self
            .pg_command("pg_ctl")
            .arg("stop")
            .arg("-D")
            .arg(self.data_path())
            .args(["-m", mode, "-w", "-t", "60"])
            .output()
            .context("cannot run pg_ctl stop")?;
        check_output("pg_ctl stop", &output)
    }

    /// Makes sure the server stops, and `remove` is deleted, when this process
    /// ends for any reason, including SIGKILL: a watcher process waits for the
    /// end of a pipe only this process holds. Used for throwaway clusters.
    pub fn stop_when_process_exits(&self, remove: &Path) -> anyhow::Result<()> {
        let pid = self
            .postmaster_pid()
            .ok_or_else(|| anyhow!("the cluster has no postmaster.pid"))?;
        let script = r#"read _ignored
kill -INT "$1" 2>/dev/null
while kill -0 "$1" 2>/dev/null; do sleep 0.1; done
rm -rf "$2" "$3""#;
        let child = Command::new("/bin/sh")
            .arg("-c")
            .arg(script)
            .arg("watcher")
            .arg(pid.to_string())
            .arg(remove)
            // A socket folder of its own, outside `remove`, goes too.
            .arg(self.socket_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group, so that a Ctrl-C aimed at the tests does
            // not kill the watcher before it has cleaned up.
            .process_group(0)
            .spawn()
            .context("cannot start the cluster watcher")?;
        // The write end must stay open for the life of the process.
        std::mem::forget(child.stdin);
        Ok(())
    }

    fn data_path(&self) -> PathBuf {
        self.record.root.join("data")
    }

    fn socket_path(&self) -> PathBuf {
        self.socket_dir()
            .join(format!(".s.PGSQL.{}", self.record.port))
    }

    /// True when the postmaster named by `postmaster.pid` is alive and works
    /// in this data folder (a postmaster's working folder is its data folder).
    /// A pid left by a killed server names a process that is gone or, after
    /// pid reuse, someone else's.
    fn postmaster_is_ours(&self) -> bool {
        let Some(pid) = self.postmaster_pid() else {
            return false;
        };
        let Ok(working) = fs::read_link(format!("/proc/{pid}/cwd")) else {
            return false;
        };
        self.data_path()
            .canonicalize()
            .is_ok_and(|data| data == working)
    }

    /// Our postmaster, answering on our socket.
    fn accepts_connections(&self) -> bool {
        self.postmaster_is_ours() && UnixStream::connect(self.socket_path()).is_ok()
    }

    fn start(&mut self) -> anyhow::Result<()> {
        // Not ours (see `postmaster_is_ours`), so stale, and so are the
        // socket and its lock file, which the server would otherwise refuse
        // while the killed postmaster lingers as a zombie.
        let socket = self.socket_path();
        let stale = [
            self.data_path().join("postmaster.pid"),
            PathBuf::from(format!("{}.lock", socket.display())),
            socket,
        ];
        for file in stale.iter().filter(|file| file.exists()) {
            log::warn!("removing a stale {}", file.display());
            fs::remove_file(file).with_context(|| format!("cannot remove {}", file.display()))?;
        }
        // pg_ctl hands `-o` to a shell: the folder is quoted for it. No TCP
        // address at all (`-h ''`), whatever postgresql.conf says.
        let options = format!(
            "-p {} -k {} -h ''",
            self.record.port,
            shell_quote(self.socket_dir())?
        );
        let output = self
            .pg_command("pg_ctl")
            .arg("start")
            .arg("-D")
            .arg(self.data_path())
            .arg("-l")
            .arg(self.record.root.join("postgres.log"))
            .args(["-w", "-t", "60", "-o"])
            .arg(options)
            .output()
            .context("cannot run pg_ctl start")?;
        check_output("pg_ctl start", &output).with_context(|| {
            format!(
                "PostgreSQL did not start; see {}",
                self.record.root.join("postgres.log").display()
            )
        })
    }

    fn pg_command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bin_dir.join(program));
        command.current_dir("/").stdin(Stdio::null());
        if let Some(user) = &self.run_as {
            command.uid(user.uid.as_raw()).gid(user.gid.as_raw());
        }
        command
    }
}

/// The folder holding `initdb` and `postgres`: `PG_BIN_DIR` if set, else the
/// newest version under `/usr/lib/postgresql`, else `pg_config --bindir`.
pub fn find_bin_dir() -> anyhow::Result<PathBuf> {
    let missing = || {
        anyhow!(
            "no PostgreSQL server binaries found (initdb, postgres). Install them \
             (Debian/Ubuntu: `apt-get install postgresql`), point PG_BIN_DIR at their \
             folder, or set DATABASE_URL to use an existing PostgreSQL server"
        )
    };
    if let Some(dir) = std::env::var_os("PG_BIN_DIR") {
        let dir = PathBuf::from(dir);
        return dir
            .join("initdb")
            .exists()
            .then_some(dir)
            .ok_or_else(missing);
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    if let Ok(output) = Command::new("pg_config").arg("--bindir").output() {
        let bin = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if bin.join("initdb").exists() {
            return Ok(bin);
        }
    }
    Err(missing())
}

/// The user the server runs as: ourselves, or `postgres` when we are root.
fn server_user() -> anyhow::Result<Option<User>> {
    if !Uid::effective().is_root() {
        return Ok(None);
    }
    let user = User::from_name(SERVER_USER)?.ok_or_else(|| {
        anyhow!(
            "running as root, PostgreSQL must run as an unprivileged user, and there \
             is no `{SERVER_USER}` user; create one or set DATABASE_URL"
        )
    })?;
    Ok(Some(user))
}

fn init_cluster(
    data_dir: &Path,
    bin_dir: &Path,
    run_as: Option<&User>,
) -> anyhow::Result<ClusterRecord> {
    let root = cluster_root(data_dir, run_as)?;
    let password = hex::encode(rand::random::<[u8; 16]>());
    let pwfile = root.join("pwfile");
    write_private(&pwfile, password.as_bytes(), run_as)?;
    let data = root.join("data");
    if data.exists() {
        fs::remove_dir_all(&data).context("cannot clear a half-made cluster")?;
    }
    let cluster = EmbeddedPostgres {
        record: ClusterRecord {
            root: root.clone(),
            port: SOCKET_PORT,
            password,
            service_password: None,
            socket_dir: None,
        },
        bin_dir: bin_dir.to_owned(),
        run_as: run_as.cloned(),
        started_here: false,
    };
    let output = cluster
        .pg_command("initdb")
        .arg("-D")
        .arg(&data)
        .args(["-U", SUPERUSER, "-A", "scram-sha-256", "-E", "UTF8"])
        .args(["--locale=C.UTF-8", "--no-instructions"])
        .arg(format!("--pwfile={}", pwfile.display()))
        .output()
        .context("cannot run initdb")?;
    fs::remove_file(&pwfile).ok();
    check_output("initdb", &output)?;
    // No TCP; the socket's folder is given at every start (`start`).
    let mut conf = fs::OpenOptions::new()
        .append(true)
        .open(data.join("postgresql.conf"))?;
    writeln!(
        conf,
        "\n# ridepay's embedded cluster\nlisten_addresses = ''\nmax_connections = 300\n"
    )?;
    // What each statement costs, from PostgreSQL's own view (the statements
    // clients send, not those triggers run), where the server packages
    // ship the module (Debian's postgresql does).
    let statements = bin_dir.join("../lib/pg_stat_statements.so");
    if statements.exists() {
        writeln!(conf, "shared_preload_libraries = 'pg_stat_statements'\n")?;
    }
    Ok(cluster.record)
}

fn read_record(data_dir: &Path) -> anyhow::Result<Option<ClusterRecord>> {
    match fs::read(data_dir.join(CLUSTER_FILE)) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err.into()),
    }
}

fn write_record(data_dir: &Path, record: &ClusterRecord) -> anyhow::Result<()> {
    write_private(
        &data_dir.join(CLUSTER_FILE),
        &serde_json::to_vec_pretty(record)?,
        None,
    )
}

/// Serialises cluster set-up between processes sharing a data folder.
fn lock_folder(data_dir: &Path) -> anyhow::Result<Flock<fs::File>> {
    let file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(data_dir.join("cluster.lock"))?;
    Flock::lock(file, FlockArg::LockExclusive)
        .map_err(|(_, errno)| anyhow!("cannot lock the data folder: {errno}"))
}

/// A socket folder as libpq takes it in a URL's host: percent-encoded.
fn percent_encode(path: &Path) -> String {
    path.as_os_str()
        .as_encoded_bytes()
        .iter()
        .map(|&byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(byte).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// `path` as one word for `/bin/sh`.
fn shell_quote(path: &Path) -> anyhow::Result<String> {
    let text = path
        .to_str()
        .ok_or_else(|| anyhow!("{} is not UTF-8", path.display()))?;
    Ok(format!("'{}'", text.replace('\'', "'\\''")))
}

fn check_output(what: &str, output: &Output) -> anyhow::Result<()> {
    if output.status.success() {
        return Ok(());
    }
    bail!(
        "{what} failed ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout).trim(),
        String::from_utf8_lossy(&output.stderr).trim()
    )
}
