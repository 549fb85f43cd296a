//! Reconciliation with the gateway: ridepay's records and the gateway's made
//! to agree, and every disagreement repaired or named to an operator.
//!
//! A pass resolves the keys whose call was answered by a failure the
//! gateway saved under its key (`idempotency::awaiting`: found in the
//! gateway's lists and recorded, or proven absent and sent again under the
//! next generation's key, or past the deadline ended with a stored 502),
//! then reads the fees of captures recorded without them (`fees`), lists
//! the gateway's PaymentIntents since where the last pass left off and
//! releases the orphans among them (`orphans`), and lists the transfers to
//! drivers' accounts and reverses those no transfer records (`strays`).
//! One pass runs at a
//! time across instances (`pass_lease`); `ridepay reconcile` runs one, and
//! the worker one every `RECONCILE_INTERVAL_SECS` on every instance.

mod fees;
mod orphans;
mod pass_lease;
mod strays;
mod summary;

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::config::ReconcileSettings;
use crate::context::ServiceContext;
use crate::idempotency::awaiting::{self, AwaitingSettings};
use crate::idempotency::completer::Resumable;
use crate::service_error::ServiceError;
use orphans::OrphanSettings;
use pass_lease::PassLease;
use strays::StraySettings;
pub use summary::Summary;

/// What one pass is asked to do.
#[derive(Debug, Clone, Copy, Default)]
pub struct PassOptions {
    /// List the PaymentIntents created in this last span, whatever the
    /// cursor says (`--since`).
    pub since: Option<Duration>,
    /// Look, count what would be done, and change nothing.
    pub dry_run: bool,
}

/// Keys looked at per pass, at most.
const KEYS_PER_PASS: usize = 500;

/// One pass, unless another instance's is running.
pub fn run_pass(
    context: &ServiceContext,
    endpoints: &[&dyn Resumable],
    settings: &ReconcileSettings,
    options: PassOptions,
) -> Result<Summary, ServiceError> {
    let mut summary = Summary::default();
    // A dry run changes nothing, the lease included.
    let lease = if options.dry_run {
        None
    } else {
        match PassLease::take(&mut *context.pool.get()?, context.key_policy.lease_timeout)? {
            Some(lease) => Some(lease),
            None => {
                summary.skipped = true;
                return Ok(summary);
            }
        }
    };
    let result = pass(
        context,
        endpoints,
        settings,
        options,
        lease.as_ref(),
        &mut summary,
    );
    if let Some(lease) = lease {
        let listed_before = result.as_ref().ok().copied().flatten();
        lease.release(&mut *context.pool.get()?, listed_before)?;
    }
    result?;
    if !options.dry_run {
        summary.count();
    }
    Ok(summary)
}

/// The pass under its lease; where the orphan listing got to.
fn pass(
    context: &ServiceContext,
    endpoints: &[&dyn Resumable],
    settings: &ReconcileSettings,
    options: PassOptions,
    lease: Option<&PassLease>,
    summary: &mut Summary,
) -> Result<Option<DateTime<Utc>>, ServiceError> {
    let mut renew = || match lease {
        Some(lease) => renewed(context, lease),
        None => Ok(()),
    };
    let keys = awaiting::reconcile(
        &context.pool,
        endpoints,
        &AwaitingSettings {
            policy: context.key_policy,
            search_lag: settings.search_lag,
            batch_size: KEYS_PER_PASS,
            dry_run: options.dry_run,
        },
        &mut renew,
    )?;
    summary.recorded += keys.recorded;
    summary.reissued += keys.reissued;
    summary.refused += keys.refused;
    summary.unresolved += keys.unresolved;
    if lease.is_some() {
        orphans::finish_unconfirmed(context, summary)?;
    }
    fees::post_missing(context, options.dry_run, summary)?;
    let now = crate::db::now(&mut *context.pool.get()?)?;
    let window_start = now - crate::db::span(settings.window);
    let since = match options.since {
        Some(since) => now - crate::db::span(since),
        // From where the last pass left off, a little before it for the
        // gateway's clock; never further back than the window.
        None => lease
            .and_then(|lease| lease.listed_before)
            .map(|before| before - chrono::Duration::minutes(5))
            .unwrap_or(window_start)
            .max(window_start),
    };
    let orphan_settings = OrphanSettings {
        grace: crate::db::span(settings.orphan_grace),
        dry_run: options.dry_run,
    };
    let listed_before = orphans::pass(context, since, &orphan_settings, summary, &mut renew)?;
    let stray_settings = StraySettings {
        grace: orphan_settings.grace,
        window_start,
        dry_run: options.dry_run,
    };
    strays::pass(context, &stray_settings, summary, &mut renew)?;
    // A listing of a span the cursor did not ask for moves it nowhere.
    Ok(options.since.is_none().then_some(listed_before))
}

fn renewed(context: &ServiceContext, lease: &PassLease) -> Result<(), ServiceError> {
    if lease.renew(&mut *context.pool.get()?)? {
        Ok(())
    } else {
        Err(anyhow::anyhow!("the reconciliation lease was lost; the pass stops").into())
    }
}
