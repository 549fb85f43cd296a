//! A webhook destination on the wire: its JSON, and where it lives.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::idempotency::StoredResponse;

/// A destination of the user's events.
#[derive(Serialize, ToSchema)]
#[schema(as = WebhookEndpoint)]
pub struct DestinationJson<'a> {
    pub id: i64,
    /// Where events are POSTed.
    pub url: &'a str,
    /// The event types it receives: types, families (`ride.*`) or `*`.
    pub events: Vec<&'a str>,
    #[schema(pattern = "^(enabled|disabled)$")]
    pub status: &'a str,
    /// Why it was disabled (a 410, failing for days).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<&'a str>,
    /// The signing secret, `whsec_...`: in the answer that registers the
    /// destination, and nowhere else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<&'a str>,
    pub created_at: DateTime<Utc>,
}

impl DestinationJson<'_> {
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a webhook endpoint always serialises")
    }
}

/// Where a destination lives.
pub fn location(id: i64) -> String {
    format!("/api/webhook_endpoints/{id}")
}

/// The answer to a destination registered: 201 at its location.
pub fn created(endpoint: &DestinationJson) -> StoredResponse {
    super::answer::created(location(endpoint.id), endpoint.body())
}
