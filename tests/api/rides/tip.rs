//! Tips: `POST /api/rides/{id}/tip`. On a held ride the tip waits for the
//! completion, which captures it with the final fare (a cancellation drops
//! it); on a captured ride it is a PaymentIntent of its own, off session on
//! the saved card. One tip per ride succeeds; refunds may cover it, split
//! fare first.

use std::time::Duration;

use diesel::prelude::*;

use ridepay::payments::{Payment, PaymentGateway, RefundRequest};
use ridepay::public_ids::RidePublicId;
use ridepay_doubles::intents;
use ridepay_doubles::{SimulatedGateway, SimulatedGatewaySettings};
use serde_json::{json, Value};

use crate::common::app::{
    create_user, held_ride, ride_with, spawn_app, spawn_app_with, spawn_server, Answer, TestApp,
    TestUser,
};
use crate::common::gateway::{reconcile, stripe_event, WEBHOOK_SECRET};
use crate::common::ids::Id;
use crate::common::wait::eventually;

/// A ride paid at once with the user's saved card.
fn saved_card_ride() -> String {
    ride_with(json!({ "payment_method": null }))
}

fn tip_of(cents: i64) -> String {
    format!(r#"{{"amount_cents": {cents}}}"#)
}

async fn tip_as(app: &TestApp, user: &TestUser, ride_id: Id, key: &str, cents: i64) -> Answer {
    let path = format!("/api/rides/{ride_id}/tip");
    app.post_as(user, &path, key, &tip_of(cents)).await
}

async fn tip(app: &TestApp, ride_id: Id, key: &str, cents: i64) -> Answer {
    app.post_tip(ride_id, key, &tip_of(cents)).await
}

/// A captured ride paid with the user's saved card; returns its id.
async fn captured_ride(app: &TestApp, key: &str) -> Id {
    let answer = app.post_ride(key, &saved_card_ride()).await;
    answer.assert_status(201);
    assert_eq!(answer.json()["status"], "captured");
    Id::of(&answer.json()["id"])
}

/// The gateway's PaymentIntents of `cents`: (status, customer, payment method).
fn intents_of(app: &TestApp, cents: i64) -> Vec<(String, Option<String>, String)> {
    use ridepay_doubles::schema::simulated_payment_intents::dsl as pi;
    pi::simulated_payment_intents
        .filter(pi::amount_cents.eq(cents))
        .select((pi::status, pi::customer, pi::payment_method))
        .load(&mut app.db())
        .unwrap()
}

fn assert_ride(ride: &Value, status: &str, captured: i64, tip: i64) {
    assert_eq!(
        (
            ride["status"].as_str(),
            ride["amount_captured_cents"].as_i64(),
            ride["tip_cents"].as_i64()
        ),
        (Some(status), Some(captured), Some(tip)),
        "{ride}"
    );
}

/// The server, taking the events these tests send, and none of its
/// simulated gateway's own: what ridepay learns, and when, is theirs to say.
async fn with_webhooks() -> TestApp {
    spawn_app_with(|settings| {
        settings.gateway.stripe.webhook_secret = Some(WEBHOOK_SECRET.to_owned().into());
        settings.gateway.simulated.events_enabled = false;
    })
    .await
}

fn simulated_gateway(app: &TestApp) -> impl PaymentGateway {
    let pool = crate::common::settings::pool(&app.database_url);
    SimulatedGateway::new(pool, SimulatedGatewaySettings::default())
}

#[tokio::test]
async fn a_tip_on_a_held_ride_is_captured_with_the_final_fare() {
    let app = spawn_app().await;
    let ride_id = app.held_ride("held", "pm_card_visa").await;

    let tipped = tip(&app, ride_id, "tip", 300).await;
    let replay = tip(&app, ride_id, "tip", 300).await;

    tipped.assert_status(200);
    assert_eq!(tipped.header("location"), None);
    assert_ride(&tipped.json(), "authorized", 0, 300);
    assert_eq!(
        (
            replay.status,
            &replay.body,
            replay.header("idempotent-replayed")
        ),
        (200, &tipped.body, Some("true"))
    );
    tip(&app, ride_id, "second tip", 100)
        .await
        .assert_problem(422, "invalid-ride-state");
    // The completion captures fare and tip together, within the hold's
    // overcapture room (2400 on a 2000 hold): one capture, no raise.
    let completed = app
        .post_complete(ride_id, "complete", r#"{"final_amount_cents": 1900}"#)
        .await;
    completed.assert_status(200);
    assert_ride(&completed.json(), "captured", 2200, 300);
    assert_eq!(intents_of(&app, 2000)[0].0, "succeeded");
    assert_eq!(
        app.count("simulated_payment_intents WHERE amount_received_cents = 2200"),
        1
    );
    assert_eq!(
        app.count("simulated_intent_calls WHERE operation = 'increment_authorization'"),
        0
    );
    // One tip per ride: the captured ride's tip is the one it has.
    tip(&app, ride_id, "after capture", 100)
        .await
        .assert_problem(422, "invalid-ride-state");
}

#[tokio::test]
async fn a_tip_beyond_the_holds_room_raises_the_hold_for_fare_and_tip() {
    let app = spawn_app().await;
    let ride_id = app.held_ride("held", "pm_card_ridepay_noOvercapture").await;
    tip(&app, ride_id, "tip", 500).await.assert_status(200);

    let completed = app
        .post_complete(ride_id, "complete", r#"{"final_amount_cents": 1800}"#)
        .await;

    completed.assert_status(200);
    assert_ride(&completed.json(), "captured", 2300, 500);
    assert_eq!(
        app.count(
            "simulated_payment_intents WHERE amount_cents = 2300 AND amount_received_cents = 2300"
        ),
        1
    );
}

#[tokio::test]
async fn cancelling_a_held_ride_drops_its_tip() {
    let app = spawn_app().await;
    let ride_id = app.held_ride("held", "pm_card_visa").await;
    tip(&app, ride_id, "tip", 300).await.assert_status(200);

    let canceled = app.post_cancel(ride_id, "cancel", "{}").await;

    canceled.assert_status(200);
    assert_ride(&canceled.json(), "canceled", 0, 0);
    assert_ride(&app.ride(ride_id).await, "canceled", 0, 0);
}

#[tokio::test]
async fn a_tip_after_capture_is_a_payment_of_its_own_off_session_on_the_saved_card() {
    let app = spawn_app().await;
    let ride_id = captured_ride(&app, "ride").await;

    let tipped = tip(&app, ride_id, "tip", 500).await;

    tipped.assert_status(200);
    let ride = tipped.json();
    assert_ride(&ride, "captured", 2500, 500);
    assert_eq!(ride, app.ride(ride_id).await);
    assert_eq!(
        intents_of(&app, 500),
        [(
            "succeeded".to_owned(),
            Some("cus_test".to_owned()),
            "pm_card_visa".to_owned()
        )]
    );
    // Sent off session, in the tip request's transfer group, asking for
    // the charge's balance transaction: the kept parameters of its create
    // say so, and its kept answer brought the gateway's fee.
    assert_eq!(
        app.count(
            "simulated_intent_calls c JOIN idempotency_keys k ON k.key = 'tip' \
             WHERE c.operation = 'create' AND c.parameters->>'off_session' = 'true' \
             AND c.parameters->>'expand_balance_transaction' = 'true' \
             AND c.parameters->>'transfer_group' = 'ridepay-' || k.ridepay_key \
             AND c.answer->'made'->'balance_transaction'->>'fee_cents' = '45'"
        ),
        1
    );
    tip(&app, ride_id, "second", 100)
        .await
        .assert_problem(422, "invalid-ride-state");
    assert_eq!(app.count("audit_records WHERE action = 'ride.tipped'"), 1);
}

#[tokio::test]
async fn a_ride_not_paid_with_a_saved_card_cannot_be_tipped_after_capture() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("ride").await;

    let refused = tip(&app, ride_id, "tip", 500).await;

    let problem = refused.assert_problem(422, "invalid-ride-state");
    assert!(
        problem["detail"].as_str().unwrap().contains("saved card"),
        "{problem}"
    );
    // Nothing written, the key not consumed.
    assert_eq!(app.count("idempotency_keys WHERE key = 'tip'"), 0);
    assert_eq!(intents_of(&app, 500), []);
    assert_ride(&app.ride(ride_id).await, "captured", 2000, 0);
}

#[tokio::test]
async fn statuses_other_than_authorized_and_captured_cannot_be_tipped() {
    let app = spawn_app().await;
    let waiting = app.waiting_ride("waiting").await;
    let declined = app
        .post_ride("declined", &held_ride("pm_card_visa_chargeDeclined"))
        .await;
    declined.assert_status(402);

    for ride_id in [Id::of(&waiting["id"]), Id::of(&declined.json()["ride_id"])] {
        tip(&app, ride_id, "tip", 100)
            .await
            .assert_problem(422, "invalid-ride-state");
    }
    assert_eq!(app.count("idempotency_keys WHERE key = 'tip'"), 0);
}

#[tokio::test]
async fn the_contract_of_every_idempotent_post_holds_for_tips() {
    let app = spawn_app().await;
    let ride_id = app.held_ride("held", "pm_card_visa").await;
    let stranger = create_user(&app.database_url, Some("cus_stranger"));

    tip_as(&app, &stranger, ride_id, "tip", 300)
        .await
        .assert_problem(404, "not-found");
    for body in [
        r#"{}"#,
        r#"{"amount_cents": 0}"#,
        r#"{"amount_cents": "300"}"#,
    ] {
        let answer = app.post_tip(ride_id, "tip", body).await;
        let problem = answer.assert_problem(400, "invalid-request");
        assert_eq!(problem["errors"][0]["field"], "amount_cents", "{body}");
    }
    tip(&app, Id::nothing::<RidePublicId>(), "tip", 300)
        .await
        .assert_problem(404, "not-found");
    tip(&app, ride_id, "tip", 300).await.assert_status(200);
    tip(&app, ride_id, "tip", 400)
        .await
        .assert_problem(422, "idempotency-key-reused");
    assert_ride(&app.ride(ride_id).await, "authorized", 0, 300);
}

#[tokio::test]
async fn concurrent_tips_on_one_ride_make_one_payment() {
    let app = spawn_app().await;
    let ride_id = captured_ride(&app, "ride").await;

    let keys: Vec<String> = (0..8).map(|n| format!("tip {n}")).collect();
    let answers =
        futures_util::future::join_all(keys.iter().map(|key| tip(&app, ride_id, key, 700))).await;

    let statuses: Vec<u16> = answers.iter().map(|answer| answer.status).collect();
    assert_eq!(
        statuses.iter().filter(|status| **status == 200).count(),
        1,
        "{statuses:?}"
    );
    for answer in answers.iter().filter(|answer| answer.status != 200) {
        answer.assert_problem(422, "invalid-ride-state");
    }
    assert_eq!(intents_of(&app, 700).len(), 1);
    assert_ride(&app.ride(ride_id).await, "captured", 2700, 700);
}

#[tokio::test]
async fn a_card_that_needs_the_rider_declines_the_tip_off_session_and_its_intent_is_cancelled() {
    let app = spawn_app().await;
    let rider = create_user(&app.database_url, Some("cus_3ds"));
    diesel::sql_query(format!(
        "UPDATE users SET stripe_payment_method_id = 'pm_card_authenticationRequired' \
         WHERE id = {}",
        rider.id
    ))
    .execute(&mut app.db())
    .unwrap();
    let waiting = app
        .post_ride_as(&rider.api_key, "ride", &saved_card_ride())
        .await;
    waiting.assert_status(202);
    let ride = waiting.json();
    let ride_id = Id::of(&ride["id"]);
    // The rider authenticates on the gateway's page, which sends them back.
    let page = ride["next_action"]["redirect_to_url"]["url"]
        .as_str()
        .unwrap();
    let form = reqwest::Client::new()
        .post(page.split('?').next().unwrap())
        .form(&[
            (
                "payment_intent",
                ride["payment_intent_id"].as_str().unwrap(),
            ),
            (
                "client_secret",
                ride["next_action"]["client_secret"].as_str().unwrap(),
            ),
            ("outcome", "complete"),
        ])
        .send()
        .await
        .unwrap();
    assert!(form.status().is_success(), "{}", form.status());
    let path = format!("/api/rides/{ride_id}");
    let captured = eventually(Duration::from_secs(20), || {
        app.count(&format!(
            "rides WHERE id = {} AND status = 'captured'",
            ride_id.row_key()
        )) == 1
    })
    .await;
    assert!(
        captured,
        "{}",
        app.get_as(&rider.api_key, &path).await.body_text()
    );

    let declined = tip_as(&app, &rider, ride_id, "tip", 500).await;
    let replay = tip_as(&app, &rider, ride_id, "tip", 500).await;

    let problem = declined.assert_problem(402, "card-declined");
    assert_eq!(problem["code"], "authentication_required", "{problem}");
    assert_eq!(
        (
            replay.status,
            &replay.body,
            replay.header("idempotent-replayed")
        ),
        (402, &declined.body, Some("true"))
    );
    assert_eq!(
        intents_of(&app, 500),
        [(
            "canceled".to_owned(),
            Some("cus_3ds".to_owned()),
            "pm_card_authenticationRequired".to_owned()
        )]
    );
    let unchanged = app.get_as(&rider.api_key, &path).await.json();
    assert_ride(&unchanged, "captured", 2000, 0);
    // Not a tip that succeeded: another key may try again.
    tip_as(&app, &rider, ride_id, "again", 500)
        .await
        .assert_problem(402, "card-declined");
    assert_eq!(app.count("rides WHERE settling_key_id IS NOT NULL"), 0);
}

#[tokio::test]
async fn a_refund_spanning_fare_and_tip_is_split_fare_first() {
    let app = spawn_app().await;
    let ride_id = captured_ride(&app, "ride").await;
    tip(&app, ride_id, "tip", 500).await.assert_status(200);
    let ride = app.ride(ride_id).await;
    let tip_intent = intents_of_ride_tip(&app, ride_id);

    let spanning = app
        .post_refund(ride_id, "spanning", r#"{"amount_cents": 2300}"#)
        .await;

    spanning.assert_status(201);
    let refund = spanning.json();
    assert_eq!(
        (refund["amount_cents"].as_i64(), refund["status"].as_str()),
        (Some(2300), Some("succeeded"))
    );
    let parts: Vec<(Value, i64, String)> = refund["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|part| {
            assert!(part["gateway_refund_id"].is_string(), "{part}");
            (
                part["payment_intent_id"].clone(),
                part["amount_cents"].as_i64().unwrap(),
                part["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        parts,
        [
            (
                ride["payment_intent_id"].clone(),
                2000,
                "succeeded".to_owned()
            ),
            (json!(tip_intent), 300, "succeeded".to_owned())
        ]
    );
    // What remains is the tip's, refunded from it alone.
    let rest = app.post_refund(ride_id, "rest", "{}").await;
    rest.assert_status(201);
    assert_eq!(
        rest.json()["parts"],
        json!([{"payment_intent_id": tip_intent, "amount_cents": 200, "status": "succeeded",
                "gateway_refund_id": rest.json()["gateway_refund_id"]}])
    );
    let refunded = app.ride(ride_id).await;
    assert_eq!(
        (
            refunded["status"].as_str(),
            refunded["amount_refunded_cents"].as_i64()
        ),
        (Some("refunded"), Some(2500))
    );
    let listed = app
        .get(&format!("/api/rides/{ride_id}/refunds"))
        .await
        .json();
    assert_eq!(listed["data"], json!([refund, rest.json()]));
    app.post_refund(ride_id, "more", r#"{"amount_cents": 1}"#)
        .await
        .assert_problem(422, "refund-not-allowed");
}

/// The ride's tip PaymentIntent, as recorded.
fn intents_of_ride_tip(app: &TestApp, ride_id: Id) -> String {
    use ridepay::public_ids::RidePublicId;
    use ridepay::schema::rides;
    rides::table
        .filter(rides::public_id.eq(ride_id.public::<RidePublicId>()))
        .select(rides::tip_payment_intent_id)
        .first::<Option<String>>(&mut app.db())
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn a_tip_part_refused_after_the_fare_part_succeeded_is_a_stored_502_that_counts_the_fare_part(
) {
    let app = with_webhooks().await;
    let ride_id = captured_ride(&app, "ride").await;
    tip(&app, ride_id, "tip", 500).await.assert_status(200);
    let tip_intent = intents_of_ride_tip(&app, ride_id);
    // The tip refunded at the gateway (the dashboard, say) before ridepay
    // learnt of it: ridepay's part of it is then refused.
    simulated_gateway(&app)
        .refund(&RefundRequest {
            idempotency_key: "dashboard".to_owned(),
            payment: Payment::Intent(tip_intent.clone()),
            amount_cents: 500,
            reason: None,
            metadata: Vec::new(),
        })
        .unwrap();

    let answer = app.post_refund(ride_id, "all", "{}").await;
    let replay = app.post_refund(ride_id, "all", "{}").await;

    let problem = answer.assert_problem(502, "payment-gateway-rejected");
    assert_eq!(problem["refund"]["status"], "failed", "{problem}");
    assert_eq!(
        problem["refund"]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|part| (part["amount_cents"].as_i64(), part["status"].as_str()))
            .collect::<Vec<_>>(),
        [(Some(2000), Some("succeeded")), (Some(500), Some("failed"))]
    );
    assert_eq!(replay.body, answer.body);
    let ride = app.ride(ride_id).await;
    assert_eq!(ride["amount_refunded_cents"], 2000);
    // The refund made outside ridepay, learnt from its event, finds the
    // ride by the tip's PaymentIntent.
    let event = stripe_event(
        "evt_tip_refund",
        "charge.refunded",
        chrono::Utc::now().timestamp(),
        json!({"id": "ch_tip", "object": "charge", "payment_intent": tip_intent}),
    );
    app.post_signed_webhook(&event).await.assert_status(200);
    let refunded = app.ride(ride_id).await;
    assert_eq!(
        (
            refunded["status"].as_str(),
            refunded["amount_refunded_cents"].as_i64()
        ),
        (Some("refunded"), Some(2500))
    );
    // Posted as ridepay's own refunds are, once.
    let postings = crate::ledger::postings(&app, ride_id);
    assert_eq!(
        postings.last(),
        Some(&crate::ledger::posting(
            "refund",
            &[("gateway:usd", -500), ("platform:unassigned:usd", 500)]
        ))
    );
    crate::ledger::assert_exact(&app, "a refund made outside ridepay");
}

#[tokio::test]
async fn a_dispute_of_the_tips_charge_makes_the_ride_disputed() {
    let app = with_webhooks().await;
    let ride_id = captured_ride(&app, "ride").await;
    tip(&app, ride_id, "tip", 500).await.assert_status(200);
    let tip_intent = intents_of_ride_tip(&app, ride_id);
    intents::open_dispute(&mut app.db(), &tip_intent).unwrap();

    let event = stripe_event(
        "evt_tip_dispute",
        "charge.dispute.created",
        chrono::Utc::now().timestamp(),
        json!({"id": "dp_tip", "charge": "ch_tip", "payment_intent": tip_intent}),
    );
    app.post_signed_webhook(&event).await.assert_status(200);

    let ride = app.ride(ride_id).await;
    assert_eq!(
        (ride["status"].as_str(), ride["tip_cents"].as_i64()),
        (Some("disputed"), Some(500))
    );
}

/// The tip's create answered by a failure the gateway saved: reconciliation
/// finds or remakes it, and the retry ends with one tip.
#[tokio::test]
async fn a_tip_whose_answer_was_a_saved_500_is_paid_once() {
    let app = spawn_app().await;
    let ride_id = captured_ride(&app, "ride").await;
    let failing = spawn_server(&app.database_url, |settings| {
        settings.gateway.simulated.saved_error_rate = 1.0;
    })
    .await;
    let url = format!("{failing}/api/rides/{ride_id}/tip");
    // A plain 500 first; the retry meets the failure the gateway saved.
    for _ in 0..2 {
        let answer = app
            .post_idempotent(&url, &app.user.api_key, "tip", r#"{"amount_cents": 400}"#)
            .await
            .unwrap();
        answer.assert_problem(503, "payment-gateway-unavailable");
    }
    assert_eq!(
        app.count("idempotency_keys WHERE key = 'tip' AND outcome_unknown_at IS NOT NULL"),
        1
    );

    let summary = reconcile(&app);

    assert_eq!(summary.recorded + summary.reissued, 1, "{summary:?}");
    let tipped = tip(&app, ride_id, "tip", 400).await;
    tipped.assert_status(200);
    assert_ride(&tipped.json(), "captured", 2400, 400);
    assert_eq!(
        app.count("simulated_payment_intents WHERE amount_cents = 400 AND status = 'succeeded'"),
        1
    );
}

#[tokio::test]
async fn a_tip_payment_no_ride_records_is_released_by_reconciliation() {
    let app = spawn_app().await;
    let ride_id = captured_ride(&app, "ride").await;
    tip(&app, ride_id, "tip", 400).await.assert_status(200);
    // As an asynchronous failover may lose it: the tip's key and its
    // record, while its payment stands.
    diesel::sql_query(
        "UPDATE rides SET tip_cents = 0, tip_payment_intent_id = NULL, \
         amount_captured_cents = 2000",
    )
    .execute(&mut app.db())
    .unwrap();
    diesel::sql_query("DELETE FROM idempotency_keys WHERE key = 'tip'")
        .execute(&mut app.db())
        .unwrap();

    let summary = reconcile(&app);

    assert_eq!(summary.orphans_refunded, 1, "{summary:?}");
    // The retry meets its payment again and learns it was given back.
    tip(&app, ride_id, "tip", 400)
        .await
        .assert_problem(502, "payment-gateway-rejected");
    assert_ride(&app.ride(ride_id).await, "captured", 2000, 0);
}
