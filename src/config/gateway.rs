//! The payment gateway: which one (`GATEWAY`), Stripe's account and
//! timeouts (`STRIPE_*`), and the simulated gateway's knobs
//! (`SIMULATED_GATEWAY_*`, in a build with the `simulated` feature).

use std::str::FromStr;
use std::time::Duration;

use anyhow::bail;
use secrecy::{ExposeSecret, SecretString};

use super::source::Source;
#[cfg(feature = "simulated")]
use ridepay_doubles::SimulatedGatewaySettings;

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

pub const STRIPE_API_BASE: &str = "https://api.stripe.com";

/// The Stripe client's account and timeouts.
#[derive(Debug, Clone)]
pub struct StripeSettings {
    /// Required with `GATEWAY=stripe`.
    pub api_key: Option<SecretString>,
    pub api_base: String,
    /// The whole call: connecting, sending, waiting, reading the answer.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Signs the events sent to `POST /webhooks/stripe` (`whsec_...`).
    pub webhook_secret: Option<SecretString>,
    /// Signs the Connect events (drivers' accounts) sent to
    /// `POST /webhooks/stripe/connect`: a Connect endpoint has its own.
    pub connect_webhook_secret: Option<SecretString>,
}

impl Default for StripeSettings {
    fn default() -> Self {
        StripeSettings {
            webhook_secret: None,
            connect_webhook_secret: None,
            api_key: None,
            api_base: STRIPE_API_BASE.to_owned(),
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(3),
        }
    }
}

/// `sk_test_****` or `sk_live_****`: which account, without the key.
pub fn masked_stripe_key(key: &SecretString) -> String {
    let prefix = key
        .expose_secret()
        .get(..8)
        .filter(|prefix| prefix.starts_with("sk_"))
        .unwrap_or("");
    format!("{prefix}****")
}

#[derive(Debug, Clone)]
pub struct GatewaySettings {
    pub kind: GatewayKind,
    pub stripe: StripeSettings,
    #[cfg(feature = "simulated")]
    pub simulated: SimulatedGatewaySettings,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        GatewaySettings {
            kind: GatewayKind::DEFAULT.unwrap_or(GatewayKind::Stripe),
            stripe: StripeSettings::default(),
            #[cfg(feature = "simulated")]
            simulated: SimulatedGatewaySettings::default(),
        }
    }
}

impl GatewaySettings {
    /// Whether calls go to the gateway's live mode: a live Stripe key
    /// (secret or restricted).
    pub fn is_live(&self) -> bool {
        self.kind == GatewayKind::Stripe
            && self.stripe.api_key.as_ref().is_some_and(|key| {
                let key = key.expose_secret();
                key.starts_with("sk_live_") || key.starts_with("rk_live_")
            })
    }

    pub(super) fn read(source: &Source) -> anyhow::Result<Self> {
        let d = GatewaySettings::default();
        Ok(GatewaySettings {
            kind: match (source.text("GATEWAY")?, GatewayKind::DEFAULT) {
                (None, None) => bail!(
                    "GATEWAY must be set: this build has no simulated gateway (built without \
                     the `simulated` feature), so set GATEWAY=stripe"
                ),
                (_, default) => source.var("GATEWAY", default.unwrap_or(GatewayKind::Stripe))?,
            },
            stripe: StripeSettings {
                api_key: source.text("STRIPE_API_KEY")?.map(SecretString::from),
                api_base: source.var("STRIPE_API_BASE", d.stripe.api_base)?,
                timeout: source.millis("STRIPE_TIMEOUT_MS", d.stripe.timeout)?,
                connect_timeout: source
                    .millis("STRIPE_CONNECT_TIMEOUT_MS", d.stripe.connect_timeout)?,
                webhook_secret: source
                    .text("STRIPE_WEBHOOK_SECRET")?
                    .map(SecretString::from),
                connect_webhook_secret: source
                    .text("STRIPE_CONNECT_WEBHOOK_SECRET")?
                    .map(SecretString::from),
            },
            #[cfg(feature = "simulated")]
            simulated: read_simulated(source, d.simulated)?,
        })
    }

