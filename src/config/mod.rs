//! Settings, read from the environment (and `.env`) with the names and defaults
//! of `docs/OPERATIONS.md` (Configuration). `.env.example` lists every one.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{bail, Context};

pub mod conninfo;
mod mask;
mod source;
mod summary;

use source::Source;

pub use mask::mask_url;
#[cfg(feature = "simulated")]
pub use ridepay_doubles::SimulatedGatewaySettings;
#[cfg(feature = "simulated")]
pub use source::check_rate;

/// Which payment gateway implementation charges rides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatewayKind {
    /// Only in a build with the `simulated` feature (the default).
    #[cfg(feature = "simulated")]
    Simulated,
    Stripe,
}

impl GatewayKind {
    /// What `GATEWAY` is when unset: the simulated gateway, in a build that
    /// has it; a build without it has no default.
    #[cfg(feature = "simulated")]
    const DEFAULT: Option<GatewayKind> = Some(GatewayKind::Simulated);
    #[cfg(not(feature = "simulated"))]
    const DEFAULT: Option<GatewayKind> = None;
}

impl FromStr for GatewayKind {
    type Err = anyhow::Error;

    fn from_str(value: &str) -> anyhow::Result<Self> {
        match value {
            #[cfg(feature = "simulated")]
            "simulated" => Ok(GatewayKind::Simulated),
            #[cfg(not(feature = "simulated"))]
            "simulated" => bail!(
                "this build has no simulated gateway (built without the `simulated` feature): \
                 use `stripe`"
            ),
            "stripe" => Ok(GatewayKind::Stripe),
            other => bail!("must be `simulated` or `stripe`, not `{other}`"),
        }
    }
}

/// A secret that never reaches a log line: `Debug` shows only its prefix.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    /// The key itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl ApiKey {
    /// `sk_test_****` or `sk_live_****`: which account, without the key.
    pub fn masked(&self) -> String {
        let prefix = self
            .0
            .get(..8)
            .filter(|p| p.starts_with("sk_"))
            .unwrap_or("");
        format!("{prefix}****")
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiKey({})", self.masked())
    }
}

pub const STRIPE_API_BASE: &str = "https://api.stripe.com";

/// The Stripe client's account and timeouts.
#[derive(Debug, Clone, PartialEq)]
pub struct StripeSettings {
    /// Required with `GATEWAY=stripe`.
    pub api_key: Option<ApiKey>,
    pub api_base: String,
    /// The whole call: connecting, sending, waiting, reading the answer.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Signs the events sent to `POST /webhooks/stripe` (`whsec_...`).
    pub webhook_secret: Option<ApiKey>,
}

impl Default for StripeSettings {
    fn default() -> Self {
        StripeSettings {
            webhook_secret: None,
            api_key: None,
            api_base: STRIPE_API_BASE.to_owned(),
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(3),
        }
    }
}

/// A background worker's switch and interval.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerSettings {
    pub enabled: bool,
    pub interval: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CompleterConfig {
    pub enabled: bool,
    pub interval: Duration,
    pub max_attempts: i32,
    /// No gateway call is resent for a key older than this.
    pub charge_deadline: Duration,
}

/// The settings of reconciliation (`RECONCILE_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconcileConfig {
    pub enabled: bool,
    pub interval: Duration,
    /// How long a key left to reconciliation waits before it is looked up,
    /// so the gateway's search (which lags) can find what its call made.
    pub search_lag: Duration,
    /// How old a PaymentIntent no ride records must be before it is
    /// released.
    pub orphan_grace: Duration,
    /// How far back a pass lists the gateway's PaymentIntents at most.
    pub window: Duration,
}

/// The installation's own destination of receipts (`RECEIPT_WEBHOOK_URL`
/// and `RECEIPT_WEBHOOK_SECRET`, set together).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptDestination {
    /// The operator's: `https://`, or `http://` to a loopback host, and
    /// held to no address policy (users' destinations are).
    pub url: String,
    /// `whsec_` and the base64 of its key.
    pub secret: ApiKey,
}

