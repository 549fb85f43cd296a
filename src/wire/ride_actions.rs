//! What is done to a ride: completing, cancelling and tipping it, their
//! bodies and their answer. As every body on the wire, each field is
//! optional here, so that all missing fields are reported at once, and
//! unknown and duplicate fields are refused by serde; the schemas say what
//! is required.

use serde::Deserialize;
use utoipa::ToSchema;

use super::ride::RideJson;
use crate::idempotency::StoredResponse;

/// The answer to a ride completed, cancelled or tipped: 200, the ride as it
/// is.
pub fn settled(ride: &RideJson) -> StoredResponse {
    super::answer::ok(ride.body())
}

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
