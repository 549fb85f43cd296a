//! A refund on the wire: its JSON, where it lives, and the answer that
//! carries it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::idempotency::StoredResponse;
use crate::public_ids::{RefundPublicId, RidePublicId};

/// The refund JSON of the contract: a refund of (part of) a ride's charge.
#[derive(Serialize, ToSchema)]
#[schema(as = Refund)]
pub struct RefundJson<'a> {
    #[schema(value_type = String, pattern = "^rfnd_[a-z2-7]{29}$", example = "rfnd_dvrqcjyqr4p6v4pxx3xftntn2z45u")]
    pub id: RefundPublicId,
    #[schema(value_type = String, pattern = "^ride_[a-z2-7]{29}$", example = "ride_4be32blpsnwrwonxasv47asov3zzw")]
    pub ride_id: RidePublicId,
    pub amount_cents: i64,
    pub currency: &'a str,
    /// `requested_by_customer`, `duplicate`, `fraudulent`, or null.
    pub reason: Option<&'a str>,
    /// `pending` (its amount reserved until the gateway settles it),
    /// `succeeded`, `failed` or `canceled`.
    #[schema(pattern = "^(pending|succeeded|failed|canceled)$")]
    pub status: &'static str,
    /// The gateway's refund (of the first part), once made.
    pub gateway_refund_id: Option<&'a str>,
    /// What each PaymentIntent gives back: one part, or two when the
    /// refund is more than what remains of the fare (the fare's first,
    /// then the tip's). `status` is `pending` while any part is, and
    /// `failed` when a part was refused while another succeeded.
    pub parts: Vec<RefundPartJson<'a>>,
    pub created_at: DateTime<Utc>,
}

/// One PaymentIntent's part of a refund.
#[derive(Serialize, ToSchema)]
#[schema(as = RefundPart)]
pub struct RefundPartJson<'a> {
    /// The fare's PaymentIntent or the tip's (null for the charge of a ride
    /// paid through the Charges API).
    pub payment_intent_id: Option<&'a str>,
    pub amount_cents: i64,
    #[schema(pattern = "^(pending|succeeded|failed|canceled)$")]
    pub status: &'static str,
    pub gateway_refund_id: Option<&'a str>,
}

/// A refund as an event carries it: one part, under its refund's id.
#[derive(Serialize)]
pub struct RefundEventJson<'a> {
    pub id: RefundPublicId,
    pub ride_id: RidePublicId,
    pub amount_cents: i64,
    pub currency: &'a str,
    pub reason: Option<&'a str>,
    pub status: &'static str,
    pub payment_intent_id: Option<&'a str>,
    pub gateway_refund_id: Option<&'a str>,
    pub created_at: DateTime<Utc>,
}

impl RefundJson<'_> {
    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a refund always serialises")
    }
}

/// Where a refund lives.
pub fn location(ride_id: RidePublicId, id: RefundPublicId) -> String {
    format!("/api/rides/{ride_id}/refunds/{id}")
}

/// The answer to a refund made: 201 at its location.
pub fn created(refund: &RefundJson) -> StoredResponse {
    super::answer::created(location(refund.ride_id, refund.id), refund.body())
}

// The bodies as sent: every field optional, so that all missing fields are
// reported at once (each endpoint's parameters check them); unknown and
// duplicate fields refused by serde. Their schemas say what is required.

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
