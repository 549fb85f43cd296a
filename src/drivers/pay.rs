//! What a ride's driver is owed, as the platform reads it: the entitlement
//! and the commission, by the same SQL that fixes them
//! (`ridepay_driver_entitlement`), and the transfers owed or made. The
//! database reads them (`ridepay_ride_driver`), for an answer or for the
//! event a change stages, and this renders them.

use std::collections::HashMap;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Jsonb};
use serde::Deserialize;
use serde_json::Value;

use crate::ids::RideId;
use crate::public_ids::DriverPublicId;
use crate::wire::driver::{RideDriverJson, TransferJson};

/// A ride's driver and their pay as `ridepay_ride_driver` reads them.
#[derive(Debug, Deserialize)]
pub struct PayRows {
    pub id: DriverPublicId,
    entitled_cents: i64,
    kept_cents: i64,
    transfers: Vec<TransferRow>,
}

/// A `transfers` row, of which the platform sees these columns.
#[derive(Debug, Deserialize)]
struct TransferRow {
    gateway_transfer_id: Option<String>,
    source_charge: String,
    amount_cents: i64,
    amount_reversed_cents: i64,
    netted_cents: i64,
    status: String,
    failure_reason: Option<String>,
}

impl PayRows {
    pub fn json(self) -> RideDriverJson {
        RideDriverJson {
            id: self.id,
            amount_cents: self.entitled_cents,
            platform_fee_cents: self.kept_cents - self.entitled_cents,
            transfers: self
                .transfers
                .into_iter()
                .map(|transfer| TransferJson {
                    id: transfer.gateway_transfer_id,
                    source_charge: transfer.source_charge,
                    amount_cents: transfer.amount_cents,
                    amount_reversed_cents: transfer.amount_reversed_cents,
                    netted_cents: transfer.netted_cents,
                    status: transfer.status,
                    failure_reason: transfer.failure_reason,
                })
                .collect(),
        }
    }
}

#[derive(QueryableByName)]
struct Read {
    #[diesel(sql_type = BigInt)]
    ride_id: RideId,
    #[diesel(sql_type = Jsonb)]
    pay: Value,
}

/// The drivers of those of `rides` that have one, and their pay, in one
/// statement.
pub fn of_rides(
    conn: &mut PgConnection,
    rides: &[RideId],
) -> QueryResult<HashMap<RideId, RideDriverJson>> {
    let ids: Vec<i64> = rides.iter().map(|ride| ride.0).collect();
    let read: Vec<Read> = diesel::sql_query(
        "SELECT ride_id, ridepay_ride_driver(ride_id) AS pay FROM ride_drivers \
         WHERE ride_id = ANY($1)",
    )
    .bind::<Array<BigInt>, _>(ids)
    .load(conn)?;
    read.into_iter()
        .map(|read| {
            let pay = PayRows::deserialize(read.pay)
                .map_err(|err| diesel::result::Error::DeserializationError(err.into()))?;
            Ok((read.ride_id, pay.json()))
        })
        .collect()
}

/// The ride's driver and their pay; `None` for a ride with no driver.
pub fn of_ride(conn: &mut PgConnection, ride_id: RideId) -> QueryResult<Option<RideDriverJson>> {
    Ok(of_rides(conn, &[ride_id])?.remove(&ride_id))
}
