//! The events a destination may subscribe to, and their bodies. They are
//! staged by the database's triggers (`migrations/..._outbound_webhooks`,
//! `..._driver_events`), in the transaction of the change each reports,
//! wherever ridepay makes it, with the rows the change left; each attempt
//! renders its body from those rows as the API renders its answers, so
//! that an event carries the ride byte for byte as `GET /api/rides/{id}`
//! showed it then to the destination's user: a platform user's
//! destinations see a ride's driver with their pay, every other the
//! driver's id.

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Bool, Bytea, Jsonb, Nullable, Text, Timestamptz};
use diesel::QueryableByName;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::drivers::model::Driver;
use crate::drivers::pay::PayRows;
use crate::drivers::reads::{self, Balance};
use crate::refunds::model::Refund;
use crate::rides::model::Ride;
use crate::rides::reads::platform_view;
use crate::wire::driver::DriverJson;
use crate::wire::event::EventJson;
use crate::wire::refund::RefundEventJson;
use crate::wire::ride::RideJson;

/// Every event type, as the triggers name them.
pub const EVENT_TYPES: [&str; 15] = [
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
    "ride.driver_assigned",
    "ride.driver_paid",
    "ride.driver_transfer_failed",
    "driver.updated",
];

/// What a subscription may name: an event type, a family (`ride.*`,
/// `refund.*`, `driver.*`), or `*`.
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
    /// Whether the destination is a platform user's, which sees a ride's
    /// driver with their pay.
    #[diesel(sql_type = Bool)]
    pub for_platform: bool,
}

/// The rows a ride's event staged: the ride as the change left it, its
/// driver's pay (none before it had a driver, or before events carried
/// it), and the refund part a refund's event reports.
#[derive(Deserialize)]
struct Snapshot {
    ride: Ride,
    #[serde(default)]
    ride_driver: Option<PayRows>,
    refund: Option<Refund>,
}

/// The rows a driver's event staged: the driver and their balances.
#[derive(Deserialize)]
struct DriverSnapshot {
    driver: Driver,
    balances: Vec<Balance>,
}

#[derive(Serialize)]
struct DriverData {
    driver: DriverJson,
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
        if self.event_type.starts_with("driver.") {
            let rows = DriverSnapshot::deserialize(snapshot)?;
            let balances = rows.balances.into_iter().map(Balance::json).collect();
            let driver = reads::shown(rows.driver, None, balances);
            return Ok(self.json(DriverData { driver }));
        }
        let mut rows = Snapshot::deserialize(snapshot)?;
        rows.ride.driver = rows.ride_driver.as_ref().map(|pay| pay.id);
        let ride = match (self.for_platform, rows.ride_driver) {
            (true, Some(driver)) => platform_view(&rows.ride, Some(driver.json())),
            _ => rows.ride.json(),
        };
        let refund = rows
            .refund
            .as_ref()
            .map(|refund| refund.event_json(rows.ride.public_id));
        Ok(self.json(RideData { ride, refund }))
    }

    fn json(&self, data: impl Serialize) -> Vec<u8> {
        EventJson::new(
            &self.id,
            &self.event_type,
            self.staged_at,
            self.sequence,
            data,
        )
        .body()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_event_types_families_or_everything() {
        for good in [
            "*",
            "ride.*",
            "refund.*",
            "driver.*",
            "ride.captured",
            "refund.failed",
            "ride.driver_paid",
            "driver.updated",
        ] {
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
            "drivers.*",
            "driver.created",
        ] {
            assert!(!is_pattern(bad), "{bad}");
        }
    }
}
