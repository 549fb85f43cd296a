//! Who may ask: a bearer API key on every API route, an unknown one refused
//! before the body is read, and one user never reaching another's rides or
//! keys.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::common::app::{create_user, ride_with, spawn_app, spawn_app_with, Answer, RIDE};
use crate::common::raw_http::{post_head, raw, read_all};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_api_key_is_refused_before_the_body_is_read() {
    let app = spawn_app().await;
    let address = app.address.clone();
    let (answer, waited) = tokio::task::spawn_blocking(move || {
        let mut stream = raw(&address, Duration::from_secs(3));
        let head = post_head(
            "/api/rides",
            "Authorization: Bearer ridepay_sk_made_up\r\nIdempotency-Key: k\r\n",
        );
        stream.write_all(head.as_bytes()).unwrap();
        // The body never comes.
        let started = Instant::now();
        (read_all(&mut stream), started.elapsed())
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer:.200}");
    assert!(answer.contains("/problems/unauthorized"), "{answer}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");
    assert_eq!(app.counts(), (0, 0, 0));
}

#[tokio::test]
async fn a_second_user_can_neither_see_nor_replay_nor_block_the_first_users_keys() {
    let app = spawn_app_with(|s| s.gateway.simulated.latency = Duration::from_millis(800)).await;
    let intruder = create_user(&app.database_url, Some("cus_intruder"));

    // While the first user's request holds its key, the same key string is
    // free for the second user: no 409, no replay of the first user's answer.
    let (mine, theirs) = tokio::join!(app.post_ride("shared", RIDE), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        app.post_ride_as(
            &intruder.api_key,
            "shared",
            &ride_with(serde_json::json!({ "amount_cents": 777 })),
        )
        .await
    });

    assert_eq!((mine.status, theirs.status), (201, 201));
    assert_eq!(theirs.header("idempotent-replayed"), None);
    assert_eq!(theirs.json()["amount_cents"], 777);
    let listed = app.get_as(&intruder.api_key, "/api/rides").await.json();
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);
    assert_eq!(listed["data"][0]["id"], theirs.json()["id"]);
    let stolen = app
        .get_as(&intruder.api_key, mine.header("location").unwrap())
        .await;
    let missing = app.get_as(&intruder.api_key, "/api/rides/987654").await;
    stolen.assert_problem(404, "not-found");
    assert_eq!(
        stolen.body, missing.body,
        "a 404 must not tell whether the ride exists"
    );
}

#[tokio::test]
async fn api_routes_need_a_valid_bearer_key() {
    let app = spawn_app().await;
    let url = format!("{}/api/rides", app.address);
    let attempts = [
        app.client.get(&url),
        app.client
            .get(&url)
            .header("Authorization", "Basic dXNlcjpwYXNz"),
        app.client.get(&url).bearer_auth("ridepay_sk_0000"),
        app.client
            .post(&url)
            .bearer_auth("nope")
            .header("Idempotency-Key", "k")
            .body(RIDE),
        // An unknown key is answered before anything else is judged: the
        // missing Idempotency-Key, the broken body, the out-of-range limit.
        app.client
            .post(&url)
            .bearer_auth("ridepay_sk_0000")
            .header("Content-Type", "application/json")
            .body("{"),
        app.client
            .get(format!("{url}?limit=0"))
            .bearer_auth("ridepay_sk_0000"),
    ];
    for attempt in attempts {
        let answer = Answer::read(attempt.send().await.unwrap()).await;
        answer.assert_problem(401, "unauthorized");
        assert_eq!(answer.header("www-authenticate"), Some("Bearer"));
    }
    assert_eq!(app.counts(), (0, 0, 0));
}
