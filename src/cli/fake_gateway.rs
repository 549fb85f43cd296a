//! `ridepay fake-gateway`: its flags and how they combine with the environment.

use clap::Args;

use super::database;
use crate::config::{self, Settings, SimulatedGatewaySettings};
use ridepay_doubles::fake_stripe::{
    ConnectionLimits, FakeGateway, FakeGatewayConfig, WebhookTarget,
};

#[derive(Debug, Args)]
pub struct FakeGatewayArgs {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:12111")]
    bind: String,
    /// PostgreSQL holding its records (migrated on start). Default: the
    /// embedded cluster of RIDEPAY_DATA_DIR, whose `simulated_*` tables it
    /// then shares with `GATEWAY=simulated`.
    #[arg(long)]
    database_url: Option<String>,
    /// The API key clients must send as `Authorization: Bearer`; default: any.
    #[arg(long, env = "FAKE_GATEWAY_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Delay of every call, in milliseconds [env: SIMULATED_GATEWAY_LATENCY_MS].
    #[arg(long)]
    latency_ms: Option<u64>,
    /// Share of calls answered 500 `api_error` before acting
    /// [env: SIMULATED_GATEWAY_FAIL_RATE].
    #[arg(long, value_parser = parse_rate)]
    fail_rate: Option<f64>,
    /// Share of calls that act, then close the connection without an answer
    /// [env: SIMULATED_GATEWAY_LOST_RESPONSE_RATE].
    #[arg(long, value_parser = parse_rate)]
    lost_response_rate: Option<f64>,
    /// Share of calls answered 429 with `Retry-After` before acting
    /// [env: SIMULATED_GATEWAY_RATE_LIMIT_RATE].
    #[arg(long, value_parser = parse_rate)]
    rate_limit_rate: Option<f64>,
    /// Share of calls answered 500 and that answer saved under the key for
    /// every retry [env: SIMULATED_GATEWAY_SAVED_ERROR_RATE].
    #[arg(long, value_parser = parse_rate)]
    saved_error_rate: Option<f64>,
    /// Send signed Stripe events (`payment_intent.*`, `charge.refunded`,
    /// `refund.*`, `charge.refund.updated`, `charge.dispute.created`) to this
    /// URL, e.g. `http://127.0.0.1:8080/webhooks/stripe`.
    #[arg(long, requires = "webhook_secret")]
    webhook_url: Option<String>,
    /// The secret that signs them (ridepay's STRIPE_WEBHOOK_SECRET).
    #[arg(long, env = "STRIPE_WEBHOOK_SECRET", hide_env_values = true)]
    webhook_secret: Option<String>,
    /// Send its connected accounts' signed events (`account.updated`) to this
    /// URL, as Stripe sends them to a Connect endpoint.
    #[arg(long, requires = "connect_webhook_secret")]
    connect_webhook_url: Option<String>,
    /// The secret that signs them (ridepay's STRIPE_CONNECT_WEBHOOK_SECRET).
    #[arg(long, env = "STRIPE_CONNECT_WEBHOOK_SECRET", hide_env_values = true)]
    connect_webhook_secret: Option<String>,
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
            saved_error_rate: self.saved_error_rate.unwrap_or(settings.saved_error_rate),
            ..settings.clone()
        }
    }
}

fn parse_rate(value: &str) -> Result<f64, String> {
    let rate = value.parse().map_err(|err| format!("{err}"))?;
    config::check_rate(rate).map_err(|err| err.to_string())
}

/// The doubles' records: `url` when given, else the database the service
/// uses, whose `simulated_*` tables `GATEWAY=simulated` keeps its own in.
pub(super) fn records_database(
    settings: &Settings,
    url: &Option<String>,
) -> anyhow::Result<super::Database> {
    match url {
        Some(url) => Ok(super::Database {
            url: url.clone(),
            cluster: None,
        }),
        None => database(settings),
    }
}

fn target(url: &Option<String>, secret: &Option<String>) -> Option<WebhookTarget> {
    url.clone()
        .zip(secret.clone())
        .map(|(url, secret)| WebhookTarget { url, secret })
}

pub fn run(settings: &Settings, args: &FakeGatewayArgs) -> anyhow::Result<()> {
    // Taken by `wait` below, not by the gateway's threads (which inherit the
    // mask), so Ctrl-C stops the fake and the cluster it may have started.
    let stop_signals = super::signals::block()?;
    let database = records_database(settings, &args.database_url)?;
    let gateway = FakeGateway::start(FakeGatewayConfig {
        bind: args.bind.clone(),
        database_url: database.url.clone(),
        faults: args.faults(&settings.gateway.simulated),
        api_key: args.api_key.clone(),
        webhook: target(&args.webhook_url, &args.webhook_secret),
        connect_webhook: target(&args.connect_webhook_url, &args.connect_webhook_secret),
        limits: ConnectionLimits::default(),
    })?;
    println!("fake-gateway listening on {}", gateway.url());
    let signal = super::signals::wait(&stop_signals)?;
    eprintln!("fake-gateway: {signal}, stopping");
    drop(gateway);
    Ok(())
}
