//! `/api/webhook_endpoints`: registering a destination only where it may
//! be reached, at most 16 a user, each user's own; changing one; and the
//! actions on one (a delivery sent again, the secret rolled, a test event).

use std::time::Duration;

use diesel::prelude::*;
use serde_json::{json, Value};

use super::{app_sending, assert_verified, register, register_as, wait_for};
use crate::common::app::{create_user, Answer, Id, TestApp};
use crate::common::receiver::{Receiver, Reply};
use crate::common::wait::eventually;

/// Test events have a quota: 20 an hour per user, across their
/// destinations; the next is a 429 that writes nothing.
#[tokio::test]
async fn a_user_sends_at_most_20_test_events_an_hour() {
    let app = app_sending(&[0], |settings| settings.user_webhooks.enabled = false).await;
    let receiver = Receiver::start();
    let first = register(&app, &receiver, json!(["*"])).await;
    let second = app
        .post_webhook_endpoint(
            "second",
            &json!({"url": format!("{}?second", receiver.url), "events": ["*"]}),
        )
        .await
        .json();
    for n in 0..20 {
        let endpoint = [&first, &second][n % 2];
        app.post_test_event(&endpoint["id"], &format!("test {n}"))
            .await
            .assert_status(200);
    }
    let refused = app.post_test_event(&first["id"], "test 20").await;
    refused.assert_rate_limited();
    assert_eq!(app.count("idempotency_keys WHERE key = 'test 20'"), 0);
    assert_eq!(
        app.count("webhook_events WHERE type = 'webhook_endpoint.test'"),
        20
    );
    // Another user's quota is their own.
    let other = create_user(&app.database_url, Some("cus_other"));
    let body = json!({"url": receiver.url, "events": ["*"]});
    let theirs = register_as(&app, &other, "register", body).await.json();
    let path = format!("/api/webhook_endpoints/{}/test", Id::of(&theirs["id"]));
    app.post_as(&other, &path, "test", "{}")
        .await
        .assert_status(200);
}

/// A delivery's answer carries its newest ten attempts and the count of
/// all, however many retries by hand added.
#[tokio::test]
async fn a_deliverys_answer_shows_its_newest_ten_attempts_and_counts_them_all() {
    let app = app_sending(&[0], |_| {}).await;
    let receiver = Receiver::start();
    let endpoint = register(&app, &receiver, json!(["ride.captured"])).await;
    app.paid_ride("paid").await;
    wait_for(&receiver, 1).await;
    let recorded = eventually(Duration::from_secs(10), || {
        app.count("webhook_attempts") == 1
    })
    .await;
    assert!(recorded);
    diesel::sql_query(
        "INSERT INTO webhook_attempts (delivery_id, attempted_at, http_status, duration_ms) \
         SELECT d.id, now() + n * interval '1 second', 500, n FROM webhook_deliveries d, \
             generate_series(1, 24) AS n",
    )
    .execute(&mut app.db())
    .unwrap();

    let deliveries = format!(
        "/api/webhook_endpoints/{}/deliveries",
        Id::of(&endpoint["id"])
    );
    let listed = app.get(&deliveries).await.json();
    let delivery = &listed["data"][0];
    assert_eq!(delivery["attempt_count"], 25);
    let shown: Vec<i64> = delivery["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|attempt| attempt["duration_ms"].as_i64().unwrap())
        .collect();
    assert_eq!(shown, (15..=24).collect::<Vec<i64>>());
}

#[tokio::test]
async fn registration_refuses_destinations_that_may_not_be_reached() {
    let strict = app_sending(&[0], |settings| {
        settings.user_webhooks.allow_loopback = false;
    })
    .await;
    let register_url = |key: &'static str, url: &str| {
        register_as(
            &strict,
            &strict.user,
            key,
            json!({"url": url, "events": ["*"]}),
        )
    };
    let plain = register_url("plain", "http://127.0.0.1:9/hook").await;
    let problem = plain.assert_problem(400, "invalid-request");
    assert_eq!(problem["errors"][0]["field"], "url");
    let mut details = std::collections::BTreeSet::new();
    for (key, url) in [
        ("loopback", "https://127.0.0.1:9/hook"),
        ("localhost", "https://localhost:9/hook"),
        ("private", "https://10.0.0.1/hook"),
        ("metadata", "https://169.254.169.254/latest"),
        ("mapped", "https://[::ffff:127.0.0.1]/hook"),
        ("unresolvable", "https://no-such-host.invalid/hook"),
    ] {
        let refused = register_url(key, url).await;
        let problem = refused.assert_problem(422, "webhook-destination-not-allowed");
        details.insert(problem["detail"].as_str().unwrap().to_owned());
        // Stored: the key answers the same again.
        let again = register_url(key, url).await;
        assert_eq!(
            (again.status, again.header("idempotent-replayed")),
            (422, Some("true"))
        );
    }
    // One refusal for every host, resolvable or not: the server's resolver
    // tells a user nothing of internal names or addresses.
    assert_eq!(details.len(), 1, "{details:?}");
    let detail = details.first().unwrap();
    for named in ["127.0.0.1", "10.0.0.1", "169.254", "resolve", "localhost"] {
        assert!(!detail.contains(named), "{detail}");
    }
    assert_eq!(
        strict.count("webhook_endpoints WHERE user_id IS NOT NULL"),
        0
    );
}

