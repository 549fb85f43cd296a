//! The command line: `ridepay [serve]`, `migrate`, `reap`, `users`, `keys`,
//! `fake-gateway`. Every subcommand run in the same folder as `serve` attaches
//! to the same database (`DATABASE_URL`, or the embedded cluster).

mod fake_gateway;
mod keys;
mod serve;
mod users;

use clap::{Parser, Subcommand};
use serde_json::json;

use crate::config::Settings;
use crate::db;
use crate::embedded_postgres::{connect_with_retry, EmbeddedPostgres};
use crate::idempotency::reaper;

#[derive(Debug, Parser)]
#[command(
    name = "ridepay",
    version,
    about = "Retry-safe ride payments over HTTP"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP server (the default). Prints the address it bound.
    Serve,
    /// Apply pending database migrations and exit.
    Migrate {
        /// Revert every migration instead (development only: drops all data).
        #[arg(long)]
        revert_all: bool,
    },
    /// Delete finished idempotency keys older than the retention, once, and
    /// print `{"deleted": N}`.
    Reap,
    /// Manage users and their API keys.
    #[command(subcommand)]
    Users(users::UsersCommand),
    /// Inspect idempotency keys.
    #[command(subcommand)]
    Keys(keys::KeysCommand),
    /// Serve a Stripe-compatible fake of the Charges and Refunds APIs, backed
    /// by the simulated gateway's ledger, with fault knobs and optional signed
    /// webhooks. Prints the address it bound.
    FakeGateway(fake_gateway::FakeGatewayArgs),
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    let settings = Settings::from_env()?;
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve::run(settings),
        Command::Migrate { revert_all } => {
            let (url, _cluster) = database(&settings)?;
            let mut conn = connect_with_retry(&url)?;
            if revert_all {
                db::revert_all_migrations(&mut conn)?;
                println!("{}", json!({ "migrations": "reverted" }));
            } else {
                db::run_migrations(&mut conn)?;
                println!("{}", json!({ "migrations": "applied" }));
            }
            Ok(())
        }
        Command::Reap => {
            let mut conn = migrated_connection(&settings)?;
            let deleted = reaper::reap(&mut conn, settings.retention)?;
            println!("{}", json!({ "deleted": deleted }));
            Ok(())
        }
        Command::Users(command) => users::run(&mut migrated_connection(&settings)?, command),
        Command::Keys(command) => {
            keys::run(&mut migrated_connection(&settings)?, &settings, command)
        }
        Command::FakeGateway(args) => fake_gateway::run(&settings, &args),
    }
}

/// The database to use: `DATABASE_URL`, or the embedded cluster of the data
/// folder, started if needed.
fn database(settings: &Settings) -> anyhow::Result<(String, Option<EmbeddedPostgres>)> {
    match &settings.database_url {
        Some(url) => Ok((url.clone(), None)),
        None => {
            let cluster = EmbeddedPostgres::ensure_running(&settings.data_dir)?;
            Ok((cluster.database_url("ridepay"), Some(cluster)))
        }
    }
}

fn migrated_connection(settings: &Settings) -> anyhow::Result<diesel::PgConnection> {
    let (url, _cluster) = database(settings)?;
    let mut conn = connect_with_retry(&url)?;
    db::run_migrations(&mut conn)?;
    Ok(conn)
}
