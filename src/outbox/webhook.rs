//! Delivery over HTTP with the Standard Webhooks headers.

use std::time::Duration;

use anyhow::Context;

pub struct WebhookClient {
    agent: ureq::Agent,
    url: String,
}

impl WebhookClient {
    pub fn new(url: String, timeout: Duration) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .build()
            .into();
        WebhookClient { agent, url }
    }

    /// POSTs `body`. `message_id` is the same on every redelivery of one job,
    /// so the receiver can drop duplicates.
    pub fn send(&self, message_id: &str, body: &[u8]) -> anyhow::Result<()> {
        let timestamp = chrono::Utc::now().timestamp().to_string();
        self.agent
            .post(&self.url)
            .header("webhook-id", message_id)
            .header("webhook-timestamp", &timestamp)
            .header("content-type", "application/json")
            .send(body)
            .with_context(|| format!("delivering {message_id} to the receipt webhook"))?;
        Ok(())
    }
}
