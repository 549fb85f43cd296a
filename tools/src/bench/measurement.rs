//! One measured run and what was read around it: transaction ids assigned,
//! statements sent, CPU time of the server and of the load generator, the
//! server's peak RSS.

use std::time::Duration;

use diesel::sql_types::{BigInt, Bool, Double, Text};
use diesel::{PgConnection, QueryableByName, RunQueryDsl};

use super::load::LoadResult;
use crate::latency::Percentiles;
use crate::process::{own_cpu_time, tree_cpu_time, Announced};

#[derive(QueryableByName)]
struct NextXid {
    #[diesel(sql_type = BigInt)]
    xid: i64,
}

#[derive(QueryableByName)]
struct Calls {
    #[diesel(sql_type = BigInt)]
    calls: i64,
}

/// `pg_stat_statements` keeps every database's statements; only this one's
/// are the run's.
const THIS_DATABASE: &str = "(SELECT oid FROM pg_database WHERE datname = current_database())";

/// Whether this database's PostgreSQL counts statements: the bench's own
/// cluster preloads `pg_stat_statements` where the packages ship it, a
/// server of one's own may not, and resetting the counts takes a superuser
/// (or a grant).
pub fn counts_statements(conn: &mut PgConnection) -> bool {
    diesel::sql_query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .execute(conn)
        .is_ok()
        && reset_statements(conn).is_ok()
}

fn reset_statements(conn: &mut PgConnection) -> diesel::QueryResult<()> {
    diesel::sql_query(format!(
        "SELECT pg_stat_statements_reset(0, {THIS_DATABASE}, 0)"
    ))
    .execute(conn)
    .map(drop)
}

/// Statements sent to this database since the reset (top-level ones: a
/// trigger's are part of the statement that fired it), the reset and this
/// reading left out (the bench's only statements between the two).
fn statements_since_reset(conn: &mut PgConnection) -> anyhow::Result<i64> {
    Ok(diesel::sql_query(format!(
        "SELECT COALESCE(sum(calls), 0)::bigint AS calls FROM pg_stat_statements \
         WHERE dbid = {THIS_DATABASE} AND toplevel AND query NOT LIKE '%pg_stat_statements%'"
    ))
    .get_result::<Calls>(conn)?
    .calls)
}

/// One statement's share of a run, as `pg_stat_statements` timed it.
#[derive(Debug, Clone, PartialEq)]
pub struct StatementTime {
    /// `pg_stat_statements`' id of its normalized text: the same statement
    /// may be stored with its constants in one run and without in another.
    pub id: i64,
    /// Its text, whitespace folded, cut to 90 characters.
    pub query: String,
    /// Run inside another (by a trigger or a function); timed only where
    /// `pg_stat_statements.track` is `all` (`bench --nested-statements`).
    pub nested: bool,
    /// The simulated gateway's own (it touches its `simulated_*` tables):
    /// in production, that work is the gateway's, not PostgreSQL's.
    pub gateway: bool,
    pub calls: i64,
    pub time: Duration,
}

#[derive(QueryableByName)]
struct StatementRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Text)]
    query: String,
    #[diesel(sql_type = Bool)]
    nested: bool,
    #[diesel(sql_type = Bool)]
    gateway: bool,
    #[diesel(sql_type = BigInt)]
    calls: i64,
    #[diesel(sql_type = Double)]
    milliseconds: f64,
}

/// Each statement's calls and time in this database since the reset.
fn statement_times(conn: &mut PgConnection) -> anyhow::Result<Vec<StatementTime>> {
    let rows: Vec<StatementRow> = diesel::sql_query(format!(
        "SELECT queryid AS id, min(left(regexp_replace(query, '\\s+', ' ', 'g'), 90)) AS query, \
                NOT toplevel AS nested, bool_or(query LIKE '%simulated\\_%') AS gateway, \
                sum(calls)::bigint AS calls, \
                sum(total_exec_time) AS milliseconds \
         FROM pg_stat_statements \
         WHERE dbid = {THIS_DATABASE} AND query NOT LIKE '%pg_stat_statements%' \
         GROUP BY queryid, toplevel"
    ))
    .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|row| StatementTime {
            id: row.id,
            query: row.query,
            nested: row.nested,
            gateway: row.gateway,
            calls: row.calls,
            time: Duration::from_secs_f64(row.milliseconds.max(0.0) / 1000.0),
        })
        .collect())
}

/// The next transaction id to be assigned. Read from a snapshot rather than
/// with `pg_current_xact_id()`, which would assign one to the reading
/// transaction itself; the delta is the same count of writing transactions.
fn next_xid(conn: &mut PgConnection) -> anyhow::Result<i64> {
    Ok(
        diesel::sql_query("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xid")
            .get_result::<NextXid>(conn)?
            .xid,
    )
}

