//! What a ride's driver is owed, as the platform reads it: the entitlement
//! and the commission, by the same SQL that fixes them
//! (`ridepay_driver_entitlement`), and the transfers owed or made.

use diesel::prelude::*;
use diesel::sql_types::BigInt;

use crate::ids::RideId;
use crate::public_ids::DriverPublicId;
use crate::schema::{drivers, ride_drivers, transfers};
use crate::wire::driver::{RideDriverJson, TransferJson};

#[derive(QueryableByName)]
struct Totals {
    #[diesel(sql_type = BigInt)]
    entitled: i64,
    #[diesel(sql_type = BigInt)]
    kept: i64,
}

/// The ride's driver and their pay; `None` for a ride with no driver.
pub fn of_ride(conn: &mut PgConnection, ride_id: RideId) -> QueryResult<Option<RideDriverJson>> {
    let driver: Option<DriverPublicId> = ride_drivers::table
        .inner_join(drivers::table)
        .filter(ride_drivers::ride_id.eq(ride_id))
        .select(drivers::public_id)
        .first(conn)
        .optional()?;
    let Some(id) = driver else {
        return Ok(None);
    };
    let totals: Totals = diesel::sql_query(
        "SELECT coalesce(sum(ridepay_driver_entitlement(c.id, d.commission_bps)) \
                 FILTER (WHERE c.id IS NOT NULL), 0)::bigint \
             AS entitled, \
             (coalesce(sum(c.amount_cents), 0) - ridepay_refunded($1, r.payment_intent_id) \
              - CASE WHEN r.tip_payment_intent_id IS NULL THEN 0 \
                     ELSE ridepay_refunded($1, r.tip_payment_intent_id) END)::bigint AS kept \
         FROM rides r JOIN ride_drivers d ON d.ride_id = r.id \
         LEFT JOIN charges c ON c.ride_id = r.id \
         WHERE r.id = $1 GROUP BY r.id, r.payment_intent_id, r.tip_payment_intent_id",
    )
    .bind::<BigInt, _>(ride_id)
    .get_result(conn)?;
    let transfers = transfers::table
        .filter(transfers::ride_id.eq(ride_id))
        .order(transfers::id.asc())
        .select((
            transfers::gateway_transfer_id,
            transfers::source_charge,
            transfers::amount_cents,
            transfers::amount_reversed_cents,
            transfers::netted_cents,
            transfers::status,
            transfers::failure_reason,
        ))
        .load::<(
            Option<String>,
            String,
            i64,
            i64,
            i64,
            String,
            Option<String>,
        )>(conn)?
        .into_iter()
        .map(
            |(
                id,
                source_charge,
                amount_cents,
                amount_reversed_cents,
                netted_cents,
                status,
                failure_reason,
            )| {
                TransferJson {
                    id,
                    source_charge,
                    amount_cents,
                    amount_reversed_cents,
                    netted_cents,
                    status,
                    failure_reason,
                }
            },
        )
        .collect();
    Ok(Some(RideDriverJson {
        id,
        amount_cents: totals.entitled,
        platform_fee_cents: totals.kept - totals.entitled,
        transfers,
    }))
}
