//! The gateway doubles' PaymentIntents (`doubles::intents`), on a database
//! of their own: Stripe's test payment methods and ridepay's, holds and
//! their capture, raise, cancellation and lapse, the rider's
//! authentication, and idempotency on the caller's key.

use std::time::Duration;

use diesel::{Connection, PgConnection};
use ridepay::payments::{
    CancelIntent, CaptureMethod, CreateIntent, GatewayError, IncrementIntent, IntentStatus,
    PaymentIntent,
};
use ridepay_doubles::intents::{self, Authentication, IntentSettings};

use crate::common::gateway::{capture_request, intent_request};
use crate::common::test_databases::create_test_database;

fn settings() -> IntentSettings {
    IntentSettings {
        double: ridepay_doubles::events::Double::Simulated,
        authentication_page: "http://127.0.0.1:8080/simulated-gateway/authenticate".to_owned(),
        authorization_ttl: Duration::from_secs(7 * 24 * 3600),
        extended_authorization_ttl: Duration::from_secs(30 * 24 * 3600),
    }
}

fn store() -> PgConnection {
    store_at(&create_test_database())
}

fn store_at(url: &str) -> PgConnection {
    PgConnection::establish(url).unwrap()
}

fn held(conn: &mut PgConnection, key: &str, payment_method: &str) -> PaymentIntent {
    intents::create(
        conn,
        &intent_request(key, payment_method, CaptureMethod::Manual),
        &settings(),
    )
    .unwrap()
}

fn capture(
    conn: &mut PgConnection,
    key: &str,
    id: &str,
    cents: i64,
) -> Result<PaymentIntent, GatewayError> {
    intents::capture(conn, &capture_request(key, id, cents), &settings())
}

fn increment(
    conn: &mut PgConnection,
    key: &str,
    id: &str,
    cents: i64,
) -> Result<PaymentIntent, GatewayError> {
    intents::increment(
        conn,
        &IncrementIntent {
            idempotency_key: key.to_owned(),
            intent_id: id.to_owned(),
            amount_cents: cents,
        },
        &settings(),
    )
}

fn cancel(conn: &mut PgConnection, key: &str, id: &str) -> Result<PaymentIntent, GatewayError> {
    intents::cancel(
        conn,
        &CancelIntent {
            idempotency_key: key.to_owned(),
            intent_id: id.to_owned(),
            cancellation_reason: "requested_by_customer".to_owned(),
        },
        &settings(),
    )
}

#[test]
fn a_card_that_succeeds_is_held_or_paid_by_its_capture_method() {
    let mut conn = store();
    let hold = held(&mut conn, "hold", "pm_card_visa");
    let paid = intents::create(
        &mut conn,
        &intent_request("paid", "pm_card_mastercard", CaptureMethod::Automatic),
        &settings(),
    )
    .unwrap();

    assert_eq!(
        (
            hold.status,
            hold.amount_capturable_cents,
            hold.amount_received_cents
        ),
        (IntentStatus::RequiresCapture, 2000, 0)
    );
    // A hold has its charge, uncaptured, as Stripe's has.
    assert!(hold.id.starts_with("pi_") && hold.latest_charge.is_some());
    assert!(hold
        .client_secret
        .as_deref()
        .unwrap()
        .starts_with(&format!("{}_secret_", hold.id)));
    assert_eq!(hold.metadata["ride_id"], "7");
    assert_eq!(
        (
            paid.status,
            paid.amount_capturable_cents,
            paid.amount_received_cents
        ),
        (IntentStatus::Succeeded, 0, 2000)
    );
    assert!(paid.latest_charge.unwrap().starts_with("ch_"));
}

