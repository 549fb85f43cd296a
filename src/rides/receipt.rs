//! The ride's receipt: staged with the finished ride, delivered by the
//! outbox as `{"type": "ride.receipt", "data": ride}`.

use diesel::prelude::*;
use serde_json::{json, Value};

use super::model::find_ride;
use crate::ids::RideId;
use crate::outbox::{JobHandler, StagedWith};
use crate::schema::receipts;

const JOB_TYPE: &str = "ride_receipt";

/// The receipt of the ride a statement changes, staged with it
/// (`db::recorded`) when the ride's money moved: a ride captured, or a
/// cancellation's fee.
pub const OF_CHANGED: StagedWith = StagedWith {
    job_type: JOB_TYPE,
    payload: "jsonb_build_object('ride_id', changed.id, 'user_id', changed.user_id)",
    when: "changed.amount_captured_cents > 0",
};

pub struct RideReceipt;

fn ride_id(payload: &Value) -> anyhow::Result<RideId> {
    payload["ride_id"]
        .as_i64()
        .map(RideId)
        .ok_or_else(|| anyhow::anyhow!("a {JOB_TYPE} job without ride_id"))
}

impl JobHandler for RideReceipt {
    fn job_type(&self) -> &'static str {
        JOB_TYPE
    }

    fn message(&self, conn: &mut PgConnection, payload: &Value) -> anyhow::Result<Value> {
        let ride = find_ride(conn, ride_id(payload)?)?;
        Ok(json!({ "type": "ride.receipt", "data": ride }))
    }

    fn record(
        &self,
        conn: &mut PgConnection,
        job_id: i64,
        payload: &Value,
        message: &Value,
    ) -> anyhow::Result<()> {
        diesel::insert_into(receipts::table)
            .values((
                receipts::ride_id.eq(ride_id(payload)?),
                receipts::staged_job_id.eq(job_id),
                receipts::payload.eq(message),
            ))
            .on_conflict(receipts::ride_id)
            .do_update()
            .set(receipts::deliveries.eq(receipts::deliveries + 1))
            .execute(conn)?;
        Ok(())
    }
}
