//! Reconciliation with the gateway (`RECONCILE_*`).

use std::time::Duration;

use anyhow::bail;

use super::source::Source;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconcileSettings {
    pub enabled: bool,
    pub interval: Duration,
    /// How long a key left to reconciliation waits before it is looked up,
    /// so the gateway's search (which lags) can find what its call made.
    pub search_lag: Duration,
    /// How old a PaymentIntent no ride records must be before it is
    /// released.
    pub orphan_grace: Duration,
    /// How far back a pass lists the gateway's PaymentIntents at most.
    pub window: Duration,
}

impl Default for ReconcileSettings {
    fn default() -> Self {
        ReconcileSettings {
            enabled: true,
            interval: Duration::from_secs(60),
            search_lag: Duration::from_secs(120),
            orphan_grace: Duration::from_secs(600),
            window: Duration::from_secs(48 * 3600),
        }
    }
}

impl ReconcileSettings {
    pub(super) fn read(source: &Source) -> anyhow::Result<Self> {
        let d = ReconcileSettings::default();
        Ok(ReconcileSettings {
            enabled: source.var("RECONCILE_ENABLED", d.enabled)?,
            interval: source.secs("RECONCILE_INTERVAL_SECS", d.interval)?,
            search_lag: source.secs("RECONCILE_SEARCH_LAG_SECS", d.search_lag)?,
            orphan_grace: source.secs("RECONCILE_ORPHAN_GRACE_SECS", d.orphan_grace)?,
            window: source.hours("RECONCILE_WINDOW_HOURS", d.window)?,
        })
    }

    pub(super) fn check(&self) -> anyhow::Result<()> {
        if self.window < Duration::from_secs(3600) {
            bail!("RECONCILE_WINDOW_HOURS must be at least 1");
        }
        Ok(())
    }
}
