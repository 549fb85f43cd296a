//! The command line: `ridepay [serve]`, `migrate`, `reap`, `users create`.

use std::path::Path;

use anyhow::Context;
use clap::{Parser, Subcommand};
use serde_json::json;

use crate::config::Settings;
use crate::db;
use crate::embedded_postgres::{connect_with_retry, EmbeddedPostgres, StopMode};
use crate::idempotency::reaper;
use crate::startup::Application;
use crate::users;

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
    Migrate,
    /// Delete finished idempotency keys older than the retention, once, and
    /// print `{"deleted": N}`.
    Reap,
    /// Manage users and their API keys.
    #[command(subcommand)]
    Users(UsersCommand),
}

#[derive(Debug, Subcommand)]
enum UsersCommand {
    /// Create a user and print its API key (shown only this once) as JSON.
    Create {
        #[arg(long)]
        email: String,
        /// A stored customer id (`cus_...`) charged when a ride names no source.
        #[arg(long)]
        stripe_customer: Option<String>,
    },
}

const DEMO_EMAIL: &str = "demo@ridepay.dev";
const DEMO_CUSTOMER: &str = "cus_demo";

pub fn run(cli: Cli) -> anyhow::Result<()> {
    let settings = Settings::from_env()?;
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => serve(settings),
        Command::Migrate => {
            let (url, _cluster) = database(&settings)?;
            db::run_migrations(&mut connect_with_retry(&url)?)?;
            println!("{}", json!({ "migrations": "applied" }));
            Ok(())
        }
        Command::Reap => {
            let (url, _cluster) = database(&settings)?;
            let mut conn = connect_with_retry(&url)?;
            db::run_migrations(&mut conn)?;
            let deleted = reaper::reap(&mut conn, settings.retention)?;
            println!("{}", json!({ "deleted": deleted }));
            Ok(())
        }
        Command::Users(UsersCommand::Create {
            email,
            stripe_customer,
        }) => {
            let (url, _cluster) = database(&settings)?;
            let mut conn = connect_with_retry(&url)?;
            db::run_migrations(&mut conn)?;
            let (user, key) = users::create(&mut conn, &email, stripe_customer.as_deref())
                .context("cannot create the user")?;
            println!(
                "{}",
                json!({ "user_id": user.id, "email": user.email, "api_key": key.expose() })
            );
            Ok(())
        }
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

fn serve(settings: Settings) -> anyhow::Result<()> {
    let (url, cluster) = database(&settings)?;
    if let Some(cluster) = &cluster {
        log::info!(
            "using the embedded PostgreSQL of {} on 127.0.0.1:{}",
            settings.data_dir.display(),
            cluster.port()
        );
    }
    let result = actix_web::rt::System::new().block_on(async {
        let app = Application::build(&settings, &url)?;
        println!("ridepay listening on http://{}", app.address());
        if cluster.is_some() {
            print_demo_user(&mut *app.pool().get()?, app.address(), &settings.data_dir)?;
        }
        app.run_until_stopped().await?;
        anyhow::Ok(())
    });
    if let Some(cluster) = cluster.filter(EmbeddedPostgres::started_here) {
        cluster.stop(StopMode::Fast)?;
    }
    result
}

/// The embedded default's demo user: created once, and given a fresh API key at
/// every start, since only a key's hash is stored.
fn print_demo_user(
    conn: &mut diesel::PgConnection,
    address: std::net::SocketAddr,
    data_dir: &Path,
) -> anyhow::Result<()> {
    let key = match users::find_by_email(conn, DEMO_EMAIL)? {
        Some(user) => users::rotate_key(conn, user.id)?,
        None => users::create(conn, DEMO_EMAIL, Some(DEMO_CUSTOMER))?.1,
    };
    println!(
        "\nDemo user {DEMO_EMAIL} (data in {}), API key for this run:\n  {}\n\nTry:\n  \
         curl -i -X POST http://{address}/api/rides \\\n    -H 'Authorization: Bearer {}' \\\n    \
         -H 'Idempotency-Key: demo-1' -H 'Content-Type: application/json' \\\n    \
         -d '{{\"origin_lat\": 37.77, \"origin_lon\": -122.42, \"target_lat\": 37.80, \
         \"target_lon\": -122.27, \"amount_cents\": 2000}}'\n",
        data_dir.display(),
        key.expose(),
        key.expose()
    );
    Ok(())
}
