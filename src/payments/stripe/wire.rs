//! Stripe's JSON as the client reads it. The fake gateway writes its own
//! (`doubles::fake_stripe::wire`), so a misreading of Stripe's format cannot
//! hide on both sides.

use std::collections::BTreeMap;

use serde::Deserialize;

/// A refund object (`"object": "refund"`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RefundObject {
    pub id: String,
    pub amount: i64,
    /// Nullable in Stripe's specification, like `payment_intent`, `status`
    /// and `metadata`.
    pub charge: Option<String>,
    #[serde(default)]
    pub payment_intent: Option<String>,
    pub currency: String,
    /// `pending`, `requires_action`, `succeeded`, `failed` or `canceled`.
    pub status: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// A page of a list endpoint.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ListObject<T> {
    pub data: Vec<T>,
    pub has_more: bool,
}

/// The query of a list: `limit`, and each of `optional` that is given.
pub fn page_query(
    limit: u8,
    optional: impl IntoIterator<Item = (&'static str, Option<String>)>,
) -> Vec<(&'static str, String)> {
    let mut query = vec![("limit", limit.to_string())];
    query.extend(
        optional
            .into_iter()
            .filter_map(|(name, value)| Some((name, value?))),
    );
    query
}

/// Every Stripe error answer: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorObject,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ErrorObject {
    /// `card_error`, `invalid_request_error`, `idempotency_error`, `api_error`, ...
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub decline_code: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    /// The PaymentIntent, on a decline of one (Stripe sends the object).
    #[serde(default)]
    pub payment_intent: Option<serde_json::Value>,
}

/// A field the specification makes nullable, read as empty when null.
pub fn null_as_empty<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}