#[test]
fn stripes_declining_test_methods_decline_with_their_codes_and_an_unknown_one_is_rejected() {
    let mut conn = store();
    for (key, method, decline_code) in [
        ("generic", "pm_card_visa_chargeDeclined", "generic_decline"),
        (
            "funds",
            "pm_card_chargeDeclinedInsufficientFunds",
            "insufficient_funds",
        ),
    ] {
        let declined = intents::create(
            &mut conn,
            &intent_request(key, method, CaptureMethod::Manual),
            &settings(),
        );
        let Err(GatewayError::Declined {
            code,
            decline_code: declined_with,
            message,
            payment_intent: Some(left_behind),
        }) = declined
        else {
            panic!("{declined:?}");
        };
        assert_eq!(
            (code.as_str(), declined_with.as_deref(), message.as_str()),
            (
                "card_declined",
                Some(decline_code),
                intents::DECLINE_MESSAGE
            )
        );
        // The declined PaymentIntent stays, as Stripe's does.
        let kept = intents::retrieve(&mut conn, &left_behind, &settings())
            .unwrap()
            .unwrap();
        assert_eq!(kept.status, IntentStatus::RequiresPaymentMethod);
        assert_eq!(
            kept.last_payment_error.unwrap().decline_code.as_deref(),
            Some(decline_code)
        );
    }
    let unknown = intents::create(
        &mut conn,
        &intent_request("unknown", "pm_made_up", CaptureMethod::Manual),
        &settings(),
    );
    assert!(
        matches!(&unknown, Err(GatewayError::Rejected { message }) if message.contains("No such PaymentMethod")),
        "{unknown:?}"
    );
    assert_eq!(
        crate::common::database::count(&mut conn, "simulated_payment_intents"),
        2
    );
}

#[test]
fn an_authentication_sends_the_rider_to_the_page_and_its_outcome_settles_the_intent_once() {
    let mut conn = store();
    let waiting = held(&mut conn, "auth", "pm_card_authenticationRequired");
    let failing = held(&mut conn, "auth-fails", "pm_card_authenticationRequired");
    let secret = waiting.client_secret.clone().unwrap();

    assert_eq!(waiting.status, IntentStatus::RequiresAction);
    let action = waiting.next_action.clone().unwrap();
    assert_eq!(action.kind, "redirect_to_url");
    let url = action.url.unwrap();
    assert!(
        url.starts_with("http://127.0.0.1:8080/simulated-gateway/authenticate?payment_intent=pi_"),
        "{url}"
    );
    assert!(url.contains(&secret));
    assert_eq!(
        action.return_url.as_deref(),
        Some("http://127.0.0.1:8080/payments/return")
    );

    let wrong_secret = intents::authenticate(
        &mut conn,
        &waiting.id,
        "pi_x_secret_y",
        Authentication::Completed,
        &settings(),
    )
    .unwrap();
    let completed = intents::authenticate(
        &mut conn,
        &waiting.id,
        &secret,
        Authentication::Completed,
        &settings(),
    )
    .unwrap()
    .unwrap()
    .intent;
    let again = intents::authenticate(
        &mut conn,
        &waiting.id,
        &secret,
        Authentication::Failed,
        &settings(),
    )
    .unwrap()
    .unwrap()
    .intent;
    let failed = intents::authenticate(
        &mut conn,
        &failing.id,
        failing.client_secret.as_deref().unwrap(),
        Authentication::Failed,
        &settings(),
    )
    .unwrap()
    .unwrap()
    .intent;

    assert_eq!(wrong_secret, None);
    assert_eq!(
        (completed.status, completed.amount_capturable_cents),
        (IntentStatus::RequiresCapture, 2000)
    );
    assert_eq!(completed.next_action, None);
    assert_eq!(again, completed, "a second outcome changes nothing");
    assert_eq!(failed.status, IntentStatus::RequiresPaymentMethod);
    assert_eq!(
        failed.last_payment_error.unwrap().code.as_deref(),
        Some("payment_intent_authentication_failure")
    );
}

#[test]
fn a_hold_is_captured_in_part_raised_when_the_card_allows_and_not_captured_twice() {
    let mut conn = store();
    let hold = held(&mut conn, "hold", "pm_card_visa");
    let stubborn = held(&mut conn, "stubborn", "pm_card_ridepay_incrementDeclined");

    let too_much = capture(&mut conn, "capture-too-much", &hold.id, 2001);
    let raised = increment(&mut conn, "raise", &hold.id, 2600).unwrap();
    let refused = increment(&mut conn, "raise-stubborn", &stubborn.id, 2600);
    let captured = capture(&mut conn, "capture", &hold.id, 2400).unwrap();
    let twice = capture(&mut conn, "capture-again", &hold.id, 100);

    assert!(
        matches!(too_much, Err(GatewayError::Rejected { .. })),
        "{too_much:?}"
    );
    assert_eq!(
        (raised.amount_cents, raised.amount_capturable_cents),
        (2600, 2600)
    );
    assert!(
        matches!(refused, Err(GatewayError::Declined { .. })),
        "{refused:?}"
    );
    assert_eq!(
        (
            captured.status,
            captured.amount_received_cents,
            captured.amount_capturable_cents
        ),
        (IntentStatus::Succeeded, 2400, 0)
    );
    assert!(captured.latest_charge.is_some());
    assert!(
        matches!(&twice, Err(GatewayError::Rejected { message }) if message.contains("payment_intent_unexpected_state")),
        "{twice:?}"
    );
}