/// Readings taken before a run.
pub struct Probe {
    xid: i64,
    count_statements: bool,
    server_cpu: Option<Duration>,
    client_cpu: Option<Duration>,
    database_cpu: Option<Duration>,
    postmaster: Option<u32>,
}

/// What the probe saw over the run.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    pub xids: i64,
    /// None where PostgreSQL does not count them.
    pub statements: Option<i64>,
    /// Empty where PostgreSQL does not count them.
    pub statement_times: Vec<StatementTime>,
    pub server_cpu: Option<Duration>,
    pub client_cpu: Option<Duration>,
    /// PostgreSQL's postmaster and backends; only for runs whose sessions
    /// outlive them (the server's pool), else None.
    pub database_cpu: Option<Duration>,
    pub peak_rss_kib: Option<u64>,
}

impl Probe {
    /// Resets the server's peak RSS, so the run's own peak is read after it.
    /// `postmaster`: the private cluster's, whose CPU time is then read too.
    /// `count_statements`: whether to reset and read `pg_stat_statements`.
    pub fn start(
        conn: &mut PgConnection,
        server: Option<&Announced>,
        postmaster: Option<u32>,
        count_statements: bool,
    ) -> anyhow::Result<Probe> {
        if let Some(server) = server {
            server.reset_peak_rss();
        }
        let xid = next_xid(conn)?;
        // Last, so that none of the probe's own statements is counted.
        if count_statements {
            reset_statements(conn)?;
        }
        Ok(Probe {
            xid,
            count_statements,
            server_cpu: server.and_then(Announced::cpu_time),
            client_cpu: own_cpu_time(),
            database_cpu: postmaster.and_then(tree_cpu_time),
            postmaster,
        })
    }

    pub fn finish(
        self,
        conn: &mut PgConnection,
        server: Option<&Announced>,
    ) -> anyhow::Result<Usage> {
        let delta = |before: Option<Duration>, after: Option<Duration>| {
            Some(after?.saturating_sub(before?))
        };
        let (statements, statement_times) = if self.count_statements {
            (Some(statements_since_reset(conn)?), statement_times(conn)?)
        } else {
            (None, Vec::new())
        };
        Ok(Usage {
            xids: next_xid(conn)? - self.xid,
            statements,
            statement_times,
            server_cpu: delta(self.server_cpu, server.and_then(Announced::cpu_time)),
            client_cpu: delta(self.client_cpu, own_cpu_time()),
            database_cpu: delta(self.database_cpu, self.postmaster.and_then(tree_cpu_time)),
            peak_rss_kib: server.and_then(Announced::peak_rss_kib),
        })
    }
}

impl Usage {
    /// Two runs' usage as one: counts and times add up (a statement's by
    /// its id), the peak RSS is the higher.
    fn add(self, other: Usage) -> Usage {
        let sum = |a: Option<Duration>, b: Option<Duration>| Some(a? + b?);
        let mut statement_times = self.statement_times;
        for time in other.statement_times {
            match statement_times
                .iter_mut()
                .find(|seen| seen.id == time.id && seen.nested == time.nested)
            {
                Some(seen) => {
                    seen.calls += time.calls;
                    seen.time += time.time;
                }
                None => statement_times.push(time),
            }
        }
        Usage {
            statement_times,
            xids: self.xids + other.xids,
            statements: self.statements.zip(other.statements).map(|(a, b)| a + b),
            server_cpu: sum(self.server_cpu, other.server_cpu),
            client_cpu: sum(self.client_cpu, other.client_cpu),
            database_cpu: sum(self.database_cpu, other.database_cpu),
            peak_rss_kib: self.peak_rss_kib.max(other.peak_rss_kib),
        }
    }
}

/// The rounds of one measurement, merged as they come: requests, time and
/// usage add up, latencies pool; each round's throughput is kept too.
#[derive(Debug, Default)]
pub struct Rounds {
    load: LoadResult,
    usage: Option<Usage>,
    throughputs: Vec<f64>,
}

impl Rounds {
    pub fn add(&mut self, load: LoadResult, usage: Usage) {
        self.throughputs
            .push(throughput(load.requests, load.elapsed));
        self.load.add(load);
        self.usage = Some(match self.usage.take() {
            Some(before) => before.add(usage),
            None => usage,
        });
    }

