use std::time::Duration;

use futures_util::future::join_all;

use crate::helpers::{assert_takeover_fenced, spawn_app_with, spawn_server, RIDE};

#[tokio::test]
async fn fifty_parallel_requests_with_one_key_make_one_ride_and_one_charge() {
    // A slow gateway keeps the first request in flight while the others land.
    let app = spawn_app_with(|s| {
        s.simulated_gateway.latency = Duration::from_millis(300);
        s.pool_size = 20;
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
    let app = spawn_app_with(|s| s.simulated_gateway.latency = Duration::from_millis(1500)).await;

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
        s.simulated_gateway.latency = Duration::from_millis(2500);
        s.lease_timeout = Duration::from_secs(1);
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
    let app = spawn_app_with(|s| s.simulated_gateway.latency = Duration::from_millis(100)).await;
    let other = spawn_server(&app.database_url, |s| {
        s.simulated_gateway.latency = Duration::from_millis(100)
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
