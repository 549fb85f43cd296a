//! `ridepay reconcile`: one reconciliation pass now, its summary printed as
//! JSON.

use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::config::Settings;
use crate::idempotency::completer::Resumable;
use crate::reconciliation::{self, PassOptions};
use crate::{db, endpoints, startup};

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
    let (mut conn, database) = super::migrated_connection(settings)?;
    let installation = startup::Installation::load(&mut conn)?;
    drop(conn);
    let pool = db::build_pool(&database.url, &settings.database);
    let public_base = settings
        .server
        .public_base_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", settings.server.bind_addr));
    let context = Arc::new(startup::service_context(
        settings,
        pool,
        installation,
        public_base.trim_end_matches('/'),
    )?);
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
