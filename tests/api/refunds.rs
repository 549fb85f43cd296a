//! `POST /api/rides/{id}/refunds` and `GET /api/rides/{id}/refunds`: the
//! contract of `POST /api/rides`, on a second endpoint with its own phases.

use std::time::Duration;

use futures_util::future::join_all;
use ridepay::public_ids::RidePublicId;

use crate::common::app::{spawn_app, spawn_app_with, spawn_server};
use crate::common::ids::Id;
use crate::common::wait::eventually;

const REFUND: &str = r#"{"amount_cents": 500, "reason": "requested_by_customer"}"#;

#[tokio::test]
async fn a_refund_is_201_with_its_location_and_replays_byte_for_byte() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("ride").await;

    let first = app.post_refund(ride_id, "refund-1", REFUND).await;

    first.assert_status(201);
    let refund = first.json();
    assert_eq!(
        first.header("location"),
        Some(format!("/api/rides/{ride_id}/refunds/{}", Id::of(&refund["id"])).as_str())
    );
    assert_eq!(first.header("content-type"), Some("application/json"));
    assert_eq!(refund["ride_id"], ride_id);
    assert_eq!(refund["amount_cents"], 500);
    assert_eq!(refund["currency"], "usd");
    assert_eq!(refund["reason"], "requested_by_customer");
    assert_eq!(refund["status"], "succeeded");
    assert!(refund["gateway_refund_id"]
        .as_str()
        .unwrap()
        .starts_with("re_"));
    assert!(refund["created_at"].is_string());
    for _ in 0..2 {
        let replay = app.post_refund(ride_id, "refund-1", REFUND).await;
        assert_eq!(replay.status, 201);
        assert_eq!(replay.body, first.body);
        assert_eq!(replay.header("location"), first.header("location"));
        assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    }
    assert_eq!(app.count("simulated_refunds"), 1);
    assert_eq!(app.count("refunds"), 1);
    let ride = app.ride(ride_id).await;
    assert_eq!(
        (
            ride["amount_refunded_cents"].as_i64(),
            ride["status"].as_str()
        ),
        (Some(500), Some("captured"))
    );
    let location = first.header("location").unwrap();
    assert_eq!(app.get(location).await.body, first.body);
}

#[tokio::test]
async fn partial_refunds_add_up_and_the_last_one_makes_the_ride_refunded() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("ride").await;

    let part = app
        .post_refund(ride_id, "part", r#"{"amount_cents": 1500}"#)
        .await;
    let rest = app.post_refund(ride_id, "rest", "{}").await;

    assert_eq!(part.status, 201);
    assert_eq!(rest.status, 201);
    assert_eq!(rest.json()["amount_cents"], 500);
    let ride = app.ride(ride_id).await;
    assert_eq!(ride["amount_refunded_cents"], 2000);
    assert_eq!(ride["status"], "refunded");
    app.post_refund(ride_id, "more", r#"{"amount_cents": 1}"#)
        .await
        .assert_problem(422, "refund-not-allowed");
    let list = app.get(&format!("/api/rides/{ride_id}/refunds")).await;
    assert_eq!(list.status, 200);
    let list = list.json();
    assert_eq!(list["has_more"], false);
    let amounts: Vec<_> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["amount_cents"].as_i64().unwrap())
        .collect();
    assert_eq!(amounts, [1500, 500]);
}

