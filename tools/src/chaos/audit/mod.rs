//! The audit: the database and the gateway's own records of PaymentIntents,
//! checked against each other and against what the clients saw; the checks
//! of rides completed, cancelled and refunded in [`lifecycle`].

mod lifecycle;

use std::collections::{BTreeMap, HashMap};

use diesel::sql_types::{BigInt, Bytea, Nullable, SmallInt, Text, Timestamptz};
use diesel::{PgConnection, QueryableByName, RunQueryDsl};

use super::history::{Expected, KeyHistory, Request};
use lifecycle::{ActionCount, IntentTotal, RideTotal};

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
    amount_authorized_cents: i64,
    #[diesel(sql_type = BigInt)]
    amount_captured_cents: i64,
    #[diesel(sql_type = BigInt)]
    amount_refunded_cents: i64,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Text)]
    capture_method: String,
    #[diesel(sql_type = Nullable<Text>)]
    payment_intent_id: Option<String>,
    /// The key completing or cancelling the ride, while one does.
    #[diesel(sql_type = Nullable<BigInt>)]
    settling_key_id: Option<i64>,
}

impl RideRow {
    /// Money was taken: the fare, or a cancellation fee.
    fn paid(&self) -> bool {
        matches!(self.status.as_str(), "captured" | "refunded")
            || (self.status == "canceled" && self.amount_captured_cents > 0)
    }
}

/// A PaymentIntent as the gateway holds it, with the ride and key ridepay
/// named in its metadata.
#[derive(QueryableByName)]
struct IntentRow {
    #[diesel(sql_type = Text)]
    id: String,
    /// What is authorized, after any raise of the hold.
    #[diesel(sql_type = BigInt)]
    amount_cents: i64,
    #[diesel(sql_type = BigInt)]
    amount_capturable_cents: i64,
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
pub const CHECKS: [&str; 18] = [
    "duplicate payments (two for one key or ride)",
    "orphan payments (succeeded, no captured ride)",
    "acknowledged or captured rides missing or unpaid",
    "amounts that disagree",
    "keys not finished",
    "replays that differ from the first answer",
    "stored answers that differ from the first answer",
    "answers or rides other than the payment method implies",
    "declines not recorded as declines",
    "rides captured twice (two captures or finishing records)",
    "captures beyond what was authorized",
    "holds left on completed or cancelled rides",
    "captured amounts that disagree with the gateway",
    "acknowledged completions not captured for the final fare",
    "acknowledged cancellations not canceled with the fee",
    "refunds beyond what was captured",
    "rides left taken by a finished key",
    "ride transitions applied more than once",
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
    /// Capture calls the gateway kept, and its refunds not undone: what
    /// the checks of completions, cancellations and refunds looked at.
    pub capture_calls: i64,
    pub gateway_refunds: i64,
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
    /// The gateway's capture calls, and its refunds that are not undone,
    /// per PaymentIntent.
    captures: Vec<IntentTotal>,
    gateway_refunds: Vec<IntentTotal>,
    /// ridepay's refunds that are not undone, per ride.
    refunds: Vec<RideTotal>,
    /// Audit records about rides, per ride and action.
    ride_records: Vec<ActionCount>,
}

impl Records {
    fn key_by_id(&self) -> HashMap<i64, &KeyRow> {
        self.keys.iter().map(|k| (k.id, k)).collect()
    }

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

