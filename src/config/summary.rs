//! The one-line summary of the effective configuration logged at start-up,
//! with every secret masked.

use super::conninfo;
use super::mask::mask_url;
use super::{masked_stripe_key, GatewayKind, Settings};

impl Settings {
    pub fn summary(&self) -> String {
        let on_off = |enabled: bool, every: std::time::Duration| {
            if enabled {
                format!("every {}s", every.as_secs_f64())
            } else {
                "off".to_owned()
            }
        };
        let gateway = match self.gateway.kind {
            #[cfg(feature = "simulated")]
            GatewayKind::Simulated => format!(
                "simulated(latency={}ms fail={} lost={} rate_limited={})",
                self.gateway.simulated.latency.as_millis(),
                self.gateway.simulated.fail_rate,
                self.gateway.simulated.lost_response_rate,
                self.gateway.simulated.rate_limit_rate
            ),
            GatewayKind::Stripe => format!(
                "stripe(base={} key={} timeout={}ms connect={}ms)",
                self.gateway.stripe.api_base,
                self.gateway
                    .stripe
                    .api_key
                    .as_ref()
                    .map_or_else(|| "none".to_owned(), masked_stripe_key),
                self.gateway.stripe.timeout.as_millis(),
                self.gateway.stripe.connect_timeout.as_millis()
            ),
        };
        format!(
            "config: bind={} database={}{} pool={} prepared_statements={} lease={}s \
             retention={}h gateway={} completer={} reconcile={} reaper={} outbox={} \
             receipts={} stripe_webhooks={}",
            self.server.bind_addr,
            self.database
                .url
                .as_deref()
                .map(|url| format!("[{}]", conninfo::mask(url)))
                .unwrap_or_else(|| format!("embedded({})", self.database.data_dir.display())),
            self.database
                .direct_url
                .as_deref()
                .map(|url| format!(" direct=[{}]", conninfo::mask(url)))
                .unwrap_or_default(),
            self.database.pool_size,
            if self.database.prepared_statements {
                "on"
            } else {
                "off"
            },
            self.keys.lease_timeout.as_secs(),
            self.keys.retention.as_secs() / 3600,
            gateway,
            on_off(self.completer.enabled, self.completer.interval),
            on_off(self.reconcile.enabled, self.reconcile.interval),
            on_off(self.reaper.enabled, self.reaper.interval),
            on_off(self.user_webhooks.enabled, self.user_webhooks.interval),
            self.user_webhooks
                .receipts
                .as_ref()
                .map(|receipts| mask_url(&receipts.url))
                .unwrap_or_else(|| "off".to_owned()),
            // Whether events are accepted, never the secret.
            if self.gateway.stripe.webhook_secret.is_some() {
                "signed"
            } else {
                "refused"
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_masked() {
        let on = |url: &str| {
            let mut settings = Settings::default();
            settings.database.url = Some(url.to_owned());
            settings
        };
        let mut settings =
            on("postgres://app:hunter2@db.internal:5432/ridepay?sslmode=require&password=hunter3");
        settings.gateway.kind = GatewayKind::Stripe;
        settings.gateway.stripe.api_key = Some("sk_test_51Hsecretsecret".to_owned().into());
        settings.user_webhooks.receipts = Some(crate::config::ReceiptDestination {
            url: "https://user:pw@hooks.example/r?token=tok_receipts".to_owned(),
            secret: "whsec_c2lnbmluZ3NpZ25pbmdzaWduaW5nc2lnbmluZw=="
                .to_owned()
                .into(),
        });
        settings.gateway.stripe.webhook_secret = Some("whsec_topsecretsigning".to_owned().into());
        settings.database.direct_url = Some("host=db.internal password=hunter5".to_owned());
        let summary = settings.summary();
        assert!(!summary.contains("hunter2"), "{summary}");
        assert!(!summary.contains("hunter3"), "{summary}");
        assert!(!summary.contains("hunter5"), "{summary}");
        assert!(
            summary.contains("direct=[password=*** host=db.internal]"),
            "{summary}"
        );
        assert!(!summary.contains("tok_receipts"), "{summary}");
        assert!(!summary.contains("secretsecret"), "{summary}");
        assert!(!summary.contains(":pw@"), "{summary}");
        assert!(!summary.contains("topsecret"), "{summary}");
        assert!(!summary.contains("c2lnbmluZ"), "{summary}");
        assert!(summary.contains("stripe_webhooks=signed"), "{summary}");
        // libpq's reading: the query's password is the one that counts.
        assert!(
            summary.contains(
                "database=[user=app password=*** dbname=ridepay host=db.internal port=5432 \
                 sslmode=require]"
            ),
            "{summary}"
        );
        assert!(summary.contains("key=sk_test_**** "), "{summary}");
        let pairs = on("host=a,b password='hunter 4' dbname=x").summary();
        assert!(
            pairs.contains("database=[password=*** dbname=x host=a,b]"),
            "{pairs}"
        );
    }
}
