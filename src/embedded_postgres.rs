//! A private PostgreSQL cluster run from the installed server binaries, so that
//! `cargo run` and `cargo test` need no database set up by hand.
//!
//! Layout of the data folder (`RIDEPAY_DATA_DIR`):
//! - `cluster.json`: where the cluster lives, its port and its password (0600);
//! - `postgres/`: the cluster itself, unless the server user cannot reach the
//!   data folder, in which case it lives in a folder made fresh, under a
//!   random name, in the system temp directory (see [`cluster_root`]).
//!
//! As root the server runs as the unprivileged `postgres` user, because
//! PostgreSQL refuses to run as root.

use std::fs;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use nix::fcntl::{Flock, FlockArg};
use nix::unistd::{Uid, User};
use serde::{Deserialize, Serialize};

const SUPERUSER: &str = "postgres";
const CLUSTER_FILE: &str = "cluster.json";

/// What `cluster.json` records, so that every command run against the same data
/// folder attaches to the same cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ClusterRecord {
    root: PathBuf,
    port: u16,
    password: String,
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
    /// needed. Safe to call from several processes at once.
    pub fn ensure_running(data_dir: &Path) -> anyhow::Result<Self> {
        let bin_dir = find_bin_dir()?;
        fs::create_dir_all(data_dir)
            .with_context(|| format!("cannot create the data folder {}", data_dir.display()))?;
        let data_dir = data_dir
            .canonicalize()
            .with_context(|| format!("cannot resolve {}", data_dir.display()))?;
        let _lock = lock_folder(&data_dir)?;

        let run_as = server_user()?;
        let record = match read_record(&data_dir)? {
            Some(record) if record.root.join("data/PG_VERSION").exists() => {
                // The recorded folder may have vanished (a temp directory
                // cleared at boot) and been made again by someone else.
                open_private_dir(&record.root, run_as.as_ref())?;
                record
            }
            _ => {
                let record = init_cluster(&data_dir, &bin_dir, run_as.as_ref())?;
                write_record(&data_dir, &record)?;
                record
            }
        };
        let mut cluster = EmbeddedPostgres {
            record,
            bin_dir,
            run_as,
            started_here: false,
        };
        if !cluster.accepts_connections() {
            cluster.start(&data_dir)?;
            cluster.started_here = true;
        }
        cluster.create_database("ridepay")?;
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
        Ok(cluster.accepts_connections().then_some(cluster))
    }

    /// A libpq URL for `database` on this cluster, as the superuser.
    pub fn database_url(&self, database: &str) -> String {
        format!(
            "postgres://{SUPERUSER}:{}@127.0.0.1:{}/{database}",
            self.record.password, self.record.port
        )
    }

    pub fn port(&self) -> u16 {
        self.record.port
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
rm -rf "$2""#;
        let child = Command::new("/bin/sh")
            .arg("-c")
            .arg(script)
            .arg("watcher")
            .arg(pid.to_string())
            .arg(remove)
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

    fn accepts_connections(&self) -> bool {
        TcpStream::connect_timeout(
            &([127, 0, 0, 1], self.record.port).into(),
            Duration::from_millis(500),
        )
        .is_ok()
            && self.postmaster_pid().is_some()
    }

    fn start(&mut self, data_dir: &Path) -> anyhow::Result<()> {
        // A postmaster.pid left by a killed server names a process that is gone
        // (or, after pid reuse, someone else): nothing answers on our port, so
        // the file is stale.
        let pid_file = self.data_path().join("postmaster.pid");
        if pid_file.exists() {
            log::warn!("removing a stale {}", pid_file.display());
            fs::remove_file(&pid_file).context("cannot remove a stale postmaster.pid")?;
        }
        if !port_is_free(self.record.port) {
            self.record.port = free_port()?;
            write_record(data_dir, &self.record)?;
        }
        let output = self
            .pg_command("pg_ctl")
            .arg("start")
            .arg("-D")
            .arg(self.data_path())
            .arg("-l")
            .arg(self.record.root.join("postgres.log"))
            .args(["-w", "-t", "60", "-o"])
            .arg(format!("-p {}", self.record.port))
            .output()
            .context("cannot run pg_ctl start")?;
        check_output("pg_ctl start", &output).with_context(|| {
            format!(
                "PostgreSQL did not start; see {}",
                self.record.root.join("postgres.log").display()
            )
        })
    }

    fn create_database(&self, name: &str) -> anyhow::Result<()> {
        use diesel::{Connection, PgConnection, RunQueryDsl};
        let mut conn = connect_with_retry(&self.database_url("postgres"))?;
        let exists: bool = diesel::select(diesel::dsl::sql::<diesel::sql_types::Bool>(
            "EXISTS (SELECT 1 FROM pg_database WHERE datname = 'ridepay')",
        ))
        .get_result(&mut conn)?;
        if !exists && name == "ridepay" {
            // A concurrent creator may win the race; that is fine.
            if let Err(err) = diesel::sql_query("CREATE DATABASE ridepay").execute(&mut conn) {
                let _ = PgConnection::establish(&self.database_url(name)).map_err(|_| err)?;
            }
        }
        Ok(())
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

/// Connects, waiting out the moments after a start when the server still
/// refuses connections.
pub fn connect_with_retry(url: &str) -> anyhow::Result<diesel::PgConnection> {
    use diesel::Connection;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match diesel::PgConnection::establish(url) {
            Ok(conn) => return Ok(conn),
            Err(err) if Instant::now() > deadline => {
                return Err(err).context("cannot connect to the local PostgreSQL")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
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
    let user = User::from_name(SUPERUSER)?.ok_or_else(|| {
        anyhow!(
            "running as root, PostgreSQL must run as an unprivileged user, and there \
             is no `{SUPERUSER}` user; create one or set DATABASE_URL"
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
            port: free_port()?,
            password,
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
    // Loopback TCP only: no Unix socket whose folder we would have to own.
    let mut conf = fs::OpenOptions::new()
        .append(true)
        .open(data.join("postgresql.conf"))?;
    writeln!(
        conf,
        "\n# ridepay's embedded cluster\nlisten_addresses = '127.0.0.1'\n\
         unix_socket_directories = ''\nmax_connections = 300\n"
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

/// Where the cluster's files go: inside the data folder when the server user
/// can reach it, else a fresh folder under the system temp directory (a
/// checkout under a 0700 home is out of reach for `postgres`).
///
/// The temp directory is everyone's: a name there that anyone can compute
/// could be made in advance by another local user, who would then own the
/// folder our superuser password is written into. So the fallback is made
/// atomically under an unpredictable name (`mkdtemp`), never reused unless
/// [`open_private_dir`] finds it ours, and no symlink is followed on the way.
fn cluster_root(data_dir: &Path, run_as: Option<&User>) -> anyhow::Result<PathBuf> {
    let inside = data_dir.join("postgres");
    match fs::DirBuilder::new().mode(0o700).create(&inside) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(err).with_context(|| format!("cannot create {}", inside.display())),
    }
    open_private_dir(&inside, run_as)?;
    if server_user_can_write(&inside, run_as) {
        return Ok(inside);
    }
    fs::remove_dir(&inside).ok();
    let template = std::env::temp_dir().join("ridepay-postgres-XXXXXX");
    let outside = nix::unistd::mkdtemp(&template)
        .with_context(|| format!("cannot make a private folder in {}", template.display()))?;
    eprintln!(
        "note: the `{SUPERUSER}` user cannot reach {}; the embedded cluster lives in {} instead",
        data_dir.display(),
        outside.display()
    );
    open_private_dir(&outside, run_as)?;
    Ok(outside)
}

/// Opens `dir` without following a symlink, checks that it belongs to us or
/// to the server user, and makes it the server user's with mode 0700. Refuses
/// a folder anyone else owns: they could have read or planted files in it.
fn open_private_dir(dir: &Path, run_as: Option<&User>) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let handle = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_DIRECTORY | nix::libc::O_NOFOLLOW)
        .open(dir)
        .with_context(|| {
            format!(
                "cannot open {} as a folder (a symlink is refused)",
                dir.display()
            )
        })?;
    let owner = handle.metadata()?.uid();
    let allowed = [
        Some(Uid::effective().as_raw()),
        run_as.map(|user| user.uid.as_raw()),
    ];
    if !allowed.contains(&Some(owner)) {
        bail!(
            "refusing to use {}: it belongs to uid {owner}, not to this user or `{SUPERUSER}`; \
             remove it or set RIDEPAY_DATA_DIR elsewhere",
            dir.display()
        );
    }
    handle.set_permissions(fs::Permissions::from_mode(0o700))?;
    if let Some(user) = run_as {
        std::os::unix::fs::fchown(&handle, Some(user.uid.as_raw()), Some(user.gid.as_raw()))
            .with_context(|| format!("cannot hand {} to {SUPERUSER}", dir.display()))?;
    }
    Ok(())
}

fn server_user_can_write(dir: &Path, run_as: Option<&User>) -> bool {
    let Some(user) = run_as else { return true };
    Command::new("/usr/bin/test")
        .arg("-w")
        .arg(dir)
        .current_dir("/")
        .uid(user.uid.as_raw())
        .gid(user.gid.as_raw())
        .status()
        .is_ok_and(|status| status.success())
}

/// Writes a file only its owner may read, made new (never an existing file,
/// never through a symlink), then renamed into place, so a file someone else
/// prepared at `path` is replaced, not written into.
fn write_private(path: &Path, contents: &[u8], owner: Option<&User>) -> anyhow::Result<()> {
    let staging = path.with_extension("new");
    fs::remove_file(&staging).ok();
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&staging)
        .with_context(|| format!("cannot write {}", staging.display()))?;
    if let Some(user) = owner {
        std::os::unix::fs::fchown(&file, Some(user.uid.as_raw()), Some(user.gid.as_raw()))?;
    }
    file.write_all(contents)?;
    file.sync_all()?;
    fs::rename(&staging, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
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

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn port_is_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
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