#[test]
fn a_canceled_or_lapsed_hold_releases_the_money_and_cannot_be_captured() {
    let mut conn = store();
    let canceled_hold = held(&mut conn, "cancel-me", "pm_card_visa");
    let lapsing = held(&mut conn, "lapse-me", "pm_card_visa");

    let canceled = cancel(&mut conn, "cancel", &canceled_hold.id).unwrap();
    intents::lapse_now(&mut conn, &lapsing.id).unwrap();
    let lapsed = intents::retrieve(&mut conn, &lapsing.id, &settings())
        .unwrap()
        .unwrap();

    assert_eq!(
        (
            canceled.status,
            canceled.cancellation_reason.as_deref(),
            canceled.amount_capturable_cents
        ),
        (IntentStatus::Canceled, Some("requested_by_customer"), 0)
    );
    assert_eq!(
        (lapsed.status, lapsed.cancellation_reason.as_deref()),
        (IntentStatus::Canceled, Some("automatic"))
    );
    for (key, id) in [("after-cancel", &canceled.id), ("after-lapse", &lapsed.id)] {
        assert!(matches!(
            capture(&mut conn, key, id, 100),
            Err(GatewayError::Rejected { .. })
        ));
    }
    assert_eq!(
        intents::retrieve(&mut conn, "pi_none", &settings()).unwrap(),
        None
    );
}

#[test]
fn a_key_replays_its_first_answer_as_it_was_and_refuses_other_parameters() {
    let mut conn = store();
    let first = held(&mut conn, "create", "pm_card_visa");
    capture(&mut conn, "capture", &first.id, 1500).unwrap();

    // The first answer again, in the state it had then (a hold), as Stripe
    // replays a request.
    let replayed = held(&mut conn, "create", "pm_card_visa");
    let declined_twice = [
        intents::create(
            &mut conn,
            &intent_request(
                "declined",
                "pm_card_visa_chargeDeclined",
                CaptureMethod::Manual,
            ),
            &settings(),
        ),
        intents::create(
            &mut conn,
            &intent_request(
                "declined",
                "pm_card_visa_chargeDeclined",
                CaptureMethod::Manual,
            ),
            &settings(),
        ),
    ];
    let other_amount = intents::create(
        &mut conn,
        &CreateIntent {
            amount_cents: 999,
            ..intent_request("create", "pm_card_visa", CaptureMethod::Manual)
        },
        &settings(),
    );
    let other_operation = capture(&mut conn, "create", &first.id, 1500);

    assert_eq!(replayed, first);
    assert_eq!(declined_twice[0], declined_twice[1]);
    assert!(declined_twice[0].is_err());
    for refused in [other_amount, other_operation] {
        assert!(
            matches!(&refused, Err(GatewayError::Misconfigured { reason }) if reason.contains("idempotency_error")),
            "{refused:?}"
        );
    }
    assert_eq!(
        crate::common::database::count(&mut conn, "simulated_payment_intents"),
        2
    );
}

#[test]
fn concurrent_calls_under_one_key_make_one_intent() {
    let url = create_test_database();
    let answers: Vec<PaymentIntent> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    let mut conn = PgConnection::establish(&url).unwrap();
                    held(&mut conn, "storm", "pm_card_visa")
                })
            })
            .collect();
        calls.into_iter().map(|call| call.join().unwrap()).collect()
    });
    assert!(answers.iter().all(|answer| *answer == answers[0]));
    let mut conn = PgConnection::establish(&url).unwrap();
    assert_eq!(
        crate::common::database::count(&mut conn, "simulated_payment_intents"),
        1
    );
}

