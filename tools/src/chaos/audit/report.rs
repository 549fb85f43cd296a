//! The audit's checks, by name, and what each found.

use std::collections::BTreeMap;

pub const CHECKS: [&str; 32] = [
    "duplicate payments (two for one request or ride)",
    "orphan payments (succeeded, no captured ride)",
    "acknowledged or captured rides missing or unpaid",
    "amounts that disagree",
    "keys not finished",
    "replays that differ from the first answer",
    "stored answers that differ from the first answer",
    "answers or rides other than the payment method implies",
    "declines not recorded as declines",
    "rides captured twice (two captures or finishing records)",
    "captures beyond what was authorized",
    "holds left on completed or cancelled rides",
    "captured amounts that disagree with the gateway",
    "acknowledged completions not captured for the final fare",
    "acknowledged cancellations not canceled with the fee",
    "refunds beyond what was captured",
    "rides left taken by a finished key",
    "ride transitions applied more than once",
    "payments no ride records that were not released",
    "tips not as acknowledged, or not paid as the ride records them",
    "webhook deliveries that fail verification",
    "events of rides never delivered",
    "rides whose last delivered event is not how they ended",
    "deliveries to another user's destination",
    "receipts not delivered, unverified, or other events sent as receipts",
    "violations `ridepay ledger check` finds",
    "assigned charges not owed one transfer of their entitlement, or not paid",
    "transfers not made at the gateway exactly once, as recorded",
    "reversals not made at the gateway exactly once, as recorded",
    "refunds of transfers made neither reversed nor left as debt",
    "drivers' payables that disagree with their entitlements and the gateway",
    "campaigns that made no debt (no reversal refused, nothing netted)",
];

#[derive(Debug, Default)]
pub struct AuditReport {
    /// Violations by check, with up to a few examples each.
    pub violations: BTreeMap<&'static str, Vec<String>>,
    pub keys_in_database: usize,
    pub rides: usize,
    pub succeeded_payments: usize,
    pub declined_payments: usize,
    /// Gateway events (webhooks, or the simulated gateway's in-process
    /// ones) that moved a ride.
    pub events_applied: i64,
    /// Capture calls the gateway kept, and its refunds not undone: what
    /// the checks of completions, cancellations and refunds looked at.
    pub capture_calls: i64,
    pub gateway_refunds: i64,
    /// 500s the gateway saved under a key and replayed to its retries, the
    /// calls reconciliation sent again under a later generation's key, and
    /// the payments it released.
    pub saved_failures: i64,
    pub generations_reissued: i64,
    pub payments_released: usize,
    /// The user's ride events staged, and the deliveries its receiver took.
    pub webhook_events: usize,
    pub webhook_deliveries_taken: usize,
    /// Receipts (captures, cancellations, tips) staged, and the deliveries
    /// the receipts destination took.
    pub receipt_events: usize,
    pub receipts_taken: usize,
    pub pay: PayCounts,
}

/// What the drivers' pay came to, for the summary.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PayCounts {
    pub charges_assigned: usize,
    pub transfers_paid: usize,
    /// Transfers owed again for a reversal whose refund failed.
    pub transfers_owed_again: usize,
    pub reversed: usize,
    pub reversed_cents: i64,
    /// Reversals the gateway refused: their amounts left as debt.
    pub left_as_debt: usize,
    pub debt_cents: i64,
    /// Transfers that netted a debt (whole, or in part).
    pub netted: usize,
    pub netted_cents: i64,
}

impl AuditReport {
    pub(crate) fn flag(&mut self, check: &'static str, example: String) {
        debug_assert!(CHECKS.contains(&check));
        self.violations.entry(check).or_default().push(example);
    }

    pub fn count(&self, check: &str) -> usize {
        self.violations.get(check).map_or(0, Vec::len)
    }

    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }
}
