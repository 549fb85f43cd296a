//! The audit: the database and the gateway's own records of PaymentIntents,
//! checked against each other and against what the clients saw.

use std::collections::{BTreeMap, HashMap};

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
    #[diesel(sql_type = Nullable<Text>)]
    last_error: Option<String>,
}

#[derive(QueryableByName)]
struct RideRow {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    idempotency_key_id: Option<i64>,
    #[diesel(sql_type = BigInt)]
    amount_cents: i64,
    #[diesel(sql_type = BigInt)]
    amount_captured_cents: i64,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Nullable<Text>)]
    payment_intent_id: Option<String>,
}

/// A PaymentIntent as the gateway holds it, with the ride and key ridepay
/// named in its metadata.
#[derive(QueryableByName)]
struct IntentRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = BigInt)]
    amount_cents: i64,
    #[diesel(sql_type = BigInt)]
    amount_received_cents: i64,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Nullable<Text>)]
    ride_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    key_id: Option<String>,
}

const SUCCEEDED: &str = "succeeded";
/// Where a declined PaymentIntent stays.
const DECLINED: &str = "requires_payment_method";

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    count: i64,
}

/// The names of the checks, in the order the summary lists them.
pub const CHECKS: [&str; 9] = [
    "duplicate payments (two for one key or ride)",
    "orphan payments (succeeded, no captured ride)",
    "acknowledged or captured rides missing or unpaid",
    "amounts that disagree",
    "keys not finished",
    "replays that differ from the first answer",
    "stored answers that differ from the first answer",
    "answers or rides other than the payment method implies",
    "declines not recorded as declines",
];

#[derive(Debug, Default)]
pub struct AuditReport {
    /// Violations by check, with up to a few examples each.
    pub violations: BTreeMap<&'static str, Vec<String>>,
    pub keys_in_database: usize,
    pub rides: usize,
    pub succeeded_payments: usize,
    pub declined_payments: usize,
    /// Gateway events (webhooks, or the simulated gateway's in-process
    /// ones) that moved a ride.
    pub events_applied: i64,
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

/// The gateway's own records: the database it keeps them in, and the name
/// its rows carry (`simulated` or `fake`).
pub struct Ledger {
    pub conn: PgConnection,
    pub gateway: &'static str,
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

/// What the audit reads, indexed the ways the checks look it up.
struct Records {
    keys: Vec<KeyRow>,
    rides: Vec<RideRow>,
    intents: Vec<IntentRow>,
}

impl Records {
    fn key_by_name(&self) -> HashMap<&str, &KeyRow> {
        self.keys.iter().map(|k| (k.key.as_str(), k)).collect()
    }

    fn ride_by_id(&self) -> HashMap<i64, &RideRow> {
        self.rides.iter().map(|r| (r.id, r)).collect()
    }

    fn ride_by_key(&self) -> HashMap<i64, &RideRow> {
        self.rides
            .iter()
            .filter_map(|r| Some((r.idempotency_key_id?, r)))
            .collect()
    }

    fn intent_by_id(&self) -> HashMap<&str, &IntentRow> {
        self.intents.iter().map(|i| (i.id.as_str(), i)).collect()
    }

