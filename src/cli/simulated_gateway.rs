//! `ridepay simulated-gateway`: the gateway doubles' test controls, for what
//! Stripe does on its own in time (an account restricted when its
//! requirements fall past due). They act on the doubles' tables where
//! `ridepay fake-gateway` finds them, which both doubles share, so one
//! command controls the accounts of either.

use anyhow::Context;
use clap::{Args, Subcommand};

use super::fake_gateway::records_database;
use crate::config::Settings;
use crate::embedded_postgres::connect_with_retry;
use ridepay_doubles::accounts;
use ridepay_gateway::GatewayError;

#[derive(Debug, Args)]
pub struct SimulatedGatewayArgs {
    /// PostgreSQL holding the doubles' records, as given to
    /// `ridepay fake-gateway`. Default: DATABASE_URL, else the embedded
    /// cluster of RIDEPAY_DATA_DIR.
    #[arg(long, global = true)]
    database_url: Option<String>,
    #[command(subcommand)]
    control: Control,
}

#[derive(Debug, Subcommand)]
enum Control {
    /// Make a connected account's `transfers` capability `inactive`, as
    /// Stripe does when its requirements fall past due, and print the
    /// account as JSON.
    RestrictAccount {
        /// The account's `acct_` id.
        account_id: String,
    },
    /// Make a connected account's `transfers` capability `active`, as when
    /// its requirements are met, and print the account as JSON.
    ActivateAccount {
        /// The account's `acct_` id.
        account_id: String,
    },
}

pub fn run(settings: &Settings, args: &SimulatedGatewayArgs) -> anyhow::Result<()> {
    let database = records_database(settings, &args.database_url)?;
    let mut conn = connect_with_retry(&database.url)?;
    ridepay_doubles::run_migrations(&mut conn).map_err(anyhow::Error::msg)?;
    let changed = match &args.control {
        Control::RestrictAccount { account_id } => accounts::restrict(&mut conn, account_id),
        Control::ActivateAccount { account_id } => accounts::activate(&mut conn, account_id),
    };
    let account = changed.map_err(|err| match err {
        // Stripe's words: `resource_missing: No such account: '...'`.
        GatewayError::Rejected { message } => anyhow::Error::msg(message),
        other => anyhow::Error::new(other),
    })?;
    println!(
        "{}",
        serde_json::to_string(&account).context("cannot print the account")?
    );
    Ok(())
}