/// Where loopback is allowed, plain `http://` still goes only to a host
/// named as loopback: another is refused for its scheme, before any lookup.
#[tokio::test]
async fn plain_http_to_a_host_not_named_as_loopback_is_refused_for_its_scheme() {
    let app = app_sending(&[0], |_| {}).await;
    for (key, url) in [
        ("public", "http://hooks.example.com/hook"),
        ("private", "http://10.0.0.1/hook"),
    ] {
        let refused = register_as(&app, &app.user, key, json!({"url": url, "events": ["*"]})).await;
        let problem = refused.assert_problem(400, "invalid-request");
        assert_eq!(problem["errors"][0]["field"], "url");
        assert!(
            problem["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains("https://"),
            "{problem}"
        );
    }
    assert_eq!(app.count("idempotency_keys"), 0);
}

#[tokio::test]
async fn a_user_has_at_most_16_destinations_and_sees_only_their_own() {
    let app = app_sending(&[0], |_| {}).await;
    let receiver = Receiver::start();
    let body = json!({"url": receiver.url, "events": ["ride.*"]});
    let mut ids = Vec::new();
    for n in 0..16 {
        let answer = register_as(&app, &app.user, &format!("endpoint {n}"), body.clone()).await;
        answer.assert_status(201);
        ids.push(Id::of(&answer.json()["id"]));
    }
    let replay = register_as(&app, &app.user, "endpoint 0", body.clone()).await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    register_as(&app, &app.user, "endpoint 16", body.clone())
        .await
        .assert_problem(422, "webhook-endpoint-limit");
    // Refused before anything was written: the key is not consumed.
    assert_eq!(app.count("idempotency_keys WHERE key = 'endpoint 16'"), 0);

    let listed = app.get("/api/webhook_endpoints").await.json();
    assert_eq!(listed["data"].as_array().unwrap().len(), 16);
    assert!(listed["data"][0].get("secret").is_none(), "{listed}");
    let stranger = create_user(&app.database_url, Some("cus_stranger"));
    let theirs = format!("/api/webhook_endpoints/{}", ids[0]);
    app.get_as(&stranger.api_key, &theirs)
        .await
        .assert_problem(404, "not-found");
    app.get_as(&stranger.api_key, &format!("{theirs}/deliveries"))
        .await
        .assert_problem(404, "not-found");
    assert_eq!(
        app.get_as(&stranger.api_key, "/api/webhook_endpoints")
            .await
            .json()["data"],
        json!([])
    );
    let delete = |api_key: String, path: String| {
        let client = reqwest::Client::new();
        let address = app.address.clone();
        async move {
            client
                .delete(format!("{address}{path}"))
                .bearer_auth(api_key)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(delete(stranger.api_key.clone(), theirs.clone()).await, 404);
    assert_eq!(delete(app.user.api_key.clone(), theirs.clone()).await, 204);
    app.get(&theirs).await.assert_problem(404, "not-found");
    register_as(&app, &app.user, "endpoint 17", body)
        .await
        .assert_status(201);
}

async fn patch(app: &TestApp, api_key: &str, id: &Value, body: Value) -> Answer {
    let response = reqwest::Client::new()
        .patch(format!(
            "{}/api/webhook_endpoints/{}",
            app.address,
            Id::of(id)
        ))
        .bearer_auth(api_key)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    Answer::read(response).await
}

#[tokio::test]
async fn a_destination_is_changed_and_a_disabled_one_enabled_again() {
    let app = app_sending(&[0], |_| {}).await;
    let receiver = Receiver::start();
    let moved = Receiver::start();
    receiver.reply([Reply::Status(410, Vec::new())]);
    let endpoint = register(&app, &receiver, json!(["ride.authorized"])).await;
    let id = &endpoint["id"];
    app.paid_ride("not subscribed").await;
    app.held_ride("gone", "pm_card_visa").await;
    let disabled = eventually(Duration::from_secs(10), || {
        app.count("webhook_endpoints WHERE user_id IS NOT NULL AND status = 'disabled'") == 1
    })
    .await;
    assert!(disabled);

    let stranger = create_user(&app.database_url, Some("cus_stranger"));
    patch(&app, &stranger.api_key, id, json!({"status": "enabled"}))
        .await
        .assert_problem(404, "not-found");
    patch(&app, &app.user.api_key, id, json!({}))
        .await
        .assert_problem(400, "invalid-request");
    let strict = json!({"url": "https://10.0.0.1/hook"});
    patch(&app, &app.user.api_key, id, strict)
        .await
        .assert_problem(422, "webhook-destination-not-allowed");
    let changed = patch(
        &app,
        &app.user.api_key,
        id,
        json!({"url": moved.url, "events": ["ride.captured", "ride.authorized"], "status": "enabled"}),
    )
    .await;
    changed.assert_status(200);
    let changed = changed.json();
    assert_eq!(
        (&changed["status"], &changed["url"], &changed["events"]),
        (
            &json!("enabled"),
            &json!(moved.url),
            &json!(["ride.authorized", "ride.captured"])
        )
    );
    assert!(changed.get("disabled_reason").is_none() && changed.get("secret").is_none());

    app.paid_ride("after").await;
    let received = wait_for(&moved, 1).await;
    assert_eq!(received[0].json()["type"], "ride.captured");
    assert_eq!(receiver.received().len(), 1);
}

#[tokio::test]
async fn a_failed_delivery_is_sent_again_by_hand_once_per_key() {
    let app = app_sending(&[0], |_| {}).await;
    let receiver = Receiver::start();
    receiver.reply([Reply::Status(500, Vec::new())]);
    let endpoint = register(&app, &receiver, json!(["ride.captured"])).await;
    app.paid_ride("paid").await;
    wait_for(&receiver, 1).await;
    let failed = eventually(Duration::from_secs(10), || {
        app.count("webhook_deliveries WHERE status = 'failed'") == 1
    })
    .await;
    assert!(failed);
    let deliveries = format!(
        "/api/webhook_endpoints/{}/deliveries",
        Id::of(&endpoint["id"])
    );
    let delivery_id = app.get(&deliveries).await.json()["data"][0]["id"].clone();
    let retry = || app.post_delivery_retry(&endpoint["id"], &delivery_id, "again");

    let stranger = create_user(&app.database_url, Some("cus_stranger"));
    let path = format!("{deliveries}/{}/retry", Id::of(&delivery_id));
    app.post_as(&stranger, &path, "again", "{}")
        .await
        .assert_problem(404, "not-found");
    app.post_delivery_retry(&endpoint["id"], &json!(999999), "again")
        .await
        .assert_problem(404, "not-found");
    let first = retry().await;
    first.assert_status(200);
    assert_eq!(first.json()["status"], "pending");
    let second = wait_for(&receiver, 2).await;
    assert_eq!(second[1].body, second[0].body);
    let succeeded = eventually(Duration::from_secs(10), || {
        app.count("webhook_deliveries WHERE status = 'succeeded'") == 1
    })
    .await;
    assert!(succeeded);
    let replay = retry().await;
    assert_eq!(
        (
            replay.status,
            &replay.body,
            replay.header("idempotent-replayed")
        ),
        (200, &first.body, Some("true"))
    );
    // The replay sent nothing more.
    assert_eq!(receiver.received().len(), 2);
}

#[tokio::test]
async fn a_rolled_secret_signs_beside_the_one_before_and_a_test_event_reaches_one_destination() {
    let app = app_sending(&[0], |_| {}).await;
    let receiver = Receiver::start();
    let other = Receiver::start();
    let endpoint = register(&app, &receiver, json!(["refund.failed"])).await;
    register(&app, &other, json!(["*"])).await;
    let old = endpoint["secret"].as_str().unwrap().to_owned();
    let base = format!("/api/webhook_endpoints/{}", Id::of(&endpoint["id"]));

    let rolled = app.post_roll_secret(&endpoint["id"], "roll").await;
    let replay = app.post_roll_secret(&endpoint["id"], "roll").await;

    rolled.assert_status(200);
    let new = rolled.json()["secret"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    assert_eq!(
        (
            replay.status,
            &replay.body,
            replay.header("idempotent-replayed")
        ),
        (200, &rolled.body, Some("true"))
    );
    assert!(app.get(&base).await.json().get("secret").is_none());

    let test = app.post_test_event(&endpoint["id"], "test").await;
    test.assert_status(200);
    assert_eq!(test.json()["event_type"], "webhook_endpoint.test");
    let received = wait_for(&receiver, 1).await;
    let event = received[0].json();
    assert_eq!(
        (&event["type"], &event["data"]["webhook_endpoint"]["url"]),
        (&json!("webhook_endpoint.test"), &json!(receiver.url))
    );
    // Signed under both secrets during the overlap: each verifies it.
    assert_verified(&new, &received[0]);
    assert_verified(&old, &received[0]);
    assert_eq!(
        received[0].header("webhook-signature").split(' ').count(),
        2
    );
    // The test went to that destination alone.
    assert!(other.received().is_empty());
    let stranger = create_user(&app.database_url, Some("cus_stranger"));
    app.post_as(&stranger, &format!("{base}/test"), "theirs", "{}")
        .await
        .assert_problem(404, "not-found");
}