/// The outbox of events and their delivery (`OUTBOX_*`,
/// `OUTBOUND_WEBHOOK_*`, `RECEIPT_WEBHOOK_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundWebhookConfig {
    /// The sender of deliveries (events are staged either way).
    pub enabled: bool,
    /// How often the sender looks for deliveries due.
    pub interval: Duration,
    /// Receipts (`ride.captured`, `ride.canceled`, `ride.tipped`) to the
    /// installation's own destination; None: it is disabled.
    pub receipts: Option<ReceiptDestination>,
    /// Destinations may be loopback addresses, over `http://` too (tests
    /// and local development); every other address still needs `https://`
    /// and must be public.
    pub allow_loopback: bool,
    /// When each attempt is made, after the event (the first) or after the
    /// attempt before it; after the last, the delivery has failed.
    pub retry_schedule: Vec<Duration>,
    /// A 2xx within this long is a delivery.
    pub timeout: Duration,
    /// A destination whose every attempt failed for this long is disabled.
    pub disable_after: Duration,
    /// Events, deliveries and attempts are kept this long.
    pub retention: Duration,
}

/// Request rates; a `per_second` of 0 switches that limit off.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimitConfig {
    /// Per valid API key.
    pub per_second: u32,
    pub burst: u32,
    /// Per client address, for what needs no valid key: failed
    /// authentications and the unauthenticated routes.
    pub address_per_second: u32,
    pub address_burst: u32,
}

/// Protection against slow and numerous clients.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpLimits {
    /// Time for a request's head to arrive.
    pub client_request_timeout: Duration,
    /// Time for a whole request body to arrive, once its handler reads it.
    pub body_timeout: Duration,
    pub keep_alive: Duration,
    /// Open connections per worker thread; beyond it, accepting pauses.
    pub max_connections: usize,
}

#[derive(Debug, Clone)]
pub struct Settings {
    /// None: run the embedded PostgreSQL of `data_dir`.
    pub database_url: Option<String>,
    /// Where migrations and their session advisory lock go, past any
    /// transaction-mode pooler; None: `database_url`.
    pub database_direct_url: Option<String>,
    /// Diesel's named prepared statements. A transaction-mode pooler without
    /// prepared-statement support (PgBouncer before 1.21) would run one
    /// client's statement for another: off there, every statement unnamed.
    pub prepared_statements: bool,
    pub bind_addr: String,
    pub pool_size: u32,
    pub statement_timeout: Duration,
    pub lock_timeout: Duration,
    pub idle_in_transaction_timeout: Duration,
    pub lease_timeout: Duration,
    pub retention: Duration,
    pub rate_limit: RateLimitConfig,
    pub http: HttpLimits,
    pub completer: CompleterConfig,
    pub reconcile: ReconcileConfig,
    pub reaper: WorkerSettings,
    pub outbound_webhooks: OutboundWebhookConfig,
    pub gateway: GatewayKind,
    #[cfg(feature = "simulated")]
    pub simulated_gateway: SimulatedGatewaySettings,
    pub stripe: StripeSettings,
    pub data_dir: PathBuf,
    /// HTTP worker threads; 0 means one per core.
    pub http_workers: usize,
    /// Where riders' browsers reach this server (the gateway sends them back
    /// here after authenticating); None: the address it binds.
    pub public_base_url: Option<String>,
}

/// Loads `.env` (if there is one) into the environment, under what the
/// environment already sets. Done before the command line is parsed too, so
/// that flags with an environment name read `.env` like every setting.
pub fn load_dotenv() -> anyhow::Result<()> {
    match dotenvy::dotenv() {
        Ok(_) => Ok(()),
        Err(err) if err.not_found() => Ok(()),
        Err(err) => Err(err).context("cannot read .env"),
    }
}

