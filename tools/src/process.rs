//! A child process that announces `listening on http://ADDR` on stdout once
//! it is ready (`ridepay serve`, `ridepay fake-gateway`), and what the tools
//! read about it from /proc.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{anyhow, Context};

const ANNOUNCEMENT: &str = "listening on http://";

pub struct Announced {
    child: Child,
    /// `host:port`, without the scheme.
    pub address: String,
}

impl Announced {
    /// Spawns `command` and waits at most `limit` for its announcement.
    pub fn spawn(mut command: Command, limit: Duration) -> anyhow::Result<Announced> {
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {:?}", command.get_program()))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let (sender, receiver) = mpsc::channel();
        // The reader goes on draining stdout after the announcement, so the
        // child never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some((_, address)) = line.split_once(ANNOUNCEMENT) {
                    let _ = sender.send(address.trim().to_owned());
                }
            }
        });
        match receiver.recv_timeout(limit) {
            Ok(address) => Ok(Announced { child, address }),
            Err(_) => {
                let _ = child.kill();
                let status = child.wait()?;
                Err(anyhow!(
                    "{:?} did not announce its address within {limit:?} ({status})",
                    command.get_program()
                ))
            }
        }
    }

    /// The child's stderr, when the caller piped it.
    pub fn take_stderr(&mut self) -> Option<std::process::ChildStderr> {
        self.child.stderr.take()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no cleanup of any kind.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Peak resident set size in KiB (`VmHWM`) since the start or the last
    /// [`reset_peak_rss`](Self::reset_peak_rss).
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmHWM:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    }

    /// Resets `VmHWM` to the current RSS (Linux `clear_refs` value 5), so each
    /// measurement gets its own peak. False where the kernel refuses.
    pub fn reset_peak_rss(&self) -> bool {
        std::fs::write(format!("/proc/{}/clear_refs", self.pid()), "5").is_ok()
    }

    /// User plus system CPU time consumed so far.
    pub fn cpu_time(&self) -> Option<Duration> {
        ticks(&read_stat(format!("/proc/{}/stat", self.pid()))?)
    }
}

impl Drop for Announced {
    fn drop(&mut self) {
        self.kill();
    }
}

/// CPU time (user + system) of this process, for the load generator's share.
pub fn own_cpu_time() -> Option<Duration> {
    ticks(&read_stat("/proc/self/stat")?)
}

/// CPU time of `pid` and its children: PostgreSQL's postmaster and its
/// backends. The living children's own time, plus the time of those that have
/// exited, which the postmaster collects as it reaps them (a pgbench run's
/// backends exit with it).
pub fn tree_cpu_time(pid: u32) -> Option<Duration> {
    let fields = read_stat(format!("/proc/{pid}/stat"))?;
    let own = ticks(&fields)? + reaped_children_ticks(&fields)?;
    let children = std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let fields = read_stat(entry.path().join("stat"))?;
            (fields.get(1)?.parse::<u32>().ok()? == pid).then(|| ticks(&fields))?
        })
        .sum::<Duration>();
    Some(own + children)
}

fn read_stat(path: impl AsRef<std::path::Path>) -> Option<Vec<String>> {
    stat_fields(&std::fs::read_to_string(path).ok()?)
}

/// The fields of a /proc stat line after the command name (which may hold
/// spaces and ends with ')'): state, ppid, ...
fn stat_fields(stat: &str) -> Option<Vec<String>> {
    Some(
        stat.rsplit_once(')')?
            .1
            .split_whitespace()
            .map(str::to_owned)
            .collect(),
    )
}

/// utime + stime.
fn ticks(fields: &[String]) -> Option<Duration> {
    ticks_of(fields, 11, 12)
}

/// cutime + cstime: the time of the children this process has reaped.
fn reaped_children_ticks(fields: &[String]) -> Option<Duration> {
    ticks_of(fields, 13, 14)
}

fn ticks_of(fields: &[String], first: usize, second: usize) -> Option<Duration> {
    let ticks: u64 =
        fields.get(first)?.parse::<u64>().ok()? + fields.get(second)?.parse::<u64>().ok()?;
    // USER_HZ is 100 on every Linux the tools run on.
    Some(Duration::from_millis(ticks * 10))
}