    /// The merged rounds as one row; `conflicts` only for the storm.
    pub fn into_measurement(
        mut self,
        name: &'static str,
        connections: usize,
        with_conflicts: bool,
    ) -> Measurement {
        let load = &mut self.load;
        let mut statuses: Vec<String> = load
            .statuses
            .iter()
            .map(|(status, count)| format!("{status}={count}"))
            .collect();
        if load.transport_errors > 0 {
            statuses.push(format!("errors={}", load.transport_errors));
        }
        Measurement {
            name,
            connections,
            requests: load.requests,
            elapsed: load.elapsed,
            latency: Percentiles::of(&mut load.latencies),
            conflicts: with_conflicts.then(|| Percentiles::of(&mut load.conflicts)),
            usage: self.usage.expect("a measurement has at least one round"),
            statuses: statuses.join(" "),
            round_throughputs: self.throughputs,
        }
    }
}

/// One row of the results: an HTTP scenario or a pgbench script at one
/// connection count.
#[derive(Debug, Clone)]
pub struct Measurement {
    pub name: &'static str,
    pub connections: usize,
    pub requests: u64,
    /// The rounds' own durations, each from the first request to the last
    /// answer, added up.
    pub elapsed: Duration,
    pub latency: Percentiles,
    /// The storm's 409 answers alone.
    pub conflicts: Option<Percentiles>,
    pub usage: Usage,
    /// Answers by status, as `201×1234 409×56`.
    pub statuses: String,
    /// Each round's requests per second, in the order the rounds ran.
    pub round_throughputs: Vec<f64>,
}

fn throughput(requests: u64, elapsed: Duration) -> f64 {
    requests as f64 / elapsed.as_secs_f64().max(f64::EPSILON)
}

impl Measurement {
    pub fn throughput(&self) -> f64 {
        throughput(self.requests, self.elapsed)
    }

    pub fn writes_per_request(&self) -> f64 {
        self.usage.xids as f64 / self.requests.max(1) as f64
    }

    pub fn statements_per_request(&self) -> Option<f64> {
        Some(self.usage.statements? as f64 / self.requests.max(1) as f64)
    }

    /// CPU microseconds per request, of a process measured by the probe:
    /// a fast request costs tens of them, which milliseconds would round away.
    pub fn cpu_per_request_us(&self, cpu: Option<Duration>) -> Option<f64> {
        Some(cpu?.as_secs_f64() * 1e6 / self.requests.max(1) as f64)
    }

    /// PostgreSQL's CPU microseconds per request less the simulated
    /// gateway's share (in production that work is Stripe's), the share
    /// being that of its statements in the top-level statements' execution
    /// time; None where statements are not timed.
    pub fn database_cpu_without_gateway_us(&self) -> Option<f64> {
        let cpu = self.cpu_per_request_us(self.usage.database_cpu)?;
        let (all, gateway) = self
            .usage
            .statement_times
            .iter()
            .filter(|time| !time.nested)
            .fold((0.0, 0.0), |(all, gateway), time| {
                let spent = time.time.as_secs_f64();
                (
                    all + spent,
                    gateway + if time.gateway { spent } else { 0.0 },
                )
            });
        (all > 0.0).then(|| cpu * (1.0 - gateway / all))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(xids: i64, cpu_ms: u64, rss: u64) -> Usage {
        Usage {
            xids,
            statements: Some(xids * 7),
            server_cpu: Some(Duration::from_millis(cpu_ms)),
            client_cpu: Some(Duration::from_millis(cpu_ms)),
            database_cpu: None,
            peak_rss_kib: Some(rss),
            statement_times: Vec::new(),
        }
    }

    #[test]
    fn rounds_add_up_into_one_row() {
        let mut rounds = Rounds::default();
        for (requests, millis, rss) in [(10, 100, 2048), (30, 300, 1024)] {
            rounds.add(
                LoadResult {
                    requests,
                    elapsed: Duration::from_millis(millis),
                    latencies: (1..=requests).map(Duration::from_millis).collect(),
                    statuses: [(201, requests)].into(),
                    ..LoadResult::default()
                },
                usage(requests as i64 * 3, millis, rss),
            );
        }
        let row = rounds.into_measurement("new-key POST", 8, false);
        assert_eq!(row.requests, 40);
        assert_eq!(row.throughput(), 100.0);
        assert_eq!(row.round_throughputs, [100.0, 100.0]);
        assert_eq!(row.writes_per_request(), 3.0);
        assert_eq!(row.statements_per_request(), Some(21.0));
        assert_eq!(row.latency.count, 40);
        assert_eq!(row.latency.p50, Duration::from_millis(10));
        assert_eq!(row.usage.server_cpu, Some(Duration::from_millis(400)));
        assert_eq!(row.usage.database_cpu, None);
        assert_eq!(row.usage.peak_rss_kib, Some(2048));
        assert_eq!(row.statuses, "201=40");
        assert!(row.conflicts.is_none());
    }
}
