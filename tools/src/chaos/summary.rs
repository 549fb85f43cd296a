//! The campaign's closing table.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::audit::{AuditReport, CHECKS};
use super::history::{Counters, KeyHistory, Tally};
use crate::ridepay::{LogCounts, LogEvent};
use crate::table::Table;

/// Each 503 answered for the gateway is logged once as `payment gateway
/// unavailable: ERROR`; the completer's own attempts are logged otherwise.
const ANSWERED_503: &str = "payment gateway unavailable: ";

/// Server log lines counted during the campaign, by what they mean, in the
/// words of the simulated gateway and of the Stripe client (against the fake).
pub const SERVER_EVENTS: [LogEvent; 7] = [
    (
        "503 logged: gateway failed before acting (5xx)",
        ANSWERED_503,
        &["simulated failure before acting", "Stripe failed"],
    ),
    (
        "503 logged: gateway response lost after acting",
        ANSWERED_503,
        &["simulated lost response", "no answer from Stripe"],
    ),
    (
        "503 logged: gateway rate-limited (429)",
        ANSWERED_503,
        &["simulated rate limit", "Stripe rate-limited"],
    ),
    (
        "503 logged: a failure the gateway saved, waiting for reconciliation",
        "waiting for reconciliation: ",
        &[""],
    ),
    (
        "503 logged: gateway unavailable, all kinds",
        ANSWERED_503,
        &[""],
    ),
    (
        "server log: expired lease taken over",
        "",
        &["taking over the expired lease"],
    ),
    (
        "server log: phase commit refused by fencing",
        "",
        &["fencing refused"],
    ),
];

pub struct Summary<'a> {
    pub elapsed: Duration,
    pub histories: &'a [KeyHistory],
    pub counters: &'a Counters,
    /// What the gateway was told to do to the drivers' accounts.
    pub moves: &'a Tally,
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
        for (name, label) in [
            ("ride", "keys (rides asked for)"),
            ("complete", "keys completing a ride"),
            ("cancel", "keys cancelling a ride"),
            ("refund", "keys refunding a ride"),
            ("tip", "keys tipping a ride"),
            ("driver", "keys registering a driver"),
            ("assign", "keys assigning a ride's driver"),
        ] {
            let keys = self.histories.iter().filter(|h| h.request.name() == name);
            row(label, keys.count().to_string());
        }
        row("HTTP requests", counters.requests().to_string());
        row(
            "retries (same key again)",
            counters.retries.load(Ordering::Relaxed).to_string(),
        );
        row(
            "instance kills (SIGKILL)",
            counters.kills.load(Ordering::Relaxed).to_string(),
        );
        for (control, count) in self.moves.snapshot() {
            row(
                &format!("drivers' accounts at the gateway: {control}"),
                count.to_string(),
            );
        }
        for (kind, count) in counters.faults.snapshot() {
            row(&format!("fault seen by clients: {kind}"), count.to_string());
        }
        for (name, _, _) in SERVER_EVENTS {
            row(name, self.logs.get(name).to_string());
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
            "succeeded PaymentIntents at the gateway",
            self.audit.succeeded_payments.to_string(),
        );
        row(
            "declined PaymentIntents at the gateway",
            self.audit.declined_payments.to_string(),
        );
        row(
            "gateway events applied to rides",
            self.audit.events_applied.to_string(),
        );
        row(
            "capture calls at the gateway",
            self.audit.capture_calls.to_string(),
        );
        row(
            "refunds at the gateway (not failed or cancelled)",
            self.audit.gateway_refunds.to_string(),
        );
        row(
            "500s the gateway saved under a key",
            self.audit.saved_failures.to_string(),
        );
        row(
            "calls reconciliation sent again (next generation)",
            self.audit.generations_reissued.to_string(),
        );
        row(
            "payments reconciliation released",
            self.audit.payments_released.to_string(),
        );
        row(
            "ride events staged for the user's webhooks",
            self.audit.webhook_events.to_string(),
        );
        row(
            "webhook deliveries its receiver took (duplicates included)",
            self.audit.webhook_deliveries_taken.to_string(),
        );
        row(
            "receipts staged (captures, cancellations, tips)",
            self.audit.receipt_events.to_string(),
        );
        row(
            "receipt deliveries the installation's receiver took",
            self.audit.receipts_taken.to_string(),
        );
        let pay = &self.audit.pay;
        for (name, value) in [
            ("charges of assigned rides", pay.charges_assigned as i64),
            ("transfers paid", pay.transfers_paid as i64),
            (
                "transfers owed again after a refund failed",
                pay.transfers_owed_again as i64,
            ),
            ("reversals made", pay.reversed as i64),
            ("cents reversed", pay.reversed_cents),
            ("reversals refused, left as debt", pay.left_as_debt as i64),
            ("cents left as debt", pay.debt_cents),
            ("transfers that netted a debt", pay.netted as i64),
            ("cents netted", pay.netted_cents),
        ] {
            row(name, value.to_string());
        }
        for check in CHECKS {
            row(
                &format!("violation: {check}"),
                self.audit.count(check).to_string(),
            );
        }
        table
    }
}
