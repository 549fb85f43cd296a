//! The request bodies as sent. Every field is optional here so that all
//! missing fields are reported at once (each endpoint's `request.rs` checks
//! them into its always-valid parameters); unknown and duplicate fields are
//! refused by serde. The schemas say what is required.

use serde::Deserialize;
use utoipa::ToSchema;

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

pub use RideBody as RideRequest;

/// The body of `POST /api/rides/{id}/complete`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CompleteRideRequest)]
pub struct CompleteBody {
    /// The final fare (minor units): captured; above the hold, the hold is
    /// raised first.
    #[schema(required, nullable = false, value_type = i64, minimum = 50, maximum = 1000000, example = 1800)]
    pub final_amount_cents: Option<i64>,
}

pub use CompleteBody as CompleteRideRequest;

/// The body of `POST /api/rides/{id}/cancel`; an empty body or `{}`
/// cancels without a fee.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CancelRideRequest)]
pub struct CancelBody {
    /// Captured from the hold (minor units); at most what it covers; 0, the
    /// default, releases the hold.
    #[schema(nullable = false, value_type = i64, minimum = 0, maximum = 1000000, example = 500)]
    pub cancellation_fee_cents: Option<i64>,
}

pub use CancelBody as CancelRideRequest;

/// The body of `POST /api/rides/{id}/tip`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TipRideRequest)]
pub struct TipBody {
    /// The tip (minor units): on an `authorized` ride, captured with the
    /// final fare; on a `captured` one, charged at once to the saved card.
    #[schema(required, nullable = false, value_type = i64, minimum = 1, maximum = 100000, example = 300)]
    pub amount_cents: Option<i64>,
}

pub use TipBody as TipRideRequest;

/// The body of `POST /api/rides/{id}/refunds`; an empty body refunds all
/// that remains.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RefundRequest)]
pub struct RefundBody {
    /// Minor units (cents); default: all that remains of the charge.
    #[schema(nullable = false, value_type = i64, minimum = 1, maximum = 1000000, example = 500)]
    pub amount_cents: Option<i64>,
    /// `requested_by_customer`, `duplicate` or `fraudulent`.
    #[schema(nullable = false, value_type = String, pattern = "^(requested_by_customer|duplicate|fraudulent)$")]
    pub reason: Option<String>,
}

pub use RefundBody as RefundRequest;

/// The body of `POST /api/webhook_endpoints`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = WebhookEndpointRequest)]
pub struct WebhookEndpointBody {
    /// Where events are POSTed: `https://` to a public address.
    #[schema(required, nullable = false, value_type = String, max_length = 2048,
        example = "https://rides.example.com/ridepay-events")]
    pub url: Option<String>,
    /// Event types (`ride.captured`), families (`ride.*`, `refund.*`) or `*`.
    #[schema(required, nullable = false, value_type = Vec<String>, example = json!(["ride.*", "refund.*"]))]
    pub events: Option<Vec<String>>,
}

pub use WebhookEndpointBody as WebhookEndpointRequest;

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

pub use WebhookEndpointPatchBody as WebhookEndpointUpdate;

/// The body of a POST whose path says it all (the actions on a webhook
/// destination): empty, or `{}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmptyBody {}