/// The defaults `docs/OPERATIONS.md` and `.env.example` state, stated once.
impl Default for Settings {
    fn default() -> Self {
        Settings {
            database_url: None,
            database_direct_url: None,
            prepared_statements: true,
            bind_addr: "127.0.0.1:8080".to_owned(),
            pool_size: 10,
            statement_timeout: Duration::from_secs(5),
            lock_timeout: Duration::from_secs(2),
            idle_in_transaction_timeout: Duration::from_secs(10),
            lease_timeout: Duration::from_secs(30),
            retention: Duration::from_secs(48 * 3600),
            rate_limit: RateLimitConfig {
                per_second: 100,
                burst: 200,
                address_per_second: 20,
                address_burst: 100,
            },
            http: HttpLimits {
                client_request_timeout: Duration::from_secs(5),
                body_timeout: Duration::from_secs(10),
                keep_alive: Duration::from_secs(15),
                max_connections: 10_000,
            },
            completer: CompleterConfig {
                enabled: true,
                interval: Duration::from_secs(5),
                max_attempts: 10,
                charge_deadline: Duration::from_secs(12 * 3600),
            },
            reconcile: ReconcileConfig {
                enabled: true,
                interval: Duration::from_secs(60),
                search_lag: Duration::from_secs(120),
                orphan_grace: Duration::from_secs(600),
                window: Duration::from_secs(48 * 3600),
            },
            reaper: WorkerSettings {
                enabled: true,
                interval: Duration::from_secs(4 * 3600),
            },
            outbound_webhooks: OutboundWebhookConfig {
                enabled: true,
                interval: Duration::from_secs(1),
                receipts: None,
                allow_loopback: false,
                retry_schedule: [0, 5, 300, 1800, 7200, 18000, 36000, 36000]
                    .map(Duration::from_secs)
                    .to_vec(),
                timeout: Duration::from_secs(15),
                disable_after: Duration::from_secs(5 * 24 * 3600),
                retention: Duration::from_secs(30 * 24 * 3600),
            },
            gateway: GatewayKind::DEFAULT.unwrap_or(GatewayKind::Stripe),
            #[cfg(feature = "simulated")]
            simulated_gateway: SimulatedGatewaySettings::default(),
            stripe: StripeSettings::default(),
            data_dir: PathBuf::from(".ridepay"),
            http_workers: 0,
            public_base_url: None,
        }
    }
}

impl Settings {
    /// Reads `.env` (if present) and then the environment, over the defaults.
    pub fn from_env() -> anyhow::Result<Settings> {
        load_dotenv()?;
        let settings = Settings::read(&Source::environment())?;
        settings.validate()?;
        Ok(settings)
    }

