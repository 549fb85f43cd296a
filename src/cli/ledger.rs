//! `ridepay ledger balances | check | backfill-fees`: the ledger's
//! accounts, its invariants checked (for cron: non-zero exit on a
//! violation, metrics for a textfile collector), and the fees of what was
//! captured before it started.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use diesel::RunQueryDsl;
use serde_json::json;

use crate::config::Settings;
use crate::ledger::{against_gateway, check, opening_fees, reads};
use crate::service_error::ServiceError;

#[derive(Debug, Subcommand)]
pub enum LedgerCommand {
    /// Print every account with its balance (minor units, debits positive)
    /// as JSON.
    Balances,
    /// Check the ledger's invariants, in the database and against the
    /// gateway's balance transactions, and print what was found as JSON
    /// (`violations`, `needs_attention`, `fees_pending`, `unposted`); exit non-zero on a
    /// violation.
    Check {
        /// Check only what was posted or changed in this last span (`90m`,
        /// `6h`, `2d`).
        #[arg(long, value_parser = super::parse_span)]
        since: Option<Duration>,
        /// Also write the findings as Prometheus text to this file (written
        /// whole, then renamed into place), for a textfile collector.
        #[arg(long)]
        metrics_file: Option<PathBuf>,
    },
    /// Post the gateway's fees on the charges captured before the ledger
    /// started (their captures are in its opening), read from their
    /// balance transactions; each once, however often it runs. Prints
    /// `{"rides", "fees_posted", "skipped"}`.
    BackfillFees,
}

pub fn run(settings: &Settings, command: LedgerCommand) -> anyhow::Result<()> {
    match command {
        LedgerCommand::Balances => {
            let (mut conn, _database) = super::migrated_connection(settings)?;
            let accounts = reads::balances(&mut conn, None, None)?;
            println!("{}", json!({ "data": accounts }));
            Ok(())
        }
        LedgerCommand::BackfillFees => {
            let (context, _database) = super::service_context(settings)?;
            let done = opening_fees::backfill(&context)?;
            println!("{}", serde_json::to_string(&done)?);
            Ok(())
        }
        LedgerCommand::Check {
            since,
            metrics_file,
        } => {
            let (context, _database) = super::service_context(settings)?;
            let mut conn = context.pool.get()?;
            let since = check::since(since);
            // A capture recorded without its fee gets it from the next
            // reconciliation pass: two intervals allow for one that missed.
            let fee_grace = settings.reconcile.interval * 2;
            // One snapshot for every read, taken before the gateway is
            // listed; a check reads the whole span, not a request's few
            // rows, so it is not held to a request's limits.
            let report = conn
                .build_transaction()
                .repeatable_read()
                .read_only()
                .run(|conn| {
                    diesel::sql_query(
                        "SELECT set_config('statement_timeout', '0', true), \
                         set_config('idle_in_transaction_session_timeout', '0', true)",
                    )
                    .execute(conn)?;
                    let mut report = check::check(conn, since, fee_grace)?;
                    against_gateway::compare(conn, context.gateway.as_ref(), since, &mut report)?;
                    Ok::<_, ServiceError>(report)
                })?;
            println!("{}", serde_json::to_string(&report)?);
            if let Some(path) = metrics_file {
                let written = path.with_extension("prom.tmp");
                std::fs::write(&written, check::metrics(&report))
                    .and_then(|()| std::fs::rename(&written, &path))
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            match report.violations.len() {
                0 => Ok(()),
                found => anyhow::bail!("the ledger check found {found} violation(s)"),
            }
        }
    }
}