    fn rides_naming(&self) -> HashMap<&str, Vec<&RideRow>> {
        let mut naming: HashMap<&str, Vec<&RideRow>> = HashMap::new();
        for ride in &self.rides {
            if let Some(intent) = &ride.payment_intent_id {
                naming.entry(intent.as_str()).or_default().push(ride);
            }
        }
        naming
    }
}

/// Audits the run of `user_id`, whose PaymentIntents were all made after
/// `started`.
pub fn audit(
    conn: &mut PgConnection,
    ledger: &mut Ledger,
    user_id: i64,
    started: chrono::DateTime<chrono::Utc>,
    histories: &[KeyHistory],
) -> anyhow::Result<AuditReport> {
    let records = Records {
        keys: diesel::sql_query(
            "SELECT id, key, recovery_point, response_status, response_body, last_error \
             FROM idempotency_keys WHERE user_id = $1",
        )
        .bind::<BigInt, _>(user_id)
        .load(conn)?,
        rides: diesel::sql_query(
            "SELECT id, idempotency_key_id, amount_cents, amount_captured_cents, status, \
             payment_intent_id FROM rides WHERE user_id = $1",
        )
        .bind::<BigInt, _>(user_id)
        .load(conn)?,
        intents: diesel::sql_query(
            "SELECT id, amount_cents, amount_received_cents, status, \
             metadata->>'ride_id' AS ride_id, metadata->>'idempotency_key_id' AS key_id \
             FROM simulated_payment_intents WHERE gateway = $1 AND created_at >= $2",
        )
        .bind::<Text, _>(ledger.gateway)
        .bind::<Timestamptz, _>(started)
        .load(&mut ledger.conn)?,
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
    Ok(report)
}

fn count_status(intents: &[IntentRow], status: &str) -> usize {
    intents.iter().filter(|i| i.status == status).count()
}

/// From the gateway's side: one PaymentIntent per key and per ride, each
/// payment on a captured ride, each decline on a declined one.
fn check_intents(report: &mut AuditReport, records: &Records) {
    let rides_naming = records.rides_naming();
    let mut per_key: BTreeMap<&str, usize> = BTreeMap::new();
    let mut per_ride: BTreeMap<&str, usize> = BTreeMap::new();
    for intent in &records.intents {
        if let Some(key_id) = &intent.key_id {
            *per_key.entry(key_id).or_default() += 1;
        }
        if let Some(ride_id) = &intent.ride_id {
            *per_ride.entry(ride_id).or_default() += 1;
        }
        let named_by = |status: &str| {
            rides_naming
                .get(intent.id.as_str())
                .is_some_and(|rides| rides.iter().any(|r| r.status == status))
        };
        let described = || {
            format!(
                "{} ({}, ride {}, key row {})",
                intent.id,
                intent.status,
                intent.ride_id.as_deref().unwrap_or("?"),
                intent.key_id.as_deref().unwrap_or("?")
            )
        };
        if intent.status == SUCCEEDED && !named_by("captured") {
            report.flag(CHECKS[1], described());
        }
        if intent.status == DECLINED && !named_by("payment_declined") {
            report.flag(
                CHECKS[8],
                format!("{}: no declined ride names it", described()),
            );
        }
    }
    for (key_id, count) in per_key.into_iter().filter(|(_, count)| *count > 1) {
        report.flag(
            CHECKS[0],
            format!("key row {key_id}: {count} PaymentIntents"),
        );
    }
    for (ride_id, count) in per_ride.into_iter().filter(|(_, count)| *count > 1) {
        report.flag(CHECKS[0], format!("ride {ride_id}: {count} PaymentIntents"));
    }
    for (intent, rides) in rides_naming.iter().filter(|(_, rides)| rides.len() > 1) {
        let ids: Vec<i64> = rides.iter().map(|r| r.id).collect();
        report.flag(
            CHECKS[0],
            format!("PaymentIntent {intent} on rides {ids:?}"),
        );
    }
}

/// From ridepay's side: every PaymentIntent a ride names is the gateway's,
/// for the ride's amount, and a captured ride's is paid in full.
fn check_rides(report: &mut AuditReport, records: &Records) {
    let intent_by_id = records.intent_by_id();
    for ride in &records.rides {
        let intent = ride
            .payment_intent_id
            .as_deref()
            .map(|id| (id, intent_by_id.get(id)));
        match intent {
            Some((id, None)) => report.flag(
                CHECKS[2],
                format!(
                    "ride {} names PaymentIntent {id}, unknown to the gateway",
                    ride.id
                ),
            ),
            Some((_, Some(intent))) if intent.amount_cents != ride.amount_cents => report.flag(
                CHECKS[3],
                format!(
                    "ride {} is {} but PaymentIntent {} is {}",
                    ride.id, ride.amount_cents, intent.id, intent.amount_cents
                ),
            ),
            _ => {}
        }
        if ride.status != "captured" {
            continue;
        }
        match intent {
            Some((_, Some(intent))) if intent.status == SUCCEEDED => {
                let received = intent.amount_received_cents;
                if (received, ride.amount_captured_cents) != (ride.amount_cents, ride.amount_cents)
                {
                    report.flag(
                        CHECKS[3],
                        format!(
                            "ride {} is {}, captured {}; PaymentIntent {} received {received}",
                            ride.id, ride.amount_cents, ride.amount_captured_cents, intent.id
                        ),
                    );
                }
            }
            Some((id, Some(intent))) => report.flag(
                CHECKS[2],
                format!(
                    "ride {} is captured but PaymentIntent {id} is {}",
                    ride.id, intent.status
                ),
            ),
            Some((_, None)) => {}
            None => report.flag(
                CHECKS[2],
                format!("ride {} is captured without a PaymentIntent", ride.id),
            ),
        }
    }
}

/// Against what the clients saw: every answer as the payment method implies,
/// stored and replayed as first given, and the ride behind it as answered.
fn check_histories(report: &mut AuditReport, records: &Records, histories: &[KeyHistory]) {
    let key_by_name = records.key_by_name();
    let ride_by_id = records.ride_by_id();
    let ride_by_key = records.ride_by_key();
    let intent_by_id = records.intent_by_id();
    let intent_of = |ride: &RideRow| {
        ride.payment_intent_id
            .as_deref()
            .and_then(|id| intent_by_id.get(id).copied())
    };
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
            let finished = row.is_some_and(|row| row.recovery_point == "finished");
            if finished && ride.status != history.expected.ride_status() {
                report.flag(
                    CHECKS[7],
                    format!(
                        "{}: ride {} is {} for {:?}",
                        history.key, ride.id, ride.status, history.expected
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
        // The ride the answer names is the key's own.
        let answered = first
            .ride_id()
            .and_then(|id| ride_by_id.get(&id))
            .filter(|answered| row.is_some_and(|row| answered.idempotency_key_id == Some(row.id)));
        match (history.expected, first.status) {
            (Expected::Captured, 201) => {
                let paid = answered.is_some_and(|ride| {
                    ride.status == "captured"
                        && intent_of(ride).is_some_and(|intent| {
                            intent.status == SUCCEEDED
                                && intent.amount_received_cents == ride.amount_cents
                        })
                });
                if !paid {
                    report.flag(
                        CHECKS[2],
                        format!("{}: ride {:?}", history.key, first.ride_id()),
                    );
                }
            }
            (Expected::Declined, 402) => {
                let declined = answered.is_some_and(|ride| {
                    ride.status == "payment_declined"
                        && intent_of(ride).is_some_and(|intent| {
                            intent.status == DECLINED && intent.amount_received_cents == 0
                        })
                });
                if !declined {
                    report.flag(
                        CHECKS[8],
                        format!(
                            "{}: ride {:?} is {:?}, PaymentIntent {:?}",
                            history.key,
                            first.ride_id(),
                            answered.map(|ride| &ride.status),
                            answered.and_then(|ride| ride.payment_intent_id.as_deref())
                        ),
                    );
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Answer;

    fn key(id: i64, status: u16, body: &str) -> KeyRow {
        KeyRow {
            id,
            key: format!("k{id}"),
            recovery_point: "finished".to_owned(),
            response_status: Some(status as i16),
            response_body: Some(body.as_bytes().to_vec()),
            last_error: None,
        }
    }

    fn ride(id: i64, status: &str, intent: Option<&str>) -> RideRow {
        RideRow {
            id,
            idempotency_key_id: Some(id),
            amount_cents: 1000,
            amount_captured_cents: if status == "captured" { 1000 } else { 0 },
            status: status.to_owned(),
            payment_intent_id: intent.map(str::to_owned),
        }
    }

    fn intent(id: &str, status: &str, ride_and_key: i64) -> IntentRow {
        IntentRow {
            id: id.to_owned(),
            amount_cents: 1000,
            amount_received_cents: if status == SUCCEEDED { 1000 } else { 0 },
            status: status.to_owned(),
            ride_id: Some(ride_and_key.to_string()),
            key_id: Some(ride_and_key.to_string()),
        }
    }

    fn history(id: i64, expected: Expected, status: u16, body: &str) -> KeyHistory {
        KeyHistory {
            key: format!("k{id}"),
            amount_cents: 1000,
            expected,
            first_final: Some(Answer {
                status,
                body: body.as_bytes().to_vec(),
                replayed: false,
            }),
            replay_mismatch: None,
        }
    }

    /// The violations found in a paid key (1) and a declined one (2), as
    /// the campaign leaves them, once `change` has changed their records.
    fn violations_after(change: impl FnOnce(&mut Records)) -> BTreeMap<&'static str, usize> {
        let paid = r#"{"id":1,"status":"captured"}"#;
        let declined = r#"{"type":"/problems/card-declined","ride_id":2}"#;
        let mut records = Records {
            keys: vec![key(1, 201, paid), key(2, 402, declined)],
            rides: vec![
                ride(1, "captured", Some("pi_1")),
                ride(2, "payment_declined", Some("pi_2")),
            ],
            intents: vec![intent("pi_1", SUCCEEDED, 1), intent("pi_2", DECLINED, 2)],
        };
        change(&mut records);
        let histories = [
            history(1, Expected::Captured, 201, paid),
            history(2, Expected::Declined, 402, declined),
        ];
        let mut report = AuditReport::default();
        check_intents(&mut report, &records);
        check_rides(&mut report, &records);
        check_histories(&mut report, &records, &histories);
        report
            .violations
            .iter()
            .map(|(check, examples)| (*check, examples.len()))
            .collect()
    }

    #[test]
    fn a_paid_and_a_declined_key_as_recorded_pass() {
        assert_eq!(violations_after(|_| {}), BTreeMap::new());
    }

    #[test]
    fn a_second_payment_for_a_key_is_a_duplicate_and_an_orphan() {
        let found = violations_after(|records| records.intents.push(intent("pi_1b", SUCCEEDED, 1)));
        assert_eq!(found, BTreeMap::from([(CHECKS[0], 2), (CHECKS[1], 1)]));
    }

    #[test]
    fn one_payment_named_by_two_rides_is_a_duplicate() {
        let found =
            violations_after(|records| records.rides.push(ride(3, "captured", Some("pi_1"))));
        assert_eq!(found, BTreeMap::from([(CHECKS[0], 1)]));
    }

    #[test]
    fn an_acknowledged_ride_the_gateway_did_not_pay_is_flagged() {
        let found = violations_after(|records| {
            records.intents[0].status = DECLINED.to_owned();
            records.intents[0].amount_received_cents = 0;
        });
        // The ride is captured on an unpaid intent, the 201 acknowledged it,
        // and the declined intent has no declined ride.
        assert_eq!(found, BTreeMap::from([(CHECKS[2], 2), (CHECKS[8], 1)]));
    }

    #[test]
    fn a_decline_without_its_payment_intent_is_not_recorded_as_one() {
        let found = violations_after(|records| records.rides[1].payment_intent_id = None);
        assert_eq!(found, BTreeMap::from([(CHECKS[8], 2)]));
    }

    #[test]
    fn a_short_payment_and_a_ride_other_than_the_card_implies_are_flagged() {
        let found = violations_after(|records| {
            records.intents[0].amount_received_cents = 900;
            records.rides[1].status = "payment_failed".to_owned();
        });
        assert_eq!(found[CHECKS[3]], 1);
        assert_eq!(found[CHECKS[7]], 1);
    }
}