    /// The settings `source` names, over the defaults.
    fn read(source: &Source) -> anyhow::Result<Settings> {
        let d = Settings::default();
        Ok(Settings {
            database_url: source.text("DATABASE_URL")?,
            database_direct_url: source.text("DATABASE_DIRECT_URL")?,
            prepared_statements: source
                .switch("DATABASE_PREPARED_STATEMENTS", d.prepared_statements)?,
            bind_addr: source.var("BIND_ADDR", d.bind_addr)?,
            pool_size: source.var("DATABASE_POOL_SIZE", d.pool_size)?,
            statement_timeout: source
                .millis("DATABASE_STATEMENT_TIMEOUT_MS", d.statement_timeout)?,
            lock_timeout: source.millis("DATABASE_LOCK_TIMEOUT_MS", d.lock_timeout)?,
            idle_in_transaction_timeout: source.millis(
                "DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS",
                d.idle_in_transaction_timeout,
            )?,
            lease_timeout: source.secs("IDEMPOTENCY_LEASE_SECS", d.lease_timeout)?,
            retention: source.hours("IDEMPOTENCY_RETENTION_HOURS", d.retention)?,
            rate_limit: RateLimitConfig {
                per_second: source.var("RATE_LIMIT_PER_SECOND", d.rate_limit.per_second)?,
                burst: source.var("RATE_LIMIT_BURST", d.rate_limit.burst)?,
                address_per_second: source.var(
                    "RATE_LIMIT_ADDRESS_PER_SECOND",
                    d.rate_limit.address_per_second,
                )?,
                address_burst: source
                    .var("RATE_LIMIT_ADDRESS_BURST", d.rate_limit.address_burst)?,
            },
            http: HttpLimits {
                client_request_timeout: source.millis(
                    "HTTP_CLIENT_REQUEST_TIMEOUT_MS",
                    d.http.client_request_timeout,
                )?,
                body_timeout: source.millis("HTTP_BODY_TIMEOUT_MS", d.http.body_timeout)?,
                keep_alive: source.secs("HTTP_KEEP_ALIVE_SECS", d.http.keep_alive)?,
                max_connections: source.var("HTTP_MAX_CONNECTIONS", d.http.max_connections)?,
            },
            completer: CompleterConfig {
                enabled: source.var("COMPLETER_ENABLED", d.completer.enabled)?,
                interval: source.secs("COMPLETER_INTERVAL_SECS", d.completer.interval)?,
                max_attempts: source.var("COMPLETER_MAX_ATTEMPTS", d.completer.max_attempts)?,
                charge_deadline: source.hours(
                    "COMPLETER_CHARGE_DEADLINE_HOURS",
                    d.completer.charge_deadline,
                )?,
            },
            reconcile: ReconcileConfig {
                enabled: source.var("RECONCILE_ENABLED", d.reconcile.enabled)?,
                interval: source.secs("RECONCILE_INTERVAL_SECS", d.reconcile.interval)?,
                search_lag: source.secs("RECONCILE_SEARCH_LAG_SECS", d.reconcile.search_lag)?,
                orphan_grace: source
                    .secs("RECONCILE_ORPHAN_GRACE_SECS", d.reconcile.orphan_grace)?,
                window: source.hours("RECONCILE_WINDOW_HOURS", d.reconcile.window)?,
            },
            reaper: WorkerSettings {
                enabled: source.var("REAPER_ENABLED", d.reaper.enabled)?,
                interval: source.secs("REAPER_INTERVAL_SECS", d.reaper.interval)?,
            },
            outbound_webhooks: OutboundWebhookConfig {
                enabled: source.var("OUTBOX_ENABLED", d.outbound_webhooks.enabled)?,
                interval: source.secs("OUTBOX_INTERVAL_SECS", d.outbound_webhooks.interval)?,
                receipts: receipt_destination(
                    source.text("RECEIPT_WEBHOOK_URL")?,
                    source.text("RECEIPT_WEBHOOK_SECRET")?,
                )?,
                allow_loopback: source.switch(
                    "OUTBOUND_WEBHOOK_ALLOW_LOOPBACK",
                    d.outbound_webhooks.allow_loopback,
                )?,
                retry_schedule: match source.text("OUTBOUND_WEBHOOK_RETRY_SCHEDULE_SECS")? {
                    Some(text) => retry_schedule(&text)?,
                    None => d.outbound_webhooks.retry_schedule,
                },
                timeout: source
                    .secs("OUTBOUND_WEBHOOK_TIMEOUT_SECS", d.outbound_webhooks.timeout)?,
                disable_after: source.secs(
                    "OUTBOUND_WEBHOOK_DISABLE_AFTER_SECS",
                    d.outbound_webhooks.disable_after,
                )?,
                retention: source.days(
                    "OUTBOUND_WEBHOOK_RETENTION_DAYS",
                    d.outbound_webhooks.retention,
                )?,
            },
            gateway: match (source.text("GATEWAY")?, GatewayKind::DEFAULT) {
                (None, None) => bail!(
                    "GATEWAY must be set: this build has no simulated gateway (built without \
                     the `simulated` feature), so set GATEWAY=stripe"
                ),
                (_, default) => source.var("GATEWAY", default.unwrap_or(GatewayKind::Stripe))?,
            },
            #[cfg(feature = "simulated")]
            simulated_gateway: SimulatedGatewaySettings {
                latency: source
                    .millis("SIMULATED_GATEWAY_LATENCY_MS", d.simulated_gateway.latency)?,
                fail_rate: source.rate("SIMULATED_GATEWAY_FAIL_RATE")?,
                lost_response_rate: source.rate("SIMULATED_GATEWAY_LOST_RESPONSE_RATE")?,
                rate_limit_rate: source.rate("SIMULATED_GATEWAY_RATE_LIMIT_RATE")?,
                saved_error_rate: source.rate("SIMULATED_GATEWAY_SAVED_ERROR_RATE")?,
                search_lag: source.millis(
                    "SIMULATED_GATEWAY_SEARCH_LAG_MS",
                    d.simulated_gateway.search_lag,
                )?,
                // Seconds after its first call; unset, keys are kept.
                forget_keys: match source.text("SIMULATED_GATEWAY_FORGET_KEYS")? {
                    Some(_) => Some(source.secs("SIMULATED_GATEWAY_FORGET_KEYS", Duration::ZERO)?),
                    None => None,
                },
                authorization_ttl: source.secs(
                    "SIMULATED_GATEWAY_AUTHORIZATION_TTL_SECS",
                    d.simulated_gateway.authorization_ttl,
                )?,
                extended_authorization_ttl: source.secs(
                    "SIMULATED_GATEWAY_EXTENDED_AUTHORIZATION_TTL_SECS",
                    d.simulated_gateway.extended_authorization_ttl,
                )?,
                events_enabled: source.var(
                    "SIMULATED_GATEWAY_EVENTS_ENABLED",
                    d.simulated_gateway.events_enabled,
                )?,
            },
            public_base_url: source.text("PUBLIC_BASE_URL")?,
            stripe: StripeSettings {
                api_key: source.text("STRIPE_API_KEY")?.map(ApiKey::new),
                api_base: source.var("STRIPE_API_BASE", d.stripe.api_base)?,
                timeout: source.millis("STRIPE_TIMEOUT_MS", d.stripe.timeout)?,
                connect_timeout: source
                    .millis("STRIPE_CONNECT_TIMEOUT_MS", d.stripe.connect_timeout)?,
                webhook_secret: source.text("STRIPE_WEBHOOK_SECRET")?.map(ApiKey::new),
            },
            data_dir: source.var("RIDEPAY_DATA_DIR", d.data_dir)?,
            http_workers: source.var("HTTP_WORKERS", d.http_workers)?,
        })
    }

