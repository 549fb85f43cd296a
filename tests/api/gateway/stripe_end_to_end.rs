//! `POST /api/rides` with `GATEWAY=stripe`, through the fake gateway on
//! loopback with its faults switched on: retries settle on exactly one payment
//! per ride. And the whole loop with the fake's signed webhooks.

use std::time::Duration;

use diesel::Connection;
use ridepay::config::{GatewayKind, Settings};
use ridepay::payments::{Payment, PaymentGateway, RefundRequest, StripeGateway};
use ridepay_doubles::fake_stripe::{FakeGateway, WebhookTarget};
use serde_json::json;

use crate::common::app::{ride_with, spawn_app_with, spawn_server, Answer, TestApp};
use crate::common::database::count;
use crate::common::gateway::{records_count, spawn_fake_gateway, stripe_settings, WEBHOOK_SECRET};
use crate::common::ids::Id;
use crate::common::wait::eventually;

fn use_stripe(settings: &mut Settings, fake: &FakeGateway) {
    settings.gateway.kind = GatewayKind::Stripe;
    settings.gateway.stripe = stripe_settings(fake);
}

/// Retries the same request, as a client would, until its answer is final.
async fn post_until_final(app: &TestApp, address: &str, key: &str, body: &str) -> Answer {
    for _ in 0..50 {
        let answer = app
            .post_ride_to(address, &app.user.api_key, key, body)
            .await;
        if answer.status != 503 {
            return answer;
        }
        answer.assert_problem(503, "payment-gateway-unavailable");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("key {key} never got a final answer");
}

#[tokio::test]
async fn retried_rides_through_a_failing_and_lossy_stripe_are_paid_exactly_once() {
    let (fake, records) = spawn_fake_gateway(|faults| {
        faults.fail_rate = 0.3;
        faults.lost_response_rate = 0.3;
    });
    let app = spawn_app_with(|settings| use_stripe(settings, &fake)).await;
    let rides: Vec<(String, i64, &str)> = (0..10)
        .map(|i| {
            let source = if i == 7 {
                "pm_card_visa_chargeDeclined"
            } else {
                "pm_card_visa"
            };
            (format!("flaky-{i}"), 1000 + i, source)
        })
        .collect();

    for (key, amount, source) in &rides {
        let body = ride_with(json!({ "amount_cents": amount, "payment_method": source }));
        let answer = post_until_final(&app, &app.address, key, &body).await;

        if *source == "pm_card_visa_chargeDeclined" {
            let problem = answer.assert_problem(402, "card-declined");
            assert_eq!(problem["decline_code"], "generic_decline");
            continue;
        }
        answer.assert_status(201);
        let ride = answer.json();
        assert_eq!(ride["amount_cents"], *amount);
        let intent = ride["payment_intent_id"].as_str().unwrap();
        assert_eq!(
            records_count(
                &records,
                &format!(
                    "WHERE id = '{intent}' AND amount_received_cents = {amount} AND status = 'succeeded'"
                )
            ),
            1,
            "PaymentIntent {intent} of {key}"
        );
    }

    // One ride and one PaymentIntent (the decline's left unpaid) per key.
    assert_eq!(app.count("rides"), 10);
    assert_eq!(records_count(&records, ""), 10);
    assert_eq!(
        records_count(&records, "WHERE status = 'requires_payment_method'"),
        1
    );
    assert_eq!(app.count("rides WHERE status = 'captured'"), 9);
}

#[tokio::test]
async fn a_stripe_timeout_is_a_503_and_the_retry_pays_no_second_time() {
    let (slow, records) = spawn_fake_gateway(|faults| faults.latency = Duration::from_millis(800));
    let app = spawn_app_with(|settings| {
        use_stripe(settings, &slow);
        settings.gateway.stripe.timeout = Duration::from_millis(200);
    })
    .await;
    let patient = spawn_server(&app.database_url, |settings| use_stripe(settings, &slow)).await;
    let body = ride_with(json!({}));

    let answer = app.post_ride("slow", &body).await;

    answer.assert_problem(503, "payment-gateway-unavailable");
    assert!(answer.header("retry-after").is_some());
    let retried = post_until_final(&app, &patient, "slow", &body).await;
    retried.assert_status(201);
    let intent = retried.json()["payment_intent_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(records_count(&records, ""), 1);
    assert_eq!(
        records_count(&records, &format!("WHERE id = '{intent}'")),
        1
    );
    assert_eq!(app.count("rides"), 1);
}

/// Like `use_stripe`, with the suite's webhook secret, and the fake sending
/// its signed events to this server.
async fn stripe_with_webhooks(fake: &FakeGateway) -> TestApp {
    let app = spawn_app_with(|settings| {
        use_stripe(settings, fake);
        settings.gateway.stripe.webhook_secret = Some(WEBHOOK_SECRET.to_owned().into());
    })
    .await;
    fake.send_webhooks_to(WebhookTarget {
        url: format!("{}/webhooks/stripe", app.address),
        secret: WEBHOOK_SECRET.to_owned(),
    });
    app
}

#[tokio::test]
async fn the_fakes_webhook_settles_a_lost_payment_and_the_completer_finishes_it_without_paying_again(
) {
    let (fake, records) = spawn_fake_gateway(|faults| faults.lost_response_rate = 1.0);
    let app = stripe_with_webhooks(&fake).await;
    let body = ride_with(json!({}));

    app.post_ride("lost", &body)
        .await
        .assert_problem(503, "payment-gateway-unavailable");

    // The payment_intent.succeeded event, redelivered while the request
    // held the key, settles the ride from the intent the fake reports.
    let settled = eventually(Duration::from_secs(10), || {
        app.key_state("lost")["recovery_point"] == "charge_completed"
    })
    .await;
    assert!(settled, "{}", app.key_state("lost"));
    // Every answer of the fake is still lost: the completer can only finish
    // the key without asking it for the payment again.
    spawn_server(&app.database_url, |settings| {
        use_stripe(settings, &fake);
        settings.completer.enabled = true;
    })
    .await;
    let finished = eventually(Duration::from_secs(10), || {
        app.key_state("lost")["recovery_point"] == "finished"
    })
    .await;
    assert!(finished, "{}", app.key_state("lost"));
    assert_eq!(records_count(&records, ""), 1);
    let replay = app.post_ride("lost", &body).await;
    assert_eq!(replay.status, 201);
    assert_eq!(replay.json()["status"], "captured");
}

#[tokio::test]
async fn refunds_through_stripe_are_counted_once_and_refunds_made_elsewhere_are_learnt_from_webhooks(
) {
    let (fake, records) = spawn_fake_gateway(|_| {});
    let app = stripe_with_webhooks(&fake).await;
    let ride = app.post_ride("ride", &ride_with(json!({}))).await.json();
    let ride_id = Id::of(&ride["id"]);

    let refund = app
        .post_refund(ride_id, "refund", r#"{"amount_cents": 500}"#)
        .await;
    refund.assert_status(201);
    // Someone refunds 300 more from the dashboard.
    StripeGateway::new(&stripe_settings(&fake))
        .unwrap()
        .refund(&RefundRequest {
            idempotency_key: "dashboard".to_owned(),
            payment: Payment::Intent(ride["payment_intent_id"].as_str().unwrap().to_owned()),
            amount_cents: 300,
            reason: None,
            metadata: vec![],
        })
        .unwrap();

    // payment_intent.succeeded, and charge.refunded twice.
    let delivered = eventually(Duration::from_secs(10), || {
        app.count("stripe_events WHERE result = 'applied'") == 3
    })
    .await;
    assert!(delivered, "{}", app.count("stripe_events"));
    let ride = app.ride(ride_id).await;
    assert_eq!(ride["amount_refunded_cents"], 800);
    assert_eq!(app.count("refunds"), 2);
    assert_eq!(
        app.count("refunds WHERE idempotency_key_id IS NULL AND amount_cents = 300"),
        1
    );
    assert_eq!(
        count(
            &mut diesel::PgConnection::establish(&records).unwrap(),
            "simulated_refunds"
        ),
        2
    );
}
