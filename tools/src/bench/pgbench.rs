//! The pgbench baselines: scripts in `tools/pgbench/`, run at the same
//! connection counts as the HTTP scenarios, with every transaction's latency
//! read from pgbench's per-transaction log, and an untimed run of each for
//! its statements.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context};
use ridepay::embedded_postgres::find_bin_dir;

pub const SETUP: &str = include_str!("../../pgbench/setup.sql");

/// A baseline script and the name its rows carry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Script {
    pub name: &'static str,
    pub file: &'static str,
}

pub const ONE_INSERT: Script = Script {
    name: "pgbench one INSERT",
    file: "one_insert.sql",
};
pub const ATOMIC_PHASES: Script = Script {
    name: "pgbench atomic phases",
    file: "atomic_phases.sql",
};
pub const NEW_KEY_SQL: Script = Script {
    name: "pgbench new-key SQL",
    file: "new_key_post.sql",
};

pub struct Pgbench {
    binary: PathBuf,
    database_url: String,
    /// `-D name=value` variables the scripts use.
    variables: Vec<(String, String)>,
    log_dir: PathBuf,
}

pub struct PgbenchRun {
    pub transactions: u64,
    pub elapsed: Duration,
    pub latencies: Vec<Duration>,
}

impl Pgbench {
    pub fn new(database_url: &str, variables: Vec<(String, String)>) -> anyhow::Result<Pgbench> {
        let log_dir =
            std::env::temp_dir().join(format!("ridepay-bench-pgbench-{}", std::process::id()));
        std::fs::create_dir_all(&log_dir)?;
        Ok(Pgbench {
            binary: find_pgbench()?,
            database_url: database_url.to_owned(),
            variables,
            log_dir,
        })
    }

    /// Runs `script` with `clients` connections for `duration`, with prepared
    /// statements as Diesel uses them.
    pub fn run(
        &self,
        script: Script,
        clients: usize,
        duration: Duration,
    ) -> anyhow::Result<PgbenchRun> {
        let prefix = self.log_dir.join(format!("{}-{clients}", script.file));
        let mut command = self.command(script, "prepared");
        command
            .arg("-l")
            .arg(format!("--log-prefix={}", prefix.display()))
            .arg(format!("--client={clients}"))
            .arg(format!("--jobs={}", clients.min(2)))
            .arg(format!("--time={}", duration.as_secs().max(1)));
        let stdout = self.execute(command, script)?;
        let transactions = processed(&stdout)?;
        let tps: f64 = field(&stdout, "tps = ")
            .context("pgbench printed no tps")?
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .parse()?;
        Ok(PgbenchRun {
            transactions,
            elapsed: Duration::from_secs_f64(transactions as f64 / tps.max(f64::EPSILON)),
            latencies: read_latencies(&prefix)?,
        })
    }

    /// Runs `transactions` of `script` on one connection, untimed, for
    /// `pg_stat_statements` to count: unprepared, because it counts a
    /// prepared `BEGIN` or `COMMIT` only the first time (PostgreSQL 15), which
    /// would leave most of a multi-transaction script's statements out.
    /// Returns the transactions run.
    pub fn run_counted(&self, script: Script, transactions: u64) -> anyhow::Result<u64> {
        let mut command = self.command(script, "extended");
        command.arg(format!("--transactions={transactions}"));
        processed(&self.execute(command, script)?)
    }

    fn command(&self, script: Script, protocol: &str) -> Command {
        let script_path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("pgbench")
            .join(script.file);
        let mut command = Command::new(&self.binary);
        command
            .args(["-n", "-M", protocol])
            .arg(format!("--file={}", script_path.display()));
        for (name, value) in &self.variables {
            command.arg(format!("--define={name}={value}"));
        }
        command
    }

    /// pgbench's report, once it ran without a failed transaction.
    fn execute(&self, mut command: Command, script: Script) -> anyhow::Result<String> {
        let output = command
            .arg(&self.database_url)
            .output()
            .with_context(|| format!("cannot run {}", self.binary.display()))?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let failed: u64 = field(&stdout, "number of failed transactions: ")
            .and_then(|text| text.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        if !output.status.success() || failed > 0 {
            bail!(
                "pgbench {} failed ({}): {}{}",
                script.file,
                output.status,
                stdout,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(stdout)
    }
}

impl Drop for Pgbench {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.log_dir);
    }
}

fn field<'a>(text: &'a str, label: &str) -> Option<&'a str> {
    text.lines().find_map(|line| line.strip_prefix(label))
}

fn processed(report: &str) -> anyhow::Result<u64> {
    Ok(field(report, "number of transactions actually processed: ")
        .context("pgbench printed no transaction count")?
        .split('/')
        .next()
        .unwrap_or_default()
        .parse()?)
}

/// Third field of each line of pgbench's transaction logs (`PREFIX.PID` and
/// `PREFIX.PID.THREAD`): the latency in microseconds.
fn read_latencies(prefix: &Path) -> anyhow::Result<Vec<Duration>> {
    let dir = prefix.parent().context("log prefix has no folder")?;
    let stem = format!(
        "{}.",
        prefix.file_name().unwrap_or_default().to_string_lossy()
    );
    let mut latencies = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if !path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .starts_with(&stem)
        {
            continue;
        }
        for line in std::fs::read_to_string(&path)?.lines() {
            if let Some(micros) = line.split_whitespace().nth(2).and_then(|f| f.parse().ok()) {
                latencies.push(Duration::from_micros(micros));
            }
        }
        std::fs::remove_file(&path)?;
    }
    Ok(latencies)
}

/// `pgbench` beside the server binaries the private cluster uses.
fn find_pgbench() -> anyhow::Result<PathBuf> {
    Ok(find_bin_dir()?.join("pgbench"))
}
