//! A whole benchmark session: PostgreSQL, one ridepay server with its
//! background workers off, each scenario and baseline at each connection
//! count, then the write-up.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection;
use diesel::sql_types::{BigInt, Text};
use diesel::{PgConnection, QueryableByName, RunQueryDsl};

use super::baseline::{self, Baseline, COMPARED};
use super::load::{LoadResult, Scenario};
use super::measurement::{counts_statements, Measurement, Probe, Rounds};
use super::options::Options;
use super::pgbench::{self, Pgbench, Script, ATOMIC_PHASES, NEW_KEY_SQL, ONE_INSERT};
use super::plot;
use super::report::Results;
use super::served::Served;
use crate::database::Database;
use crate::ridepay::ApiUser;
use crate::stage::Stage;

/// What a round measures: an HTTP scenario or a pgbench baseline.
#[derive(Debug, Clone, Copy)]
enum Step {
    Http(Scenario),
    Baseline(Script),
}

impl Step {
    fn name(self) -> &'static str {
        match self {
            Step::Http(scenario) => scenario.name(),
            Step::Baseline(script) => script.name,
        }
    }
}

/// Every step, in the order the report lists them.
const STEPS: [Step; 9] = [
    Step::Http(Scenario::NewKey),
    Step::Http(Scenario::Complete),
    Step::Http(Scenario::CompleteAssigned),
    Step::Http(Scenario::Replay),
    Step::Http(Scenario::Storm),
    Step::Http(Scenario::Get),
    Step::Baseline(ONE_INSERT),
    Step::Baseline(ATOMIC_PHASES),
    Step::Baseline(NEW_KEY_SQL),
];

/// The order of `STEPS` (by index) in a round. The two sides of each target
/// ratio run back to back, so that the same share of the machine's other
/// load falls on both: new-key POST between its SQL replay and the
/// atomic-phases SQL, which the completion follows, then the assigned
/// completion, replay POST and GET. Every other round runs each of those
/// two chains backwards, so that a load that rises or falls through a round
/// favours neither side of a pair.
fn round_order(round: u32) -> [usize; 9] {
    if round.is_multiple_of(2) {
        [8, 0, 7, 1, 2, 3, 5, 4, 6]
    } else {
        [2, 1, 7, 0, 8, 5, 3, 4, 6]
    }
}

/// Statements per transaction of a pgbench script are counted on this many.
const COUNTED_TRANSACTIONS: u64 = 20;
/// A valid stored fingerprint for the SQL replay (the server hashes the request).
const FINGERPRINT: &str = "v2:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

#[derive(QueryableByName)]
struct Setting {
    #[diesel(sql_type = Text)]
    value: String,
}