    /// Settings for tests and tools: the defaults on a given database, on a
    /// free port, with two HTTP workers, no rate limits and the background
    /// workers off (tests switch them on where they are the subject, and
    /// then on short intervals).
    pub fn for_database(database_url: &str) -> Settings {
        let d = Settings::default();
        Settings {
            database_url: Some(database_url.to_owned()),
            bind_addr: "127.0.0.1:0".to_owned(),
            rate_limit: RateLimitConfig {
                per_second: 0,
                burst: 0,
                address_per_second: 0,
                address_burst: 0,
            },
            completer: CompleterConfig {
                enabled: false,
                interval: Duration::from_millis(200),
                ..d.completer
            },
            reconcile: ReconcileConfig {
                enabled: false,
                interval: Duration::from_millis(200),
                ..d.reconcile
            },
            reaper: WorkerSettings {
                enabled: false,
                interval: Duration::from_secs(3600),
            },
            outbound_webhooks: OutboundWebhookConfig {
                enabled: false,
                interval: Duration::from_millis(100),
                allow_loopback: true,
                ..d.outbound_webhooks
            },
            http_workers: 2,
            ..d
        }
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        if self.pool_size == 0 {
            bail!("DATABASE_POOL_SIZE must be at least 1");
        }
        if self.lease_timeout < Duration::from_secs(1) {
            bail!("IDEMPOTENCY_LEASE_SECS must be at least 1");
        }
        if self.completer.max_attempts < 1 {
            bail!("COMPLETER_MAX_ATTEMPTS must be at least 1");
        }
        // A client key reused after its row is reaped derives the same
        // gateway keys: Stripe must have forgotten them by then (24 hours),
        // or it would answer with the earlier request's payment.
        if self.retention < Duration::from_secs(25 * 3600) {
            bail!(
                "IDEMPOTENCY_RETENTION_HOURS must be at least 25, so that a reused key never \
                 meets a payment the gateway still remembers"
            );
        }
        if self.reconcile.window < Duration::from_secs(3600) {
            bail!("RECONCILE_WINDOW_HOURS must be at least 1");
        }
        if self.completer.charge_deadline >= Duration::from_secs(24 * 3600) {
            bail!(
                "COMPLETER_CHARGE_DEADLINE_HOURS must be under 24: payment gateways forget \
                 idempotency keys after 24 hours"
            );
        }
        for (name, interval) in [
            ("COMPLETER_INTERVAL_SECS", self.completer.interval),
            ("RECONCILE_INTERVAL_SECS", self.reconcile.interval),
            ("REAPER_INTERVAL_SECS", self.reaper.interval),
            ("OUTBOX_INTERVAL_SECS", self.outbound_webhooks.interval),
            (
                "OUTBOUND_WEBHOOK_TIMEOUT_SECS",
                self.outbound_webhooks.timeout,
            ),
        ] {
            if interval.is_zero() {
                bail!("{name} must be at least 1");
            }
        }
        // Each running worker may hold a connection; requests need the rest.
        let workers = [
            self.completer.enabled,
            self.reconcile.enabled,
            self.reaper.enabled,
            self.outbound_webhooks.enabled,
        ]
        .into_iter()
        .filter(|enabled| *enabled)
        .count() as u32;
        if self.pool_size < workers + 1 {
            bail!(
                "DATABASE_POOL_SIZE={} leaves no connection for requests while {workers} \
                 background workers run; use at least {}",
                self.pool_size,
                workers + 2
            );
        }
        use std::net::ToSocketAddrs;
        if self
            .bind_addr
            .to_socket_addrs()
            .map_or(true, |mut addresses| addresses.next().is_none())
        {
            bail!(
                "BIND_ADDR={:?} is not an address to listen on: give host:port, such as \
                 127.0.0.1:8080 (port 0 picks a free port)",
                self.bind_addr
            );
        }
        for (name, url) in [
            ("DATABASE_URL", &self.database_url),
            ("DATABASE_DIRECT_URL", &self.database_direct_url),
        ] {
            let Some(url) = url else { continue };
            conninfo::Conninfo::parse(url).map_err(|refused| {
                anyhow::anyhow!(
                    "{name} is not a connection string libpq accepts (a postgres:// URL, \
                     several hosts and query parameters included, or keyword=value pairs): \
                     {refused}"
                )
            })?;
        }
        if self.database_direct_url.is_some() && self.database_url.is_none() {
            bail!("DATABASE_DIRECT_URL needs DATABASE_URL: the embedded PostgreSQL has no pooler");
        }
        if let Some(url) = &self.public_base_url {
            check_url("PUBLIC_BASE_URL", url, &["http", "https"])?;
        }
        if let Some(receipts) = &self.outbound_webhooks.receipts {
            outbound_url("RECEIPT_WEBHOOK_URL", &receipts.url)?;
            webhook_secret("RECEIPT_WEBHOOK_SECRET", receipts.secret.expose())?;
        }
        if self.gateway == GatewayKind::Stripe {
            outbound_url("STRIPE_API_BASE", &self.stripe.api_base)?;
            self.validate_stripe()?;
        }
        Ok(())
    }

