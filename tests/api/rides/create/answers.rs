use serde_json::json;

use crate::common::app::{create_user, held_ride, ride_with, spawn_app, RIDE};
use crate::common::ids::Id;

#[tokio::test]
async fn a_first_request_with_automatic_capture_creates_a_paid_ride() {
    let app = spawn_app().await;
    app.registered_destination("destination").await;

    let answer = app.post_ride("first", RIDE).await;

    assert_eq!(answer.status, 201);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    assert_eq!(answer.header("idempotent-replayed"), None);
    let ride = answer.json();
    assert_eq!(
        answer.header("location"),
        Some(format!("/api/rides/{}", Id::of(&ride["id"])).as_str())
    );
    assert_eq!(ride["status"], "captured");
    assert_eq!(ride["capture_method"], "automatic");
    assert_eq!(ride["amount_cents"], 2000);
    assert_eq!(
        (
            ride["amount_authorized_cents"].as_i64(),
            ride["amount_captured_cents"].as_i64()
        ),
        (Some(2000), Some(2000))
    );
    assert_eq!(ride["amount_refunded_cents"], 0);
    assert_eq!(ride["currency"], "usd");
    assert_eq!(ride["origin_lat"], 37.77);
    assert_eq!(ride["target_lon"], -122.27);
    assert_eq!(ride["next_action"], json!(null));
    // A ride just paid has no driver yet.
    assert_eq!(ride["driver"], json!(null));
    let intent = ride["payment_intent_id"].as_str().unwrap();
    assert_eq!(
        app.count(&format!(
            "simulated_payment_intents WHERE id = '{intent}' AND amount_received_cents = 2000 \
             AND payment_method = 'pm_card_visa' AND capture_method = 'automatic' \
             AND status = 'succeeded'"
        )),
        1
    );
    // Exactly the fields of the contract.
    let mut fields: Vec<&str> = ride
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "amount_authorized_cents",
            "amount_capturable_max_cents",
            "amount_captured_cents",
            "amount_cents",
            "amount_refunded_cents",
            "capture_method",
            "created_at",
            "currency",
            "driver",
            "hold_expires_at",
            "id",
            "next_action",
            "origin_lat",
            "origin_lon",
            "payment_intent_id",
            "status",
            "target_lat",
            "target_lon",
            "tip_cents",
        ]
    );
    // The ride's key, and the destination's.
    assert_eq!(app.counts(), (1, 1, 2));
    assert_eq!(app.key_state("first")["recovery_point"], "finished");
    assert_eq!(app.key_state("first")["locked"], false);
    assert_eq!(app.count("audit_records WHERE action = 'ride.created'"), 1);
    // Its event staged with it, for the destination.
    assert_eq!(app.count("webhook_events WHERE type = 'ride.captured'"), 1);
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

    let reordered = r#"{ "payment_method":"pm_card_visa",  "amount_cents":2000, "currency":"usd",
        "capture_method": "automatic",
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
        json!({ "payment_method": "pm_card_mastercard" }),
        json!({ "payment_method": null }),
        json!({ "capture_method": "manual" }),
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
    let their_ride = format!("/api/rides/{}", Id::of(&theirs.json()["id"]));
    app.get(&their_ride).await.assert_problem(404, "not-found");
}

#[tokio::test]
async fn a_ride_without_a_payment_method_pays_with_the_saved_card() {
    let app = spawn_app().await;

    let answer = app
        .post_ride("saved", &ride_with(json!({ "payment_method": null })))
        .await;

    assert_eq!(answer.status, 201);
    let intent = answer.json()["payment_intent_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        app.count(&format!(
            "simulated_payment_intents WHERE id = '{intent}' AND customer = 'cus_test' \
             AND payment_method = 'pm_card_visa'"
        )),
        1
    );
}

#[tokio::test]
async fn a_user_without_a_saved_card_gets_a_400_and_the_key_is_not_consumed() {
    let app = spawn_app().await;
    let bare = create_user(&app.database_url, None);

    let answer = app
        .post_ride_as(
            &bare.api_key,
            "no-card",
            &ride_with(json!({ "payment_method": null })),
        )
        .await;

    let problem = answer.assert_problem(400, "invalid-request");
    assert_eq!(problem["errors"][0]["field"], "payment_method");
    assert_eq!(app.counts(), (0, 0, 0));
    let retried = app.post_ride_as(&bare.api_key, "no-card", RIDE).await;
    assert_eq!(retried.status, 201);
}