    fn index(&self) -> Index<'_> {
        Index {
            key_by_name: self.key_by_name(),
            ride_by_id: self.ride_by_id(),
            ride_by_key: self.ride_by_key(),
            intent_by_id: self.intent_by_id(),
        }
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

/// The lookups the checks of clients' keys make, built once.
struct Index<'a> {
    key_by_name: HashMap<&'a str, &'a KeyRow>,
    ride_by_id: HashMap<i64, &'a RideRow>,
    ride_by_key: HashMap<i64, &'a RideRow>,
    intent_by_id: HashMap<&'a str, &'a IntentRow>,
}

impl<'a> Index<'a> {
    fn intent_of(&self, ride: &RideRow) -> Option<&'a IntentRow> {
        self.intent_by_id
            .get(ride.payment_intent_id.as_deref()?)
            .copied()
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
            "SELECT id, idempotency_key_id, amount_cents, amount_authorized_cents, \
             amount_captured_cents, amount_refunded_cents, status, capture_method, \
             payment_intent_id, settling_key_id FROM rides WHERE user_id = $1",
        )
        .bind::<BigInt, _>(user_id)
        .load(conn)?,
        intents: diesel::sql_query(
            "SELECT id, amount_cents, amount_capturable_cents, amount_received_cents, status, \
             metadata->>'ride_id' AS ride_id, metadata->>'idempotency_key_id' AS key_id \
             FROM simulated_payment_intents WHERE gateway = $1 AND created_at >= $2",
        )
        .bind::<Text, _>(ledger.gateway)
        .bind::<Timestamptz, _>(started)
        .load(&mut ledger.conn)?,
        captures: lifecycle::capture_calls(ledger, started)?,
        gateway_refunds: lifecycle::gateway_refunds(ledger, started)?,
        refunds: lifecycle::refunds(conn, user_id)?,
        ride_records: lifecycle::ride_records(conn, user_id)?,
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
        let paid_by_a_ride = rides_naming
            .get(intent.id.as_str())
            .is_some_and(|rides| rides.iter().any(|r| r.paid()));
        if intent.status == SUCCEEDED && !paid_by_a_ride {
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
/// for the ride's amount (or the hold it was raised to), and a ride paid at
/// once is paid in full.
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
            Some((_, Some(intent)))
                if intent.amount_cents != ride.amount_cents
                    && intent.amount_cents != ride.amount_authorized_cents =>
            {
                report.flag(
                    CHECKS[3],
                    format!(
                        "ride {} is {} but PaymentIntent {} is {}",
                        ride.id, ride.amount_cents, intent.id, intent.amount_cents
                    ),
                )
            }
            _ => {}
        }
        if ride.status != "captured" {
            continue;
        }
        match intent {
            Some((_, Some(intent))) if intent.status == SUCCEEDED => {
                let received = intent.amount_received_cents;
                // A completed ride is captured for its final fare, which
                // the lifecycle checks hold against what its client sent.
                let paid_at_once = ride.capture_method == "automatic";
                if paid_at_once
                    && (received, ride.amount_captured_cents)
                        != (ride.amount_cents, ride.amount_cents)
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
/// stored and replayed as first given, and the ride behind a ride key's
/// answer as answered.
fn check_histories(report: &mut AuditReport, records: &Records, histories: &[KeyHistory]) {
    let index = records.index();
    for history in histories {
        if let Some(mismatch) = &history.replay_mismatch {
            report.flag(CHECKS[5], format!("{}: {mismatch}", history.key));
        }
        let row = index.key_by_name.get(history.key.as_str()).copied();
        if let Request::Ride {
            amount_cents,
            expected,
        } = history.request
        {
            check_ride_key(report, &index, history, row, amount_cents, expected);
        }
        let Some(first) = &history.first_final else {
            continue;
        };
        // A hold that lapsed refuses a completion or cancellation (422).
        let lapsed = first.status == 422
            && history
                .request
                .ride_id()
                .and_then(|id| index.ride_by_id.get(&id))
                .is_some_and(|ride| ride.status == "expired");
        if first.status != history.request.expected_status() && !lapsed {
            report.flag(
                CHECKS[7],
                format!(
                    "{}: {} {} for {:?}",
                    history.key,
                    first.status,
                    first.problem_slug().unwrap_or_default(),
                    history.request
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
    }
}

/// A ride key: its ride for the amount asked, in a status the payment
/// method leads to, and, acknowledged, paid, held or declined as answered.
fn check_ride_key(
    report: &mut AuditReport,
    index: &Index,
    history: &KeyHistory,
    row: Option<&KeyRow>,
    amount_cents: i64,
    expected: Expected,
) {
    if let Some(ride) = row.and_then(|row| index.ride_by_key.get(&row.id)) {
        if ride.amount_cents != amount_cents {
            report.flag(
                CHECKS[3],
                format!(
                    "{}: asked {amount_cents}, ride {} has {}",
                    history.key, ride.id, ride.amount_cents
                ),
            );
        }
        let finished = row.is_some_and(|row| row.recovery_point == "finished");
        if finished && !expected.ride_statuses().contains(&ride.status.as_str()) {
            report.flag(
                CHECKS[7],
                format!(
                    "{}: ride {} is {} for {expected:?}",
                    history.key, ride.id, ride.status
                ),
            );
        }
    }
    let Some(first) = &history.first_final else {
        return;
    };
    // The ride the answer names is the key's own.
    let answered = first
        .ride_id()
        .and_then(|id| index.ride_by_id.get(&id))
        .filter(|answered| row.is_some_and(|row| answered.idempotency_key_id == Some(row.id)));
    match (expected, first.status) {
        (Expected::Captured, 201) => {
            let paid = answered.is_some_and(|ride| {
                matches!(ride.status.as_str(), "captured" | "refunded")
                    && index.intent_of(ride).is_some_and(|intent| {
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
        (Expected::Authorized | Expected::AuthorizedNoRaise, 201) => {
            let held = first.text("status").as_deref() == Some("authorized")
                && answered.is_some_and(|ride| index.intent_of(ride).is_some());
            if !held {
                report.flag(
                    CHECKS[2],
                    format!(
                        "{}: ride {:?} answered {:?}",
                        history.key,
                        first.ride_id(),
                        first.text("status")
                    ),
                );
            }
        }
        (Expected::Declined, 402) => {
            let declined = answered.is_some_and(|ride| {
                ride.status == "payment_declined"
                    && index.intent_of(ride).is_some_and(|intent| {
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

    /// A ride of 1000 asked for under key row `id`: paid at once when
    /// captured, held otherwise.
    fn ride(id: i64, status: &str, intent: Option<&str>) -> RideRow {
        let captured = status == "captured";
        RideRow {
            id,
            idempotency_key_id: Some(id),
            amount_cents: 1000,
            amount_authorized_cents: if status == "payment_declined" {
                0
            } else {
                1000
            },
            amount_captured_cents: if captured { 1000 } else { 0 },
            amount_refunded_cents: 0,
            status: status.to_owned(),
            capture_method: if captured { "automatic" } else { "manual" }.to_owned(),
            payment_intent_id: intent.map(str::to_owned),
            settling_key_id: None,
        }
    }

    fn intent(id: &str, status: &str, ride_and_key: i64) -> IntentRow {
        IntentRow {
            id: id.to_owned(),
            amount_cents: 1000,
            amount_capturable_cents: 0,
            amount_received_cents: if status == SUCCEEDED { 1000 } else { 0 },
            status: status.to_owned(),
            ride_id: Some(ride_and_key.to_string()),
            key_id: Some(ride_and_key.to_string()),
        }
    }

    fn history(id: i64, request: Request, status: u16, body: &str) -> KeyHistory {
        KeyHistory {
            key: format!("k{id}"),
            request,
            first_final: Some(Answer {
                status,
                body: body.as_bytes().to_vec(),
                replayed: false,
            }),
            replay_mismatch: None,
        }
    }

    fn records_of(ride_id: i64, action: &str, count: i64) -> ActionCount {
        ActionCount {
            ride_id,
            action: action.to_owned(),
            count,
        }
    }

    fn total(intent_id: &str, cents: i64) -> IntentTotal {
        IntentTotal {
            intent_id: intent_id.to_owned(),
            count: 1,
            cents,
        }
    }

    const PAID: &str = r#"{"id":1,"status":"captured"}"#;
    const DECLINED_ANSWER: &str = r#"{"type":"/problems/card-declined","ride_id":2}"#;
    const COMPLETED: &str = r#"{"id":3,"status":"captured"}"#;
    const CANCELED: &str = r#"{"id":5,"status":"canceled"}"#;

    /// The keys the campaign leaves, as its clients saw them: a ride paid at
    /// once (1), a decline (2), a held ride (3) completed above its hold
    /// (4) and partly refunded (7), a held ride (5) cancelled with a fee (6).
    fn histories() -> Vec<KeyHistory> {
        let ride = |amount_cents, expected| Request::Ride {
            amount_cents,
            expected,
        };
        let held = |id: i64| {
            let answer = format!(r#"{{"id":{id},"status":"authorized"}}"#);
            history(id, ride(1000, Expected::Authorized), 201, &answer)
        };
        vec![
            history(1, ride(1000, Expected::Captured), 201, PAID),
            history(2, ride(1000, Expected::Declined), 402, DECLINED_ANSWER),
            held(3),
            history(
                4,
                Request::Complete {
                    ride_id: 3,
                    final_amount_cents: 1200,
                    raise_declines: false,
                },
                200,
                COMPLETED,
            ),
            held(5),
            history(
                6,
                Request::Cancel {
                    ride_id: 5,
                    fee_cents: 300,
                },
                200,
                CANCELED,
            ),
            history(
                7,
                Request::Refund {
                    ride_id: 3,
                    amount_cents: 500,
                },
                201,
                r#"{"id":1}"#,
            ),
        ]
    }

    /// The records of those keys, as the campaign leaves them.
    fn records() -> Records {
        let answers = histories();
        Records {
            keys: answers
                .iter()
                .enumerate()
                .map(|(i, history)| {
                    let first = history.first_final.as_ref().unwrap();
                    key(
                        i as i64 + 1,
                        first.status,
                        &String::from_utf8_lossy(&first.body),
                    )
                })
                .collect(),
            rides: vec![
                ride(1, "captured", Some("pi_1")),
                ride(2, "payment_declined", Some("pi_2")),
                RideRow {
                    amount_authorized_cents: 1200,
                    amount_captured_cents: 1200,
                    amount_refunded_cents: 500,
                    capture_method: "manual".to_owned(),
                    ..ride(3, "captured", Some("pi_3"))
                },
                RideRow {
                    amount_captured_cents: 300,
                    ..ride(5, "canceled", Some("pi_5"))
                },
            ],
            intents: vec![
                intent("pi_1", SUCCEEDED, 1),
                intent("pi_2", DECLINED, 2),
                IntentRow {
                    amount_cents: 1200,
                    amount_received_cents: 1200,
                    ..intent("pi_3", SUCCEEDED, 3)
                },
                IntentRow {
                    amount_received_cents: 300,
                    ..intent("pi_5", SUCCEEDED, 5)
                },
            ],
            captures: vec![total("pi_3", 1200), total("pi_5", 300)],
            gateway_refunds: vec![total("pi_3", 500)],
            refunds: vec![RideTotal {
                ride_id: 3,
                cents: 500,
            }],
            ride_records: vec![
                records_of(1, "ride.captured", 1),
                records_of(3, "ride.completion_started", 1),
                records_of(3, "ride.captured", 1),
                records_of(5, "ride.cancellation_started", 1),
                records_of(5, "ride.canceled", 1),
            ],
        }
    }

    /// The violations found once `change` has changed the records and
    /// `tell` what the clients saw.
    fn violations(
        change: impl FnOnce(&mut Records),
        tell: impl FnOnce(&mut Vec<KeyHistory>),
    ) -> BTreeMap<&'static str, usize> {
        let mut records = records();
        change(&mut records);
        let mut histories = histories();
        tell(&mut histories);
        let mut report = AuditReport::default();
        check_intents(&mut report, &records);
        check_rides(&mut report, &records);
        check_histories(&mut report, &records, &histories);
        lifecycle::check_rides(&mut report, &records);
        lifecycle::check_acknowledged(&mut report, &records, &histories);
        report
            .violations
            .iter()
            .map(|(check, examples)| (*check, examples.len()))
            .collect()
    }

    fn violations_after(change: impl FnOnce(&mut Records)) -> BTreeMap<&'static str, usize> {
        violations(change, |_| {})
    }

    fn violations_told(tell: impl FnOnce(&mut Vec<KeyHistory>)) -> BTreeMap<&'static str, usize> {
        violations(|_| {}, tell)
    }

    #[test]
    fn every_ride_as_the_campaign_leaves_it_passes() {
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
            violations_after(|records| records.rides.push(ride(9, "captured", Some("pi_1"))));
        assert_eq!(found, BTreeMap::from([(CHECKS[0], 1)]));
    }

    #[test]
    fn an_acknowledged_ride_the_gateway_did_not_pay_is_flagged() {
        let found = violations_after(|records| {
            records.intents[0].status = DECLINED.to_owned();
            records.intents[0].amount_received_cents = 0;
        });
        // The ride is captured on an unpaid intent, the 201 acknowledged it,
        // the declined intent has no declined ride, and the ride's capture is
        // neither settled nor received at the gateway.
        assert_eq!(
            found,
            BTreeMap::from([
                (CHECKS[2], 2),
                (CHECKS[8], 1),
                (CHECKS[11], 1),
                (CHECKS[12], 1)
            ])
        );
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

    #[test]
    fn a_second_capture_call_or_finishing_record_is_a_ride_captured_twice() {
        let found = violations_after(|records| {
            records.captures[0].count = 2;
            records.ride_records.push(records_of(5, "ride.captured", 1));
        });
        assert_eq!(found, BTreeMap::from([(CHECKS[9], 2)]));
    }

    #[test]
    fn a_fee_above_the_hold_is_captured_beyond_what_was_authorized() {
        let found = violations_after(|records| {
            records.rides[3].amount_captured_cents = 1100;
            records.intents[3].amount_received_cents = 1100;
        });
        // At ridepay and at the gateway; and not the fee the client sent.
        assert_eq!(found, BTreeMap::from([(CHECKS[10], 2), (CHECKS[14], 1)]));
    }

    #[test]
    fn a_completed_ride_whose_intent_still_holds_is_flagged() {
        let found = violations_after(|records| records.intents[2].amount_capturable_cents = 200);
        assert_eq!(found, BTreeMap::from([(CHECKS[11], 1)]));
    }

    #[test]
    fn a_ride_captured_for_other_than_the_gateway_received_is_flagged() {
        let found = violations_after(|records| records.rides[2].amount_captured_cents = 1100);
        assert_eq!(found, BTreeMap::from([(CHECKS[12], 1), (CHECKS[13], 1)]));
    }

    #[test]
    fn a_completion_or_cancellation_acknowledged_for_other_amounts_is_flagged() {
        let found = violations_told(|histories| {
            histories[3].request = Request::Complete {
                ride_id: 3,
                final_amount_cents: 1300,
                raise_declines: false,
            };
            histories[5].request = Request::Cancel {
                ride_id: 5,
                fee_cents: 0,
            };
        });
        assert_eq!(found, BTreeMap::from([(CHECKS[13], 1), (CHECKS[14], 1)]));
    }

    #[test]
    fn refunds_beyond_the_capture_are_flagged_at_ridepay_and_the_gateway() {
        let found = violations_after(|records| {
            records.refunds[0].cents = 1300;
            records.gateway_refunds[0].cents = 1300;
        });
        assert_eq!(found, BTreeMap::from([(CHECKS[15], 2)]));
    }

    #[test]
    fn a_ride_still_taken_by_a_finished_key_is_flagged() {
        let found = violations_after(|records| records.rides[2].settling_key_id = Some(4));
        assert_eq!(found, BTreeMap::from([(CHECKS[16], 1)]));
    }

    #[test]
    fn a_transition_recorded_twice_is_flagged_and_a_second_taking_is_not() {
        let found = violations_after(|records| {
            records.ride_records[1].count = 2;
            records
                .ride_records
                .push(records_of(3, "ride.authorized", 2));
        });
        assert_eq!(found, BTreeMap::from([(CHECKS[17], 1)]));
    }

    #[test]
    fn a_completion_refused_for_a_ride_its_client_held_is_flagged() {
        let refused = r#"{"type":"/problems/invalid-ride-state","ride_id":3}"#;
        let found = violations(
            // A refusal that wrote nothing leaves no key row.
            |records| records.keys.retain(|key| key.id != 4),
            |histories| {
                histories[3].first_final = Some(Answer {
                    status: 422,
                    body: refused.as_bytes().to_vec(),
                    replayed: false,
                })
            },
        );
        assert_eq!(found, BTreeMap::from([(CHECKS[7], 1)]));
    }
}