/// Makes `call` under four calls of one key and three of other keys at
/// once, each on a connection of its own, and checks that one key alone
/// succeeded and that the calls under one key got one answer.
fn at_once_under_one_key_and_others<T: Send + PartialEq + std::fmt::Debug>(
    url: &str,
    call: impl Fn(&mut PgConnection, &str) -> Result<T, GatewayError> + Sync,
) {
    let keys = [
        "same", "same", "same", "same", "other-1", "other-2", "other-3",
    ];
    let together = std::sync::Barrier::new(keys.len());
    let answers: Vec<(&str, Result<T, GatewayError>)> = std::thread::scope(|scope| {
        let calls: Vec<_> = keys
            .iter()
            .map(|&key| {
                let (call, together) = (&call, &together);
                scope.spawn(move || {
                    let mut conn = store_at(url);
                    together.wait();
                    (key, call(&mut conn, key))
                })
            })
            .collect();
        calls.into_iter().map(|call| call.join().unwrap()).collect()
    });

    let same: Vec<_> = answers.iter().filter(|(key, _)| *key == "same").collect();
    assert!(
        same.iter().all(|(_, answer)| *answer == same[0].1),
        "{same:?}"
    );
    let mut succeeded: Vec<&str> = answers
        .iter()
        .filter(|(_, answer)| answer.is_ok())
        .map(|(key, _)| *key)
        .collect();
    succeeded.dedup();
    assert_eq!(succeeded.len(), 1, "{answers:?}");
}

#[test]
fn concurrent_captures_of_one_hold_capture_it_once_and_one_key_gets_one_answer() {
    let url = create_test_database();
    let hold = held(&mut store_at(&url), "hold", "pm_card_visa");
    at_once_under_one_key_and_others(&url, |conn, key| capture(conn, key, &hold.id, 1500));
    let succeeded = "simulated_events WHERE event_type = 'payment_intent.succeeded'";
    assert_eq!(
        crate::common::database::count(&mut store_at(&url), succeeded),
        1
    );
}

#[test]
fn concurrent_refunds_of_one_payment_never_exceed_it_and_one_key_gets_one_answer() {
    use ridepay::payments::{Payment, RefundRequest};
    use ridepay_doubles::{events::Double, refunds};
    let url = create_test_database();
    let paid = intents::create(
        &mut store_at(&url),
        &intent_request("paid", "pm_card_visa", CaptureMethod::Automatic),
        &settings(),
    )
    .unwrap();
    at_once_under_one_key_and_others(&url, |conn, key| {
        let request = RefundRequest {
            idempotency_key: key.to_owned(),
            payment: Payment::Intent(paid.id.clone()),
            amount_cents: 1500,
            reason: None,
            metadata: Vec::new(),
        };
        refunds::refund(conn, &request, Double::Simulated)
    });
    assert_eq!(
        crate::common::database::count(&mut store_at(&url), "simulated_refunds"),
        1
    );
}

#[test]
fn the_simulated_gateway_may_lose_an_answer_and_the_same_key_then_gets_the_intent_it_made() {
    use ridepay::config::SimulatedGatewaySettings;
    use ridepay::payments::PaymentGateway;
    use ridepay_doubles::SimulatedGateway;
    let url = create_test_database();
    let pool = crate::common::settings::pool(&url);
    let with = |faults: SimulatedGatewaySettings| SimulatedGateway::new(pool.clone(), faults);
    let lossy = with(SimulatedGatewaySettings {
        lost_response_rate: 1.0,
        ..SimulatedGatewaySettings::default()
    });
    let failing = with(SimulatedGatewaySettings {
        fail_rate: 1.0,
        ..SimulatedGatewaySettings::default()
    });
    let honest = with(SimulatedGatewaySettings::default());
    let hold = intent_request("lost", "pm_card_visa", CaptureMethod::Manual);

    let lost = lossy.create_intent(&hold);
    let made = honest.create_intent(&hold).unwrap();
    let not_made = failing.create_intent(&intent_request(
        "failed",
        "pm_card_visa",
        CaptureMethod::Manual,
    ));

    assert!(
        matches!(lost, Err(GatewayError::OutcomeUnknown { .. })),
        "{lost:?}"
    );
    assert_eq!(made.status, IntentStatus::RequiresCapture);
    assert_eq!(honest.retrieve_intent(&made.id).unwrap(), Some(made));
    assert!(
        matches!(not_made, Err(GatewayError::Unavailable { .. })),
        "{not_made:?}"
    );
    let mut conn = PgConnection::establish(&url).unwrap();
    assert_eq!(
        crate::common::database::count(&mut conn, "simulated_payment_intents"),
        1
    );
}