    fn validate_stripe(&self) -> anyhow::Result<()> {
        let stripe = &self.stripe;
        if stripe.api_key.is_none() {
            bail!("GATEWAY=stripe needs STRIPE_API_KEY (an sk_test_... key to start with)");
        }
        if stripe.timeout.is_zero() || stripe.connect_timeout.is_zero() {
            bail!("STRIPE_TIMEOUT_MS and STRIPE_CONNECT_TIMEOUT_MS must be at least 1");
        }
        // A lease that expires while its holder still waits on Stripe lets a
        // second worker charge concurrently under the same derived key (Stripe
        // answers it 409); twice the worst call leaves room for the phases
        // around it.
        let worst_call = stripe.connect_timeout + stripe.timeout;
        if self.lease_timeout < worst_call * 2 {
            bail!(
                "IDEMPOTENCY_LEASE_SECS ({}s) must be at least twice STRIPE_CONNECT_TIMEOUT_MS + \
                 STRIPE_TIMEOUT_MS ({} ms), so that a lease outlives the Stripe call it covers",
                self.lease_timeout.as_secs(),
                worst_call.as_millis()
            );
        }
        Ok(())
    }
}

/// A URL that parses and has one of `schemes`; the message never shows the
/// URL itself, which may hold a password.
fn check_url(name: &str, raw: &str, schemes: &[&str]) -> anyhow::Result<()> {
    let url = url::Url::parse(raw).with_context(|| format!("{name} is not a valid URL"))?;
    if !schemes.contains(&url.scheme()) {
        bail!(
            "{name} must be a {} URL, not {}://...",
            schemes.join(" or "),
            url.scheme()
        );
    }
    if url.host_str().is_none_or(str::is_empty) {
        bail!("{name} has no host");
    }
    Ok(())
}

