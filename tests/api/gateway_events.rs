//! `POST /webhooks/stripe`: signatures, events recorded once, and payments
//! reconciled from what the gateway says, never from the payload.

use std::time::Duration;

use diesel::Connection;
use ridepay::payments::stripe::signature::sign;
use ridepay::payments::{Payment, RefundRequest};
use ridepay_doubles::events::Double;
use ridepay_doubles::{intents, refunds};
use serde_json::json;

use futures_util::future::join_all;

use crate::common::app::{database_only, spawn_app_with, spawn_server, Answer, TestApp, RIDE};
use crate::common::gateway::{stripe_event, WEBHOOK_SECRET};
use crate::common::ids::Id;
use crate::common::server_process::ServerProcess;
use crate::common::wait::eventually;

/// The server, its simulated gateway's own events off: these tests send
/// theirs, and count what they recorded.
async fn app() -> TestApp {
    spawn_app_with(|s| {
        s.gateway.stripe.webhook_secret = Some(WEBHOOK_SECRET.to_owned().into());
        s.gateway.simulated.events_enabled = false;
    })
    .await
}

fn intent_of(app: &TestApp, ride_id: Id) -> String {
    use diesel::prelude::*;

    use ridepay::public_ids::RidePublicId;
    use ridepay::schema::rides;

    rides::table
        .filter(rides::public_id.eq(ride_id.public::<RidePublicId>()))
        .select(rides::payment_intent_id)
        .first::<Option<String>>(&mut app.db())
        .unwrap()
        .unwrap()
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn assert_received(answer: &Answer, result: &str) {
    assert_eq!(
        answer.status,
        200,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    assert_eq!(answer.json()["result"], result);
}

/// A refund made at the gateway by someone other than ridepay. Its events
/// are the fake's, which nobody sends here: the test delivers its own.
fn refund_at_the_gateway(app: &TestApp, intent: &str, amount: i64) {
    refunds::refund(
        &mut diesel::PgConnection::establish(&app.database_url).unwrap(),
        &RefundRequest {
            idempotency_key: format!("dashboard-{}", uuid::Uuid::new_v4()),
            payment: Payment::Intent(intent.to_owned()),
            amount_cents: amount,
            reason: Some("requested_by_customer".to_owned()),
            metadata: vec![],
        },
        Double::Fake,
    )
    .unwrap();
}

#[tokio::test]
async fn a_signed_event_is_applied_once_and_its_redelivery_changes_nothing() {
    let app = app().await;
    let ride_id = app.paid_ride("ride").await;
    let intent = intent_of(&app, ride_id);
    refund_at_the_gateway(&app, &intent, 700);
    // The payload claims more than the gateway says; the gateway wins.
    let event = stripe_event(
        "evt_1",
        "charge.refunded",
        now(),
        json!({"id": "ch_x", "payment_intent": intent, "amount_refunded": 2000}),
    );

    let first = app.post_signed_webhook(&event).await;
    let again = app.post_signed_webhook(&event).await;

    assert_received(&first, "applied");
    assert_received(&again, "duplicate");
    assert_eq!(app.count("stripe_events"), 1);
    let ride = app.ride(ride_id).await;
    assert_eq!(
        (
            ride["amount_refunded_cents"].as_i64(),
            ride["status"].as_str()
        ),
        (Some(700), Some("captured"))
    );
    let refunds = app
        .get(&format!("/api/rides/{ride_id}/refunds"))
        .await
        .json();
    assert_eq!(refunds["data"].as_array().unwrap().len(), 1);
    assert_eq!(refunds["data"][0]["status"], "succeeded");

    // Another event about the same payment does not count the refund twice.
    let later = stripe_event(
        "evt_2",
        "refund.updated",
        now(),
        json!({"id": "re_x", "charge": "ch_x", "payment_intent": intent}),
    );
    assert_received(&app.post_signed_webhook(&later).await, "applied");
    assert_eq!(app.ride(ride_id).await["amount_refunded_cents"], 700);
    assert_eq!(app.count("refunds"), 1);
}

#[tokio::test]
async fn bad_stale_and_missing_signatures_are_400_and_write_nothing() {
    let app = app().await;
    let ride_id = app.paid_ride("ride").await;
    let intent = intent_of(&app, ride_id);
    let event = stripe_event(
        "evt_sig",
        "payment_intent.succeeded",
        now(),
        json!({"id": intent}),
    );
    let altered = event.replace("evt_sig", "evt_sih");

    for signature in [
        Some(sign("whsec_wrong", now(), event.as_bytes())),
        Some(sign(WEBHOOK_SECRET, now(), altered.as_bytes())),
        Some(sign(WEBHOOK_SECRET, now() - 301, event.as_bytes())),
        Some("t=1,v1=zz".to_owned()),
        None,
    ] {
        let answer = app.post_webhook(&event, signature.as_deref()).await;
        answer.assert_problem(400, "invalid-signature");
    }
    assert_eq!(app.count("stripe_events"), 0);

    // Several v1 signatures (a secret being rolled): one valid one suffices.
    let good = sign(WEBHOOK_SECRET, now(), event.as_bytes());
    let old = sign("whsec_old", now(), event.as_bytes());
    let (t, good_v1) = good.split_once(',').unwrap();
    let (_, old_v1) = old.split_once(',').unwrap();
    let rolled = format!("{t},{old_v1},{good_v1}");
    assert_received(&app.post_webhook(&event, Some(&rolled)).await, "applied");
    assert_eq!(app.count("stripe_events"), 1);
}

#[tokio::test]
async fn a_body_over_256_kib_is_413() {
    let app = app().await;
    let padding = "x".repeat(257 * 1024);
    let event = stripe_event(
        "evt_big",
        "payment_intent.succeeded",
        now(),
        json!({"id": "pi_1", "pad": padding}),
    );
    app.post_signed_webhook(&event)
        .await
        .assert_problem(413, "payload-too-large");
}

#[tokio::test]
async fn unknown_payments_and_other_event_types_are_acknowledged_and_ignored() {
    let app = app().await;
    let unknown = stripe_event(
        "evt_u",
        "payment_intent.succeeded",
        now(),
        json!({"id": "pi_nowhere"}),
    );
    let other = stripe_event("evt_o", "customer.created", now(), json!({"id": "cus_1"}));

    assert_received(&app.post_signed_webhook(&unknown).await, "ignored");
    assert_received(&app.post_signed_webhook(&other).await, "ignored");
    assert_received(&app.post_signed_webhook(&other).await, "duplicate");
    assert_eq!(app.count("stripe_events"), 2);
}

#[tokio::test]
async fn a_dispute_marks_the_ride_and_an_older_event_never_undoes_it() {
    let app = app().await;
    let ride_id = app.paid_ride("ride").await;
    let intent = intent_of(&app, ride_id);
    intents::open_dispute(&mut app.db(), &intent).unwrap();
    let disputed = stripe_event(
        "evt_new",
        "charge.dispute.created",
        now(),
        json!({"id": "dp_1", "charge": "ch_x", "payment_intent": intent}),
    );
    let older = stripe_event(
        "evt_old",
        "payment_intent.succeeded",
        now() - 60,
        json!({"id": intent}),
    );

    assert_received(&app.post_signed_webhook(&disputed).await, "applied");
    assert_received(&app.post_signed_webhook(&older).await, "applied");

    assert_eq!(app.ride(ride_id).await["status"], "disputed");
    app.post_refund(ride_id, "too-late", "{}")
        .await
        .assert_problem(422, "refund-not-allowed");
}

#[tokio::test]
async fn a_key_with_an_unknown_payment_outcome_is_settled_by_an_event_and_finished_without_a_second_payment(
) {
    // Every gateway answer is lost: the payment is made, the ride stays
    // pending, and the gateway's own event (in-process) or a webhook
    // settles it.
    let app = spawn_app_with(|s| {
        s.gateway.stripe.webhook_secret = Some(WEBHOOK_SECRET.to_owned().into());
        s.gateway.simulated.lost_response_rate = 1.0;
    })
    .await;
    app.post_ride("unknown", RIDE)
        .await
        .assert_problem(503, "payment-gateway-unavailable");
    let intent: String = {
        use diesel::prelude::*;
        ridepay_doubles::schema::simulated_payment_intents::table
            .select(ridepay_doubles::schema::simulated_payment_intents::id)
            .first(&mut app.db())
            .unwrap()
    };

    let event = stripe_event(
        "evt_settle",
        "payment_intent.succeeded",
        now(),
        json!({"id": intent}),
    );
    assert_received(&app.post_signed_webhook(&event).await, "applied");

    let settled = eventually(Duration::from_secs(5), || {
        app.key_state("unknown")["recovery_point"] == "charge_completed"
    })
    .await;
    assert!(settled, "{}", app.key_state("unknown"));
    assert_eq!(app.key_state("unknown")["locked"], false);
    // The completer's gateway still loses every answer: it can only finish
    // the key without calling it.
    spawn_server(&app.database_url, |s| {
        s.completer.enabled = true;
        s.gateway.simulated.lost_response_rate = 1.0;
    })
    .await;
    let finished = eventually(Duration::from_secs(10), || {
        app.key_state("unknown")["recovery_point"] == "finished"
    })
    .await;
    assert!(finished, "{}", app.key_state("unknown"));
    assert_eq!(app.counts(), (1, 1, 1));
    let replay = app.post_ride("unknown", RIDE).await;
    assert_eq!(replay.status, 201);
    assert_eq!(replay.json()["payment_intent_id"], intent.as_str());
    assert_eq!(replay.json()["status"], "captured");
}

/// A refund Stripe accepts, then fails: the ride gets its amount back.
#[tokio::test]
async fn a_refund_that_fails_after_succeeding_gives_its_amount_back() {
    let app = app().await;
    let paid = app
        .post_ride(
            "ride",
            &crate::common::app::ride_with(json!({"payment_method": "pm_card_refundFail"})),
        )
        .await;
    let ride_id = Id::of(&paid.json()["id"]);
    let intent = intent_of(&app, ride_id);

    let refunded = app
        .post_refund(ride_id, "refund", r#"{"amount_cents": 2000}"#)
        .await;
    refunded.assert_status(201);
    assert_eq!(refunded.json()["status"], "succeeded");
    assert_eq!(app.ride(ride_id).await["status"], "refunded");

    std::thread::sleep(refunds::SETTLES_AFTER);
    let event = stripe_event(
        "evt_failed",
        "charge.refund.updated",
        now(),
        json!({"id": "re_x", "charge": "ch_x", "payment_intent": intent}),
    );
    assert_received(&app.post_signed_webhook(&event).await, "applied");

    let ride = app.ride(ride_id).await;
    assert_eq!(
        (
            ride["status"].as_str(),
            ride["amount_refunded_cents"].as_i64()
        ),
        (Some("captured"), Some(0))
    );
    let listed = app
        .get(&format!("/api/rides/{ride_id}/refunds"))
        .await
        .json();
    assert_eq!(listed["data"][0]["status"], "failed");
    // Its amount can be refunded again.
    app.post_refund(ride_id, "again", r#"{"amount_cents": 2000}"#)
        .await
        .assert_status(201);
    // The ledger posted the refund when the gateway made it, reversed it
    // when it failed, and posts the second refund as its own.
    let kinds: Vec<String> = crate::ledger::postings(&app, ride_id)
        .into_iter()
        .map(|(kind, _)| kind)
        .collect();
    assert_eq!(
        kinds,
        ["capture", "fee", "refund", "refund_failed", "refund"]
    );
    assert_eq!(
        app.count(
            "ledger_transactions failed JOIN ledger_transactions refund \
             ON failed.reverses = refund.id AND refund.kind = 'refund' \
             WHERE failed.kind = 'refund_failed'"
        ),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_without_a_secret_log_one_warning_however_many_arrive() {
    let app = database_only();
    let log = std::env::temp_dir().join(format!("ridepay-test-{}.log", uuid::Uuid::new_v4()));
    let server = ServerProcess::start_logged(&app.database_url, &[("RUST_LOG", "info")], &log);
    let client = reqwest::Client::new();
    let url = format!("{}/webhooks/stripe", server.address);
    let answers = join_all((0..200).map(|_| {
        client
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Stripe-Signature", "t=1,v1=00")
            .body("{}")
            .send()
    }))
    .await;
    server.terminate();
    let mut server = server;
    server.wait_for_exit(Duration::from_secs(30));
    let written = std::fs::read_to_string(&log).unwrap();
    std::fs::remove_file(&log).unwrap();

    assert!(answers.into_iter().all(|a| a.unwrap().status() == 400));
    let errors = written.lines().filter(|l| l.contains(" ERROR ")).count();
    let warnings = written
        .lines()
        .filter(|l| l.contains("STRIPE_WEBHOOK_SECRET"))
        .count();
    assert_eq!((errors, warnings), (0, 1), "{written}");
}

#[tokio::test]
async fn a_signed_event_the_database_cannot_store_is_a_400_not_a_503() {
    let app = spawn_app_with(|s| {
        s.gateway.stripe.webhook_secret = Some(WEBHOOK_SECRET.to_owned().into())
    })
    .await;
    let object = json!({ "id": "cus_1" });
    for event in [
        // Year -7500: chrono has it, PostgreSQL does not.
        stripe_event(
            "evt_ancient",
            "customer.created",
            -300_000_000_000,
            object.clone(),
        ),
        stripe_event(
            "evt_far",
            "customer.created",
            300_000_000_000,
            object.clone(),
        ),
        stripe_event(
            "evt_\u{0}",
            "customer.created",
            1_700_000_000,
            object.clone(),
        ),
        stripe_event("evt_type", "customer.\u{0}", 1_700_000_000, object.clone()),
    ] {
        app.post_signed_webhook(&event)
            .await
            .assert_problem(400, "invalid-request");
    }
    assert_eq!(app.count("stripe_events"), 0);
}
