//! Settings, read from the environment (and `.env`) with the names and defaults
//! of DESIGN section 5. `.env.example` lists every one.

use std::env;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{bail, Context};

/// Which payment gateway implementation charges rides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatewayKind {
    Simulated,
    Stripe,
}

impl FromStr for GatewayKind {
    type Err = anyhow::Error;

    fn from_str(value: &str) -> anyhow::Result<Self> {
        match value {
            "simulated" => Ok(GatewayKind::Simulated),
            "stripe" => Ok(GatewayKind::Stripe),
            other => bail!("must be `simulated` or `stripe`, not `{other}`"),
        }
    }
}

/// The simulated gateway's fault knobs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimulatedGatewaySettings {
    pub latency: Duration,
    /// Share of calls that fail before charging.
    pub fail_rate: f64,
    /// Share of calls that charge, then report a timeout.
    pub lost_response_rate: f64,
}

#[derive(Debug, Clone)]
pub struct Settings {
    /// None: run the embedded PostgreSQL of `data_dir`.
    pub database_url: Option<String>,
    pub bind_addr: String,
    pub pool_size: u32,
    pub statement_timeout: Duration,
    pub lock_timeout: Duration,
    pub idle_in_transaction_timeout: Duration,
    pub lease_timeout: Duration,
    pub retention: Duration,
    pub gateway: GatewayKind,
    pub simulated_gateway: SimulatedGatewaySettings,
    pub data_dir: PathBuf,
    /// HTTP worker threads; 0 means one per core.
    pub http_workers: usize,
}

impl Settings {
    /// Reads `.env` (if present) and then the environment.
    pub fn from_env() -> anyhow::Result<Settings> {
        match dotenvy::dotenv() {
            Ok(_) => {}
            Err(err) if err.not_found() => {}
            Err(err) => return Err(err).context("cannot read .env"),
        }
        let settings = Settings {
            database_url: env::var("DATABASE_URL").ok().filter(|url| !url.is_empty()),
            bind_addr: var("BIND_ADDR", "127.0.0.1:8080".to_owned())?,
            pool_size: var("DATABASE_POOL_SIZE", 10)?,
            statement_timeout: millis("DATABASE_STATEMENT_TIMEOUT_MS", 5_000)?,
            lock_timeout: millis("DATABASE_LOCK_TIMEOUT_MS", 2_000)?,
            idle_in_transaction_timeout: millis("DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS", 10_000)?,
            lease_timeout: Duration::from_secs(var("IDEMPOTENCY_LEASE_SECS", 30)?),
            retention: Duration::from_secs(var::<u64>("IDEMPOTENCY_RETENTION_HOURS", 48)? * 3600),
            gateway: var("GATEWAY", GatewayKind::Simulated)?,
            simulated_gateway: SimulatedGatewaySettings {
                latency: millis("SIMULATED_GATEWAY_LATENCY_MS", 0)?,
                fail_rate: rate("SIMULATED_GATEWAY_FAIL_RATE")?,
                lost_response_rate: rate("SIMULATED_GATEWAY_LOST_RESPONSE_RATE")?,
            },
            data_dir: var("RIDEPAY_DATA_DIR", PathBuf::from(".ridepay"))?,
            http_workers: var("HTTP_WORKERS", 0)?,
        };
        settings.validate()?;
        Ok(settings)
    }

    /// Settings for tests and tools: the defaults, on a given database.
    pub fn for_database(database_url: &str) -> Settings {
        Settings {
            database_url: Some(database_url.to_owned()),
            bind_addr: "127.0.0.1:0".to_owned(),
            pool_size: 10,
            statement_timeout: Duration::from_secs(5),
            lock_timeout: Duration::from_secs(2),
            idle_in_transaction_timeout: Duration::from_secs(10),
            lease_timeout: Duration::from_secs(30),
            retention: Duration::from_secs(48 * 3600),
            gateway: GatewayKind::Simulated,
            simulated_gateway: SimulatedGatewaySettings::default(),
            data_dir: PathBuf::from(".ridepay"),
            http_workers: 2,
        }
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        if self.pool_size == 0 {
            bail!("DATABASE_POOL_SIZE must be at least 1");
        }
        if self.lease_timeout < Duration::from_secs(1) {
            bail!("IDEMPOTENCY_LEASE_SECS must be at least 1");
        }
        if self.gateway == GatewayKind::Stripe {
            bail!("GATEWAY=stripe is not available in this build yet; use `simulated`");
        }
        Ok(())
    }
}

fn var<T>(name: &str, default: T) -> anyhow::Result<T>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    match env::var(name) {
        Ok(value) if !value.trim().is_empty() => value
            .trim()
            .parse()
            .map_err(|err| anyhow::anyhow!("{name}={value:?} is invalid: {err}")),
        Ok(_) | Err(env::VarError::NotPresent) => Ok(default),
        Err(env::VarError::NotUnicode(_)) => bail!("{name} is not valid UTF-8"),
    }
}

fn millis(name: &str, default: u64) -> anyhow::Result<Duration> {
    Ok(Duration::from_millis(var(name, default)?))
}

fn rate(name: &str) -> anyhow::Result<f64> {
    let rate: f64 = var(name, 0.0)?;
    if !(0.0..=1.0).contains(&rate) {
        bail!("{name} must be between 0 and 1, not {rate}");
    }
    Ok(rate)
}
