//! A webhook destination on the wire: its JSON, and where it lives.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::idempotency::StoredResponse;
use crate::public_ids::DestinationPublicId;
use serde::Deserialize;

/// A destination of the user's events.
#[derive(Serialize, ToSchema)]
#[schema(as = WebhookEndpoint)]
pub struct DestinationJson<'a> {
    #[schema(value_type = String, pattern = "^whep_[a-z2-7]{29}$", example = "whep_dvpguhw534wllg33xqbbryb4gbo6m")]
    pub id: DestinationPublicId,
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
pub fn location(id: DestinationPublicId) -> String {
    format!("/api/webhook_endpoints/{id}")
}

/// The answer to a destination registered: 201 at its location.
pub fn created(endpoint: &DestinationJson) -> StoredResponse {
    super::answer::created(location(endpoint.id), endpoint.body())
}

// The bodies as sent: every field optional, so that all missing fields are
// reported at once (each endpoint's parameters check them); unknown and
// duplicate fields refused by serde. Their schemas say what is required.

/// The body of `POST /api/webhook_endpoints`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = WebhookEndpointRequest)]
pub struct WebhookEndpointBody {
    /// Where events are POSTed: `https://` to a public address.
    #[schema(required, nullable = false, value_type = String, max_length = 2048,
        example = "https://rides.example.com/ridepay-events")]
    pub url: Option<String>,
    /// Event types (`ride.captured`), families (`ride.*`, `refund.*`,
    /// `driver.*`) or `*`.
    #[schema(required, nullable = false, value_type = Vec<String>, example = json!(["ride.*", "refund.*"]))]
    pub events: Option<Vec<String>>,
}

/// The body of `PATCH /api/webhook_endpoints/{id}`: the fields to change.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = WebhookEndpointUpdate)]
pub struct WebhookEndpointPatchBody {
    #[schema(nullable = false, value_type = String, max_length = 2048)]
    pub url: Option<String>,
    #[schema(nullable = false, value_type = Vec<String>)]
    pub events: Option<Vec<String>>,
    /// `enabled` (a disabled destination re-enabled, its failures forgotten)
    /// or `disabled`.
    #[schema(nullable = false, value_type = String, pattern = "^(enabled|disabled)$")]
    pub status: Option<String>,
}

/// The body of a POST whose path says it all (the actions on a webhook
/// destination): empty, or `{}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmptyBody {}
