//! The campaign's closing table.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::audit::{AuditReport, CHECKS};
use super::history::Counters;
use crate::ridepay::LogCounts;
use crate::table::Table;

/// Server log lines counted during the campaign, with what they mean.
pub const SERVER_EVENTS: [(&str, &str); 5] = [
    (
        "simulated failure before charging",
        "gateway: failure before charging",
    ),
    (
        "simulated lost response",
        "gateway: lost response after charging",
    ),
    (
        "payment gateway unavailable",
        "gateway: unavailable or outcome unknown (all kinds)",
    ),
    (
        "taking over the expired lease",
        "server: expired lease taken over",
    ),
    ("fencing refused", "server: phase commit refused by fencing"),
];

pub struct Summary<'a> {
    pub elapsed: Duration,
    pub keys: usize,
    pub counters: &'a Counters,
    pub logs: &'a LogCounts,
    pub settle: Duration,
    pub audit: &'a AuditReport,
}

impl Summary<'_> {
    pub fn table(&self) -> Table {
        let mut table = Table::new(&["", "count"]);
        let mut row = |name: &str, value: String| table.row(vec![name.to_owned(), value]);
        let counters = self.counters;
        row("duration (s)", format!("{:.1}", self.elapsed.as_secs_f64()));
        row("keys (rides asked for)", self.keys.to_string());
        row("HTTP requests", counters.requests().to_string());
        row(
            "retries (same key again)",
            counters.retries.load(Ordering::Relaxed).to_string(),
        );
        row(
            "instance kills (SIGKILL)",
            counters.kills.load(Ordering::Relaxed).to_string(),
        );
        for (kind, count) in counters.faults.snapshot() {
            row(&format!("fault seen by clients: {kind}"), count.to_string());
        }
        for (pattern, meaning) in SERVER_EVENTS {
            row(meaning, self.logs.get(pattern).to_string());
        }
        for (kind, count) in counters.outcomes.snapshot() {
            row(&format!("outcome: {kind}"), count.to_string());
        }
        row(
            "completer settle time (s)",
            format!("{:.1}", self.settle.as_secs_f64()),
        );
        row(
            "keys in the database",
            self.audit.keys_in_database.to_string(),
        );
        row("rides in the database", self.audit.rides.to_string());
        row(
            "succeeded charges at the gateway",
            self.audit.succeeded_charges.to_string(),
        );
        for check in CHECKS {
            row(
                &format!("violation: {check}"),
                self.audit.count(check).to_string(),
            );
        }
        table
    }
}
