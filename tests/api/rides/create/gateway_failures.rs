use serde_json::json;

use ridepay::config::GatewayKind;

use crate::common::app::{ride_with, spawn_app, spawn_app_with, spawn_server, TestApp, RIDE};
use crate::common::gateway::{records_count, spawn_fake_gateway, stripe_settings};
use crate::common::ids::Id;

#[tokio::test]
async fn a_declined_card_is_a_stored_402_and_the_ride_is_payment_declined() {
    let app = spawn_app().await;
    app.registered_destination("destination").await;
    let body = ride_with(json!({ "payment_method": "pm_card_visa_chargeDeclined" }));

    let answer = app.post_ride("declined", &body).await;

    let problem = answer.assert_problem(402, "card-declined");
    assert_eq!(problem["code"], "card_declined");
    assert_eq!(problem["decline_code"], "generic_decline");
    let ride_id = Id::of(&problem["ride_id"]);
    let ride = app.get(&format!("/api/rides/{ride_id}")).await.json();
    assert_eq!(ride["status"], "payment_declined");
    // The PaymentIntent the decline left behind is the ride's.
    let intent = ride["payment_intent_id"].as_str().unwrap();
    // Stored: a retry replays it and the gateway is not asked again.
    let replay = app.post_ride("declined", &body).await;
    assert_eq!(replay.status, 402);
    assert_eq!(replay.body, answer.body);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(
        app.count(&format!(
            "simulated_payment_intents WHERE id = '{intent}' AND status = 'requires_payment_method'"
        )),
        1
    );
    assert_eq!(app.count("simulated_payment_intents"), 1);
    // Its event says so; no receipt for what is not paid.
    assert_eq!(
        app.count("webhook_events WHERE type = 'ride.payment_declined'"),
        1
    );
    assert_eq!(app.count("webhook_events WHERE type = 'ride.captured'"), 0);
}

#[tokio::test]
async fn insufficient_funds_is_a_decline_with_its_own_code() {
    let app = spawn_app().await;

    let answer = app
        .post_ride(
            "poor",
            &ride_with(json!({ "payment_method": "pm_card_chargeDeclinedInsufficientFunds" })),
        )
        .await;

    let problem = answer.assert_problem(402, "card-declined");
    assert_eq!(problem["decline_code"], "insufficient_funds");
}

/// A payment method the gateway does not have (a well-formed `pm_` id,
/// even a `pm_card_` one Stripe does not document) is the caller's
/// mistake: a 400 naming the field, stored so a retry gets it again. The
/// ride keeps the refusal; nothing is made at the gateway, nothing paid,
/// nothing posted to the ledger.
async fn an_unknown_payment_method_is_a_stored_400_that_pays_nothing(app: &TestApp) {
    for method in ["pm_no_such_method", "pm_card_made_up"] {
        let body = ride_with(json!({ "payment_method": method }));

        let answer = app.post_ride(method, &body).await;

        let problem = answer.assert_problem(400, "invalid-request");
        assert_eq!(problem["errors"][0]["field"], "payment_method", "{problem}");
        assert!(
            problem["detail"].as_str().unwrap().contains(method),
            "{problem}"
        );
        let ride = app
            .get(&format!("/api/rides/{}", Id::of(&problem["ride_id"])))
            .await
            .json();
        assert_eq!(ride["status"], "payment_failed");
        assert_eq!(ride["payment_intent_id"], json!(null));
        let replay = app.post_ride(method, &body).await;
        assert_eq!(replay.body, answer.body);
        assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    }
    assert_eq!(app.count("ledger_entries"), 0);
    assert_eq!(app.count("webhook_events WHERE type = 'ride.captured'"), 0);
}

#[tokio::test]
async fn an_unknown_payment_method_is_a_stored_400_through_the_simulated_gateway() {
    let app = spawn_app().await;
    an_unknown_payment_method_is_a_stored_400_that_pays_nothing(&app).await;
    assert_eq!(app.count("simulated_payment_intents"), 0);
}

#[tokio::test]
async fn an_unknown_payment_method_is_a_stored_400_through_stripe() {
    let (fake, records) = spawn_fake_gateway(|_| {});
    let app = spawn_app_with(|settings| {
        settings.gateway.kind = GatewayKind::Stripe;
        settings.gateway.stripe = stripe_settings(&fake);
    })
    .await;
    an_unknown_payment_method_is_a_stored_400_that_pays_nothing(&app).await;
    assert_eq!(records_count(&records, ""), 0);
}

#[tokio::test]
async fn an_unavailable_gateway_is_a_503_that_a_retry_resumes_without_paying_twice() {
    let failing = spawn_app_with(|s| s.gateway.simulated.fail_rate = 1.0).await;
    let healthy = spawn_server(&failing.database_url, |_| {}).await;

    let answer = failing.post_ride("flaky", RIDE).await;

    answer.assert_problem(503, "payment-gateway-unavailable");
    assert!(answer.header("retry-after").is_some());
    // Not stored, released at its recovery point.
    let state = failing.key_state("flaky");
    assert_eq!(state["recovery_point"], "ride_created");
    assert_eq!(state["locked"], false);
    assert_eq!(state["response_status"], json!(null));
    assert_eq!(failing.counts(), (1, 0, 1));

    let retried = failing
        .post_ride_to(&healthy, &failing.user.api_key, "flaky", RIDE)
        .await;

    assert_eq!(retried.status, 201);
    assert_eq!(retried.header("idempotent-replayed"), None);
    assert_eq!(failing.counts(), (1, 1, 1));
    let replay = failing.post_ride("flaky", RIDE).await;
    assert_eq!(replay.body, retried.body);
}

#[tokio::test]
async fn a_lost_gateway_response_is_a_503_and_the_retry_gets_the_same_payment() {
    let lossy = spawn_app_with(|s| s.gateway.simulated.lost_response_rate = 1.0).await;
    let healthy = spawn_server(&lossy.database_url, |_| {}).await;

    let answer = lossy.post_ride("lost", RIDE).await;

    answer.assert_problem(503, "payment-gateway-unavailable");
    // The gateway did pay.
    assert_eq!(lossy.counts(), (1, 1, 1));
    let retried = lossy
        .post_ride_to(&healthy, &lossy.user.api_key, "lost", RIDE)
        .await;
    assert_eq!(retried.status, 201);
    assert_eq!(lossy.counts(), (1, 1, 1));
    let intent = retried.json()["payment_intent_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        lossy.count(&format!(
            "simulated_payment_intents WHERE id = '{intent}' AND status = 'succeeded'"
        )),
        1
    );
}

#[tokio::test]
async fn an_unreachable_database_is_a_503_that_writes_nothing_and_a_retry_succeeds() {
    let app = spawn_app().await;
    assert_eq!(app.get("/api/rides").await.status, 200);
    app.take_database_away();

    let answer = app.post_ride("db-down", RIDE).await;

    answer.assert_problem(503, "service-unavailable");
    assert!(answer.header("retry-after").is_some());
    app.give_database_back();
    assert_eq!(app.counts(), (0, 0, 0));
    let retried = app.post_ride("db-down", RIDE).await;
    assert_eq!(retried.status, 201);
    assert_eq!(app.counts(), (1, 1, 1));
}