pub fn run(options: Options) -> anyhow::Result<()> {
    let Stage {
        ridepay,
        user,
        mut conn,
        database,
    } = Stage::set("bench", options.ridepay_bin.as_deref())?;
    if !ridepay.binary.to_string_lossy().contains("/release/") {
        eprintln!(
            "warning: {} is not a release build; run with --release",
            ridepay.binary.display()
        );
    }
    // The service's session limits are its database's defaults; the
    // bench's own `VACUUM` of a database grown by the earlier rounds, and
    // its waits for the transfer worker, may outlast them.
    conn.batch_execute("SET statement_timeout = 0")?;
    conn.batch_execute(pgbench::SETUP)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.client_threads)
        .enable_all()
        .build()?;
    let mut served = Served::start(&ridepay, user, options.riders, true, &runtime)?;
    let mut baseline = match &options.baseline_bin {
        Some(binary) => {
            let binary = crate::binary::ridepay_binary(Some(binary))?;
            Some(Baseline::start(
                &binary,
                &database,
                options.riders,
                &runtime,
            )?)
        }
        None => None,
    };
    let pgbench = Pgbench::new(
        &database.url,
        pgbench_variables(&mut conn, &served.riders, &served.server.address)?,
    )?;

    let postmaster = database
        .cluster()
        .and_then(|cluster| cluster.postmaster_pid())
        .and_then(|pid| u32::try_from(pid).ok());
    let count_statements = counts_statements(&mut conn);
    if options.nested_statements {
        time_nested_statements(&mut conn, &database)?;
    }
    let script_statements = if count_statements {
        script_statements(&mut conn, &pgbench)?
    } else {
        eprintln!("warning: PostgreSQL does not count statements here (pg_stat_statements)");
        Vec::new()
    };
    let mut measurements = Vec::new();
    for &connections in &options.connections {
        let mut rounds: Vec<Rounds> = STEPS.iter().map(|_| Rounds::default()).collect();
        let mut before: Vec<Rounds> = COMPARED.iter().map(|_| Rounds::default()).collect();
        for round in 0..options.rounds {
            // Before any measurement of the round, so that none of its pairs
            // waits on it.
            let to_complete = served.hold(&runtime, connections, options.duration)?;
            let to_complete_assigned =
                served.hold_assigned(&runtime, connections, options.duration)?;
            let before_to_complete = match &baseline {
                Some(baseline) => Some(baseline.hold(&runtime, connections, options.duration)?),
                None => None,
            };
            for index in round_order(round) {
                settle(&mut conn)?;
                let (result, usage) = match STEPS[index] {
                    Step::Http(scenario) => {
                        let server = Some(&served.server);
                        let probe = Probe::start(&mut conn, server, postmaster, count_statements)?;
                        let rides = if scenario == Scenario::CompleteAssigned {
                            &to_complete_assigned
                        } else {
                            &to_complete
                        };
                        let result =
                            served.run(&runtime, scenario, rides, connections, options.duration)?;
                        if scenario == Scenario::CompleteAssigned {
                            transfers_made(&mut conn)?;
                        }
                        let usage = probe.finish(&mut conn, Some(&served.server))?;
                        (result, usage)
                    }
                    Step::Baseline(script) => {
                        // Counted apart, above: see `Pgbench::run_counted`.
                        // Timed when nested statements are, to compare
                        // the writes of a ride with the textbook flow's.
                        let timed = options.nested_statements && script == ATOMIC_PHASES;
                        let probe = Probe::start(&mut conn, None, postmaster, timed)?;
                        let run = pgbench.run(script, connections, options.duration)?;
                        let usage = probe.finish(&mut conn, None)?;
                        let load = LoadResult {
                            requests: run.transactions,
                            elapsed: run.elapsed,
                            latencies: run.latencies,
                            ..LoadResult::default()
                        };
                        (load, usage)
                    }
                };
                rounds[index].add(result, usage);
                // The release before's same scenario, right after this one's.
                let compared = match STEPS[index] {
                    Step::Http(scenario) => COMPARED.iter().position(|c| *c == scenario),
                    Step::Baseline(_) => None,
                };
                if let (Some(at), Some(baseline), Some(to_complete)) =
                    (compared, &mut baseline, &before_to_complete)
                {
                    settle(&mut conn)?;
                    let (result, usage) = baseline.run(
                        &runtime,
                        COMPARED[at],
                        to_complete,
                        connections,
                        options.duration,
                        postmaster,
                    )?;
                    before[at].add(result, usage);
                }
            }
        }
        for (step, rounds) in STEPS.into_iter().zip(rounds) {
            let storm = matches!(step, Step::Http(Scenario::Storm));
            measurements.push(rounds.into_measurement(step.name(), connections, storm));
            progress(measurements.last().expect("just pushed"));
        }
        if baseline.is_some() {
            for (scenario, rounds) in COMPARED.into_iter().zip(before) {
                measurements.push(rounds.into_measurement(
                    baseline::before(scenario),
                    connections,
                    false,
                ));
                progress(measurements.last().expect("just pushed"));
            }
        }
    }
    drop(served);
    drop(baseline);

    let results = Results {
        measurements,
        connections: options.connections.clone(),
        script_statements,
    };
    println!("{}", results.http_table().to_text());
    println!("{}", results.baseline_table().to_text());
    println!("{}", results.fixed_ratio_table().to_text());
    println!("{}", results.ratio_table().to_text());
    println!("{}", results.verdict_table().to_text());
    if results.compares_releases() {
        println!("{}", results.release_table().to_text());
    }
    std::fs::create_dir_all(&options.output)?;
    plot::throughput(&results, &options.output.join("throughput.png"))?;
    plot::latency(&results, &options.output.join("latency.png"))?;
    let machine = machine(&mut conn)?;
    std::fs::write(
        options.output.join("results.md"),
        write_up(&results, &machine, &options),
    )?;
    eprintln!("wrote {}", options.output.display());
    Ok(())
}

/// Every statement timed from now on, those triggers and functions run
/// included, by the bench's own PostgreSQL (which is deleted after the run).
fn time_nested_statements(conn: &mut PgConnection, database: &Database) -> anyhow::Result<()> {
    if database.cluster().is_none() {
        anyhow::bail!(
            "--nested-statements changes a server setting: it needs the bench's own \
             PostgreSQL (unset DATABASE_URL)"
        );
    }
    // Apart: ALTER SYSTEM cannot run in the transaction a batch makes.
    conn.batch_execute("ALTER SYSTEM SET pg_stat_statements.track = 'all'")?;
    conn.batch_execute("SELECT pg_reload_conf()")?;
    Ok(())
}

