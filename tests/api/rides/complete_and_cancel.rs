//! The ride's life after the hold: `POST /api/rides/{id}/complete` and
//! `POST /api/rides/{id}/cancel`, holds that lapse, and refunds only of what
//! was captured (`docs/API.md`, "The ride's life").

use std::time::Duration;

use ridepay_doubles::intents;
use serde_json::{json, Value};

use crate::common::app::{create_user, spawn_app, TestApp};
use crate::common::ids::Id;
use crate::common::wait::eventually;

fn intent_of(ride: &Value) -> String {
    ride["payment_intent_id"].as_str().unwrap().to_owned()
}

/// What the simulated gateway holds of a PaymentIntent: status, capturable,
/// received.
fn at_gateway(app: &TestApp, intent: &str) -> (String, i64, i64) {
    use diesel::prelude::*;
    use ridepay_doubles::schema::simulated_payment_intents as pi;
    pi::table
        .find(intent)
        .select((
            pi::status,
            pi::amount_capturable_cents,
            pi::amount_received_cents,
        ))
        .first(&mut app.db())
        .unwrap()
}

/// Waits for the ride to reach `status` (the gateway's events arrive by
/// themselves).
async fn until_status(app: &TestApp, ride_id: Id, status: &str) -> Value {
    let reached = eventually(Duration::from_secs(5), || {
        app.count(&format!(
            "rides WHERE id = {} AND status = '{status}'",
            ride_id.row_key()
        )) == 1
    })
    .await;
    let ride = app.ride(ride_id).await;
    assert!(reached, "{ride}");
    ride
}

