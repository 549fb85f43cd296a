//! Signed webhook events for the charges and refunds the fake makes, sent to
//! `--webhook-url` as Stripe sends them: a JSON event, `Stripe-Signature`
//! over it, redelivered on failure.

use std::thread;
use std::time::Duration;

use serde_json::json;

use super::server::State;
use crate::payments::stripe::signature;
use crate::payments::stripe::wire::ChargeObject;

/// Where events go, and the secret that signs them.
#[derive(Clone)]
pub struct WebhookTarget {
    pub url: String,
    pub secret: String,
}

/// Stripe retries for days; the fake, a few times, enough for a receiver
/// that answers 503 while the effect's own request is still in flight.
const ATTEMPTS: u32 = 10;
const RETRY_DELAY: Duration = Duration::from_millis(300);

/// Sends the event on a thread of its own, after the effect committed.
pub fn send(state: &State, event_type: &str, object: &ChargeObject) {
    let Some(target) = state.webhook_target() else {
        return;
    };
    let event = json!({
        "id": format!("evt_fake_{}", uuid::Uuid::new_v4().simple()),
        "object": "event",
        "type": event_type,
        "created": chrono::Utc::now().timestamp(),
        "data": { "object": object },
    });
    let body = serde_json::to_vec(&event).expect("events serialise");
    let spawned = thread::Builder::new()
        .name("fake-gateway-webhook".to_owned())
        .spawn(move || deliver(&target, &body));
    if let Err(err) = spawned {
        log::warn!("fake gateway cannot start a webhook thread: {err}");
    }
}

fn deliver(target: &WebhookTarget, body: &[u8]) {
    let agent = crate::outbound::agent(Duration::from_secs(10), Duration::from_secs(10));
    for _ in 0..ATTEMPTS {
        // Each delivery is signed afresh, so a late retry is not stale.
        let header = signature::sign(&target.secret, chrono::Utc::now().timestamp(), body);
        match agent
            .post(&target.url)
            .header("Content-Type", "application/json")
            .header("Stripe-Signature", &header)
            .send(body)
        {
            Ok(response) if response.status().is_success() => return,
            Ok(response) => log::debug!("webhook answered {}", response.status()),
            Err(err) => log::debug!("webhook delivery failed: {err}"),
        }
        thread::sleep(RETRY_DELAY);
    }
    log::warn!(
        "fake gateway gave up delivering a webhook to {}",
        target.url
    );
}
