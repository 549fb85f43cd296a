//! Settings, read from the environment (and `.env`) with the names and
//! defaults of `docs/OPERATIONS.md` (Configuration); `.env.example` lists
//! every one. One file per concern, each holding its settings, their
//! defaults, how they are read and what is checked of them; here, what
//! joins them, and the checks that span two concerns.

use anyhow::{bail, Context};

pub mod conninfo;
mod database;
mod drivers;
mod gateway;
mod keys;
mod mask;
mod reconciliation;
mod server;
mod source;
mod summary;
mod user_webhooks;

use source::Source;

pub use database::DatabaseSettings;
pub use drivers::{DriverContext, DriverSettings};
pub use gateway::{
    masked_stripe_key, GatewayKind, GatewaySettings, StripeSettings, STRIPE_API_BASE,
};
pub use keys::{CompleterSettings, KeySettings, WorkerSettings};
pub use mask::mask_url;
pub use reconciliation::ReconcileSettings;
#[cfg(feature = "simulated")]
pub use ridepay_doubles::SimulatedGatewaySettings;
pub use server::{HttpLimits, RateLimitSettings, ServerSettings};
#[cfg(feature = "simulated")]
pub use source::check_rate;
pub use user_webhooks::{ReceiptDestination, UserWebhookSettings};

#[derive(Debug, Clone)]
pub struct Settings {
    pub database: DatabaseSettings,
    pub server: ServerSettings,
    pub keys: KeySettings,
    pub completer: CompleterSettings,
    pub reaper: WorkerSettings,
    pub reconcile: ReconcileSettings,
    pub user_webhooks: UserWebhookSettings,
    pub gateway: GatewaySettings,
    pub drivers: DriverSettings,
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

/// The defaults `docs/OPERATIONS.md` and `.env.example` state, each stated
/// once, beside its setting.
impl Default for Settings {
    fn default() -> Self {
        Settings {
            database: DatabaseSettings::default(),
            server: ServerSettings::default(),
            keys: KeySettings::default(),
            completer: CompleterSettings::default(),
            reaper: WorkerSettings::reaper(),
            reconcile: ReconcileSettings::default(),
            user_webhooks: UserWebhookSettings::default(),
            gateway: GatewaySettings::default(),
            drivers: DriverSettings::default(),
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
        Ok(Settings {
            database: DatabaseSettings::read(source)?,
            server: ServerSettings::read(source)?,
            keys: KeySettings::read(source)?,
            completer: CompleterSettings::read(source)?,
            reaper: WorkerSettings::read_reaper(source)?,
            reconcile: ReconcileSettings::read(source)?,
            user_webhooks: UserWebhookSettings::read(source)?,
            gateway: GatewaySettings::read(source)?,
            drivers: DriverSettings::read(source)?,
        })
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        self.database.check()?;
        self.server.check()?;
        self.keys.check()?;
        self.completer.check()?;
        self.reconcile.check()?;
        self.user_webhooks.check()?;
        self.gateway.check()?;
        self.drivers.check()?;
        for (name, interval) in [
            ("COMPLETER_INTERVAL_SECS", self.completer.interval),
            ("RECONCILE_INTERVAL_SECS", self.reconcile.interval),
            ("REAPER_INTERVAL_SECS", self.reaper.interval),
        ] {
            if interval.is_zero() {
                bail!("{name} must be at least 1");
            }
        }
        self.check_pool()?;
        self.check_lease()
    }

    /// Each running worker may hold a connection; requests need the rest.
    fn check_pool(&self) -> anyhow::Result<()> {
        let workers = [
            self.completer.enabled,
            self.reconcile.enabled,
            self.reaper.enabled,
            self.user_webhooks.enabled,
        ]
        .into_iter()
        .filter(|enabled| *enabled)
        .count() as u32;
        if self.database.pool_size < workers + 1 {
            bail!(
                "DATABASE_POOL_SIZE={} leaves no connection for requests while {workers} \
                 background workers run; use at least {}",
                self.database.pool_size,
                workers + 2
            );
        }
        Ok(())
    }

    /// A lease that expires while its holder still waits on Stripe lets a
    /// second worker charge concurrently under the same gateway key (Stripe
    /// answers it 409); twice the worst call leaves room for the steps
    /// around it.
    fn check_lease(&self) -> anyhow::Result<()> {
        let Some(worst_call) = self.gateway.worst_call() else {
            return Ok(());
        };
        if self.keys.lease_timeout < worst_call * 2 {
            bail!(
                "IDEMPOTENCY_LEASE_SECS ({}s) must be at least twice STRIPE_CONNECT_TIMEOUT_MS + \
                 STRIPE_TIMEOUT_MS ({} ms), so that a lease outlives the Stripe call it covers",
                self.keys.lease_timeout.as_secs(),
                worst_call.as_millis()
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

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
    fn a_lease_shorter_than_two_stripe_calls_is_refused() {
        let mut settings = Settings {
            gateway: gateway::tests::stripe(),
            ..Settings::default()
        };
        settings.database.url = Some("postgres://localhost/ridepay".to_owned());
        settings.keys.lease_timeout = Duration::from_secs(25);
        let err = settings.validate().unwrap_err().to_string();
        assert!(
            err.contains("IDEMPOTENCY_LEASE_SECS") && err.contains("STRIPE_TIMEOUT_MS"),
            "{err}"
        );
        settings.keys.lease_timeout = Duration::from_secs(26);
        assert!(settings.validate().is_ok());
    }
}
