//! The audit: the database and the gateway's own records of PaymentIntents,
//! checked against each other and against what the clients saw; the checks
//! of rides completed, cancelled and refunded in [`lifecycle`], of the
//! drivers' pay in [`pay`].

mod checks;
mod lifecycle;
mod pay;
mod records;
mod report;
#[cfg(test)]
mod tests;
mod webhooks;

use diesel::sql_types::{Array, BigInt, Text, Timestamptz};
use diesel::{PgConnection, RunQueryDsl};

use super::history::KeyHistory;
use super::receiver::Taken;

use checks::{check_histories, check_intents, check_rides, count_status};
pub use records::{pay_unsettled, pending_deliveries, unfinished_keys, GatewayRecords};
use records::{Count, Records, DECLINED, SUCCEEDED};
pub use report::{AuditReport, CHECKS};

/// What the campaign's webhook receivers took: the user's, a bystander's
/// (another user's, which must take nothing of it), and the installation's
/// receipts destination's.
pub struct Deliveries {
    pub taken: Vec<Taken>,
    pub bystanders: Vec<Taken>,
    pub receipts: Vec<Taken>,
}

/// Audits the run of the rider and the platform `users`, whose
/// PaymentIntents and transfers were all made after `started`.
pub fn audit(
    conn: &mut PgConnection,
    gateway_records: &mut GatewayRecords,
    users: &[i64; 2],
    started: chrono::DateTime<chrono::Utc>,
    histories: &[KeyHistory],
    deliveries: &Deliveries,
) -> anyhow::Result<AuditReport> {
    let user_id = users[0];
    let records = Records {
        keys: diesel::sql_query(
            "SELECT id, key, recovery_point, response_status, response_body, last_error \
             FROM idempotency_keys WHERE user_id = ANY($1)",
        )
        .bind::<Array<BigInt>, _>(&users[..])
        .load(conn)?,
        rides: diesel::sql_query(
            "SELECT id, public_id, idempotency_key_id, amount_cents, amount_authorized_cents, \
             amount_captured_cents, amount_refunded_cents, status, capture_method, \
             payment_intent_id, settling_key_id, tip_cents, tip_payment_intent_id \
             FROM rides WHERE user_id = $1",
        )
        .bind::<BigInt, _>(user_id)
        .load(conn)?,
        intents: diesel::sql_query(
            "SELECT id, amount_cents, amount_capturable_cents, amount_received_cents, status, \
             metadata->>'ridepay_key' AS ridepay_key, overcapture_max_cents \
             FROM simulated_payment_intents \
             WHERE gateway = $1 AND created_at >= date_trunc('second', $2)",
        )
        .bind::<Text, _>(gateway_records.gateway)
        .bind::<Timestamptz, _>(started)
        .load(&mut gateway_records.conn)?,
        captures: lifecycle::capture_calls(gateway_records, started)?,
        gateway_refunds: lifecycle::gateway_refunds(gateway_records, started)?,
        refunds: lifecycle::refunds(conn, user_id)?,
        ride_records: lifecycle::ride_records(conn, user_id)?,
        released: diesel::sql_query(
            "SELECT payment_intent_id FROM released_payments WHERE released_at IS NOT NULL",
        )
        .load::<records::Released>(conn)?
        .into_iter()
        .map(|released| released.payment_intent_id)
        .collect(),
    };
    let events_applied = diesel::sql_query(
        "SELECT count(*) AS count FROM stripe_events \
         WHERE result = 'applied' AND received_at >= $1",
    )
    .bind::<Timestamptz, _>(started)
    .get_result::<Count>(conn)?
    .count;

    let mut report = AuditReport {
        keys_in_database: records.keys.len(),
        rides: records.rides.len(),
        succeeded_payments: count_status(&records.intents, SUCCEEDED),
        declined_payments: count_status(&records.intents, DECLINED),
        events_applied,
        capture_calls: records.captures.iter().map(|total| total.count).sum(),
        gateway_refunds: records
            .gateway_refunds
            .iter()
            .map(|total| total.count)
            .sum(),
        saved_failures: diesel::sql_query(
            "SELECT count(*) AS count FROM simulated_intent_calls \
             WHERE answer = '\"saved_failure\"' AND created_at >= $1",
        )
        .bind::<Timestamptz, _>(started)
        .get_result::<Count>(&mut gateway_records.conn)?
        .count,
        generations_reissued: diesel::sql_query(
            "SELECT coalesce(sum(call_generation), 0)::bigint AS count FROM idempotency_keys \
             WHERE user_id = ANY($1)",
        )
        .bind::<Array<BigInt>, _>(&users[..])
        .get_result::<Count>(conn)?
        .count,
        payments_released: records.released.len(),
        ..AuditReport::default()
    };
    check_intents(&mut report, &records);
    check_rides(&mut report, &records);
    for key in records
        .keys
        .iter()
        .filter(|k| k.recovery_point != "finished")
    {
        report.flag(
            CHECKS[4],
            format!(
                "{} at {} (last error: {})",
                key.key,
                key.recovery_point,
                key.last_error.as_deref().unwrap_or("none")
            ),
        );
    }
    check_histories(&mut report, &records, histories);
    lifecycle::check_rides(&mut report, &records);
    lifecycle::check_acknowledged(&mut report, &records, histories);
    webhooks::check_webhooks(
        &mut report,
        conn,
        user_id,
        &deliveries.taken,
        &deliveries.bystanders,
    )?;
    webhooks::check_receipts(&mut report, conn, &deliveries.receipts)?;
    let pay = pay::PayRecords::read(conn, gateway_records, user_id, started)?;
    pay::check_pay(&mut report, &pay);
    Ok(report)
}
