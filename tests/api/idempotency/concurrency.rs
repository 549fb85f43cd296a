use std::time::Duration;

use futures_util::future::join_all;
use serde_json::json;

use crate::common::app::{
    create_platform_user, create_user, spawn_app, spawn_app_with, spawn_server, Answer, TestApp,
    RIDE,
};
use crate::common::ids::Id;
use crate::common::keys::assert_takeover_fenced;

#[tokio::test]
async fn fifty_parallel_requests_with_one_key_make_one_ride_and_one_charge() {
    // A slow gateway keeps the first request in flight while the others land.
    let app = spawn_app_with(|s| {
        s.gateway.simulated.latency = Duration::from_millis(300);
        s.database.pool_size = 20;
    })
    .await;

    let answers = join_all((0..50).map(|_| app.post_ride("storm", RIDE))).await;

    let created: Vec<_> = answers.iter().filter(|a| a.status == 201).collect();
    assert!(!created.is_empty());
    let first = created
        .iter()
        .find(|a| a.header("idempotent-replayed").is_none())
        .unwrap();
    let mut in_use = 0;
    for answer in &answers {
        match answer.status {
            201 => assert_eq!(answer.body, first.body),
            409 => {
                answer.assert_problem(409, "idempotency-key-in-use");
                assert_eq!(answer.header("retry-after"), Some("1"));
                in_use += 1;
            }
            other => panic!(
                "unexpected {other}: {}",
                String::from_utf8_lossy(&answer.body)
            ),
        }
    }
    assert_eq!(
        answers
            .iter()
            .filter(|a| a.status == 201 && a.header("idempotent-replayed").is_none())
            .count(),
        1
    );
    assert!(in_use > 0, "the storm should have met the held lease");
    assert_eq!(app.counts(), (1, 1, 1));
}

#[tokio::test]
async fn a_request_in_flight_makes_a_retry_get_409_with_retry_after() {
    let app = spawn_app_with(|s| s.gateway.simulated.latency = Duration::from_millis(1500)).await;

    let slow = app.post_ride("in-flight", RIDE);
    let retry = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        app.post_ride("in-flight", RIDE).await
    };
    let (first, retried) = tokio::join!(slow, retry);

    assert_eq!(first.status, 201);
    retried.assert_problem(409, "idempotency-key-in-use");
    assert_eq!(retried.header("retry-after"), Some("1"));
    assert_eq!(app.counts(), (1, 1, 1));
}

#[tokio::test]
async fn a_holder_whose_lease_was_taken_over_cannot_commit_and_only_one_payment_is_made() {
    // The gateway outlasts the lease: a retry takes the lease over while the
    // first holder still waits on its payment.
    let app = spawn_app_with(|s| {
        s.gateway.simulated.latency = Duration::from_millis(2500);
        s.keys.lease_timeout = Duration::from_secs(1);
    })
    .await;

    let first = app.post_ride("takeover", RIDE);
    let second = async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        app.post_ride("takeover", RIDE).await
    };
    let (first, second) = tokio::join!(first, second);

    assert_takeover_fenced(&app, "takeover", first, second).await;
}

#[tokio::test]
async fn two_instances_on_one_database_make_one_ride_per_key() {
    let app = spawn_app_with(|s| s.gateway.simulated.latency = Duration::from_millis(100)).await;
    let other = spawn_server(&app.database_url, |s| {
        s.gateway.simulated.latency = Duration::from_millis(100)
    })
    .await;

    let app = &app;
    let answers = join_all((0..40).map(|i| {
        let address = if i % 2 == 0 {
            app.address.clone()
        } else {
            other.clone()
        };
        let key = format!("key-{}", i % 10);
        async move {
            app.post_ride_to(&address, &app.user.api_key, &key, RIDE)
                .await
        }
    }))
    .await;

    assert!(answers.iter().all(|a| a.status == 201 || a.status == 409));
    assert_eq!(app.counts(), (10, 10, 10));
}

/// One user's registrations at once serialise on the user's row without a
/// deadlock (the claim's key insert holds `FOR KEY SHARE` on that row, so a
/// later `FOR UPDATE` of it would deadlock with another registration's):
/// each ends 201 or 422 at the limit of 16, and another user's reads are
/// answered meanwhile.
#[tokio::test]
async fn one_users_registrations_at_once_end_created_or_at_the_limit_and_hold_up_no_one() {
    let app = spawn_app().await;
    let other = create_user(&app.database_url, Some("cus_other"));
    let url = format!("{}/api/webhook_endpoints", app.address);
    let body = json!({"url": "http://127.0.0.1:9/hook", "events": ["ride.*"]}).to_string();
    let (registrations, reads) = tokio::join!(
        join_all((0..24).map(|n| {
            let key = format!("register {n}");
            let (url, body) = (url.clone(), body.clone());
            let app = &app;
            async move {
                app.post_idempotent(&url, &app.user.api_key, &key, &body)
                    .await
                    .unwrap()
            }
        })),
        join_all((0..24).map(|_| app.get_as(&other.api_key, "/api/rides"))),
    );
    let created = registrations.iter().filter(|a| a.status == 201).count();
    for answer in registrations.iter().filter(|a| a.status != 201) {
        answer.assert_problem(422, "webhook-endpoint-limit");
    }
    assert_eq!(created, 16);
    assert_eq!(app.count("webhook_endpoints WHERE user_id IS NOT NULL"), 16);
    for read in reads {
        read.assert_status(200);
    }
}

