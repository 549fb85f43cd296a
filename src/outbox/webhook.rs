//! Delivery over HTTP with the Standard Webhooks headers.

use std::time::Duration;

use anyhow::{bail, Context};

pub struct WebhookClient {
    agent: ureq::Agent,
    url: String,
}

impl WebhookClient {
    pub fn new(url: String, timeout: Duration) -> anyhow::Result<Self> {
        crate::outbound::check_url(&url)
            .map_err(|problem| anyhow::anyhow!("RECEIPT_WEBHOOK_URL {problem}"))?;
        let agent = crate::outbound::agent(timeout, timeout);
        Ok(WebhookClient { agent, url })
    }

    /// POSTs `body`. `message_id` is the same on every redelivery of one job,
    /// so the receiver can drop duplicates.
    pub fn send(&self, message_id: &str, body: &[u8]) -> anyhow::Result<()> {
        let timestamp = chrono::Utc::now().timestamp().to_string();
        let response = self
            .agent
            .post(&self.url)
            .header("webhook-id", message_id)
            .header("webhook-timestamp", &timestamp)
            .header("content-type", "application/json")
            .send(body)
            .with_context(|| format!("delivering {message_id} to the receipt webhook"))?;
        // Only a 2xx is a delivery; a redirect is not followed, and not one.
        let status = response.status();
        if !status.is_success() {
            bail!("the receipt webhook answered {status} to {message_id}");
        }
        Ok(())
    }
}
