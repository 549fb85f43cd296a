//! The audit: the database and the gateway's ledger, checked against each other
//! and against what the clients saw.

use std::collections::{BTreeMap, HashMap, HashSet};

use diesel::sql_types::{BigInt, Bytea, Nullable, SmallInt, Text, Timestamptz};
use diesel::{PgConnection, QueryableByName, RunQueryDsl};

use super::history::{Expected, KeyHistory};

#[derive(QueryableByName)]
struct KeyRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Text)]
    key: String,
    #[diesel(sql_type = Text)]
    recovery_point: String,
    #[diesel(sql_type = Nullable<SmallInt>)]
    response_status: Option<i16>,
    #[diesel(sql_type = Nullable<Bytea>)]
    response_body: Option<Vec<u8>>,
}

#[derive(QueryableByName)]
struct RideRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    idempotency_key_id: Option<i64>,
    #[diesel(sql_type = BigInt)]
    amount_cents: i64,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Nullable<Text>)]
    charge_id: Option<String>,
}

#[derive(QueryableByName)]
struct ChargeRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    idempotency_key: String,
    #[diesel(sql_type = BigInt)]
    amount_cents: i64,
    #[diesel(sql_type = Text)]
    status: String,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    count: i64,
}

#[derive(QueryableByName)]
struct Prefix {
    #[diesel(sql_type = Text)]
    prefix: String,
}

/// The names of the checks, in the order the summary lists them.
pub const CHECKS: [&str; 8] = [
    "duplicate charges (two for one key or ride)",
    "orphan charges (succeeded, no charged ride)",
    "acknowledged rides missing or uncharged",
    "amounts that disagree",
    "keys not finished",
    "replays that differ from the first answer",
    "stored answers that differ from the first answer",
    "answers other than the source implies",
];

#[derive(Debug, Default)]
pub struct AuditReport {
    /// Violations by check, with up to a few examples each.
    pub violations: BTreeMap<&'static str, Vec<String>>,
    pub keys_in_database: usize,
    pub rides: usize,
    pub succeeded_charges: usize,
}

impl AuditReport {
    fn flag(&mut self, check: &'static str, example: String) {
        debug_assert!(CHECKS.contains(&check));
        self.violations.entry(check).or_default().push(example);
    }

