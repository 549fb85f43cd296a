//! The one-line summary of the effective configuration logged at start-up,
//! with every secret masked.

use super::conninfo;
use super::mask::mask_url;
use super::{ApiKey, GatewayKind, Settings};

impl Settings {
    pub fn summary(&self) -> String {
        let on_off = |enabled: bool, every: std::time::Duration| {
            if enabled {
                format!("every {}s", every.as_secs_f64())
            } else {
                "off".to_owned()
            }
        };
        let gateway = match self.gateway {
            #[cfg(feature = "simulated")]
            GatewayKind::Simulated => format!(
                "simulated(latency={}ms fail={} lost={} rate_limited={})",
                self.simulated_gateway.latency.as_millis(),
                self.simulated_gateway.fail_rate,
                self.simulated_gateway.lost_response_rate,
                self.simulated_gateway.rate_limit_rate
            ),
            GatewayKind::Stripe => format!(
                "stripe(base={} key={} timeout={}ms connect={}ms)",
                self.stripe.api_base,
                self.stripe
                    .api_key
                    .as_ref()
                    .map_or_else(|| "none".to_owned(), ApiKey::masked),
                self.stripe.timeout.as_millis(),
                self.stripe.connect_timeout.as_millis()
            ),
        };
        format!(
            "config: bind={} database={}{} pool={} prepared_statements={} lease={}s \
             retention={}h gateway={} completer={} reconcile={} reaper={} outbox={} \
             receipts={} stripe_webhooks={}",
            self.bind_addr,
            self.database_url
                .as_deref()
                .map(|url| format!("[{}]", conninfo::mask(url)))
                .unwrap_or_else(|| format!("embedded({})", self.data_dir.display())),
            self.database_direct_url
                .as_deref()
                .map(|url| format!(" direct=[{}]", conninfo::mask(url)))
                .unwrap_or_default(),
            self.pool_size,
            if self.prepared_statements {
                "on"
            } else {
                "off"
            },
            self.lease_timeout.as_secs(),
            self.retention.as_secs() / 3600,
            gateway,
            on_off(self.completer.enabled, self.completer.interval),
            on_off(self.reconcile.enabled, self.reconcile.interval),
            on_off(self.reaper.enabled, self.reaper.interval),
            on_off(
                self.outbound_webhooks.enabled,
                self.outbound_webhooks.interval
            ),
            self.outbound_webhooks
                .receipts
                .as_ref()
                .map(|receipts| mask_url(&receipts.url))
                .unwrap_or_else(|| "off".to_owned()),
            // Whether events are accepted, never the secret.
            if self.stripe.webhook_secret.is_some() {
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
        let mut settings = Settings::for_database(
            "postgres://app:hunter2@db.internal:5432/ridepay?sslmode=require&password=hunter3",
        );
        settings.gateway = GatewayKind::Stripe;
        settings.stripe.api_key = Some(ApiKey::new("sk_test_51Hsecretsecret"));
        settings.outbound_webhooks.receipts = Some(crate::config::ReceiptDestination {
            url: "https://user:pw@hooks.example/r?token=tok_receipts".to_owned(),
            secret: ApiKey::new("whsec_c2lnbmluZ3NpZ25pbmdzaWduaW5nc2lnbmluZw=="),
        });
        settings.stripe.webhook_secret = Some(ApiKey::new("whsec_topsecretsigning"));
        settings.database_direct_url = Some("host=db.internal password=hunter5".to_owned());
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
        let pairs = Settings::for_database("host=a,b password='hunter 4' dbname=x").summary();
        assert!(
            pairs.contains("database=[password=*** dbname=x host=a,b]"),
            "{pairs}"
        );
    }
}
