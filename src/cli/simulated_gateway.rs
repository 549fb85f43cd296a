//! `ridepay simulated-gateway`: the gateway doubles' test controls, for what
//! Stripe does on its own in time (an account restricted when its
//! requirements fall past due, a transfer's funds made available, an
//! automatic payout). They act on the doubles' tables where
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
    /// Make every pending amount of a connected account's balance
    /// available now, as time would, and print the balance as JSON.
    MakeAvailable {
        /// The account's `acct_` id.
        account_id: String,
    },
    /// Pay out a connected account's whole available balance, as Stripe's
    /// automatic payouts do, and print the balance as JSON.
    PayOut {
        /// The account's `acct_` id.
        account_id: String,
    },
}

pub fn run(settings: &Settings, args: &SimulatedGatewayArgs) -> anyhow::Result<()> {
    let database = records_database(settings, &args.database_url)?;
    let mut conn = connect_with_retry(&database.url)?;
    ridepay_doubles::run_migrations(&mut conn).map_err(anyhow::Error::msg)?;
    let conn = &mut conn;
    let changed = match &args.control {
        Control::RestrictAccount { account_id } => printed(accounts::restrict(conn, account_id)),
        Control::ActivateAccount { account_id } => printed(accounts::activate(conn, account_id)),
        Control::MakeAvailable { account_id } => {
            printed(accounts::make_available(conn, account_id))
        }
        Control::PayOut { account_id } => printed(accounts::pay_out(conn, account_id)),
    };
    let shown = changed.map_err(|err| match err {
        // Stripe's words: `resource_missing: No such account: '...'`.
        GatewayError::Rejected { message } => anyhow::Error::msg(message),
        other => anyhow::Error::new(other),
    })?;
    println!("{}", shown.context("cannot print the answer")?);
    Ok(())
}

/// What a control changed, as JSON.
fn printed(
    changed: Result<impl serde::Serialize, GatewayError>,
) -> Result<serde_json::Result<String>, GatewayError> {
    changed.map(|changed| serde_json::to_string(&changed))
}