/// Statements per transaction of each baseline, from a short untimed run.
fn script_statements(
    conn: &mut PgConnection,
    pgbench: &Pgbench,
) -> anyhow::Result<Vec<(&'static str, f64)>> {
    let mut counted = Vec::new();
    for step in STEPS {
        let Step::Baseline(script) = step else {
            continue;
        };
        let probe = Probe::start(conn, None, None, true)?;
        let transactions = pgbench.run_counted(script, COUNTED_TRANSACTIONS)?;
        let statements = probe.finish(conn, None)?.statements.unwrap_or_default();
        counted.push((script.name, statements as f64 / transactions.max(1) as f64));
    }
    Ok(counted)
}

/// Waits for the transfer worker to make every transfer owed, so that the
/// assigned completions' transfers are counted with them, not with the
/// next measurement. The poll names `pg_stat_statements`, which leaves it
/// out of the statements counted.
fn transfers_made(conn: &mut PgConnection) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let pending = diesel::sql_query(
            "SELECT count(*) AS value FROM transfers WHERE status = 'pending' \
             /* the drain: not counted in pg_stat_statements */",
        )
        .get_result::<Count>(conn)?
        .value;
        if pending == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            anyhow::bail!("{pending} transfers still pending 5 minutes after the load");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    value: i64,
}

/// Every measurement starts from the same state, the previous one's dead rows
/// vacuumed and its dirty pages written, so that none pays for another's
/// autovacuum or checkpoint. CHECKPOINT needs a superuser (or
/// `pg_checkpoint`), which the bench's own PostgreSQL has; on a server of
/// yours without it, the measurements run without it.
fn settle(conn: &mut PgConnection) -> anyhow::Result<()> {
    conn.batch_execute("VACUUM (ANALYZE)")?;
    if let Err(err) = conn.batch_execute("CHECKPOINT") {
        eprintln!("warning: no CHECKPOINT between measurements: {err}");
    }
    Ok(())
}

fn progress(m: &Measurement) {
    eprintln!(
        "{:<22} {:>3} conns: {:>8.0}/s p99 {:.2} ms, {:.2} write tx each",
        m.name,
        m.connections,
        m.throughput(),
        m.latency.p99.as_secs_f64() * 1000.0,
        m.writes_per_request()
    );
}

/// The `-D` variables of `new_key_post.sql`: the riders' ids, the first
/// rider's key hash as stored (every rider's authentication reads the same
/// index the same way), the installation id of derived gateway keys, and
/// the return URL the server at `address` gives its rides.
fn pgbench_variables(
    conn: &mut PgConnection,
    riders: &[ApiUser],
    address: &str,
) -> anyhow::Result<Vec<(String, String)>> {
    let user_id = riders[0].user_id;
    let key_hash =
        diesel::sql_query("SELECT encode(api_key_hash, 'hex') AS value FROM users WHERE id = $1")
            .bind::<BigInt, _>(user_id)
            .get_result::<Setting>(conn)?
            .value;
    let installation = diesel::sql_query(
        "SELECT replace(installation_id::text, '-', '') AS value FROM installation",
    )
    .get_result::<Setting>(conn)?
    .value;
    Ok(vec![
        ("first_user".to_owned(), user_id.to_string()),
        ("riders".to_owned(), riders.len().to_string()),
        ("key_hash".to_owned(), key_hash),
        ("installation".to_owned(), installation),
        ("fingerprint".to_owned(), FINGERPRINT.to_owned()),
        (
            "return_url".to_owned(),
            format!("http://{address}/payments/return"),
        ),
    ])
}

/// What the figures were measured on.
fn machine(conn: &mut PgConnection) -> anyhow::Result<Vec<(&'static str, String)>> {
    let mut show = |query: &str| -> anyhow::Result<String> {
        Ok(diesel::sql_query(query).get_result::<Setting>(conn)?.value)
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("model name"))
                .map(|name| name.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            let kib: f64 = info
                .lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))?
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .ok()?;
            Some(format!("{:.1} GiB", kib / 1024.0 / 1024.0))
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    Ok(vec![
        ("load average after the run (1, 5, 15 min)", load),
        (
            "cores (nproc)",
            std::thread::available_parallelism()
                .map_or(0, usize::from)
                .to_string(),
        ),
        ("CPU", cpu),
        ("memory", memory),
        ("PostgreSQL", show("SELECT version() AS value")?),
        (
            "synchronous_commit",
            show("SELECT current_setting('synchronous_commit') AS value")?,
        ),
        ("fsync", show("SELECT current_setting('fsync') AS value")?),
        (
            "shared_buffers",
            show("SELECT current_setting('shared_buffers') AS value")?,
        ),
    ])
}