#[tokio::test]
async fn a_refund_not_allowed_is_422_writes_nothing_and_leaves_the_key_unused() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("ride").await;
    let declined = Id::of(
        &app.post_ride(
            "declined",
            &crate::common::app::ride_with(
                serde_json::json!({"payment_method": "pm_card_visa_chargeDeclined"}),
            ),
        )
        .await
        .json()["ride_id"],
    );
    let before = (app.count("idempotency_keys"), app.count("audit_records"));

    let too_much = app
        .post_refund(ride_id, "greedy", r#"{"amount_cents": 2001}"#)
        .await;
    let unpaid = app.post_refund(declined, "unpaid", "{}").await;

    too_much.assert_problem(422, "refund-not-allowed");
    unpaid.assert_problem(422, "refund-not-allowed");
    assert_eq!(
        (app.count("idempotency_keys"), app.count("audit_records")),
        before
    );
    assert_eq!(app.count("refunds"), 0);
    assert_eq!(app.count("simulated_refunds"), 0);
    // The key was not consumed: a valid request may use it.
    assert_eq!(
        app.post_refund(ride_id, "greedy", r#"{"amount_cents": 2000}"#)
            .await
            .status,
        201
    );
}

#[tokio::test]
async fn another_users_ride_is_404_and_nothing_is_written() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("ride").await;
    let stranger = crate::common::app::create_user(&app.database_url, None);
    let keys = app.count("idempotency_keys");

    let answer = app
        .post_refund_to(&app.address, &stranger.api_key, ride_id, "theirs", REFUND)
        .await
        .unwrap();

    let missing = app
        .post_refund(Id::nothing::<RidePublicId>(), "nowhere", REFUND)
        .await;
    answer.assert_problem(404, "not-found");
    missing.assert_problem(404, "not-found");
    assert_eq!(answer.json()["detail"], missing.json()["detail"]);
    assert_eq!(app.count("idempotency_keys"), keys);
    assert_eq!(app.count("refunds"), 0);
    app.get_as(&stranger.api_key, &format!("/api/rides/{ride_id}/refunds"))
        .await
        .assert_problem(404, "not-found");
}

#[tokio::test]
async fn the_same_key_for_another_amount_or_another_ride_is_422_reused() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("ride").await;
    let other_ride = app.paid_ride("other").await;
    assert_eq!(app.post_refund(ride_id, "once", REFUND).await.status, 201);

    app.post_refund(ride_id, "once", r#"{"amount_cents": 600}"#)
        .await
        .assert_problem(422, "idempotency-key-reused");
    app.post_refund(other_ride, "once", REFUND)
        .await
        .assert_problem(422, "idempotency-key-reused");
    // A ride's key is not a refund's either.
    app.post_refund(ride_id, "ride", REFUND)
        .await
        .assert_problem(422, "idempotency-key-reused");
    assert_eq!(app.count("simulated_refunds"), 1);
}

#[tokio::test]
async fn invalid_bodies_are_400_and_write_nothing() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("ride").await;
    let keys = app.count("idempotency_keys");

    for (body, field) in [
        (r#"{"amount_cents": 0}"#, "amount_cents"),
        (r#"{"reason": "bored"}"#, "reason"),
        (r#"{"tip": 1}"#, "tip"),
        (r#"{"amount_cents": 5, "amount_cents": 5}"#, "amount_cents"),
    ] {
        let problem = app
            .post_refund(ride_id, "bad", body)
            .await
            .assert_problem(400, "invalid-request");
        assert_eq!(problem["errors"][0]["field"], field, "{body}");
    }
    assert_eq!(app.count("idempotency_keys"), keys);
}

#[tokio::test]
async fn a_request_in_flight_makes_a_retry_get_409() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("ride").await;
    let slow = spawn_server(&app.database_url, |s| {
        s.gateway.simulated.latency = Duration::from_millis(1500)
    })
    .await;

    let first = app.post_refund_to(&slow, &app.user.api_key, ride_id, "slow", REFUND);
    let retry = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        app.post_refund(ride_id, "slow", REFUND).await
    };
    let (first, retried) = tokio::join!(first, retry);

    assert_eq!(first.unwrap().status, 201);
    retried.assert_problem(409, "idempotency-key-in-use");
    assert_eq!(retried.header("retry-after"), Some("1"));
    assert_eq!(app.count("simulated_refunds"), 1);
}

#[tokio::test]
async fn parallel_refunds_with_different_keys_never_exceed_the_charge() {
    let app = spawn_app_with(|s| {
        s.gateway.simulated.latency = Duration::from_millis(50);
        s.database.pool_size = 20;
    })
    .await;
    let ride_id = app.paid_ride("ride").await;
    let other = spawn_server(&app.database_url, |s| s.database.pool_size = 20).await;

    let app = &app;
    let answers = join_all((0..12).map(|i| {
        let address = if i % 2 == 0 {
            app.address.clone()
        } else {
            other.clone()
        };
        async move {
            app.post_refund_to(
                &address,
                &app.user.api_key,
                ride_id,
                &format!("k{i}"),
                r#"{"amount_cents": 500}"#,
            )
            .await
            .unwrap()
        }
    }))
    .await;

    let created = answers.iter().filter(|a| a.status == 201).count();
    for answer in answers.iter().filter(|a| a.status != 201) {
        answer.assert_problem(422, "refund-not-allowed");
    }
    assert_eq!(created, 4);
    let ride = app.ride(ride_id).await;
    assert_eq!(
        (
            ride["amount_refunded_cents"].as_i64(),
            ride["status"].as_str()
        ),
        (Some(2000), Some("refunded"))
    );
    assert_eq!(app.count("simulated_refunds"), 4);
    assert_eq!(app.count("refunds"), 4);
}

#[tokio::test]
async fn a_lost_gateway_response_is_503_and_the_retry_refunds_once() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("ride").await;
    let lossy = spawn_server(&app.database_url, |s| {
        s.gateway.simulated.lost_response_rate = 1.0
    })
    .await;

    let lost = app
        .post_refund_to(&lossy, &app.user.api_key, ride_id, "lost", REFUND)
        .await
        .unwrap();

    lost.assert_problem(503, "payment-gateway-unavailable");
    assert!(lost.header("retry-after").is_some());
    assert_eq!(app.key_state("lost")["recovery_point"], "refund_created");
    assert_eq!(app.key_state("lost")["locked"], false);
    let retried = app.post_refund(ride_id, "lost", REFUND).await;
    assert_eq!(retried.status, 201);
    assert_eq!(app.count("simulated_refunds"), 1);
    assert_eq!(app.ride(ride_id).await["amount_refunded_cents"], 500);
}

