//! Users' webhooks and the operator's receipts: the sender of events
//! (`OUTBOX_*`), where and how it sends (`OUTBOUND_WEBHOOK_*`), and the
//! installation's own destination (`RECEIPT_WEBHOOK_*`).

use std::time::Duration;

use anyhow::bail;
use secrecy::{ExposeSecret, SecretString};

use super::source::Source;

#[derive(Debug, Clone)]
pub struct UserWebhookSettings {
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

/// The installation's own destination of receipts (`RECEIPT_WEBHOOK_URL`
/// and `RECEIPT_WEBHOOK_SECRET`, set together).
#[derive(Debug, Clone)]
pub struct ReceiptDestination {
    /// The operator's: `https://`, or `http://` to a loopback host, and
    /// held to no address policy (users' destinations are).
    pub url: String,
    /// `whsec_` and the base64 of its key.
    pub secret: SecretString,
}

impl Default for UserWebhookSettings {
    fn default() -> Self {
        UserWebhookSettings {
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
        }
    }
}

impl UserWebhookSettings {
    pub(super) fn read(source: &Source) -> anyhow::Result<Self> {
        let d = UserWebhookSettings::default();
        Ok(UserWebhookSettings {
            enabled: source.var("OUTBOX_ENABLED", d.enabled)?,
            interval: source.secs("OUTBOX_INTERVAL_SECS", d.interval)?,
            receipts: receipt_destination(
                source.text("RECEIPT_WEBHOOK_URL")?,
                source.text("RECEIPT_WEBHOOK_SECRET")?,
            )?,
            allow_loopback: source.switch("OUTBOUND_WEBHOOK_ALLOW_LOOPBACK", d.allow_loopback)?,
            retry_schedule: match source.text("OUTBOUND_WEBHOOK_RETRY_SCHEDULE_SECS")? {
                Some(text) => retry_schedule(&text)?,
                None => d.retry_schedule,
            },
            timeout: source.secs("OUTBOUND_WEBHOOK_TIMEOUT_SECS", d.timeout)?,
            disable_after: source.secs("OUTBOUND_WEBHOOK_DISABLE_AFTER_SECS", d.disable_after)?,
            retention: source.days("OUTBOUND_WEBHOOK_RETENTION_DAYS", d.retention)?,
        })
    }

    pub(super) fn check(&self) -> anyhow::Result<()> {
        for (name, interval) in [
            ("OUTBOX_INTERVAL_SECS", self.interval),
            ("OUTBOUND_WEBHOOK_TIMEOUT_SECS", self.timeout),
        ] {
            if interval.is_zero() {
                bail!("{name} must be at least 1");
            }
        }
        if let Some(receipts) = &self.receipts {
            crate::http_client::check_url(&receipts.url)
                .map_err(|problem| anyhow::anyhow!("RECEIPT_WEBHOOK_URL {problem}"))?;
            webhook_secret("RECEIPT_WEBHOOK_SECRET", receipts.secret.expose_secret())?;
        }
        Ok(())
    }
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
            secret: secret.into(),
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

    fn read(vars: &[(&str, &str)]) -> anyhow::Result<Option<ReceiptDestination>> {
        let lookup = |name: &str| {
            Ok(vars
                .iter()
                .find(|(var, _)| *var == name)
                .map(|(_, value)| value.to_string()))
        };
        let settings = UserWebhookSettings::read(&Source::new(&lookup))?;
        settings.check()?;
        Ok(settings.receipts)
    }

    #[test]
    fn receipts_need_a_url_and_a_secret_together() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let url = "https://receipts.example/hook";
        assert!(read(&[]).unwrap().is_none());
        let receipts = read(&[
            ("RECEIPT_WEBHOOK_URL", url),
            ("RECEIPT_WEBHOOK_SECRET", secret),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            (receipts.url.as_str(), receipts.secret.expose_secret()),
            (url, secret)
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
}
