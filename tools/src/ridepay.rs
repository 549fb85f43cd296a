//! Running the `ridepay` binary: `users create`, `serve` and `fake-gateway`,
//! each from the temp directory (so no developer's `.env` is read) with a
//! cleared environment plus what the caller sets.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use serde::Deserialize;

use crate::process::Announced;

const START_LIMIT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Deserialize)]
pub struct ApiUser {
    pub user_id: i64,
    pub api_key: String,
}

/// A kind of server log line: its name, a substring the line must hold (""
/// for any line), and substrings of which it must hold one (the wording of
/// one gateway or another, say).
pub type LogEvent = (&'static str, &'static str, &'static [&'static str]);

/// Server log lines (stderr) counted by kind.
#[derive(Debug, Default)]
pub struct LogCounts {
    events: Vec<(LogEvent, AtomicU64)>,
}

impl LogCounts {
    pub fn new(events: &[LogEvent]) -> Arc<LogCounts> {
        Arc::new(LogCounts {
            events: events
                .iter()
                .map(|event| (*event, AtomicU64::new(0)))
                .collect(),
        })
    }

    pub fn get(&self, name: &str) -> u64 {
        self.events
            .iter()
            .find(|((event, _, _), _)| *event == name)
            .map_or(0, |(_, count)| count.load(Ordering::Relaxed))
    }

    fn observe(&self, line: &str) {
        for ((_, context, marks), count) in &self.events {
            if line.contains(context) && marks.iter().any(|mark| line.contains(mark)) {
                count.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// One variable of a ridepay process's environment.
pub fn var(name: &str, value: impl ToString) -> (String, String) {
    (name.to_owned(), value.to_string())
}

#[derive(Debug, Clone)]
pub struct Ridepay {
    pub binary: PathBuf,
    pub database_url: String,
    /// `RUST_LOG` of the servers.
    pub log_level: String,
}

impl Ridepay {
    fn command(&self) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .current_dir(std::env::temp_dir())
            .env_clear()
            .env("DATABASE_URL", &self.database_url)
            .env("RUST_LOG", &self.log_level)
            .stdin(Stdio::null());
        command
    }

    /// A user with a stored customer and card (`pm_card_visa`), and its API
    /// key.
    pub fn create_user(&self, email: &str) -> anyhow::Result<ApiUser> {
        self.users_create(&[
            "--email",
            email,
            "--stripe-customer",
            "cus_tools",
            "--payment-method",
            "pm_card_visa",
        ])
    }

    /// A platform user (drivers, assignments), and its API key.
    pub fn create_platform_user(&self, email: &str) -> anyhow::Result<ApiUser> {
        self.users_create(&["--role", "platform", "--email", email])
    }

    fn users_create(&self, args: &[&str]) -> anyhow::Result<ApiUser> {
        let output = self
            .command()
            .args(["users", "create"])
            .args(args)
            .stderr(Stdio::inherit())
            .output()
            .context("cannot run `ridepay users create`")?;
        if !output.status.success() {
            bail!("`ridepay users create` failed ({})", output.status);
        }
        serde_json::from_slice(&output.stdout).context("unexpected `ridepay users create` output")
    }

    /// `ridepay simulated-gateway CONTROL ACCOUNT` on the doubles' records
    /// in `records_url` (either double's): what Stripe does to a connected
    /// account in time (`restrict-account`, `activate-account`,
    /// `make-available`, `pay-out`).
    pub fn gateway_control(
        &self,
        records_url: &str,
        control: &str,
        account: &str,
    ) -> anyhow::Result<()> {
        let output = self
            .command()
            .args(["simulated-gateway", control, account, "--database-url"])
            .arg(records_url)
            .output()
            .with_context(|| format!("cannot run `ridepay simulated-gateway {control}`"))?;
        if !output.status.success() {
            bail!(
                "`ridepay simulated-gateway {control} {account}` failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(())
    }

    /// `ridepay ledger check` on the whole ledger, reaching the gateway
    /// with `env`: the violations it names, as `invariant subject: detail`.
    pub fn ledger_violations(&self, env: &[(String, String)]) -> anyhow::Result<Vec<String>> {
        let output = self
            .command()
            .args(["ledger", "check"])
            .envs(env.iter().cloned())
            .output()
            .context("cannot run `ridepay ledger check`")?;
        let report: serde_json::Value =
            serde_json::from_slice(&output.stdout).with_context(|| {
                format!(
                    "`ridepay ledger check` printed no report ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                )
            })?;
        let violations: Vec<String> = report["violations"]
            .as_array()
            .context("a report without violations")?
            .iter()
            .map(|found| {
                format!(
                    "{} {}: {}",
                    found["invariant"].as_str().unwrap_or_default(),
                    found["subject"].as_str().unwrap_or_default(),
                    found["detail"].as_str().unwrap_or_default()
                )
            })
            .collect();
        if violations.is_empty() != output.status.success() {
            bail!(
                "`ridepay ledger check` exited {} with {report}",
                output.status
            );
        }
        Ok(violations)
    }

    /// `ridepay serve` on a free loopback port. Its stderr is counted into
    /// `logs` when given, else discarded.
    pub fn serve(
        &self,
        env: &[(String, String)],
        logs: Option<Arc<LogCounts>>,
    ) -> anyhow::Result<Announced> {
        let mut command = self.command();
        command
            .arg("serve")
            .env("BIND_ADDR", "127.0.0.1:0")
            .envs(env.iter().cloned());
        spawn_counting(command, logs)
    }

    /// `ridepay fake-gateway` on a free loopback port: Stripe's HTTP API,
    /// keeping its records in `records_url`, with more of its flags in `args`.
    pub fn fake_gateway(
        &self,
        records_url: &str,
        args: &[String],
        env: &[(String, String)],
    ) -> anyhow::Result<Announced> {
        let mut command = self.command();
        command
            .args(["fake-gateway", "--bind", "127.0.0.1:0", "--database-url"])
            .arg(records_url)
            .args(args)
            .envs(env.iter().cloned());
        spawn_counting(command, None)
    }
}

fn spawn_counting(mut command: Command, logs: Option<Arc<LogCounts>>) -> anyhow::Result<Announced> {
    let Some(logs) = logs else {
        command.stderr(Stdio::null());
        return Announced::spawn(command, START_LIMIT);
    };
    command.stderr(Stdio::piped());
    let mut process = Announced::spawn(command, START_LIMIT)?;
    let stderr = process.take_stderr().expect("stderr is piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            logs.observe(&line);
        }
    });
    Ok(process)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_count_once_per_kind_by_any_of_its_marks() {
        let counts = LogCounts::new(&[
            ("lost", "unavailable: ", &["lost response", "no answer"]),
            ("any", "", &["unavailable"]),
        ]);
        counts.observe("payment gateway unavailable: no answer from Stripe");
        counts.observe("payment gateway unavailable: simulated lost response");
        counts.observe("completer: no answer from Stripe");
        counts.observe("something else");
        assert_eq!(counts.get("lost"), 2);
        assert_eq!(counts.get("any"), 2);
        assert_eq!(counts.get("unknown"), 0);
    }
}
