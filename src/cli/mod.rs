//! The command line: `ridepay [serve]`, `migrate`, `reap`, `users`, `keys`,
//! `reconcile`, `ledger`, `fake-gateway`, `simulated-gateway`, `db`. Every
//! subcommand run in the same folder as `serve` attaches to the same
//! database (`DATABASE_URL`, or the embedded cluster), and stops the
//! embedded cluster again if it was the one that started it.

#[cfg(feature = "simulated")]
mod fake_gateway;
mod keys;
mod ledger;
mod reconcile;
mod serve;
#[cfg(feature = "simulated")]
mod signals;
#[cfg(feature = "simulated")]
mod simulated_gateway;
mod users;

use std::time::Duration;

use clap::{Parser, Subcommand};
use serde_json::json;

use crate::config::Settings;
use crate::context::ServiceContext;
use crate::embedded_postgres::{connect_with_retry, EmbeddedPostgres, StopMode};
use crate::idempotency::reaper;
use crate::{db, startup};

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
    ///
    /// It takes no flags: every setting comes from the environment or from a
    /// `.env` file in the working folder, and `.env.example` lists each one
    /// with its default. The ones to know first: BIND_ADDR (127.0.0.1:8080;
    /// port 0 picks a free port), DATABASE_URL (unset: a private PostgreSQL
    /// in RIDEPAY_DATA_DIR, `.ridepay`), GATEWAY (`simulated` or `stripe`),
    /// STRIPE_API_KEY, STRIPE_WEBHOOK_SECRET, RUST_LOG (info). SIGINT (Ctrl-C)
    /// and SIGTERM both let the requests in flight finish.
    Serve,
    /// Apply pending database migrations (on DATABASE_DIRECT_URL when set),
    /// set the service role's session limits in its database, and exit.
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
    /// Run one reconciliation pass with the gateway now and print its
    /// summary as JSON: keys whose call's answer the gateway lost resolved,
    /// payments no ride records released, transfers no ride records
    /// reversed.
    Reconcile(reconcile::ReconcileArgs),
    /// Read the ledger's balances, check its invariants, or post the fees
    /// of what was captured before it.
    #[command(subcommand)]
    Ledger(ledger::LedgerCommand),
    /// Serve a Stripe-compatible fake of the PaymentIntents and Refunds APIs,
    /// backed by the simulated gateway's tables, with its own authentication
    /// page, fault knobs and optional signed webhooks. Prints the address it
    /// bound. (Only in a build with the `simulated` feature.)
    #[cfg(feature = "simulated")]
    FakeGateway(fake_gateway::FakeGatewayArgs),
    /// Test controls of the gateway doubles, on their records (those of
    /// `ridepay fake-gateway`, shared with `GATEWAY=simulated`): do to a
    /// connected account what Stripe does on its own. (Only in a build with
    /// the `simulated` feature.)
    #[cfg(feature = "simulated")]
    SimulatedGateway(simulated_gateway::SimulatedGatewayArgs),
    /// The embedded PostgreSQL of the data folder (`RIDEPAY_DATA_DIR`).
    #[command(subcommand)]
    Db(DbCommand),
}

#[derive(Debug, Subcommand)]
enum DbCommand {
    /// Print its `DATABASE_URL` (for `diesel migration run`, `psql`),
    /// starting it if it is not running; it keeps running until
    /// `ridepay db stop`.
    Url,
    /// Stop it, if it is running.
    Stop,
}

fn db_command(settings: &Settings, command: DbCommand) -> anyhow::Result<()> {
    if settings.database.url.is_some() {
        anyhow::bail!("DATABASE_URL is set, so no embedded PostgreSQL is in use");
    }
    match command {
        DbCommand::Url => {
            let cluster = EmbeddedPostgres::ensure_running(&settings.database.data_dir)?;
            println!("{}", cluster.service_url());
            if cluster.started_here() {
                eprintln!("started the embedded PostgreSQL; `ridepay db stop` stops it");
            }
        }
        DbCommand::Stop => match EmbeddedPostgres::running(&settings.database.data_dir)? {
            Some(cluster) => {
                cluster.stop(StopMode::Fast)?;
                eprintln!(
                    "stopped the embedded PostgreSQL of {}",
                    settings.database.data_dir.display()
                );
            }
            None => eprintln!(
                "the embedded PostgreSQL of {} is not running",
                settings.database.data_dir.display()
            ),
        },
    }
    Ok(())
}

