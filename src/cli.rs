//! The command line: `ridepay [serve]`, `migrate`, `reap`, `users create`,
//! `fake-gateway`.

use std::path::Path;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use serde_json::json;

use crate::config::{self, ApiKey, Settings, SimulatedGatewaySettings};
use crate::db;
use crate::embedded_postgres::{connect_with_retry, EmbeddedPostgres, StopMode};
use crate::fake_gateway::{FakeGateway, FakeGatewayConfig, WebhookTarget};
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
    /// Serve a Stripe-compatible fake of the Charges and Refunds APIs, backed
    /// by the simulated gateway's ledger, with fault knobs and optional signed
    /// webhooks. Prints the address it bound.
    FakeGateway(FakeGatewayArgs),
}

#[derive(Debug, Args)]
struct FakeGatewayArgs {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:12111")]
    bind: String,
    /// PostgreSQL holding the ledger (migrated on start). Default: the
    /// embedded cluster of RIDEPAY_DATA_DIR, whose `simulated_charges` it
    /// then shares with `GATEWAY=simulated`.
    #[arg(long)]
    database_url: Option<String>,
    /// The API key clients must send as `Authorization: Bearer`; default: any.
    #[arg(long, env = "FAKE_GATEWAY_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Delay of every charge, in milliseconds [env: SIMULATED_GATEWAY_LATENCY_MS].
    #[arg(long)]
    latency_ms: Option<u64>,
    /// Share of charges answered 500 `api_error` before charging
    /// [env: SIMULATED_GATEWAY_FAIL_RATE].
    #[arg(long, value_parser = parse_rate)]
    fail_rate: Option<f64>,
    /// Share of charges made, then the connection closed without an answer
    /// [env: SIMULATED_GATEWAY_LOST_RESPONSE_RATE].
    #[arg(long, value_parser = parse_rate)]
    lost_response_rate: Option<f64>,
    /// Share of charges answered 429 with `Retry-After` before charging
    /// [env: SIMULATED_GATEWAY_RATE_LIMIT_RATE].
    #[arg(long, value_parser = parse_rate)]
    rate_limit_rate: Option<f64>,
    /// Send signed Stripe events (`charge.succeeded`, `charge.failed`,
    /// `charge.refunded`) for new charges and refunds to this URL, e.g.
    /// `http://127.0.0.1:8080/webhooks/stripe`.
    #[arg(long, requires = "webhook_secret")]
    webhook_url: Option<String>,
    /// The secret that signs them (ridepay's STRIPE_WEBHOOK_SECRET).
    #[arg(long, env = "STRIPE_WEBHOOK_SECRET", hide_env_values = true)]
    webhook_secret: Option<String>,
}

impl FakeGatewayArgs {
    /// The flags, over the `SIMULATED_GATEWAY_*` settings.
    fn faults(&self, settings: &SimulatedGatewaySettings) -> SimulatedGatewaySettings {
        SimulatedGatewaySettings {
            latency: self
                .latency_ms
                .map(std::time::Duration::from_millis)
                .unwrap_or(settings.latency),
            fail_rate: self.fail_rate.unwrap_or(settings.fail_rate),
            lost_response_rate: self
                .lost_response_rate
                .unwrap_or(settings.lost_response_rate),
            rate_limit_rate: self.rate_limit_rate.unwrap_or(settings.rate_limit_rate),
        }
    }
}

fn parse_rate(value: &str) -> Result<f64, String> {
    let rate = value.parse().map_err(|err| format!("{err}"))?;
    config::check_rate(rate).map_err(|err| err.to_string())
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
        Command::FakeGateway(args) => fake_gateway(&settings, &args),
    }
}

fn fake_gateway(settings: &Settings, args: &FakeGatewayArgs) -> anyhow::Result<()> {
    let (database_url, _cluster) = match &args.database_url {
        Some(url) => (url.clone(), None),
        None => database(settings)?,
    };
    let gateway = FakeGateway::start(FakeGatewayConfig {
        bind: args.bind.clone(),
        database_url,
        faults: args.faults(&settings.simulated_gateway),
        api_key: args.api_key.clone().map(ApiKey::new),
        webhook: args
            .webhook_url
            .clone()
            .zip(args.webhook_secret.clone())
            .map(|(url, secret)| WebhookTarget { url, secret }),
    })?;
    println!("fake-gateway listening on {}", gateway.url());
    gateway.wait();
    Ok(())
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
