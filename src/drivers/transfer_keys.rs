//! What ties a transfer at the gateway to the transfers row that owes it:
//! the `ridepay_key` its metadata carries, derived from the row's ride and
//! source charge. The worker sends it and finds by it a transfer whose
//! answer it lost; reconciliation reverses a transfer that no row records
//! and no row would (a stray), after a tombstone that keeps every row from
//! recording it.

use std::collections::HashSet;

use diesel::prelude::*;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::public_ids::RidePublicId;
use crate::schema::{rides, stray_transfers, transfer_reversals, transfers};

/// A transfer's own `ridepay_key`: the same whichever path owed it and
/// whoever sends it. A transfer owed again after its refund failed
/// (`gives_back` the reversal's `trr_` id) has a key of its own.
pub fn transfer_key(
    installation_id: Uuid,
    ride: RidePublicId,
    source_charge: &str,
    gives_back: Option<&str>,
) -> String {
    let mut hash = Sha256::new();
    hash.update(installation_id.as_bytes());
    hash.update(ride.to_string().as_bytes());
    hash.update(b"\0");
    hash.update(source_charge.as_bytes());
    if let Some(reversal) = gives_back {
        hash.update(b"\0");
        hash.update(reversal.as_bytes());
    }
    hex::encode(hash.finalize())
}

/// The keys of the driver's transfers not recorded yet (owed, refused,
/// or netted and owed again later): a transfer made under one of them is
/// the worker's to record.
pub fn unrecorded_keys(
    conn: &mut PgConnection,
    installation_id: Uuid,
    driver_id: i64,
) -> QueryResult<HashSet<String>> {
    let owed: Vec<(RidePublicId, String, Option<String>)> = transfers::table
        .inner_join(rides::table)
        .left_join(
            transfer_reversals::table
                .on(transfers::reowes_reversal_id.eq(transfer_reversals::id.nullable())),
        )
        .filter(transfers::driver_id.eq(driver_id))
        .filter(transfers::gateway_transfer_id.is_null())
        .select((
            rides::public_id,
            transfers::source_charge,
            transfer_reversals::gateway_reversal_id.nullable(),
        ))
        .load(conn)?;
    Ok(owed
        .into_iter()
        .map(|(ride, charge, gives_back)| {
            transfer_key(installation_id, ride, &charge, gives_back.as_deref())
        })
        .collect())
}

/// Whether reconciliation found the gateway's transfer `id` stray: it is
/// reversed, and no row may record it (the database refuses it too).
pub fn is_stray(conn: &mut PgConnection, id: &str) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(stray_transfers::table.find(id))).get_result(conn)
}
