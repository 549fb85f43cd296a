//! The checks against made-up records.

use std::collections::BTreeMap;

use ridepay::public_ids::{PublicId, RefundPublicId, RidePublicId};
use serde_json::json;

use super::checks::*;
use super::pay::*;
use super::records::*;
use super::report::*;
use super::*;
use crate::chaos::history::{Expected, Request};
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

/// The id the API gives the ride of row `id`: its bytes all `id`, so that
/// it differs from every other's.
fn public_id(id: i64) -> RidePublicId {
    RidePublicId::from_body([id as u8; 18])
}

/// That id as answers and paths spell it (`ride_...`).
fn ride_id(id: i64) -> String {
    public_id(id).to_string()
}

/// A ride of 1000 asked for under key row `id`: paid at once when
/// captured, held otherwise.
fn ride(id: i64, status: &str, intent: Option<&str>) -> RideRow {
    let captured = status == "captured";
    RideRow {
        id,
        public_id: public_id(id),
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
        tip_cents: 0,
        tip_payment_intent_id: None,
    }
}

fn intent(id: &str, status: &str, ride_and_key: i64) -> IntentRow {
    IntentRow {
        id: id.to_owned(),
        amount_cents: 1000,
        amount_capturable_cents: 0,
        amount_received_cents: if status == SUCCEEDED { 1000 } else { 0 },
        status: status.to_owned(),
        ridepay_key: Some(format!("request-{ride_and_key}")),
        overcapture_max_cents: None,
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

/// A ride's answer: the ride of row `id`, in `status`.
fn ride_answer(id: i64, status: &str) -> String {
    json!({ "id": ride_id(id), "status": status }).to_string()
}

/// A problem about the ride of row `id` (a decline's, a refusal's).
fn problem_answer(kind: &str, id: i64) -> String {
    json!({ "type": format!("/problems/{kind}"), "ride_id": ride_id(id) }).to_string()
}

fn paid() -> String {
    ride_answer(1, "captured")
}

fn canceled() -> String {
    ride_answer(5, "canceled")
}

/// The keys the campaign leaves, as its clients saw them: a ride paid at
/// once (1), a decline (2), a held ride (3) completed above its hold
/// (4) and partly refunded (7), a held ride (5) cancelled with a fee (6).
fn histories() -> Vec<KeyHistory> {
    let ride = |amount_cents, expected| Request::Ride {
        amount_cents,
        expected,
    };
    let held = |id: i64| {
        let answer = ride_answer(id, "authorized");
        history(id, ride(1000, Expected::Authorized), 201, &answer)
    };
    let refund = json!({
        "id": RefundPublicId::from_body([7; 18]).to_string(),
        "ride_id": ride_id(3),
        "amount_cents": 500,
    });
    vec![
        history(1, ride(1000, Expected::Captured), 201, &paid()),
        history(
            2,
            ride(1000, Expected::Declined),
            402,
            &problem_answer("card-declined", 2),
        ),
        held(3),
        history(
            4,
            Request::Complete {
                ride_id: ride_id(3),
                final_amount_cents: 1200,
                raise_declines: false,
            },
            200,
            &ride_answer(3, "captured"),
        ),
        held(5),
        history(
            6,
            Request::Cancel {
                ride_id: ride_id(5),
                fee_cents: 300,
            },
            200,
            &canceled(),
        ),
        history(
            7,
            Request::Refund {
                ride_id: ride_id(3),
                amount_cents: 500,
            },
            201,
            &refund.to_string(),
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
        released: Default::default(),
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
    assert_eq!(
        found,
        BTreeMap::from([(CHECKS[0], 1), (CHECKS[1], 1), (CHECKS[18], 1)])
    );
}

#[test]
fn a_second_payment_for_a_key_that_reconciliation_released_is_neither() {
    let found = violations_after(|records| {
        records.intents.push(intent("pi_1b", SUCCEEDED, 1));
        records.released.insert("pi_1b".to_owned());
    });
    assert_eq!(found, BTreeMap::new());
}

#[test]
fn a_hold_no_ride_records_is_flagged() {
    let found =
        violations_after(|records| records.intents.push(intent("pi_9", "requires_capture", 9)));
    assert_eq!(found, BTreeMap::from([(CHECKS[18], 1)]));
}

#[test]
fn a_payment_that_names_no_request_is_flagged() {
    let found = violations_after(|records| records.intents[0].ridepay_key = None);
    assert_eq!(found, BTreeMap::from([(CHECKS[0], 1)]));
}

#[test]
fn one_payment_named_by_two_rides_is_a_duplicate() {
    let found = violations_after(|records| records.rides.push(ride(9, "captured", Some("pi_1"))));
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
            ride_id: ride_id(3),
            final_amount_cents: 1300,
            raise_declines: false,
        };
        histories[5].request = Request::Cancel {
            ride_id: ride_id(5),
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
    let refused = problem_answer("invalid-ride-state", 3);
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

/// Ride 1, paid at once, tipped 200 after by `pi_tip` (key 8, acknowledged).
fn tipped(records: &mut Records) {
    let ride = &mut records.rides[0];
    ride.tip_cents = 200;
    ride.tip_payment_intent_id = Some("pi_tip".to_owned());
    ride.amount_captured_cents = 1200;
    records.intents.push(IntentRow {
        amount_cents: 200,
        amount_received_cents: 200,
        ..intent("pi_tip", SUCCEEDED, 8)
    });
}

fn told_tipped(histories: &mut Vec<KeyHistory>) {
    let tip = Request::Tip {
        ride_id: ride_id(1),
        amount_cents: 200,
    };
    histories.push(history(8, tip, 200, &paid()));
}

#[test]
fn a_tip_paid_by_its_own_intent_passes_and_is_no_orphan() {
    let found = violations(tipped, told_tipped);
    assert_eq!(found, BTreeMap::new());
}

#[test]
fn a_tip_intent_that_took_other_than_the_tip_is_flagged() {
    let found = violations(
        |records| {
            tipped(records);
            let tip = records.intents.last_mut().unwrap();
            (tip.amount_cents, tip.amount_received_cents) = (300, 300);
        },
        told_tipped,
    );
    assert_eq!(found, BTreeMap::from([(CHECKS[19], 1)]));
}

#[test]
fn an_acknowledged_tip_the_ride_does_not_have_is_flagged_unless_its_hold_was_released() {
    let found = violations_told(|histories| {
        told_tipped(histories);
        let dropped = Request::Tip {
            ride_id: ride_id(5),
            amount_cents: 100,
        };
        histories.push(history(9, dropped, 200, &canceled()));
    });
    assert_eq!(found, BTreeMap::from([(CHECKS[19], 1)]));
}

#[test]
fn a_completion_captures_the_tip_its_ride_had() {
    let found = violations_after(|records| {
        records.rides[2].tip_cents = 100;
        records.rides[2].amount_captured_cents = 1300;
        records.intents[2].amount_cents = 1300;
        records.intents[2].amount_received_cents = 1300;
        records.rides[2].amount_authorized_cents = 1300;
    });
    assert_eq!(found, BTreeMap::new());
}

#[test]
fn an_answer_naming_its_ride_by_anything_but_the_public_id_names_no_ride() {
    let found = violations_told(|histories| {
        // The ride's row, as ids were before.
        let first = histories[0].first_final.as_mut().unwrap();
        first.body = br#"{"id":1,"status":"captured"}"#.to_vec();
    });
    // Not paid as answered, and not the answer stored.
    assert_eq!(found, BTreeMap::from([(CHECKS[2], 1), (CHECKS[6], 1)]));
}

#[test]
fn an_answer_naming_another_keys_ride_is_flagged() {
    let found = violations_told(|histories| {
        let first = histories[2].first_final.as_mut().unwrap();
        first.body = ride_answer(5, "authorized").into_bytes();
    });
    assert_eq!(found, BTreeMap::from([(CHECKS[2], 1), (CHECKS[6], 1)]));
}

#[test]
fn a_completion_acknowledged_for_an_id_no_ride_has_is_flagged() {
    let found = violations_told(|histories| {
        histories[3].request = Request::Complete {
            ride_id: ride_id(3).to_uppercase(),
            final_amount_cents: 1200,
            raise_declines: false,
        };
    });
    assert_eq!(found, BTreeMap::from([(CHECKS[13], 1)]));
}

/// Ride `ride`'s fare's PaymentIntent, `pi_<ride>`.
fn fare_of(ride: i64) -> RidePayment {
    RidePayment {
        ride_id: ride,
        intent: Some(format!("pi_{ride}")),
    }
}

/// A charge of ride `ride` (its fare's PaymentIntent `pi_<ride>`, no
/// tip) for `cents`, assigned to driver 1 at 20 %, reallocated whole.
fn charge(ride: i64, cents: i64) -> ChargeRow {
    ChargeRow {
        id: format!("ch_{ride}"),
        payment: fare_of(ride),
        amount_cents: cents,
        tip_cents: 0,
        tip_intent: None,
        commission_bps: 2000,
        driver_id: 1,
        kept_cents: cents,
        reallocated_cents: cents * 8 / 10,
    }
}

/// The original transfer of ride `ride`'s charge, entitled to `entitled`
/// and sending `amount`; made (`tr_<ride>`, posted as ledger transaction
/// `100 + ride`) unless it is 0.
fn transfer(ride: i64, entitled: i64, amount: i64) -> TransferRow {
    let made = amount > 0;
    TransferRow {
        id: 10 + ride,
        driver_id: 1,
        account: "acct_1".to_owned(),
        source_charge: format!("ch_{ride}"),
        entitled_cents: entitled,
        amount_cents: amount,
        netted_cents: entitled - amount,
        status: if made { "paid" } else { "netted" }.to_owned(),
        gateway_id: made.then(|| format!("tr_{ride}")),
        amount_reversed_cents: 0,
        reowes: None,
        posting_id: made.then_some(100 + ride),
    }
}

/// A refund part of ride `ride`'s fare, posted after its transfer was
/// made, taking `taken` from the driver.
fn refund_part(ride: i64, cents: i64, taken: i64) -> RefundPart {
    RefundPart {
        id: 20 + ride,
        payment: fare_of(ride),
        amount_cents: cents,
        taken_cents: taken,
        posting_id: Some(200 + ride),
    }
}

fn made(id: &str, cents: i64, to: &str, source: &str) -> GatewayMove {
    GatewayMove {
        id: id.to_owned(),
        amount_cents: cents,
        to: to.to_owned(),
        source: source.to_owned(),
        ridepay_key: Some(format!("key-{id}")),
    }
}

/// The drivers' pay as the campaign leaves it: ride 1 (1000) paid its
/// driver 800, half refunded and 400 reversed; ride 2 (2000) paid 1600,
/// half refunded, the reversal of 800 refused (debt); ride 3 (1000) owed
/// 800, all netted against that debt. The driver's payable is 0.
fn pay_records() -> PayRecords {
    let mut reversed = transfer(1, 800, 800);
    reversed.amount_reversed_cents = 400;
    PayRecords {
        charges: vec![charge(1, 1000), charge(2, 2000), charge(3, 1000)],
        refunds: vec![refund_part(1, 500, 400), refund_part(2, 1000, 800)],
        transfers: vec![reversed, transfer(2, 1600, 1600), transfer(3, 800, 0)],
        reversals: vec![
            ReversalRow {
                transfer_id: 11,
                refund_id: 21,
                amount_cents: 400,
                status: "reversed".to_owned(),
                gateway_id: Some("trr_1".to_owned()),
            },
            ReversalRow {
                transfer_id: 12,
                refund_id: 22,
                amount_cents: 800,
                status: "failed".to_owned(),
                gateway_id: None,
            },
        ],
        gateway_transfers: vec![
            made("tr_1", 800, "acct_1", "ch_1"),
            made("tr_2", 1600, "acct_1", "ch_2"),
        ],
        gateway_reversals: vec![made("trr_1", 400, "tr_1", "")],
        payables: vec![Payable {
            driver_id: 1,
            account: "acct_1".to_owned(),
            balance_cents: 0,
        }],
    }
}

fn pay_violations(change: impl FnOnce(&mut PayRecords)) -> BTreeMap<&'static str, usize> {
    let mut records = pay_records();
    change(&mut records);
    let mut report = AuditReport::default();
    check_pay(&mut report, &records);
    report
        .violations
        .iter()
        .map(|(check, examples)| (*check, examples.len()))
        .collect()
}

#[test]
fn a_drivers_entitlement_is_the_share_of_the_fare_and_the_whole_tip_after_refunds() {
    let fare = charge(1, 999);
    // The platform's 20 % of 999 rounded down (199): 800 is the share.
    assert_eq!(fare.entitlement(0), 800);
    assert_eq!(fare.entitlement(1), 800);
    assert_eq!(fare.entitlement(500), 800 - 500 * 800 / 999);
    assert_eq!(fare.entitlement(999), 0);
    // A tip added before the capture rides in the fare's charge; refunds
    // take the fare first.
    let with_tip = ChargeRow {
        amount_cents: 1200,
        tip_cents: 200,
        ..charge(2, 1200)
    };
    assert_eq!(with_tip.entitlement(0), 800 + 200);
    assert_eq!(with_tip.entitlement(1100), 100);
    // A tip's own charge is the driver's to the cent.
    let tip = ChargeRow {
        payment: RidePayment {
            ride_id: 3,
            intent: Some("pi_tip".to_owned()),
        },
        tip_intent: Some("pi_tip".to_owned()),
        tip_cents: 300,
        ..charge(3, 300)
    };
    assert_eq!(tip.entitlement(100), 200);
    // The fare's charge of a ride tipped apart carries no tip.
    let fare_tipped_apart = ChargeRow {
        tip_intent: Some("pi_tip".to_owned()),
        tip_cents: 300,
        ..charge(3, 1000)
    };
    assert_eq!(fare_tipped_apart.entitlement(0), 800);
}

#[test]
fn drivers_paid_reversed_and_left_in_debt_as_the_campaign_leaves_them_pass() {
    let mut report = AuditReport::default();
    check_pay(&mut report, &pay_records());
    assert_eq!(report.violations, BTreeMap::new());
    assert_eq!(
        report.pay,
        PayCounts {
            charges_assigned: 3,
            transfers_paid: 2,
            transfers_owed_again: 0,
            reversed: 1,
            reversed_cents: 400,
            left_as_debt: 1,
            debt_cents: 800,
            netted: 1,
            netted_cents: 800,
        }
    );
}

#[test]
fn a_transfer_owed_other_than_the_entitlement_is_flagged() {
    let found = pay_violations(|records| {
        records.transfers[0].entitled_cents = 900;
        records.transfers[0].netted_cents = 100;
    });
    assert_eq!(found, BTreeMap::from([(CHECKS[26], 1)]));
}

#[test]
fn a_charge_owed_no_transfer_or_two_is_flagged() {
    let found = pay_violations(|records| {
        records.transfers.remove(2);
        let mut twice = transfer(1, 800, 0);
        twice.id = 99;
        records.transfers.push(twice);
    });
    assert_eq!(found, BTreeMap::from([(CHECKS[26], 2)]));
}

#[test]
fn a_transfer_left_owed_is_flagged() {
    let found = pay_violations(|records| {
        let owed = &mut records.transfers[2];
        (owed.status, owed.amount_cents, owed.netted_cents) = ("pending".to_owned(), 800, 0);
    });
    assert_eq!(found, BTreeMap::from([(CHECKS[26], 1)]));
}

#[test]
fn refunds_that_took_other_than_the_entitlement_lost_are_flagged() {
    let found = pay_violations(|records| records.refunds[1].taken_cents = 700);
    // And the refused reversal is not of what it took.
    assert_eq!(found, BTreeMap::from([(CHECKS[26], 1), (CHECKS[29], 1)]));
}

#[test]
fn a_transfer_made_twice_at_the_gateway_is_flagged() {
    let found = pay_violations(|records| {
        let mut again = made("tr_1b", 800, "acct_1", "ch_1");
        again.ridepay_key = Some("key-tr_1".to_owned());
        records.gateway_transfers.push(again);
    });
    // Made by no row, under a key made twice; and the driver got 800 more
    // than the ledger says.
    assert_eq!(found, BTreeMap::from([(CHECKS[27], 2), (CHECKS[30], 1)]));
}

#[test]
fn a_transfer_recorded_for_other_than_the_gateway_made_is_flagged() {
    let found = pay_violations(|records| records.gateway_transfers[1].to = "acct_2".to_owned());
    assert_eq!(found, BTreeMap::from([(CHECKS[27], 1), (CHECKS[30], 1)]));
}

#[test]
fn a_reversal_recorded_made_that_the_gateway_does_not_have_is_flagged() {
    let found = pay_violations(|records| {
        records.gateway_reversals.clear();
    });
    assert_eq!(found, BTreeMap::from([(CHECKS[28], 1), (CHECKS[30], 1)]));
}

#[test]
fn a_refund_of_a_transfer_made_without_its_reversal_is_flagged() {
    let found = pay_violations(|records| {
        records.reversals.remove(0);
        records.transfers[0].amount_reversed_cents = 0;
        records.gateway_reversals.clear();
        records.payables[0].balance_cents = 400;
    });
    assert_eq!(found, BTreeMap::from([(CHECKS[29], 1)]));
}

#[test]
fn a_reversal_owed_by_a_refund_before_the_transfer_was_made_is_flagged() {
    let found = pay_violations(|records| records.refunds[1].posting_id = Some(99));
    assert_eq!(found, BTreeMap::from([(CHECKS[29], 1)]));
}

#[test]
fn a_reversal_left_owed_is_flagged() {
    let found = pay_violations(|records| records.reversals[1].status = "pending".to_owned());
    assert_eq!(found, BTreeMap::from([(CHECKS[29], 1)]));
}

#[test]
fn a_payable_other_than_the_entitlements_less_what_was_moved_is_flagged() {
    let found = pay_violations(|records| records.payables[0].balance_cents = -100);
    assert_eq!(found, BTreeMap::from([(CHECKS[30], 1)]));
}

#[test]
fn a_campaign_that_made_no_debt_fails() {
    let found = pay_violations(|records| {
        records.charges.truncate(1);
        records.refunds.truncate(1);
        records.transfers.truncate(1);
        records.reversals.truncate(1);
        records.gateway_transfers.truncate(1);
    });
    assert_eq!(found, BTreeMap::from([(CHECKS[31], 1)]));
}