/// Every idempotent endpoint, sent many requests at once by one user with
/// keys of their own on one target: each answer is one of the contract's
/// (never a 5xx, as a deadlock or a lock timeout would make). A new
/// endpoint fails here until it has its case.
#[tokio::test]
async fn every_idempotent_endpoint_answers_one_users_concurrent_requests_without_a_5xx() {
    for endpoint in ridepay::endpoints::all() {
        let app = spawn_app_with(|s| s.database.pool_size = 8).await;
        let answers = at_once(&app, endpoint.name).await;
        for answer in &answers {
            assert!(
                answer.status < 500,
                "{}: {} {}",
                endpoint.name,
                answer.status,
                answer.body_text()
            );
        }
        assert!(
            answers.iter().any(|answer| answer.status < 300),
            "{}: none succeeded",
            endpoint.name
        );
    }
}

/// Twelve requests of `endpoint` at once, each with a key of its own, on
/// one target made for them.
async fn at_once(app: &TestApp, endpoint: &str) -> Vec<Answer> {
    let destinations = format!("{}/api/webhook_endpoints", app.address);
    // Drivers are the platform's.
    let mut api_key = app.user.api_key.clone();
    let (path, body) = match endpoint {
        "rides.create" => (format!("{}/api/rides", app.address), RIDE.to_owned()),
        "refunds.create" => {
            let ride = app.paid_ride("paid").await;
            let path = format!("{}/api/rides/{ride}/refunds", app.address);
            (path, json!({"amount_cents": 100}).to_string())
        }
        "rides.complete" | "rides.cancel" | "rides.tip" => {
            let ride = app.held_ride("held", "pm_card_visa").await;
            let action = endpoint.trim_start_matches("rides.");
            let body = match action {
                "complete" => json!({"final_amount_cents": 1800}),
                "cancel" => json!({"cancellation_fee_cents": 500}),
                _ => json!({"amount_cents": 300}),
            };
            let path = format!("{}/api/rides/{ride}/{action}", app.address);
            (path, body.to_string())
        }
        "webhook_endpoints.create" => (
            destinations,
            json!({"url": "http://127.0.0.1:9/hook", "events": ["ride.*"]}).to_string(),
        ),
        "webhook_endpoints.roll_secret" | "webhook_endpoints.test" | "webhook_deliveries.retry" => {
            let body = json!({"url": "http://127.0.0.1:9/hook", "events": ["ride.*"]});
            let registered = app
                .post_idempotent(
                    &destinations,
                    &app.user.api_key,
                    "register",
                    &body.to_string(),
                )
                .await
                .unwrap();
            registered.assert_status(201);
            let destination = format!("{destinations}/{}", Id::of(&registered.json()["id"]));
            let path = match endpoint {
                "webhook_endpoints.roll_secret" => format!("{destination}/roll_secret"),
                "webhook_endpoints.test" => format!("{destination}/test"),
                _ => {
                    let test = format!("{destination}/test");
                    let tested = app
                        .post_idempotent(&test, &app.user.api_key, "test", "{}")
                        .await
                        .unwrap();
                    tested.assert_status(200);
                    format!(
                        "{destination}/deliveries/{}/retry",
                        Id::of(&tested.json()["id"])
                    )
                }
            };
            (path, "{}".to_owned())
        }
        "drivers.create" | "drivers.onboarding_link" => {
            let platform = create_platform_user(&app.database_url);
            api_key = platform.api_key.clone();
            let drivers = format!("{}/api/drivers", app.address);
            let body = json!({"email": "ada@example.com", "country": "US"}).to_string();
            if endpoint == "drivers.create" {
                (drivers, body)
            } else {
                let (driver, _) = crate::drivers::registered(app, &platform, "ada").await;
                (
                    format!("{drivers}/{driver}/onboarding_link"),
                    "{}".to_owned(),
                )
            }
        }
        "rides.assign_driver" => {
            let platform = create_platform_user(&app.database_url);
            api_key = platform.api_key.clone();
            let driver = crate::drivers::active_driver(app, &platform, "ada").await;
            let ride = app.paid_ride("paid").await;
            let path = format!("{}/api/rides/{ride}/driver", app.address);
            (path, json!({ "driver_id": driver.to_string() }).to_string())
        }
        other => panic!("{other}: give this endpoint its case in `at_once`"),
    };
    join_all((0..12).map(|n| {
        let (path, body, api_key) = (&path, &body, &api_key);
        async move {
            app.post_idempotent(path, api_key, &format!("at once {n}"), body)
                .await
                .unwrap()
        }
    }))
    .await
}
