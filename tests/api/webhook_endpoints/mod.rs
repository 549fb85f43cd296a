//! Users' webhooks: their destinations (`/api/webhook_endpoints`), the
//! events of their rides, and the sender that delivers them at least once,
//! signed per the Standard Webhooks specification, which its own library
//! verifies; and the installation's receipts destination.

mod destinations;
mod driver_events;
mod events;
pub(crate) mod receipts;
mod sender;

use std::time::Duration;

use ridepay::config::Settings;
use serde_json::{json, Value};
use standardwebhooks::Webhook;

use crate::common::app::{spawn_app_with, Answer, TestApp, TestUser};
use crate::common::receiver::{Received, Receiver};
use crate::common::wait::eventually;

/// The server with the sender of webhooks on, on a schedule `secs` apart
/// (the first attempt at once).
pub(super) async fn app_sending(
    schedule: &[u64],
    configure: impl FnOnce(&mut Settings),
) -> TestApp {
    let schedule: Vec<Duration> = schedule.iter().copied().map(Duration::from_secs).collect();
    spawn_app_with(|settings| {
        settings.user_webhooks.enabled = true;
        settings.user_webhooks.retry_schedule = schedule;
        configure(settings);
    })
    .await
}

/// `POST /api/webhook_endpoints` as `user`.
pub(super) async fn register_as(app: &TestApp, user: &TestUser, key: &str, body: Value) -> Answer {
    app.post_as(user, "/api/webhook_endpoints", key, &body.to_string())
        .await
}

/// A destination of `events` at the receiver; its JSON (with the secret).
pub(super) async fn register(app: &TestApp, receiver: &Receiver, events: Value) -> Value {
    let key = format!("register {}", receiver.url);
    let body = json!({"url": receiver.url, "events": events});
    let answer = app.post_webhook_endpoint(&key, &body).await;
    answer.assert_status(201);
    answer.json()
}

/// Waits until the receiver has `count` requests; returns them.
pub(super) async fn wait_for(receiver: &Receiver, count: usize) -> Vec<Received> {
    let arrived = eventually(Duration::from_secs(30), || {
        receiver.received().len() >= count
    })
    .await;
    assert!(arrived, "{} of {count} arrived", receiver.received().len());
    receiver.received()
}

/// The request as the specification's own library verifies it.
pub(super) fn assert_verified(secret: &str, received: &Received) {
    Webhook::new(secret)
        .unwrap()
        .verify(&received.body, &received.headers)
        .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&received.body)));
    assert_eq!(received.json()["id"], received.header("webhook-id"));
    assert!(!received.header("webhook-id").contains('.'));
}
