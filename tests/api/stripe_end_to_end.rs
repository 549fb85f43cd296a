//! `POST /api/rides` with `GATEWAY=stripe`, through the fake gateway on
//! loopback with its faults switched on: retries settle on exactly one charge
//! per ride.

use std::time::Duration;

use ridepay::config::{GatewayKind, Settings};
use ridepay::fake_gateway::FakeGateway;
use serde_json::json;

use crate::helpers::{
    ledger_count, ride_with, spawn_app_with, spawn_fake_gateway, spawn_server, stripe_settings,
    Answer, TestApp,
};

fn use_stripe(settings: &mut Settings, fake: &FakeGateway) {
    settings.gateway = GatewayKind::Stripe;
    settings.stripe = stripe_settings(fake);
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
async fn retried_rides_through_a_failing_and_lossy_stripe_are_charged_exactly_once() {
    let (fake, ledger) = spawn_fake_gateway(|faults| {
        faults.fail_rate = 0.3;
        faults.lost_response_rate = 0.3;
    });
    let app = spawn_app_with(|settings| use_stripe(settings, &fake)).await;
    let rides: Vec<(String, i64, &str)> = (0..10)
        .map(|i| {
            let source = if i == 7 {
                "tok_chargeDeclined"
            } else {
                "tok_visa"
            };
            (format!("flaky-{i}"), 1000 + i, source)
        })
        .collect();

    for (key, amount, source) in &rides {
        let body = ride_with(json!({ "amount_cents": amount, "payment_source": source }));
        let answer = post_until_final(&app, &app.address, key, &body).await;

        if *source == "tok_chargeDeclined" {
            let problem = answer.assert_problem(402, "card-declined");
            assert_eq!(problem["decline_code"], "generic_decline");
            continue;
        }
        assert_eq!(
            answer.status,
            201,
            "{}",
            String::from_utf8_lossy(&answer.body)
        );
        let ride = answer.json();
        assert_eq!(ride["amount_cents"], *amount);
        let charge_id = ride["charge_id"].as_str().unwrap();
        assert_eq!(
            ledger_count(
                &ledger,
                &format!(
                    "WHERE id = '{charge_id}' AND amount_cents = {amount} AND status = 'succeeded'"
                )
            ),
            1,
            "charge {charge_id} of {key}"
        );
    }

    // One ride and one gateway charge (the decline recorded as failed) per key.
    assert_eq!(app.count("rides"), 10);
    assert_eq!(ledger_count(&ledger, ""), 10);
    assert_eq!(ledger_count(&ledger, "WHERE status = 'failed'"), 1);
    assert_eq!(app.count("rides WHERE status = 'charged'"), 9);
}

#[tokio::test]
async fn a_stripe_timeout_is_a_503_and_the_retry_charges_no_second_time() {
    let (slow, ledger) = spawn_fake_gateway(|faults| faults.latency = Duration::from_millis(800));
    let app = spawn_app_with(|settings| {
        use_stripe(settings, &slow);
        settings.stripe.timeout = Duration::from_millis(200);
    })
    .await;
    let patient = spawn_server(&app.database_url, |settings| use_stripe(settings, &slow)).await;
    let body = ride_with(json!({}));

    let answer = app.post_ride("slow", &body).await;

    answer.assert_problem(503, "payment-gateway-unavailable");
    assert!(answer.header("retry-after").is_some());
    let retried = post_until_final(&app, &patient, "slow", &body).await;
    assert_eq!(
        retried.status,
        201,
        "{}",
        String::from_utf8_lossy(&retried.body)
    );
    let charge_id = retried.json()["charge_id"].as_str().unwrap().to_owned();
    assert_eq!(ledger_count(&ledger, ""), 1);
    assert_eq!(
        ledger_count(&ledger, &format!("WHERE id = '{charge_id}'")),
        1
    );
    assert_eq!(app.count("rides"), 1);
}