#[tokio::test]
async fn a_ride_holds_its_fare_by_default_and_is_authorized() {
    let app = spawn_app().await;

    let answer = app.post_ride("held", &held_ride("pm_card_visa")).await;

    answer.assert_status(201);
    let ride = answer.json();
    assert_eq!(
        (
            ride["status"].as_str(),
            ride["capture_method"].as_str(),
            ride["amount_authorized_cents"].as_i64(),
            ride["amount_captured_cents"].as_i64()
        ),
        (Some("authorized"), Some("manual"), Some(2000), Some(0))
    );
    let intent = ride["payment_intent_id"].as_str().unwrap();
    assert_eq!(
        app.count(&format!(
            "simulated_payment_intents WHERE id = '{intent}' AND status = 'requires_capture' \
             AND amount_capturable_cents = 2000 AND amount_received_cents = 0"
        )),
        1
    );
    // Its receipt comes with the capture.
    assert_eq!(app.count("webhook_events WHERE type = 'ride.captured'"), 0);
}

#[tokio::test]
async fn a_card_that_needs_authentication_is_a_stored_202_with_the_next_action() {
    let app = spawn_app().await;
    let body = held_ride("pm_card_authenticationRequired");

    let answer = app.post_ride("3ds", &body).await;
    let replay = app.post_ride("3ds", &body).await;

    answer.assert_status(202);
    let ride = answer.json();
    assert_eq!(
        answer.header("location"),
        Some(format!("/api/rides/{}", Id::of(&ride["id"])).as_str())
    );
    assert_eq!(ride["status"], "requires_action");
    let action = &ride["next_action"];
    assert_eq!(action["type"], "redirect_to_url");
    let page = action["redirect_to_url"]["url"].as_str().unwrap();
    assert!(
        page.starts_with(&format!("{}/simulated-gateway/authenticate?", app.address)),
        "{page}"
    );
    assert_eq!(
        action["redirect_to_url"]["return_url"].as_str(),
        Some(format!("{}/payments/return", app.address).as_str())
    );
    let secret = action["client_secret"].as_str().unwrap();
    assert!(
        secret.starts_with(ride["payment_intent_id"].as_str().unwrap()),
        "{secret}"
    );
    assert_eq!(
        (
            replay.status,
            &replay.body,
            replay.header("idempotent-replayed")
        ),
        (202, &answer.body, Some("true"))
    );
    // Nothing held yet, and no receipt for what is not paid.
    assert_eq!(ride["amount_authorized_cents"], 0);
    assert_eq!(app.count("webhook_events WHERE type = 'ride.captured'"), 0);
}

#[tokio::test]
async fn a_payment_that_settles_later_is_a_stored_202_processing_and_an_event_authorizes_it() {
    let app = spawn_app().await;

    let answer = app
        .post_ride("slow-bank", &held_ride("pm_card_ridepay_processing"))
        .await;

    answer.assert_status(202);
    let ride = answer.json();
    assert_eq!(
        (ride["status"].as_str(), &ride["next_action"]),
        (Some("processing"), &json!(null))
    );
    // The simulated gateway's event, delivered in-process, settles it.
    let path = format!("/api/rides/{}", Id::of(&ride["id"]));
    let mut status = String::new();
    for _ in 0..50 {
        status = app.get(&path).await.json()["status"]
            .as_str()
            .unwrap()
            .to_owned();
        if status != "processing" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(status, "authorized");
    assert_eq!(
        app.ride(Id::of(&ride["id"])).await["amount_authorized_cents"],
        2000
    );
    // The key's answer stays what it was.
    let replay = app
        .post_ride("slow-bank", &held_ride("pm_card_ridepay_processing"))
        .await;
    assert_eq!((replay.status, replay.body), (202, answer.body));
}

#[tokio::test]
async fn a_payment_method_that_is_not_a_pm_id_is_a_400_and_reaches_no_gateway() {
    let app = spawn_app().await;

    for method in ["tok_visa", "cus_test", "pm_", "pm_card visa", "card_123"] {
        let answer = app
            .post_ride(method, &ride_with(json!({ "payment_method": method })))
            .await;
        let problem = answer.assert_problem(400, "invalid-request");
        assert_eq!(problem["errors"][0]["field"], "payment_method", "{method}");
    }
    let old = app
        .post_ride(
            "old",
            &ride_with(json!({ "payment_method": null, "payment_source": "tok_visa" })),
        )
        .await;
    assert_eq!(
        old.assert_problem(400, "invalid-request")["errors"][0]["field"],
        "payment_source"
    );
    let capture = app
        .post_ride("capture", &ride_with(json!({ "capture_method": "later" })))
        .await;
    assert_eq!(
        capture.assert_problem(400, "invalid-request")["errors"][0]["field"],
        "capture_method"
    );
    assert_eq!(app.counts(), (0, 0, 0));
}