    pub fn count(&self, check: &str) -> usize {
        self.violations.get(check).map_or(0, Vec::len)
    }

    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Keys of `user_id` not yet finished, for waiting on the completer.
pub fn unfinished_keys(conn: &mut PgConnection, user_id: i64) -> anyhow::Result<i64> {
    Ok(diesel::sql_query(
        "SELECT count(*) AS count FROM idempotency_keys \
         WHERE user_id = $1 AND recovery_point <> 'finished'",
    )
    .bind::<BigInt, _>(user_id)
    .get_result::<Count>(conn)?
    .count)
}

/// Audits the run of `user_id`, whose charges were all made after `started`.
pub fn audit(
    conn: &mut PgConnection,
    user_id: i64,
    started: chrono::DateTime<chrono::Utc>,
    histories: &[KeyHistory],
) -> anyhow::Result<AuditReport> {
    let keys: Vec<KeyRow> = diesel::sql_query(
        "SELECT id, key, recovery_point, response_status, response_body \
         FROM idempotency_keys WHERE user_id = $1",
    )
    .bind::<BigInt, _>(user_id)
    .load(conn)?;
    let rides: Vec<RideRow> = diesel::sql_query(
        "SELECT id, idempotency_key_id, amount_cents, status, charge_id FROM rides WHERE user_id = $1",
    )
    .bind::<BigInt, _>(user_id)
    .load(conn)?;
    let charges: Vec<ChargeRow> = diesel::sql_query(
        "SELECT id, idempotency_key, amount_cents, status FROM simulated_charges WHERE created_at >= $1",
    )
    .bind::<Timestamptz, _>(started)
    .load(conn)?;
    // ridepay's derived gateway keys: `ridepay-<installation>-ride-charge-<key row id>`.
    let prefix = diesel::sql_query(
        "SELECT 'ridepay-' || replace(installation_id::text, '-', '') || '-ride-charge-' AS prefix \
         FROM installation",
    )
    .get_result::<Prefix>(conn)?
    .prefix;

    let mut report = AuditReport {
        keys_in_database: keys.len(),
        rides: rides.len(),
        succeeded_charges: charges.iter().filter(|c| c.status == "succeeded").count(),
        ..AuditReport::default()
    };
    let key_by_name: HashMap<&str, &KeyRow> = keys.iter().map(|k| (k.key.as_str(), k)).collect();
    let ride_by_id: HashMap<i64, &RideRow> = rides.iter().map(|r| (r.id, r)).collect();
    let ride_by_key: HashMap<i64, &RideRow> = rides
        .iter()
        .filter_map(|r| Some((r.idempotency_key_id?, r)))
        .collect();
    let charge_by_id: HashMap<&str, &ChargeRow> =
        charges.iter().map(|c| (c.id.as_str(), c)).collect();

    let charged_rides: HashSet<&str> = rides
        .iter()
        .filter(|r| r.status == "charged")
        .filter_map(|r| r.charge_id.as_deref())
        .collect();
    let mut succeeded_per_key: HashMap<i64, Vec<&ChargeRow>> = HashMap::new();
    for charge in charges.iter().filter(|c| c.status == "succeeded") {
        let key_id = charge
            .idempotency_key
            .strip_prefix(&prefix)
            .and_then(|id| id.parse::<i64>().ok());
        if let Some(key_id) = key_id {
            succeeded_per_key.entry(key_id).or_default().push(charge);
        }
        if !charged_rides.contains(charge.id.as_str()) {
            report.flag(
                CHECKS[1],
                format!("{} ({})", charge.id, charge.idempotency_key),
            );
        }
    }
    for (key_id, list) in &succeeded_per_key {
        if list.len() > 1 {
            report.flag(
                CHECKS[0],
                format!("key row {key_id}: {} succeeded charges", list.len()),
            );
        }
    }
    let mut rides_per_charge: HashMap<&str, usize> = HashMap::new();
    for ride in &rides {
        if let Some(charge_id) = &ride.charge_id {
            *rides_per_charge.entry(charge_id.as_str()).or_default() += 1;
            match charge_by_id.get(charge_id.as_str()) {
                Some(charge) if charge.amount_cents != ride.amount_cents => report.flag(
                    CHECKS[3],
                    format!(
                        "ride {} is {} but charge {} is {}",
                        ride.id, ride.amount_cents, charge.id, charge.amount_cents
                    ),
                ),
                Some(_) => {}
                None => report.flag(
                    CHECKS[2],
                    format!(
                        "ride {} names charge {charge_id}, unknown to the gateway",
                        ride.id
                    ),
                ),
            }
        }
    }
    for (charge_id, count) in rides_per_charge {
        if count > 1 {
            report.flag(CHECKS[0], format!("charge {charge_id} on {count} rides"));
        }
    }
    for key in keys.iter().filter(|k| k.recovery_point != "finished") {
        report.flag(CHECKS[4], format!("{} at {}", key.key, key.recovery_point));
    }

    for history in histories {
        if let Some(mismatch) = &history.replay_mismatch {
            report.flag(CHECKS[5], format!("{}: {mismatch}", history.key));
        }
        let row = key_by_name.get(history.key.as_str());
        let ride = row.and_then(|row| ride_by_key.get(&row.id));
        if let Some(ride) = ride {
            if ride.amount_cents != history.amount_cents {
                report.flag(
                    CHECKS[3],
                    format!(
                        "{}: asked {}, ride {} has {}",
                        history.key, history.amount_cents, ride.id, ride.amount_cents
                    ),
                );
            }
        }
        let Some(first) = &history.first_final else {
            continue;
        };
        if first.status != history.expected.status() {
            report.flag(
                CHECKS[7],
                format!(
                    "{}: {} for {:?}",
                    history.key, first.status, history.expected
                ),
            );
        }
        if let Some(row) = row {
            let stored_same = row.response_status == Some(first.status as i16)
                && row.response_body.as_deref() == Some(first.body.as_slice());
            if row.recovery_point == "finished" && !stored_same {
                report.flag(CHECKS[6], history.key.clone());
            }
        }
        if history.expected == Expected::Charged && first.status == 201 {
            let acknowledged = first.ride_id().and_then(|id| ride_by_id.get(&id));
            let charged = acknowledged.is_some_and(|ride| {
                ride.status == "charged"
                    && ride
                        .charge_id
                        .as_deref()
                        .and_then(|id| charge_by_id.get(id))
                        .is_some_and(|c| c.status == "succeeded")
            });
            if !charged {
                report.flag(
                    CHECKS[2],
                    format!("{}: ride {:?}", history.key, first.ride_id()),
                );
            }
        }
    }
    Ok(report)
}
