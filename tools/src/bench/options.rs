//! The benchmark's command line.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "bench",
    about = "Measure ridepay's throughput, latency, memory, write transactions and statements against pgbench baselines"
)]
pub struct Options {
    /// Length of each round of a measurement (whole seconds: pgbench's unit).
    #[arg(long, default_value = "3s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Rounds per measurement. Every scenario and baseline at a connection
    /// count runs once per round, in turn, and its rounds are added up.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// Connection counts (virtual users, one keep-alive connection each).
    #[arg(long, value_delimiter = ',', default_value = "1,8,32,64")]
    pub connections: Vec<usize>,
    /// Riders (users) the virtual users act as, one each up to this count. A
    /// single rider would make every insert lock one `users` row (foreign
    /// keys take KEY SHARE), which no real traffic does.
    #[arg(long, default_value_t = 64)]
    pub riders: usize,
    /// Threads of the load generator's runtime; one leaves the other core to
    /// the server and PostgreSQL.
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,
    /// Where `results.md` and the PNG plots go.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../benchmarks"))]
    pub output: PathBuf,
    /// The ridepay binary; by default built with `cargo build -p ridepay` in
    /// this tool's profile (use `--release`).
    #[arg(long)]
    pub ridepay_bin: Option<PathBuf>,
    /// The release before's ridepay binary (built in a `git worktree` of
    /// it): its new-key and completion scenarios run on a database of their
    /// own beside this release's, right after them in every round, and the
    /// report compares PostgreSQL's CPU per request of the two.
    #[arg(long)]
    pub baseline_bin: Option<PathBuf>,
    /// Time the statements triggers and functions run too
    /// (`pg_stat_statements.track = all`, on the bench's own PostgreSQL
    /// only), so that "Where PostgreSQL's time goes" lists them. Timing
    /// them costs PostgreSQL CPU of its own: compare CPU figures between
    /// runs made the same way.
    #[arg(long)]
    pub nested_statements: bool,
}
