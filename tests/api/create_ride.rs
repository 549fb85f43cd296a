use serde_json::json;

use crate::helpers::{create_user, ride_with, spawn_app, RIDE};

#[tokio::test]
async fn a_first_request_creates_a_charged_ride() {
    let app = spawn_app().await;

    let answer = app.post_ride("first", RIDE).await;

    assert_eq!(answer.status, 201);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    assert_eq!(answer.header("idempotent-replayed"), None);
    let ride = answer.json();
    assert_eq!(
        answer.header("location"),
        Some(format!("/api/rides/{}", ride["id"]).as_str())
    );
    assert_eq!(ride["status"], "charged");
    assert_eq!(ride["amount_cents"], 2000);
    assert_eq!(ride["amount_refunded_cents"], 0);
    assert_eq!(ride["currency"], "usd");
    assert_eq!(ride["origin_lat"], 37.77);
    assert_eq!(ride["target_lon"], -122.27);
    let charge_id = ride["charge_id"].as_str().unwrap();
    assert_eq!(
        app.count(&format!(
            "simulated_charges WHERE id = '{charge_id}' AND amount_cents = 2000 AND source = 'tok_visa'"
        )),
        1
    );
    assert_eq!(app.counts(), (1, 1, 1));
    assert_eq!(app.key_state("first")["recovery_point"], "finished");
    assert_eq!(app.key_state("first")["locked"], false);
    assert_eq!(app.count("audit_records WHERE action = 'ride.created'"), 1);
    assert_eq!(app.count("staged_jobs WHERE job_type = 'ride_receipt'"), 1);
    let created_at = ride["created_at"].as_str().unwrap();
    assert!(chrono::DateTime::parse_from_rfc3339(created_at).is_ok() && created_at.ends_with('Z'));
}

#[tokio::test]
async fn a_retry_replays_the_stored_response_byte_for_byte() {
    let app = spawn_app().await;
    let first = app.post_ride("replay-me", RIDE).await;

    let second = app.post_ride("replay-me", RIDE).await;
    let third = app.post_ride("\"replay-me\"", RIDE).await;

    for replay in [&second, &third] {
        assert_eq!(replay.status, first.status);
        assert_eq!(replay.body, first.body);
        assert_eq!(replay.header("location"), first.header("location"));
        assert_eq!(replay.header("content-type"), first.header("content-type"));
        assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    }
    assert_eq!(app.counts(), (1, 1, 1));
}

#[tokio::test]
async fn field_order_whitespace_and_the_default_currency_do_not_change_the_request() {
    let app = spawn_app().await;
    let first = app
        .post_ride("same", &ride_with(json!({ "currency": null })))
        .await;
    assert_eq!(first.status, 201);

    let reordered = r#"{ "payment_source":"tok_visa",  "amount_cents":2000, "currency":"usd",
        "target_lon":-122.27,"target_lat":37.80,"origin_lon":-122.42,"origin_lat":37.77 }"#;
    let replay = app.post_ride("same", reordered).await;

    assert_eq!(replay.status, 201);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.body, first.body);
}

#[tokio::test]
async fn any_changed_field_with_the_same_key_is_refused_as_reuse() {
    let app = spawn_app().await;
    assert_eq!(app.post_ride("once", RIDE).await.status, 201);

    for change in [
        json!({ "amount_cents": 2001 }),
        json!({ "origin_lat": 37.7701 }),
        json!({ "origin_lon": -122.4201 }),
        json!({ "target_lat": 37.8001 }),
        json!({ "target_lon": -122.2701 }),
        json!({ "currency": "eur" }),
        json!({ "payment_source": "tok_mastercard" }),
        json!({ "payment_source": null }),
    ] {
        let answer = app.post_ride("once", &ride_with(change.clone())).await;
        answer.assert_problem(422, "idempotency-key-reused");
        assert_eq!(answer.header("idempotent-replayed"), None, "{change}");
    }
    assert_eq!(app.counts(), (1, 1, 1));
}

#[tokio::test]
async fn keys_are_scoped_per_user() {
    let app = spawn_app().await;
    let other = create_user(&app.database_url, Some("cus_other"));

    let mine = app.post_ride("shared-key", RIDE).await;
    let theirs = app.post_ride_as(&other.api_key, "shared-key", RIDE).await;
    let theirs_different = app
        .post_ride_as(
            &other.api_key,
            "shared-key-2",
            &ride_with(json!({ "amount_cents": 999 })),
        )
        .await;

    assert_eq!(mine.status, 201);
    assert_eq!(theirs.status, 201);
    assert_eq!(theirs.header("idempotent-replayed"), None);
    assert_ne!(mine.json()["id"], theirs.json()["id"]);
    assert_eq!(theirs_different.status, 201);
    assert_eq!(app.counts(), (3, 3, 3));
    // Neither can see the other's ride.
    let their_ride = format!("/api/rides/{}", theirs.json()["id"]);
    app.get(&their_ride).await.assert_problem(404, "not-found");
}

#[tokio::test]
async fn a_ride_without_source_charges_the_stored_customer() {
    let app = spawn_app().await;

    let answer = app
        .post_ride("customer", &ride_with(json!({ "payment_source": null })))
        .await;

    assert_eq!(answer.status, 201);
    let charge_id = answer.json()["charge_id"].as_str().unwrap().to_owned();
    assert_eq!(
        app.count(&format!(
            "simulated_charges WHERE id = '{charge_id}' AND source = 'cus_test'"
        )),
        1
    );
}

#[tokio::test]
async fn a_user_without_source_or_customer_gets_a_400_and_the_key_is_not_consumed() {
    let app = spawn_app().await;
    let bare = create_user(&app.database_url, None);

    let answer = app
        .post_ride_as(
            &bare.api_key,
            "no-source",
            &ride_with(json!({ "payment_source": null })),
        )
        .await;

    let problem = answer.assert_problem(400, "invalid-request");
    assert_eq!(problem["errors"][0]["field"], "payment_source");
    assert_eq!(app.counts(), (0, 0, 0));
    let retried = app.post_ride_as(&bare.api_key, "no-source", RIDE).await;
    assert_eq!(retried.status, 201);
}
