//! The events a destination may subscribe to, and their bodies. They are
//! staged by the database's triggers (`migrations/..._outbound_webhooks`),
//! in the transaction of the change each reports, wherever ridepay makes
//! it, with the rows the change left; each attempt renders its body from
//! those rows as the API renders its answers, so that an event carries the
//! ride byte for byte as `GET /api/rides/{id}` showed it then.

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Bytea, Jsonb, Nullable, Text, Timestamptz};
use diesel::QueryableByName;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::refunds::model::Refund;
use crate::rides::model::Ride;
use crate::wire::event::EventJson;
use crate::wire::refund::RefundEventJson;
use crate::wire::ride::RideJson;

/// Every event type, as the triggers name them.
pub const EVENT_TYPES: [&str; 11] = [
    "ride.authorized",
    "ride.requires_action",
    "ride.captured",
    "ride.canceled",
    "ride.expired",
    "ride.payment_declined",
    "ride.payment_failed",
    "ride.disputed",
    "ride.tipped",
    "refund.succeeded",
    "refund.failed",
];

/// What a subscription may name: an event type, a family (`ride.*`,
/// `refund.*`), or `*`.
pub fn is_pattern(pattern: &str) -> bool {
    match pattern.strip_suffix(".*") {
        _ if pattern == "*" => true,
        Some(family) => EVENT_TYPES
            .iter()
            .any(|event| event.split('.').next() == Some(family)),
        None => EVENT_TYPES.contains(&pattern),
    }
}

/// An event as staged: what it is, and its body (an event about no ride:
/// a test event) or the rows of the change it reports.
#[derive(Debug, QueryableByName)]
pub struct Staged {
    #[diesel(sql_type = Text, column_name = event_id)]
    pub id: String,
    #[diesel(sql_type = Text)]
    pub event_type: String,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub sequence: Option<i64>,
    #[diesel(sql_type = Timestamptz)]
    pub staged_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Bytea>)]
    pub body: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<Jsonb>)]
    pub snapshot: Option<Value>,
}

/// The rows a ride's event staged: the ride as the change left it, and the
/// refund part a refund's event reports.
#[derive(Deserialize)]
struct Snapshot {
    ride: Ride,
    refund: Option<Refund>,
}

#[derive(Serialize)]
struct RideData<'a> {
    ride: RideJson<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    refund: Option<RefundEventJson<'a>>,
}

impl Staged {
    /// The body every attempt sends.
    pub fn body(&self) -> anyhow::Result<Vec<u8>> {
        if let Some(body) = &self.body {
            return Ok(body.clone());
        }
        let snapshot = self
            .snapshot
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("neither a body nor rows"))?;
        let rows = Snapshot::deserialize(snapshot)?;
        let data = RideData {
            ride: rows.ride.json(),
            refund: rows
                .refund
                .as_ref()
                .map(|refund| refund.event_json(rows.ride.public_id)),
        };
        let event = EventJson::new(
            &self.id,
            &self.event_type,
            self.staged_at,
            self.sequence,
            data,
        );
        Ok(event.body())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_event_types_families_or_everything() {
        for good in ["*", "ride.*", "refund.*", "ride.captured", "refund.failed"] {
            assert!(is_pattern(good), "{good}");
        }
        for bad in [
            "",
            "ride",
            "ride.",
            "rides.*",
            "ride.created",
            "*.captured",
            "ride.**",
        ] {
            assert!(!is_pattern(bad), "{bad}");
        }
    }
}
