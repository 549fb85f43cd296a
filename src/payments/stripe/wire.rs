//! Stripe's JSON, as far as ridepay reads it: the client parses it and the
//! fake gateway writes it, so the two cannot drift apart.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A charge object (`"object": "charge"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChargeObject {
    pub id: String,
    pub object: String,
    pub amount: i64,
    pub currency: String,
    /// `succeeded`, `pending` or `failed`.
    pub status: String,
    #[serde(default)]
    pub paid: bool,
    #[serde(default)]
    pub captured: bool,
    #[serde(default)]
    pub failure_code: Option<String>,
    #[serde(default)]
    pub failure_message: Option<String>,
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub created: i64,
    #[serde(default)]
    pub amount_refunded: i64,
    #[serde(default)]
    pub refunded: bool,
    #[serde(default)]
    pub description: Option<String>,
    /// The card charged (Stripe expands it to an object).
    #[serde(default)]
    pub source: Option<SourceObject>,
    #[serde(default)]
    pub customer: Option<String>,
    /// Whether the charge is disputed.
    #[serde(default)]
    pub disputed: bool,
    /// The charge's refunds: Stripe includes them when asked with
    /// `expand[]=refunds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refunds: Option<ListObject<RefundObject>>,
}

/// A refund object (`"object": "refund"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefundObject {
    pub id: String,
    pub object: String,
    pub amount: i64,
    /// Nullable in Stripe's specification, like `status` and `metadata`.
    pub charge: Option<String>,
    pub currency: String,
    /// `pending`, `requires_action`, `succeeded`, `failed` or `canceled`.
    pub status: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub metadata: BTreeMap<String, String>,
    #[serde(default)]
    pub created: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceObject {
    pub id: String,
    pub object: String,
}

/// A page of a list endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListObject<T> {
    pub object: String,
    pub data: Vec<T>,
    pub has_more: bool,
    pub url: String,
}

/// Every Stripe error answer: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorObject,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// `card_error`, `invalid_request_error`, `idempotency_error`, `api_error`, ...
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decline_code: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    /// The failed charge, on a decline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub charge: Option<String>,
    /// The PaymentIntent, on a decline of one (Stripe sends the object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_intent: Option<serde_json::Value>,
}

/// A field the specification makes nullable, read as empty when null.
fn null_as_empty<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}
