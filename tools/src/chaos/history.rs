//! What the clients did and saw, kept for the audit and the summary.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::client::Answer;

/// What a key's payment method should lead to, paid at once (automatic
/// capture).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    Captured,
    Declined,
}

impl Expected {
    /// One of Stripe's test payment methods.
    pub fn payment_method(self) -> &'static str {
        match self {
            Expected::Captured => "pm_card_visa",
            Expected::Declined => "pm_card_visa_chargeDeclined",
        }
    }

    pub fn status(self) -> u16 {
        match self {
            Expected::Captured => 201,
            Expected::Declined => 402,
        }
    }

    /// The ride's status once its key is finished.
    pub fn ride_status(self) -> &'static str {
        match self {
            Expected::Captured => "captured",
            Expected::Declined => "payment_declined",
        }
    }
}

/// One key's life as its client saw it.
#[derive(Debug, Clone)]
pub struct KeyHistory {
    pub key: String,
    pub amount_cents: i64,
    pub expected: Expected,
    /// The first final answer; None when the client gave up.
    pub first_final: Option<Answer>,
    /// A later request with the same key got another answer.
    pub replay_mismatch: Option<String>,
}

/// Counts by name, for the summary.
#[derive(Debug, Default)]
pub struct Tally(Mutex<BTreeMap<String, u64>>);

impl Tally {
    pub fn add(&self, name: impl Into<String>) {
        *self.0.lock().unwrap().entry(name.into()).or_default() += 1;
    }

    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0.lock().unwrap().clone()
    }
}

#[derive(Debug, Default)]
pub struct Counters {
    pub requests: AtomicU64,
    pub retries: AtomicU64,
    pub kills: AtomicU64,
    /// Transient answers and errors that made a client retry, by kind.
    pub faults: Tally,
    /// First final answers, and keys given up, by kind.
    pub outcomes: Tally,
}

impl Counters {
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}