#[tokio::test]
async fn the_completer_finishes_a_refund_left_after_a_gateway_failure() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("ride").await;
    let failing = spawn_server(&app.database_url, |s| s.gateway.simulated.fail_rate = 1.0).await;
    app.post_refund_to(&failing, &app.user.api_key, ride_id, "abandoned", REFUND)
        .await
        .unwrap()
        .assert_problem(503, "payment-gateway-unavailable");

    spawn_server(&app.database_url, |s| s.completer.enabled = true).await;
    let finished = eventually(Duration::from_secs(10), || {
        app.key_state("abandoned")["recovery_point"] == "finished"
    })
    .await;

    assert!(finished, "{}", app.key_state("abandoned"));
    assert_eq!(app.count("simulated_refunds"), 1);
    let replay = app.post_refund(ride_id, "abandoned", REFUND).await;
    assert_eq!(replay.status, 201);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
}

#[tokio::test]
async fn the_openapi_document_lists_every_answer_of_the_new_routes() {
    let app = spawn_app().await;
    let document = app.get("/api/openapi.json").await.json();
    let statuses = |path: &str, method: &str| -> Vec<String> {
        let mut statuses: Vec<String> = document["paths"][path][method]["responses"]
            .as_object()
            .unwrap_or_else(|| panic!("{method} {path} is not documented"))
            .keys()
            .cloned()
            .collect();
        statuses.sort();
        statuses
    };

    assert_eq!(
        statuses("/api/rides/{id}/refunds", "post"),
        [
            "201", "400", "401", "404", "408", "409", "413", "415", "422", "429", "500", "502",
            "503"
        ]
    );
    assert_eq!(
        statuses("/api/rides/{id}/refunds", "get"),
        ["200", "401", "404", "429", "500", "503"]
    );
    assert_eq!(
        statuses("/webhooks/stripe", "post"),
        ["200", "400", "408", "413", "415", "429", "500", "503"]
    );
    assert_eq!(
        statuses("/api/rides", "post"),
        [
            "201", "202", "400", "401", "402", "403", "408", "409", "413", "415", "422", "429",
            "500", "502", "503"
        ]
    );
}

#[tokio::test]
async fn a_holder_whose_lease_was_taken_over_cannot_commit_and_only_one_refund_is_made() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("ride").await;
    // The gateway outlasts the lease: a retry takes the lease over while the
    // first holder still waits on its refund.
    let slow = spawn_server(&app.database_url, |s| {
        s.gateway.simulated.latency = Duration::from_millis(2500);
        s.keys.lease_timeout = Duration::from_secs(1);
    })
    .await;

    let first = app.post_refund_to(&slow, &app.user.api_key, ride_id, "takeover", REFUND);
    let second = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        app.post_refund_to(&slow, &app.user.api_key, ride_id, "takeover", REFUND)
            .await
    };
    let (first, second) = tokio::join!(first, second);

    first.unwrap().assert_problem(503, "service-unavailable");
    second.unwrap().assert_status(201);
    assert_eq!(app.count("simulated_refunds"), 1);
    assert_eq!(app.ride(ride_id).await["amount_refunded_cents"], 500);
}