/// A URL ridepay sends to: see [`crate::http_client::check_url`]. The message
/// never shows the URL itself, which may hold a password.
fn outbound_url(name: &str, raw: &str) -> anyhow::Result<()> {
    crate::http_client::check_url(raw).map_err(|problem| anyhow::anyhow!("{name} {problem}"))
}

/// `RECEIPT_WEBHOOK_URL` and `RECEIPT_WEBHOOK_SECRET`: both, or neither.
fn receipt_destination(
    url: Option<String>,
    secret: Option<String>,
) -> anyhow::Result<Option<ReceiptDestination>> {
    match (url, secret) {
        (None, None) => Ok(None),
        (Some(url), Some(secret)) => Ok(Some(ReceiptDestination {
            url,
            secret: ApiKey::new(secret),
        })),
        (Some(_), None) => bail!(
            "RECEIPT_WEBHOOK_URL needs RECEIPT_WEBHOOK_SECRET: receipts are signed like every \
             webhook (whsec_ and the base64 of 24 to 64 random bytes)"
        ),
        (None, Some(_)) => bail!("RECEIPT_WEBHOOK_SECRET is set without RECEIPT_WEBHOOK_URL"),
    }
}

/// A Standard Webhooks secret: `whsec_` and the base64 of 24 to 64 bytes.
fn webhook_secret(name: &str, secret: &str) -> anyhow::Result<()> {
    use base64::Engine;
    let key = secret
        .strip_prefix("whsec_")
        .and_then(|key| base64::engine::general_purpose::STANDARD.decode(key).ok());
    match key {
        Some(key) if (24..=64).contains(&key.len()) => Ok(()),
        _ => bail!("{name} must be whsec_ and the base64 of 24 to 64 random bytes"),
    }
}