    pub(super) fn check(&self) -> anyhow::Result<()> {
        if self.kind != GatewayKind::Stripe {
            return Ok(());
        }
        let stripe = &self.stripe;
        crate::http_client::check_url(&stripe.api_base)
            .map_err(|problem| anyhow::anyhow!("STRIPE_API_BASE {problem}"))?;
        if stripe.api_key.is_none() {
            bail!("GATEWAY=stripe needs STRIPE_API_KEY (an sk_test_... key to start with)");
        }
        if stripe.timeout.is_zero() || stripe.connect_timeout.is_zero() {
            bail!("STRIPE_TIMEOUT_MS and STRIPE_CONNECT_TIMEOUT_MS must be at least 1");
        }
        Ok(())
    }

    /// The longest a call to the gateway may take, connecting included.
    pub fn worst_call(&self) -> Option<Duration> {
        (self.kind == GatewayKind::Stripe)
            .then(|| self.stripe.connect_timeout + self.stripe.timeout)
    }
}

#[cfg(feature = "simulated")]
fn read_simulated(
    source: &Source,
    d: SimulatedGatewaySettings,
) -> anyhow::Result<SimulatedGatewaySettings> {
    Ok(SimulatedGatewaySettings {
        latency: source.millis("SIMULATED_GATEWAY_LATENCY_MS", d.latency)?,
        fail_rate: source.rate("SIMULATED_GATEWAY_FAIL_RATE")?,
        lost_response_rate: source.rate("SIMULATED_GATEWAY_LOST_RESPONSE_RATE")?,
        rate_limit_rate: source.rate("SIMULATED_GATEWAY_RATE_LIMIT_RATE")?,
        saved_error_rate: source.rate("SIMULATED_GATEWAY_SAVED_ERROR_RATE")?,
        search_lag: source.millis("SIMULATED_GATEWAY_SEARCH_LAG_MS", d.search_lag)?,
        // Seconds after its first call; unset, keys are kept.
        forget_keys: match source.text("SIMULATED_GATEWAY_FORGET_KEYS")? {
            Some(_) => Some(source.secs("SIMULATED_GATEWAY_FORGET_KEYS", Duration::ZERO)?),
            None => None,
        },
        authorization_ttl: source.secs(
            "SIMULATED_GATEWAY_AUTHORIZATION_TTL_SECS",
            d.authorization_ttl,
        )?,
        extended_authorization_ttl: source.secs(
            "SIMULATED_GATEWAY_EXTENDED_AUTHORIZATION_TTL_SECS",
            d.extended_authorization_ttl,
        )?,
        transfer_available: source.secs(
            "SIMULATED_GATEWAY_TRANSFER_AVAILABLE_SECS",
            d.transfer_available,
        )?,
        events_enabled: source.var("SIMULATED_GATEWAY_EVENTS_ENABLED", d.events_enabled)?,
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::config) fn stripe() -> GatewaySettings {
        let mut settings = GatewaySettings {
            kind: GatewayKind::Stripe,
            ..GatewaySettings::default()
        };
        settings.stripe.api_key = Some("sk_test_51SecretSecretSecret".to_owned().into());
        settings
    }

    #[test]
    fn debug_output_never_shows_the_stripe_key() {
        let settings = stripe();
        let shown = format!("{settings:?}");
        assert!(!shown.contains("SecretSecret"), "{shown}");
        assert_eq!(
            masked_stripe_key(settings.stripe.api_key.as_ref().unwrap()),
            "sk_test_****"
        );
        assert_eq!(masked_stripe_key(&"leaky".to_owned().into()), "****");
    }

    #[test]
    fn stripe_needs_an_api_key() {
        let mut settings = stripe();
        assert!(settings.check().is_ok());
        settings.stripe.api_key = None;
        let err = settings.check().unwrap_err().to_string();
        assert!(err.contains("STRIPE_API_KEY"), "{err}");
    }
}