pub fn run(cli: Cli) -> anyhow::Result<()> {
    let settings = Settings::from_env()?;
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve::run(settings),
        Command::Migrate { revert_all: true } => {
            let database = database(&settings)?;
            let direct = settings
                .database
                .direct_url
                .as_ref()
                .unwrap_or(&database.url);
            db::revert_all_migrations(&mut connect_with_retry(direct)?)?;
            println!("{}", json!({ "migrations": "reverted" }));
            Ok(())
        }
        Command::Migrate { revert_all: false } => {
            migrated_connection(&settings)?;
            println!("{}", json!({ "migrations": "applied" }));
            Ok(())
        }
        Command::Reap => {
            let (mut conn, _database) = migrated_connection(&settings)?;
            let deleted = reaper::reap(&mut conn, settings.keys.retention)?;
            println!("{}", json!({ "deleted": deleted }));
            Ok(())
        }
        Command::Users(command) => users::run(&mut migrated_connection(&settings)?.0, command),
        Command::Keys(command) => {
            keys::run(&mut migrated_connection(&settings)?.0, &settings, command)
        }
        Command::Reconcile(args) => reconcile::run(&settings, &args),
        Command::Ledger(command) => ledger::run(&settings, command),
        #[cfg(feature = "simulated")]
        Command::FakeGateway(args) => fake_gateway::run(&settings, &args),
        #[cfg(feature = "simulated")]
        Command::SimulatedGateway(args) => simulated_gateway::run(&settings, &args),
        Command::Db(command) => db_command(&settings, command),
    }
}

/// The database a subcommand works on: `DATABASE_URL`, or the embedded
/// cluster of the data folder, started if needed. A cluster this process
/// started is stopped when this is dropped, so a subcommand leaves nothing
/// running that was not running before it.
pub(crate) struct Database {
    pub url: String,
    pub cluster: Option<EmbeddedPostgres>,
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Some(cluster) = self.cluster.as_ref().filter(|c| c.started_here()) {
            if let Err(err) = cluster.stop(StopMode::Fast) {
                eprintln!("warning: cannot stop the embedded PostgreSQL: {err:#}");
            }
        }
    }
}

fn database(settings: &Settings) -> anyhow::Result<Database> {
    match &settings.database.url {
        Some(url) => Ok(Database {
            url: url.clone(),
            cluster: None,
        }),
        None => {
            let cluster = EmbeddedPostgres::ensure_running(&settings.database.data_dir)?;
            Ok(Database {
                url: cluster.service_url(),
                cluster: Some(cluster),
            })
        }
    }
}

/// A migrated connection, as the service connects, with the service's
/// session limits set for its role; and the database it is on (keep it
/// alive while the connection is used). Migrations go to
/// `DATABASE_DIRECT_URL` when it is set: their lock is a session's.
fn migrated_connection(settings: &Settings) -> anyhow::Result<(diesel::PgConnection, Database)> {
    let database = database(settings)?;
    if let Some(direct) = &settings.database.direct_url {
        db::run_migrations(&mut connect_with_retry(direct)?)?;
    }
    let mut conn = connect_with_retry(&database.url)?;
    if settings.database.direct_url.is_none() {
        db::run_migrations(&mut conn)?;
    }
    db::set_session_defaults(&mut conn, &settings.database)?;
    Ok((conn, database))
}

/// What the service's calls need, as `serve` builds it, for a subcommand
/// that calls the gateway; and the database it is on (keep it alive while
/// the context is used).
fn service_context(settings: &Settings) -> anyhow::Result<(ServiceContext, Database)> {
    let (mut conn, database) = migrated_connection(settings)?;
    let installation = startup::Installation::load(&mut conn)?;
    drop(conn);
    let pool = db::build_pool(&database.url, &settings.database);
    let public_base = settings
        .server
        .public_base_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", settings.server.bind_addr));
    let context = startup::service_context(
        settings,
        pool,
        installation,
        public_base.trim_end_matches('/'),
    )?;
    Ok((context, database))
}

/// A span: a whole number and a unit, `s`, `m`, `h` or `d`.
fn parse_span(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or("give a unit: s, m, h or d (e.g. 6h)")?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a span"))?;
    let unit = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("unknown unit {unit:?}: give s, m, h or d")),
    };
    Ok(Duration::from_secs(number * unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_with_their_units() {
        assert_eq!(parse_span("90m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_span("2d"), Ok(Duration::from_secs(172_800)));
        for bad in ["", "6", "h", "6w", "-1h", "1.5h"] {
            assert!(parse_span(bad).is_err(), "{bad}");
        }
    }
}
