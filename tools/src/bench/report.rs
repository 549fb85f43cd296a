//! The results as tables, ratios and targets, for the terminal and for
//! `results.md`.

use super::load::Scenario;
use super::measurement::Measurement;
use super::pgbench::{NEW_KEY_SQL, ONE_INSERT};
use crate::latency::ms;
use crate::table::Table;

pub struct Results {
    pub measurements: Vec<Measurement>,
    pub connections: Vec<usize>,
}

/// One row's throughput over another's, from the rounds they ran side by
/// side: the median of the per-round ratios, and their range. The two halves
/// of a pair ran seconds apart, so a burst of other work on a shared machine
/// moves one pair, not the median, where it would move a ratio of totals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    pub median: f64,
    pub low: f64,
    pub high: f64,
}

impl Ratio {
    pub fn of_rounds(numerator: &[f64], denominator: &[f64]) -> Option<Ratio> {
        let mut ratios: Vec<f64> = numerator
            .iter()
            .zip(denominator)
            .map(|(n, d)| n / d)
            .filter(|ratio| ratio.is_finite())
            .collect();
        ratios.sort_by(f64::total_cmp);
        let (&low, &high) = (ratios.first()?, ratios.last()?);
        let middle = ratios.len() / 2;
        let median = if ratios.len() % 2 == 1 {
            ratios[middle]
        } else {
            (ratios[middle - 1] + ratios[middle]) / 2.0
        };
        Some(Ratio { median, low, high })
    }
}

impl std::fmt::Display for Ratio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.2} ({:.2}-{:.2})", self.median, self.low, self.high)
    }
}

/// A target of the benchmark issue and the figure it is judged on.
pub struct Verdict {
    pub target: &'static str,
    pub figure: String,
    pub met: bool,
}

impl Results {
    pub fn find(&self, name: &str, connections: usize) -> Option<&Measurement> {
        self.measurements
            .iter()
            .find(|m| m.name == name && m.connections == connections)
    }

    fn ratio(&self, numerator: &str, denominator: &str, connections: usize) -> Option<Ratio> {
        Ratio::of_rounds(
            &self.find(numerator, connections)?.round_throughputs,
            &self.find(denominator, connections)?.round_throughputs,
        )
    }

    pub fn http_table(&self) -> Table {
        let mut table = Table::new(&[
            "scenario",
            "conns",
            "req/s",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "409 p99 ms",
            "peak RSS MiB",
            "write tx/req",
            "server CPU ms/req",
            "PostgreSQL CPU ms/req",
            "client CPU ms/req",
            "answers",
        ]);
        for m in self.measurements.iter().filter(|m| is_http(m.name)) {
            let mut cells = common_cells(m);
            cells.extend([
                m.conflicts
                    .filter(|c| c.count > 0)
                    .map_or("-".to_owned(), |c| ms(c.p99)),
                m.usage
                    .peak_rss_kib
                    .map_or("-".to_owned(), |kib| format!("{:.1}", kib as f64 / 1024.0)),
                format!("{:.2}", m.writes_per_request()),
                optional(m.cpu_per_request_ms(m.usage.server_cpu)),
                optional(m.cpu_per_request_ms(m.usage.database_cpu)),
                optional(m.cpu_per_request_ms(m.usage.client_cpu)),
                m.statuses.clone(),
            ]);
            table.row(cells);
        }
        table
    }

    pub fn baseline_table(&self) -> Table {
        let mut table = Table::new(&[
            "script",
            "conns",
            "tps",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "write tx/tx",
            "PostgreSQL CPU ms/tx",
        ]);
        for m in self.measurements.iter().filter(|m| !is_http(m.name)) {
            let mut cells = common_cells(m);
            cells.push(format!("{:.2}", m.writes_per_request()));
            cells.push(optional(m.cpu_per_request_ms(m.usage.database_cpu)));
            table.row(cells);
        }
        table
    }

    pub fn ratio_table(&self) -> Table {
        let mut table = Table::new(&[
            "conns",
            "new-key POST / its SQL replay",
            "new-key POST / one INSERT",
            "replay POST / GET",
        ]);
        let cell = |ratio: Option<Ratio>| ratio.map_or("-".to_owned(), |r| r.to_string());
        for &c in &self.connections {
            table.row(vec![
                c.to_string(),
                cell(self.ratio(Scenario::NewKey.name(), NEW_KEY_SQL.name, c)),
                cell(self.ratio(Scenario::NewKey.name(), ONE_INSERT.name, c)),
                cell(self.ratio(Scenario::Replay.name(), Scenario::Get.name(), c)),
            ]);
        }
        table
    }