fn write_up(results: &Results, machine: &[(&'static str, String)], options: &Options) -> String {
    let mut out = String::from("# Benchmark results (generated by `bench`)\n\n");
    out.push_str("Command: `cargo run --release -p ridepay-tools --bin bench`");
    let _ = writeln!(
        out,
        " ({} rounds of {} s per measurement, connections {:?}, {} load-generator thread(s)).\n",
        options.rounds,
        options.duration.as_secs_f64(),
        options.connections,
        options.client_threads
    );
    out.push_str("| machine | |\n|---|---|\n");
    for (name, value) in machine {
        let _ = writeln!(out, "| {name} | {value} |");
    }
    out.push_str("\n## Targets\n\n");
    out.push_str(&results.verdict_table().to_markdown());
    if results.compares_releases() {
        out.push_str("\n## Against the release before\n\n");
        out.push_str(&results.release_table().to_markdown());
    }
    write_statement_times(&mut out, results, options);
    out.push_str("\n## Ratios to the fixed baselines\n\n");
    out.push_str(&results.fixed_ratio_table().to_markdown());
    out.push_str("\n## Ratios to the server's own SQL and to GET\n\n");
    out.push_str(&results.ratio_table().to_markdown());
    out.push_str("\n## HTTP scenarios\n\n");
    out.push_str(&results.http_table().to_markdown());
    out.push_str("\n## pgbench baselines\n\n");
    out.push_str(&results.baseline_table().to_markdown());
    if !results.counts_statements() {
        out.push_str(
            "\nNo statements counted: this PostgreSQL does not load `pg_stat_statements` \
             (or its counts cannot be reset by this role).\n",
        );
    }
    out.push_str("\n![throughput](throughput.png)\n\n![p99 latency](latency.png)\n");
    out
}

/// Where PostgreSQL's time per new ride goes, at each connection count, in
/// this release and the release before, per completion, unassigned and
/// assigned, and (timed with nested statements only) per transaction of
/// the atomic-phases SQL.
fn write_statement_times(out: &mut String, results: &Results, options: &Options) {
    let names = [
        Scenario::NewKey.name(),
        baseline::before(Scenario::NewKey),
        Scenario::Complete.name(),
        Scenario::CompleteAssigned.name(),
        ATOMIC_PHASES.name,
    ];
    let mut tables = Vec::new();
    for &connections in &options.connections {
        for name in names {
            if let Some(table) = results.statement_table(name, connections) {
                tables.push((name, connections, table));
            }
        }
    }
    if tables.is_empty() {
        return;
    }
    out.push_str("\n## Where PostgreSQL's time goes\n\n");
    out.push_str(if options.nested_statements {
        "Execution time per request by statement, with the statements triggers and \
         functions run (`nested`: their time is also in the statement that ran them).\n"
    } else {
        "Execution time per request by top-level statement (`--nested-statements` \
         lists what triggers and functions run inside them).\n"
    });
    for (name, connections, table) in tables {
        let _ = writeln!(out, "\n### {name}, {connections} connections\n");
        out.push_str(&table.to_markdown());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn position(order: &[usize], name: &str) -> usize {
        order
            .iter()
            .position(|&index| STEPS[index].name() == name)
            .expect("every step runs")
    }

    #[test]
    fn each_round_runs_every_step_once_with_each_ratio_back_to_back_in_turn() {
        let pairs = [
            (Scenario::NewKey.name(), NEW_KEY_SQL.name),
            (Scenario::NewKey.name(), ATOMIC_PHASES.name),
            (Scenario::Complete.name(), ATOMIC_PHASES.name),
            (Scenario::Replay.name(), Scenario::Get.name()),
        ];
        for round in 0..4 {
            let order = round_order(round);
            let mut sorted = order;
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
            for (first, second) in pairs {
                let (a, b) = (position(&order, first), position(&order, second));
                let first_leads_round_0 =
                    position(&round_order(0), first) < position(&round_order(0), second);
                assert_eq!(a.abs_diff(b), 1, "{first} and {second} in round {round}");
                assert_eq!(
                    a < b,
                    first_leads_round_0 == (round % 2 == 0),
                    "{first} and {second} swap every round"
                );
            }
        }
    }
}
