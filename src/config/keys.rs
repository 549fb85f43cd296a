//! Idempotency keys: how long a lease lasts and a finished key is kept
//! (`IDEMPOTENCY_*`), and the workers that finish abandoned keys and delete
//! old ones (`COMPLETER_*`, `REAPER_*`).

use std::time::Duration;

use anyhow::bail;

use super::source::Source;

#[derive(Debug, Clone)]
pub struct KeySettings {
    /// How long a request holds its key before another may take it over.
    pub lease_timeout: Duration,
    /// How long a finished key is kept, from when it finished.
    pub retention: Duration,
}

#[derive(Debug, Clone)]
pub struct CompleterSettings {
    pub enabled: bool,
    pub interval: Duration,
    pub max_attempts: i32,
    /// No gateway call is resent for a key older than this.
    pub charge_deadline: Duration,
}

/// A background worker's switch and interval.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    pub enabled: bool,
    pub interval: Duration,
}

impl Default for KeySettings {
    fn default() -> Self {
        KeySettings {
            lease_timeout: Duration::from_secs(30),
            retention: Duration::from_secs(48 * 3600),
        }
    }
}

impl Default for CompleterSettings {
    fn default() -> Self {
        CompleterSettings {
            enabled: true,
            interval: Duration::from_secs(5),
            max_attempts: 10,
            charge_deadline: Duration::from_secs(12 * 3600),
        }
    }
}

impl WorkerSettings {
    /// The reaper's defaults: every four hours.
    pub fn reaper() -> Self {
        WorkerSettings {
            enabled: true,
            interval: Duration::from_secs(4 * 3600),
        }
    }

    pub(super) fn read_reaper(source: &Source) -> anyhow::Result<Self> {
        let d = WorkerSettings::reaper();
        Ok(WorkerSettings {
            enabled: source.var("REAPER_ENABLED", d.enabled)?,
            interval: source.secs("REAPER_INTERVAL_SECS", d.interval)?,
        })
    }
}

impl KeySettings {
    pub(super) fn read(source: &Source) -> anyhow::Result<Self> {
        let d = KeySettings::default();
        Ok(KeySettings {
            lease_timeout: source.secs("IDEMPOTENCY_LEASE_SECS", d.lease_timeout)?,
            retention: source.hours("IDEMPOTENCY_RETENTION_HOURS", d.retention)?,
        })
    }

    pub(super) fn check(&self) -> anyhow::Result<()> {
        if self.lease_timeout < Duration::from_secs(1) {
            bail!("IDEMPOTENCY_LEASE_SECS must be at least 1");
        }
        // A client key reused after its row is reaped derives the same
        // gateway keys: Stripe must have forgotten them by then (24 hours),
        // or it would answer with the earlier request's payment.
        if self.retention < Duration::from_secs(25 * 3600) {
            bail!(
                "IDEMPOTENCY_RETENTION_HOURS must be at least 25, so that a reused key never \
                 meets a payment the gateway still remembers"
            );
        }
        Ok(())
    }
}

impl CompleterSettings {
    pub(super) fn read(source: &Source) -> anyhow::Result<Self> {
        let d = CompleterSettings::default();
        Ok(CompleterSettings {
            enabled: source.var("COMPLETER_ENABLED", d.enabled)?,
            interval: source.secs("COMPLETER_INTERVAL_SECS", d.interval)?,
            max_attempts: source.var("COMPLETER_MAX_ATTEMPTS", d.max_attempts)?,
            charge_deadline: source.hours("COMPLETER_CHARGE_DEADLINE_HOURS", d.charge_deadline)?,
        })
    }

    pub(super) fn check(&self) -> anyhow::Result<()> {
        if self.max_attempts < 1 {
            bail!("COMPLETER_MAX_ATTEMPTS must be at least 1");
        }
        if self.charge_deadline >= Duration::from_secs(24 * 3600) {
            bail!(
                "COMPLETER_CHARGE_DEADLINE_HOURS must be under 24: payment gateways forget \
                 idempotency keys after 24 hours"
            );
        }
        Ok(())
    }
}
