//! A ride on the wire: its JSON, where it lives, and the answers that carry
//! it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::idempotency::StoredResponse;
use crate::public_ids::RidePublicId;
use ridepay_gateway::CaptureMethod;

/// The ride JSON of the contract.
#[derive(Serialize, ToSchema)]
#[schema(as = Ride)]
pub struct RideJson<'a> {
    #[schema(value_type = String, pattern = "^ride_[a-z2-7]{29}$", example = "ride_4be32blpsnwrwonxasv47asov3zzw")]
    pub id: RidePublicId,
    pub origin_lat: f64,
    pub origin_lon: f64,
    pub target_lat: f64,
    pub target_lon: f64,
    /// The upfront fare (minor units), which the hold covers.
    pub amount_cents: i64,
    pub currency: &'a str,
    /// `manual` (held, captured when the ride ends) or `automatic`.
    #[schema(value_type = String, pattern = "^(manual|automatic)$")]
    pub capture_method: CaptureMethod,
    #[schema(
        pattern = "^(pending|requires_action|processing|authorized|captured|canceled|expired|payment_declined|payment_failed|refunded|disputed)$"
    )]
    pub status: &'static str,
    /// The gateway's PaymentIntent, once it answered.
    pub payment_intent_id: Option<&'a str>,
    pub amount_authorized_cents: i64,
    pub amount_captured_cents: i64,
    pub amount_refunded_cents: i64,
    /// While `authorized`: what may be captured without asking the card
    /// again (more than `amount_authorized_cents` when the card allows
    /// overcapture); null otherwise.
    pub amount_capturable_max_cents: Option<i64>,
    /// While `authorized`: when the hold lapses (seven days after it was
    /// placed, up to 30 for an extended one); null otherwise.
    pub hold_expires_at: Option<DateTime<Utc>>,
    /// The rider's tip (minor units), 0 without one: on an `authorized`
    /// ride, captured with the final fare by the completion; on a captured
    /// one, paid by a PaymentIntent of its own and counted in
    /// `amount_captured_cents`. Cancelling a held ride drops it.
    pub tip_cents: i64,
    /// While `requires_action`: the gateway's next action in Stripe's shape
    /// (`{"type": "redirect_to_url", "redirect_to_url": {"url", "return_url"}}`)
    /// with the PaymentIntent's `client_secret` beside the type, for a
    /// browser to follow or an app to hand to Stripe's SDK.
    #[schema(value_type = Option<Object>)]
    pub next_action: Option<Value>,
    pub created_at: DateTime<Utc>,
    /// Once assigned: `{"id"}` for the rider; for the platform, with pay.
    pub driver: Option<super::driver::RideDriverView>,
}

/// While a ride is in one of these, its payment waits for the rider or the
/// bank, and it moves on by itself.
const WAITING: [&str; 2] = ["requires_action", "processing"];

impl RideJson<'_> {
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a ride always serialises")
    }
}

/// Where a ride lives.
pub fn location(id: RidePublicId) -> String {
    format!("/api/rides/{id}")
}

/// The answer to a ride asked for and paid: 201 at its location; a 202 for
/// a payment still waiting for the rider or the bank, which is the key's
/// final answer too.
pub fn created(ride: &RideJson) -> StoredResponse {
    if WAITING.contains(&ride.status) {
        return super::answer::accepted(location(ride.id), ride.body());
    }
    super::answer::created(location(ride.id), ride.body())
}

// The bodies as sent: every field optional, so that all missing fields are
// reported at once (each endpoint's parameters check them); unknown and
// duplicate fields refused by serde. Their schemas say what is required.

/// The body of `POST /api/rides`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RideRequest)]
pub struct RideBody {
    #[schema(required, nullable = false, value_type = f64, minimum = -90, maximum = 90, example = 37.77)]
    pub origin_lat: Option<f64>,
    #[schema(required, nullable = false, value_type = f64, minimum = -180, maximum = 180, example = -122.42)]
    pub origin_lon: Option<f64>,
    #[schema(required, nullable = false, value_type = f64, minimum = -90, maximum = 90, example = 37.80)]
    pub target_lat: Option<f64>,
    #[schema(required, nullable = false, value_type = f64, minimum = -180, maximum = 180, example = -122.27)]
    pub target_lon: Option<f64>,
    /// Minor units (cents).
    #[schema(required, nullable = false, value_type = i64, minimum = 50, maximum = 1000000, example = 2000)]
    pub amount_cents: Option<i64>,
    /// `usd` (the default), `eur` or `gbp`.
    #[schema(nullable = false, value_type = String, pattern = "^(usd|eur|gbp)$", example = "usd")]
    pub currency: Option<String>,
    /// A `pm_` id (Stripe's test ids such as `pm_card_visa` included);
    /// without it the user's saved card pays.
    #[schema(nullable = false, value_type = String, min_length = 4, max_length = 255,
        pattern = "^pm_[A-Za-z0-9_]{1,252}$", example = "pm_card_visa")]
    pub payment_method: Option<String>,
    /// `manual` (the default: hold the fare now, capture it when the ride
    /// ends) or `automatic` (charge now).
    #[schema(nullable = false, value_type = String, pattern = "^(manual|automatic)$", example = "manual")]
    pub capture_method: Option<String>,
}