/// `OUTBOUND_WEBHOOK_RETRY_SCHEDULE_SECS`: seconds, comma-separated, at
/// least one attempt.
fn retry_schedule(text: &str) -> anyhow::Result<Vec<Duration>> {
    let schedule = text
        .split(',')
        .map(|secs| secs.trim().parse::<u64>().map(Duration::from_secs))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| {
            anyhow::anyhow!(
                "OUTBOUND_WEBHOOK_RETRY_SCHEDULE_SECS must be seconds separated by commas, \
                 such as 0,5,300"
            )
        })?;
    if schedule.is_empty() || schedule.len() > 20 {
        bail!("OUTBOUND_WEBHOOK_RETRY_SCHEDULE_SECS must name 1 to 20 attempts");
    }
    Ok(schedule)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stripe_settings() -> Settings {
        let mut settings = Settings::for_database("postgres://localhost/ridepay");
        settings.gateway = GatewayKind::Stripe;
        settings.stripe.api_key = Some(ApiKey::new("sk_test_51SecretSecretSecret"));
        settings
    }

    /// `.env.example` is the default build's, with the simulated gateway.
    #[test]
    #[cfg(feature = "simulated")]
    fn env_example_states_exactly_the_defaults() {
        let example =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/.env.example")).unwrap();
        let values: std::collections::HashMap<&str, &str> = example
            .lines()
            .filter(|line| !line.starts_with('#'))
            .filter_map(|line| line.split_once('='))
            .collect();
        let lookup = |name: &str| Ok(values.get(name).map(|value| value.to_string()));
        let read = Settings::read(&Source::new(&lookup)).unwrap();
        assert_eq!(format!("{read:?}"), format!("{:?}", Settings::default()));
        assert!(values.len() > 30, "{} variables", values.len());
    }

    #[test]
    fn debug_output_never_shows_the_stripe_key() {
        let shown = format!("{:?}", stripe_settings());
        assert!(!shown.contains("SecretSecret"), "{shown}");
        assert!(shown.contains("ApiKey(sk_test_****)"), "{shown}");
        assert_eq!(format!("{:?}", ApiKey::new("leaky")), "ApiKey(****)");
    }

    /// Read as the default build reads (a build without the simulated
    /// gateway needs `GATEWAY` besides).
    #[test]
    #[cfg(feature = "simulated")]
    fn receipts_need_a_url_and_a_secret_together() {
        let read = |vars: &[(&str, &str)]| {
            let lookup = |name: &str| {
                Ok(vars
                    .iter()
                    .find(|(var, _)| *var == name)
                    .map(|(_, value)| value.to_string()))
            };
            Settings::read(&Source::new(&lookup)).and_then(|settings| {
                settings.validate()?;
                Ok(settings.outbound_webhooks.receipts)
            })
        };
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let url = "https://receipts.example/hook";
        assert_eq!(read(&[]).unwrap(), None);
        assert_eq!(
            read(&[
                ("RECEIPT_WEBHOOK_URL", url),
                ("RECEIPT_WEBHOOK_SECRET", secret)
            ])
            .unwrap(),
            Some(ReceiptDestination {
                url: url.to_owned(),
                secret: ApiKey::new(secret),
            })
        );
        for (vars, refused) in [
            (
                &[("RECEIPT_WEBHOOK_URL", url)][..],
                "RECEIPT_WEBHOOK_URL needs RECEIPT_WEBHOOK_SECRET",
            ),
            (
                &[("RECEIPT_WEBHOOK_SECRET", secret)],
                "RECEIPT_WEBHOOK_SECRET is set without RECEIPT_WEBHOOK_URL",
            ),
            (
                &[
                    ("RECEIPT_WEBHOOK_URL", url),
                    ("RECEIPT_WEBHOOK_SECRET", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
                ],
                "RECEIPT_WEBHOOK_SECRET must be whsec_",
            ),
            (
                &[
                    ("RECEIPT_WEBHOOK_URL", "http://10.1.2.3/receipts"),
                    ("RECEIPT_WEBHOOK_SECRET", secret),
                ],
                "RECEIPT_WEBHOOK_URL must be https://",
            ),
        ] {
            let err = read(vars).unwrap_err().to_string();
            assert!(err.contains(refused), "{err}");
        }
    }

    #[test]
    fn stripe_needs_an_api_key() {
        let mut settings = stripe_settings();
        assert!(settings.validate().is_ok());
        settings.stripe.api_key = None;
        let err = settings.validate().unwrap_err().to_string();
        assert!(err.contains("STRIPE_API_KEY"), "{err}");
    }

    #[test]
    fn a_lease_shorter_than_two_stripe_calls_is_refused() {
        let mut settings = stripe_settings();
        settings.lease_timeout = Duration::from_secs(25);
        let err = settings.validate().unwrap_err().to_string();
        assert!(
            err.contains("IDEMPOTENCY_LEASE_SECS") && err.contains("STRIPE_TIMEOUT_MS"),
            "{err}"
        );
        settings.lease_timeout = Duration::from_secs(26);
        assert!(settings.validate().is_ok());
    }
}