#[tokio::test]
async fn completing_captures_the_final_fare_and_releases_the_rest_of_the_hold() {
    let app = spawn_app().await;
    app.registered_destination("destination").await;
    let ride_id = app.held_ride("ride", "pm_card_visa").await;

    let answer = app
        .post_complete(ride_id, "done", r#"{"final_amount_cents": 1800}"#)
        .await;
    let replay = app
        .post_complete(ride_id, "done", r#"{"final_amount_cents": 1800}"#)
        .await;

    answer.assert_status(200);
    let ride = answer.json();
    assert_eq!(
        (
            ride["status"].as_str(),
            ride["amount_authorized_cents"].as_i64(),
            ride["amount_captured_cents"].as_i64()
        ),
        (Some("captured"), Some(2000), Some(1800))
    );
    assert_eq!(
        at_gateway(&app, &intent_of(&ride)),
        ("succeeded".to_owned(), 0, 1800)
    );
    assert_eq!(
        (
            replay.status,
            &replay.body,
            replay.header("idempotent-replayed")
        ),
        (200, &answer.body, Some("true"))
    );
    assert_eq!(app.count("webhook_events WHERE type = 'ride.captured'"), 1);
    // The event of the capture changes nothing more.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(app.ride(ride_id).await, ride);
    // Only what was captured can be refunded.
    app.post_refund(ride_id, "too-much", r#"{"amount_cents": 1801}"#)
        .await
        .assert_problem(422, "refund-not-allowed");
    app.post_refund(ride_id, "all", "{}")
        .await
        .assert_status(201);
    assert_eq!(app.ride(ride_id).await["status"], "refunded");
}

#[tokio::test]
async fn a_final_fare_above_the_hold_raises_it_first() {
    let app = spawn_app().await;
    let ride_id = app.held_ride("ride", "pm_card_visa").await;

    let answer = app
        .post_complete(ride_id, "more", r#"{"final_amount_cents": 2600}"#)
        .await;

    answer.assert_status(200);
    let ride = answer.json();
    assert_eq!(
        (
            ride["amount_authorized_cents"].as_i64(),
            ride["amount_captured_cents"].as_i64()
        ),
        (Some(2600), Some(2600))
    );
    assert_eq!(
        at_gateway(&app, &intent_of(&ride)),
        ("succeeded".to_owned(), 0, 2600)
    );
}

#[tokio::test]
async fn a_raise_the_card_refuses_is_a_stored_402_and_the_hold_can_still_be_captured() {
    let app = spawn_app().await;
    let ride_id = app
        .held_ride("ride", "pm_card_ridepay_incrementDeclined")
        .await;
    let body = r#"{"final_amount_cents": 2600}"#;

    let refused = app.post_complete(ride_id, "more", body).await;
    let replay = app.post_complete(ride_id, "more", body).await;

    let problem = refused.assert_problem(402, "card-declined");
    assert_eq!(problem["ride_id"], ride_id);
    assert_eq!(problem["code"], "card_declined");
    assert_eq!((replay.status, &replay.body), (402, &refused.body));
    assert_eq!(app.ride(ride_id).await["status"], "authorized");
    let covered = app
        .post_complete(ride_id, "what-it-covers", r#"{"final_amount_cents": 2000}"#)
        .await;
    covered.assert_status(200);
    assert_eq!(covered.json()["amount_captured_cents"], 2000);
}

#[tokio::test]
async fn completing_or_cancelling_a_ride_in_another_state_is_422_and_writes_nothing() {
    let app = spawn_app().await;
    let paid = app.paid_ride("paid").await;
    let waiting = Id::of(&app.waiting_ride("3ds").await["id"]);
    let before = (app.count("idempotency_keys"), app.count("audit_records"));

    for (ride_id, action, body) in [
        (paid, "complete", r#"{"final_amount_cents": 1000}"#),
        (waiting, "complete", r#"{"final_amount_cents": 1000}"#),
        (paid, "cancel", "{}"),
    ] {
        let path = format!("/api/rides/{ride_id}/{action}");
        app.post_as(&app.user, &path, "refused", body)
            .await
            .assert_problem(422, "invalid-ride-state");
    }
    assert_eq!(
        (app.count("idempotency_keys"), app.count("audit_records")),
        before
    );
    // The key was not consumed: a valid request may take it.
    app.post_cancel(waiting, "refused", "{}")
        .await
        .assert_status(200);
    // Another user's ride is not found, whatever the key.
    let other = create_user(&app.database_url, Some("cus_other"));
    let mine = app.held_ride("mine", "pm_card_visa").await;
    let keys_before = app.count("idempotency_keys");
    let url = format!("{}/api/rides/{mine}/complete", app.address);
    let theirs = app
        .client
        .post(url)
        .bearer_auth(&other.api_key)
        .header("Idempotency-Key", "theirs")
        .header("Content-Type", "application/json")
        .body(r#"{"final_amount_cents": 1000}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(theirs.status(), 404);
    assert_eq!(app.ride(mine).await["status"], "authorized");
    // Refused where the ride is taken: the claim rolled back with it.
    assert_eq!(app.count("idempotency_keys"), keys_before);
}

#[tokio::test]
async fn cancelling_releases_the_hold_or_captures_only_the_fee() {
    let app = spawn_app().await;
    let free = app.held_ride("free", "pm_card_visa").await;
    let fee = app.held_ride("fee", "pm_card_visa").await;

    let released = app.post_cancel(free, "cancel-free", "").await;
    let charged = app
        .post_cancel(fee, "cancel-fee", r#"{"cancellation_fee_cents": 500}"#)
        .await;
    let too_much = app
        .post_cancel(
            app.held_ride("greedy", "pm_card_visa").await,
            "cancel-greedy",
            r#"{"cancellation_fee_cents": 2001}"#,
        )
        .await;

    released.assert_status(200);
    let ride = released.json();
    assert_eq!(
        (
            ride["status"].as_str(),
            ride["amount_captured_cents"].as_i64()
        ),
        (Some("canceled"), Some(0))
    );
    assert_eq!(at_gateway(&app, &intent_of(&ride)).0, "canceled");
    charged.assert_status(200);
    let ride = charged.json();
    assert_eq!(
        (
            ride["status"].as_str(),
            ride["amount_captured_cents"].as_i64()
        ),
        (Some("canceled"), Some(500))
    );
    assert_eq!(
        at_gateway(&app, &intent_of(&ride)),
        ("succeeded".to_owned(), 0, 500)
    );
    assert_eq!(
        too_much.assert_problem(400, "invalid-request")["errors"][0]["field"],
        "cancellation_fee_cents"
    );
    // The fee's payment_intent.succeeded leaves the ride canceled; the fee
    // can be refunded.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(app.ride(fee).await["status"], "canceled");
    app.post_refund(fee, "refund-fee", "{}")
        .await
        .assert_status(201);
    assert_eq!(app.ride(fee).await["amount_refunded_cents"], 500);
    app.post_refund(free, "nothing", "{}")
        .await
        .assert_problem(422, "refund-not-allowed");
}

#[tokio::test]
async fn a_ride_waiting_for_authentication_can_be_cancelled_without_a_fee() {
    let app = spawn_app().await;
    let waiting = app.waiting_ride("3ds").await;
    let ride_id = Id::of(&waiting["id"]);

    app.post_cancel(ride_id, "fee", r#"{"cancellation_fee_cents": 100}"#)
        .await
        .assert_problem(400, "invalid-request");
    let canceled = app.post_cancel(ride_id, "cancel", "{}").await;

    canceled.assert_status(200);
    assert_eq!(canceled.json()["status"], "canceled");
    assert_eq!(canceled.json()["next_action"], json!(null));
    assert_eq!(at_gateway(&app, &intent_of(&waiting)).0, "canceled");
}

#[tokio::test]
async fn a_hold_that_lapses_makes_the_ride_expired_and_completing_it_is_authorization_expired() {
    let app = spawn_app().await;
    let ride_id = app.held_ride("ride", "pm_card_visa").await;
    let intent = intent_of(&app.ride(ride_id).await);

    intents::lapse_now(&mut app.db(), &intent).unwrap();

    // The gateway's payment_intent.canceled, delivered in-process.
    until_status(&app, ride_id, "expired").await;
    app.post_complete(ride_id, "late", r#"{"final_amount_cents": 1800}"#)
        .await
        .assert_problem(422, "authorization-expired");
    assert_eq!(app.count("idempotency_keys WHERE key = 'late'"), 0);
    assert_eq!(at_gateway(&app, &intent), ("canceled".to_owned(), 0, 0));
}

#[tokio::test]
async fn two_completions_at_once_capture_once() {
    let app = spawn_app().await;
    let ride_id = app.held_ride("ride", "pm_card_visa").await;

    let answers = futures_util::future::join_all((0..6).map(|i| {
        let key = format!("complete-{i}");
        let app = &app;
        async move {
            app.post_complete(ride_id, &key, r#"{"final_amount_cents": 1500}"#)
                .await
        }
    }))
    .await;

    let statuses: Vec<u16> = answers.iter().map(|answer| answer.status).collect();
    assert_eq!(
        statuses.iter().filter(|status| **status == 200).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|status| [200, 422].contains(status)),
        "{statuses:?}"
    );
    let ride = app.ride(ride_id).await;
    assert_eq!(
        at_gateway(&app, &intent_of(&ride)),
        ("succeeded".to_owned(), 0, 1500)
    );
    assert_eq!(app.count("audit_records WHERE action = 'ride.captured'"), 1);
}

/// Through the Stripe client, with no events to tell ridepay the hold
/// lapsed: the refused capture (or cancellation) is looked into, the ride is
/// `expired`, and the answer is stored.
#[tokio::test]
async fn a_hold_found_lapsed_when_acting_on_it_is_a_stored_answer_and_the_ride_expired() {
    use crate::common::app::spawn_app_with;
    use crate::common::gateway::{spawn_fake_gateway, stripe_settings};
    let (fake, records) = spawn_fake_gateway(|_| {});
    let app = spawn_app_with(|s| {
        s.gateway.kind = ridepay::config::GatewayKind::Stripe;
        s.gateway.stripe = stripe_settings(&fake);
    })
    .await;
    let completed = app.held_ride("to-complete", "pm_card_visa").await;
    let cancelled = app.held_ride("to-cancel", "pm_card_visa").await;
    let mut gateway = diesel::Connection::establish(&records).unwrap();
    for ride_id in [completed, cancelled] {
        intents::lapse_now(&mut gateway, &intent_of(&app.ride(ride_id).await)).unwrap();
    }
    let complete = r#"{"final_amount_cents": 1800}"#;

    let expired = app.post_complete(completed, "late", complete).await;
    let replay = app.post_complete(completed, "late", complete).await;
    let refused = app.post_cancel(cancelled, "late-cancel", "{}").await;

    expired.assert_problem(422, "authorization-expired");
    assert_eq!((replay.status, &replay.body), (422, &expired.body));
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    refused.assert_problem(422, "invalid-ride-state");
    for ride_id in [completed, cancelled] {
        let ride = app.ride(ride_id).await;
        assert_eq!(
            (
                ride["status"].as_str(),
                ride["amount_captured_cents"].as_i64()
            ),
            (Some("expired"), Some(0))
        );
    }
    assert_eq!(app.count("rides WHERE settling_key_id IS NOT NULL"), 0);
}