    pub fn verdicts(&self) -> Vec<Verdict> {
        let each = |f: &dyn Fn(usize) -> Option<f64>| -> Vec<(usize, f64)> {
            self.connections
                .iter()
                .filter_map(|&c| Some((c, f(c)?)))
                .collect()
        };
        let worst = |values: &[(usize, f64)], lowest: bool| {
            values
                .iter()
                .copied()
                .reduce(|a, b| if (b.1 < a.1) == lowest { b } else { a })
        };
        let describe = |found: Option<(usize, f64)>, unit: &str| {
            found.map_or("not measured".to_owned(), |(c, v)| {
                format!("{v:.2}{unit} (worst, at {c} conns)")
            })
        };
        let median = |numerator: &str, denominator: &str, c| {
            Some(self.ratio(numerator, denominator, c)?.median)
        };
        let sql = each(&|c| median(Scenario::NewKey.name(), NEW_KEY_SQL.name, c));
        let writes = each(&|c| Some(self.find(Scenario::NewKey.name(), c)?.writes_per_request()));
        let replay = each(&|c| median(Scenario::Replay.name(), Scenario::Get.name(), c));
        let top = self.connections.iter().copied().max().unwrap_or(0);
        let conflict_p99 = self
            .find(Scenario::Storm.name(), top)
            .and_then(|m| m.conflicts)
            .filter(|c| c.count > 0)
            .map(|c| c.p99.as_secs_f64() * 1000.0);
        let rss = Scenario::ALL
            .iter()
            .filter_map(|s| self.find(s.name(), top)?.usage.peak_rss_kib)
            .max()
            .map(|kib| kib as f64 / 1024.0);
        vec![
            Verdict {
                target: "new-key POST >= 0.8 x its SQL-only replay",
                figure: describe(worst(&sql, true), " median"),
                met: worst(&sql, true).is_some_and(|(_, v)| v >= 0.8),
            },
            Verdict {
                target: "<= 3 write transactions per new request",
                figure: describe(worst(&writes, false), ""),
                met: worst(&writes, false).is_some_and(|(_, v)| v <= 3.05),
            },
            Verdict {
                target: "replay POST >= 0.9 x GET",
                figure: describe(worst(&replay, true), " median"),
                met: worst(&replay, true).is_some_and(|(_, v)| v >= 0.9),
            },
            Verdict {
                target: "p99 of the storm's 409s < 20 ms",
                figure: conflict_p99.map_or("no 409 seen".to_owned(), |v| {
                    format!("{v:.2} ms at {top} conns")
                }),
                met: conflict_p99.is_some_and(|v| v < 20.0),
            },
            Verdict {
                target: "peak RSS < 64 MiB at 64 connections",
                figure: rss.map_or("not measured".to_owned(), |v| {
                    format!("{v:.1} MiB at {top} conns")
                }),
                met: rss.is_some_and(|v| v < 64.0),
            },
        ]
    }

    pub fn verdict_table(&self) -> Table {
        let mut table = Table::new(&["target", "measured", "met"]);
        for verdict in self.verdicts() {
            table.row(vec![
                verdict.target.to_owned(),
                verdict.figure,
                if verdict.met { "yes" } else { "NO" }.to_owned(),
            ]);
        }
        table
    }
}

/// Name, connections, throughput and latency: the first columns of both tables.
fn common_cells(m: &Measurement) -> Vec<String> {
    vec![
        m.name.to_owned(),
        m.connections.to_string(),
        format!("{:.0}", m.throughput()),
        ms(m.latency.p50),
        ms(m.latency.p99),
        ms(m.latency.p999),
    ]
}

fn is_http(name: &str) -> bool {
    Scenario::ALL.iter().any(|s| s.name() == name)
}

fn optional(value: Option<f64>) -> String {
    value.map_or("-".to_owned(), |v| format!("{v:.2}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_is_the_median_of_paired_rounds() {
        let ratio = Ratio::of_rounds(&[90.0, 50.0, 100.0], &[100.0, 100.0, 100.0]).unwrap();
        assert_eq!(
            ratio,
            Ratio {
                median: 0.9,
                low: 0.5,
                high: 1.0
            }
        );
        assert_eq!(ratio.to_string(), "0.90 (0.50-1.00)");
        let even = Ratio::of_rounds(&[1.0, 3.0], &[1.0, 1.0]).unwrap();
        assert_eq!(even.median, 2.0);
        assert_eq!(Ratio::of_rounds(&[1.0], &[0.0]), None);
        assert_eq!(Ratio::of_rounds(&[], &[]), None);
    }
}
