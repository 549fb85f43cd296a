//! The timing rules every idempotent endpoint shares.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::db::span;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyPolicy {
    /// After this, a held lease counts as abandoned and may be taken over.
    pub lease_timeout: Duration,
    /// After this (counted from the key's creation), no one resumes a key whose
    /// external effect is still to be made: gateways forget their idempotency
    /// keys (Stripe after 24 hours), and a call with a forgotten key could
    /// charge twice. Such keys are left for an operator.
    pub effect_deadline: Duration,
}

impl KeyPolicy {
    pub fn lease_expired(&self, locked_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
        locked_at.is_none_or(|locked_at| locked_at <= now - span(self.lease_timeout))
    }

    pub fn past_effect_deadline(&self, created_at: DateTime<Utc>, now: DateTime<Utc>) -> bool {
        created_at <= now - span(self.effect_deadline)
    }
}
