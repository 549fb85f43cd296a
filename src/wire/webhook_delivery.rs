//! A webhook delivery on the wire: one event to one destination, and its
//! newest attempts.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::public_ids::DeliveryPublicId;

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = WebhookDelivery)]
pub struct DeliveryJson {
    #[schema(value_type = String, pattern = "^whdl_[a-z2-7]{29}$", example = "whdl_n4wdufasytljpz6ag5yo6oozavarw")]
    pub id: DeliveryPublicId,
    /// The event's id: the `webhook-id` of every attempt.
    pub event_id: String,
    pub event_type: String,
    /// `pending` (attempts left), `succeeded` or `failed` (none left).
    #[schema(pattern = "^(pending|succeeded|failed)$")]
    pub status: String,
    /// While `pending`: when the next attempt is due.
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// Every attempt made, of which `attempts` shows the newest ten.
    pub attempt_count: i64,
    /// The newest ten attempts at most, oldest first.
    pub attempts: Vec<AttemptJson>,
    pub created_at: DateTime<Utc>,
}

/// One attempt: when, what the receiver answered (or why there was no
/// answer), and how long it took.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = WebhookAttempt)]
pub struct AttemptJson {
    pub attempted_at: DateTime<Utc>,
    pub http_status: Option<i16>,
    pub error: Option<String>,
    pub duration_ms: i32,
}
