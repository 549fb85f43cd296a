//! `ridepay reconcile`: one reconciliation pass now, its summary printed as
//! JSON.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::config::Settings;
use crate::endpoints;
use crate::idempotency::completer::Resumable;
use crate::reconciliation::{self, PassOptions};

#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// List the gateway's PaymentIntents created in this last span (`90m`,
    /// `6h`, `2d`), whatever the last pass covered.
    #[arg(long, value_parser = super::parse_span)]
    since: Option<Duration>,
    /// Look and count what a pass would do; change nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn run(settings: &Settings, args: &ReconcileArgs) -> anyhow::Result<()> {
    let (context, _database) = super::service_context(settings)?;
    let context = Arc::new(context);
    let resumable = endpoints::resumable(&context);
    let endpoints: Vec<&dyn Resumable> = resumable.iter().map(AsRef::as_ref).collect();
    let summary = reconciliation::run_pass(
        &context,
        &endpoints,
        &settings.reconcile,
        PassOptions {
            since: args.since,
            dry_run: args.dry_run,
        },
    )?;
    println!("{}", serde_json::to_string(&summary)?);
    Ok(())
}
