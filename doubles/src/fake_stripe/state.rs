//! What every connection of a fake Stripe shares: its configuration and
//! records, the keys in flight, where its events go;
//! and what a handler does with its connection.

use std::collections::HashSet;
use std::sync::Mutex;

use super::config::{FakeGatewayConfig, WebhookTarget};
use super::http::Response;
use crate::intents::IntentSettings;
use crate::records::RecordsPool;

/// What a handler does with the connection.
pub enum Reply {
    Answer(Response),
    /// Close without answering, as a lost response looks to the client.
    HangUp,
}

pub struct State {
    pub config: FakeGatewayConfig,
    pub pool: RecordsPool,
    /// Its PaymentIntents' authentication page is its own.
    pub intents: IntentSettings,
    /// Its account links' onboarding page is its own too.
    pub onboarding_page: String,
    pub in_flight: InFlight,
    /// Set at start (`--webhook-url`), or later by a test that learns the
    /// receiver's address only after the fake is running.
    pub(super) webhook: Mutex<Option<WebhookTarget>>,
}

impl State {
    pub fn webhook_target(&self) -> Option<WebhookTarget> {
        self.webhook.lock().expect("webhook target").clone()
    }
}

/// Idempotency keys whose request is being processed: a second request with
/// one of them gets Stripe's 409 instead of racing the first.
#[derive(Default)]
pub struct InFlight(Mutex<HashSet<String>>);

pub struct InFlightGuard<'a> {
    keys: &'a InFlight,
    key: String,
}

impl InFlight {
    pub fn enter(&self, key: &str) -> Option<InFlightGuard<'_>> {
        let fresh = self
            .0
            .lock()
            .expect("in-flight keys")
            .insert(key.to_owned());
        fresh.then(|| InFlightGuard {
            keys: self,
            key: key.to_owned(),
        })
    }
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.keys
            .0
            .lock()
            .expect("in-flight keys")
            .remove(&self.key);
    }
}
