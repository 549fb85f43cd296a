//! Outbound webhooks: a user's destinations, registered idempotently and
//! only where they may be reached; the events of their rides, each staged
//! with the change it reports, delivered at least once and signed per the
//! Standard Webhooks specification, which its own library verifies.

use std::time::Duration;

use chrono::DateTime;
use diesel::prelude::*;
use ridepay::config::{ReceiptDestination, Settings};
use serde_json::{json, Value};
use standardwebhooks::Webhook;

use crate::common::app::{
    create_user, held_ride, spawn_app_with, spawn_server, Answer, TestApp, TestUser, RIDE,
};
use crate::common::receiver::{Received, Receiver, Reply};
use crate::common::wait::eventually;

/// The server with the sender of webhooks on, on a schedule `secs` apart
/// (the first attempt at once).
async fn app_sending(schedule: &[u64], configure: impl FnOnce(&mut Settings)) -> TestApp {
    let schedule: Vec<Duration> = schedule.iter().copied().map(Duration::from_secs).collect();
    spawn_app_with(|settings| {
        settings.user_webhooks.enabled = true;
        settings.user_webhooks.retry_schedule = schedule;
        configure(settings);
    })
    .await
}

async fn register_as(app: &TestApp, user: &TestUser, key: &str, body: Value) -> Answer {
    let url = format!("{}/api/webhook_endpoints", app.address);
    app.post_idempotent(&url, &user.api_key, key, &body.to_string())
        .await
        .expect("the server answers")
}

/// A destination of `events` at the receiver; its JSON (with the secret).
async fn register(app: &TestApp, receiver: &Receiver, events: Value) -> Value {
    let key = format!("register {}", receiver.url);
    let answer = register_as(
        app,
        &app.user,
        &key,
        json!({"url": receiver.url, "events": events}),
    )
    .await;
    answer.assert_status(201);
    answer.json()
}

/// Waits until the receiver has `count` requests; returns them.
async fn wait_for(receiver: &Receiver, count: usize) -> Vec<Received> {
    let arrived = eventually(Duration::from_secs(30), || {
        receiver.received().len() >= count
    })
    .await;
    assert!(arrived, "{} of {count} arrived", receiver.received().len());
    receiver.received()
}

/// The request as the specification's own library verifies it.
fn assert_verified(secret: &str, received: &Received) {
    Webhook::new(secret)
        .unwrap()
        .verify(&received.body, &received.headers)
        .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&received.body)));
    assert_eq!(received.json()["id"], received.header("webhook-id"));
    assert!(!received.header("webhook-id").contains('.'));
}

#[tokio::test]
async fn a_rides_events_reach_its_destination_signed_as_the_standard_says() {
    let app = app_sending(&[0], |_| {}).await;
    let receiver = Receiver::start();
    let endpoint = register(&app, &receiver, json!(["ride.*", "refund.*"])).await;
    let secret = endpoint["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{endpoint}");

    let ride_id = app.held_ride("held", "pm_card_visa").await;
    app.post_on_ride(
        ride_id,
        "complete",
        "done",
        r#"{"final_amount_cents": 1800}"#,
    )
    .await
    .assert_status(200);
    app.post_refund(ride_id, "refund", r#"{"amount_cents": 500}"#)
        .await
        .assert_status(201);

    let received = wait_for(&receiver, 3).await;
    let mut events: Vec<Value> = received
        .iter()
        .map(|request| {
            assert_verified(&secret, request);
            assert_eq!(request.header("content-type"), "application/json");
            request.json()
        })
        .collect();
    events.sort_by_key(|event| event["sequence"].as_i64());
    let summary: Vec<(&str, i64, &str)> = events
        .iter()
        .map(|event| {
            (
                event["type"].as_str().unwrap(),
                event["sequence"].as_i64().unwrap(),
                event["data"]["ride"]["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("ride.authorized", 1, "authorized"),
            ("ride.captured", 2, "captured"),
            ("refund.succeeded", 3, "captured"),
        ]
    );
    // The last event carries the ride as it is now.
    assert_eq!(events[2]["data"]["ride"], app.ride(ride_id).await);
    assert_eq!(events[2]["data"]["refund"]["amount_cents"], 500);
    assert!(DateTime::parse_from_rfc3339(events[0]["timestamp"].as_str().unwrap()).is_ok());
}

/// Every event carries the ride byte for byte as the API shows it, for
/// rides in every status ridepay reports: both are rendered by the same
/// renderer from the same row.
#[tokio::test]
async fn the_ride_an_event_carries_is_byte_for_byte_the_ride_the_api_shows() {
    let app = app_sending(&[0], |_| {}).await;
    let receiver = Receiver::start();
    register(&app, &receiver, json!(["*"])).await;
    let held = app.held_ride("held", "pm_card_visa").await;
    let tipped = app.held_ride("tipped", "pm_card_visa").await;
    app.post_on_ride(tipped, "tip", "tip", r#"{"amount_cents": 300}"#)
        .await
        .assert_status(200);
    let paid = app.paid_ride("paid").await;
    let waiting = app.waiting_ride("waiting").await["id"].as_i64().unwrap();
    let declined = app
        .post_ride("declined", &held_ride("pm_card_visa_chargeDeclined"))
        .await
        .json()["ride_id"]
        .as_i64()
        .unwrap();
    app.post_refund(paid, "all", "{}").await.assert_status(201);

    // authorized x2, tipped, captured, refund.succeeded, requires_action,
    // payment_declined.
    let received = wait_for(&receiver, 7).await;
    for ride_id in [held, tipped, paid, waiting, declined] {
        let last = received
            .iter()
            .filter(|event| event.json()["data"]["ride"]["id"] == ride_id)
            .max_by_key(|event| event.json()["sequence"].as_i64())
            .unwrap_or_else(|| panic!("no event of ride {ride_id}"));
        let shown = app.get(&format!("/api/rides/{ride_id}")).await.body;
        let carried = format!(r#""ride":{}"#, String::from_utf8(shown).unwrap());
        let body = String::from_utf8(last.body.clone()).unwrap();
        assert!(body.contains(&carried), "{body}\ndoes not carry\n{carried}");
    }
}

#[tokio::test]
async fn only_the_events_a_destination_subscribed_to_reach_it_and_never_another_users() {
    let app = app_sending(&[0], |_| {}).await;
    let captures = Receiver::start();
    let everything = Receiver::start();
    let strangers = Receiver::start();
    register(&app, &captures, json!(["ride.captured"])).await;
    register(&app, &everything, json!(["*"])).await;
    let stranger = create_user(&app.database_url, Some("cus_stranger"));
    register_as(
        &app,
        &stranger,
        "theirs",
        json!({"url": strangers.url, "events": ["*"]}),
    )
    .await
    .assert_status(201);

    app.paid_ride("paid").await;
    app.held_ride("held", "pm_card_visa").await;

    let all = wait_for(&everything, 2).await;
    let captured = wait_for(&captures, 1).await;
    let types = |received: &[Received]| -> Vec<String> {
        let mut types: Vec<String> = received
            .iter()
            .map(|request| request.json()["type"].as_str().unwrap().to_owned())
            .collect();
        types.sort();
        types
    };
    assert_eq!(types(&all), ["ride.authorized", "ride.captured"]);
    assert_eq!(types(&captured), ["ride.captured"]);
    // Both deliveries made: nothing was staged for the stranger's.
    assert_eq!(strangers.received().len(), 0);
    assert_eq!(
        app.count(&format!(
            "webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id \
                 WHERE e.user_id = {}",
            stranger.id
        )),
        0
    );
}

#[tokio::test]
async fn a_failed_attempt_is_sent_again_with_the_same_id_and_body_and_a_fresh_signature() {
    let app = app_sending(&[0, 1, 1, 1], |_| {}).await;
    let receiver = Receiver::start();
    receiver.reply([
        Reply::Status(500, Vec::new()),
        Reply::Status(
            302,
            vec![("location", "https://elsewhere.example/".to_owned())],
        ),
    ]);
    let endpoint = register(&app, &receiver, json!(["ride.captured"])).await;
    let secret = endpoint["secret"].as_str().unwrap();

    app.paid_ride("paid").await;

    let attempts = wait_for(&receiver, 3).await;
    for attempt in &attempts {
        assert_verified(secret, attempt);
        assert_eq!(
            attempt.header("webhook-id"),
            attempts[0].header("webhook-id")
        );
        assert_eq!(attempt.body, attempts[0].body);
    }
    let stamps: Vec<i64> = attempts
        .iter()
        .map(|attempt| attempt.header("webhook-timestamp").parse().unwrap())
        .collect();
    assert!(
        stamps.windows(2).all(|pair| pair[0] < pair[1]),
        "{stamps:?}"
    );
    let path = format!("/api/webhook_endpoints/{}/deliveries", endpoint["id"]);
    let settled = eventually(Duration::from_secs(10), || {
        app.count("webhook_deliveries WHERE status = 'succeeded'") == 1
    })
    .await;
    assert!(settled);
    let listed = app.get(&path).await.json();
    let delivery = &listed["data"][0];
    assert_eq!(
        (delivery["status"].as_str(), delivery["event_type"].as_str()),
        (Some("succeeded"), Some("ride.captured"))
    );
    let statuses: Vec<i64> = delivery["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|attempt| attempt["http_status"].as_i64().unwrap())
        .collect();
    assert_eq!(statuses, [500, 302, 200]);
    assert_eq!(delivery["event_id"], attempts[0].header("webhook-id"));
}

#[tokio::test]
async fn a_410_disables_the_destination_and_a_retry_after_is_waited() {
    let app = app_sending(&[0, 1, 1], |_| {}).await;
    let gone = Receiver::start();
    let busy = Receiver::start();
    let witness = Receiver::start();
    gone.reply([Reply::Status(410, Vec::new())]);
    busy.reply([Reply::Status(503, vec![("retry-after", "3600".to_owned())])]);
    let gone_endpoint = register(&app, &gone, json!(["ride.captured"])).await;
    register(&app, &busy, json!(["ride.captured"])).await;
    register(&app, &witness, json!(["ride.captured"])).await;

    app.paid_ride("first").await;
    wait_for(&gone, 1).await;
    wait_for(&busy, 1).await;
    let disabled = eventually(Duration::from_secs(10), || {
        app.count("webhook_endpoints WHERE user_id IS NOT NULL AND status = 'disabled'") == 1
    })
    .await;
    assert!(disabled);
    let shown = app
        .get(&format!("/api/webhook_endpoints/{}", gone_endpoint["id"]))
        .await
        .json();
    assert_eq!(shown["status"], "disabled");
    assert!(
        shown["disabled_reason"].as_str().unwrap().contains("410"),
        "{shown}"
    );
    assert!(shown.get("secret").is_none(), "{shown}");
    // The busy destination's next attempt waits as it asked.
    assert_eq!(
        app.count(
            "webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id \
             WHERE a.http_status = 503 AND d.status = 'pending' \
             AND d.next_attempt_at > now() + interval '3500 seconds'"
        ),
        1
    );

    app.paid_ride("second").await;
    wait_for(&witness, 2).await;
    // The witness has both events, the busy destination the second (its
    // first waits), the disabled one nothing more.
    wait_for(&busy, 2).await;
    assert_eq!(gone.received().len(), 1);
    assert_eq!(
        app.count("webhook_deliveries WHERE status = 'pending' AND attempts = 1"),
        1
    );
}

#[tokio::test]
async fn a_destination_that_hangs_never_delays_another() {
    let app = app_sending(&[0, 1], |settings| {
        settings.user_webhooks.timeout = Duration::from_secs(20);
    })
    .await;
    let hanging = Receiver::start();
    let prompt = Receiver::start();
    hanging.reply(std::iter::repeat_n(Reply::Hang, 20));
    register(&app, &hanging, json!(["*"])).await;
    register(&app, &prompt, json!(["*"])).await;

    for n in 0..6 {
        app.paid_ride(&format!("ride {n}")).await;
    }

    // Every event reaches the prompt destination while the hanging one
    // still holds its attempts open: none of them has ended yet.
    wait_for(&prompt, 6).await;
    assert!(!hanging.received().is_empty());
    assert_eq!(
        app.count(
            "webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id \
             WHERE d.endpoint_id = \
                 (SELECT min(id) FROM webhook_endpoints WHERE user_id IS NOT NULL)"
        ),
        0
    );
}

/// One user whose four destinations accept and never answer, with a
/// backlog of events, holds only their share of the sender's slots: another
/// user's delivery and the installation's receipt of it go out while every
/// one of the first user's attempts is still hanging.
#[tokio::test]
async fn one_users_hanging_destinations_never_hold_up_another_users_or_the_receipts() {
    let receipts = Receiver::start();
    let app = app_sending(&[0], |settings| {
        settings.user_webhooks.timeout = Duration::from_secs(120);
        settings.user_webhooks.receipts = Some(ReceiptDestination {
            url: receipts.url.clone(),
            secret: crate::receipts::SECRET.to_owned().into(),
        });
    })
    .await;
    let hanging: Vec<Receiver> = (0..4).map(|_| Receiver::start()).collect();
    for receiver in &hanging {
        receiver.reply(std::iter::repeat_n(Reply::Hang, 100));
        register(&app, receiver, json!(["*"])).await;
    }
    for n in 0..20 {
        app.paid_ride(&format!("backlog {n}")).await;
    }
    // The backlog's receipts are all sent, and the hostile user's attempts
    // hang: the sender has taken every slot it will give that user.
    wait_for(&receipts, 20).await;
    let hung = eventually(Duration::from_secs(30), || {
        hanging.iter().map(|r| r.received().len()).sum::<usize>() >= 16
    })
    .await;
    assert!(hung);

    let bystander = create_user(&app.database_url, Some("cus_bystander"));
    let theirs = Receiver::start();
    let url = format!("{}/api/webhook_endpoints", app.address);
    let body = json!({"url": theirs.url, "events": ["ride.captured"]}).to_string();
    app.post_idempotent(&url, &bystander.api_key, "register", &body)
        .await
        .unwrap()
        .assert_status(201);
    app.post_ride_as(&bystander.api_key, "bystander", RIDE)
        .await
        .assert_status(201);

    wait_for(&theirs, 1).await;
    wait_for(&receipts, 21).await;
    assert_eq!(
        app.count(&format!(
            "webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id \
             JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.user_id = {}",
            app.user.id
        )),
        0,
        "every one of the hostile user's attempts is still hanging"
    );
    let in_flight: usize = hanging.iter().map(|r| r.received().len()).sum();
    assert!(in_flight <= 16, "{in_flight} attempts of one user at once");
}

/// Test events have a quota: 20 an hour per user, across their
/// destinations; the next is a 429 that writes nothing.
#[tokio::test]
async fn a_user_sends_at_most_20_test_events_an_hour() {
    let app = app_sending(&[0], |settings| settings.user_webhooks.enabled = false).await;
    let receiver = Receiver::start();
    let first = register(&app, &receiver, json!(["*"])).await;
    let second = register_as(
        &app,
        &app.user,
        "second",
        json!({"url": format!("{}?second", receiver.url), "events": ["*"]}),
    )
    .await
    .json();
    for n in 0..20 {
        let endpoint = [&first, &second][n % 2];
        let path = format!("/api/webhook_endpoints/{}/test", endpoint["id"]);
        act(&app, &path, &format!("test {n}"))
            .await
            .assert_status(200);
    }
    let path = format!("/api/webhook_endpoints/{}/test", first["id"]);
    let refused = act(&app, &path, "test 20").await;
    refused.assert_rate_limited();
    assert_eq!(app.count("idempotency_keys WHERE key = 'test 20'"), 0);
    assert_eq!(
        app.count("webhook_events WHERE type = 'webhook_endpoint.test'"),
        20
    );
    // Another user's quota is their own.
    let other = create_user(&app.database_url, Some("cus_other"));
    let url = format!("{}/api/webhook_endpoints", app.address);
    let body = json!({"url": receiver.url, "events": ["*"]}).to_string();
    let theirs = app
        .post_idempotent(&url, &other.api_key, "register", &body)
        .await
        .unwrap()
        .json();
    let path = format!("/api/webhook_endpoints/{}/test", theirs["id"]);
    act_as(&app, &other, &path, "test").await.assert_status(200);
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

    let deliveries = format!("/api/webhook_endpoints/{}/deliveries", endpoint["id"]);
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
async fn a_destination_failing_for_longer_than_allowed_is_disabled() {
    let app = app_sending(&[0, 2, 2], |settings| {
        settings.user_webhooks.disable_after = Duration::from_secs(1);
    })
    .await;
    let receiver = Receiver::start();
    receiver.reply([
        Reply::Status(500, Vec::new()),
        Reply::Status(500, Vec::new()),
    ]);
    register(&app, &receiver, json!(["*"])).await;

    app.paid_ride("paid").await;

    wait_for(&receiver, 2).await;
    let disabled = eventually(Duration::from_secs(10), || {
        app.count(
            "webhook_endpoints WHERE user_id IS NOT NULL AND status = 'disabled' \
             AND disabled_reason LIKE 'every attempt failed%'",
        ) == 1
    })
    .await;
    assert!(disabled);
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
        ids.push(answer.json()["id"].as_i64().unwrap());
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
        .patch(format!("{}/api/webhook_endpoints/{id}", app.address))
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
    let deliveries = format!("/api/webhook_endpoints/{}/deliveries", endpoint["id"]);
    let delivery_id = app.get(&deliveries).await.json()["data"][0]["id"].clone();
    let path = format!("{deliveries}/{delivery_id}/retry");

    let stranger = create_user(&app.database_url, Some("cus_stranger"));
    act_as(&app, &stranger, &path, "again")
        .await
        .assert_problem(404, "not-found");
    act(&app, &format!("{deliveries}/999999/retry"), "again")
        .await
        .assert_problem(404, "not-found");
    let first = act(&app, &path, "again").await;
    first.assert_status(200);
    assert_eq!(first.json()["status"], "pending");
    let second = wait_for(&receiver, 2).await;
    assert_eq!(second[1].body, second[0].body);
    let succeeded = eventually(Duration::from_secs(10), || {
        app.count("webhook_deliveries WHERE status = 'succeeded'") == 1
    })
    .await;
    assert!(succeeded);
    let replay = act(&app, &path, "again").await;
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

/// `POST` of an action on a destination, body `{}`.
async fn act(app: &TestApp, path: &str, key: &str) -> Answer {
    act_as(app, &app.user, path, key).await
}

async fn act_as(app: &TestApp, user: &TestUser, path: &str, key: &str) -> Answer {
    let response = app
        .client
        .post(format!("{}{path}", app.address))
        .bearer_auth(&user.api_key)
        .header("Idempotency-Key", key)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    Answer::read(response).await
}

#[tokio::test]
async fn a_rolled_secret_signs_beside_the_one_before_and_a_test_event_reaches_one_destination() {
    let app = app_sending(&[0], |_| {}).await;
    let receiver = Receiver::start();
    let other = Receiver::start();
    let endpoint = register(&app, &receiver, json!(["refund.failed"])).await;
    register(&app, &other, json!(["*"])).await;
    let old = endpoint["secret"].as_str().unwrap().to_owned();
    let base = format!("/api/webhook_endpoints/{}", endpoint["id"]);

    let rolled = act(&app, &format!("{base}/roll_secret"), "roll").await;
    let replay = act(&app, &format!("{base}/roll_secret"), "roll").await;

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

    let test = act(&app, &format!("{base}/test"), "test").await;
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
    let response = app
        .client
        .post(format!("{}{base}/test", app.address))
        .bearer_auth(&stranger.api_key)
        .header("Idempotency-Key", "theirs")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    Answer::read(response)
        .await
        .assert_problem(404, "not-found");
}

/// The check is made on every attempt, on the address connected to: a
/// sender not allowed loopback never connects to a destination registered
/// where it was, and records why.
#[tokio::test]
async fn every_attempt_connects_only_to_an_address_the_sender_may_reach() {
    let app = app_sending(&[0, 1, 1], |settings| {
        settings.user_webhooks.enabled = false;
    })
    .await;
    let receiver = Receiver::start();
    register(&app, &receiver, json!(["*"])).await;
    spawn_server(&app.database_url, |settings| {
        settings.user_webhooks.enabled = true;
        settings.user_webhooks.allow_loopback = false;
        settings.user_webhooks.retry_schedule = [0, 1, 1].map(Duration::from_secs).to_vec();
    })
    .await;

    app.paid_ride("paid").await;

    let refused = eventually(Duration::from_secs(20), || {
        app.count("webhook_attempts WHERE http_status IS NULL AND error = 'host not found'") == 3
    })
    .await;
    assert!(refused);
    assert!(receiver.received().is_empty());
    assert_eq!(app.count("webhook_deliveries WHERE status = 'failed'"), 1);
}

/// A proxy named by the environment would be checked in place of the
/// destination: users' webhooks never go through one.
#[tokio::test]
async fn users_webhooks_never_go_through_a_proxy_the_environment_names() {
    let mut app = crate::common::app::database_only();
    let proxy = Receiver::start();
    let proxy_url = proxy.url.trim_end_matches("/hook").to_owned();
    let server = crate::common::server_process::ServerProcess::start(
        &app.database_url,
        &[
            ("OUTBOX_ENABLED", "true"),
            ("OUTBOUND_WEBHOOK_ALLOW_LOOPBACK", "true"),
            ("HTTP_PROXY", &proxy_url),
            ("HTTPS_PROXY", &proxy_url),
            ("ALL_PROXY", &proxy_url),
        ],
    );
    app.address = server.address.clone();
    let receiver = Receiver::start();
    register(&app, &receiver, json!(["*"])).await;
    app.paid_ride("paid").await;
    wait_for(&receiver, 1).await;
    assert!(proxy.received().is_empty());
}

#[tokio::test]
async fn events_past_their_retention_are_deleted_with_their_deliveries() {
    let app = app_sending(&[0], |settings| {
        settings.user_webhooks.retention = Duration::from_secs(24 * 3600);
    })
    .await;
    let receiver = Receiver::start();
    register(&app, &receiver, json!(["*"])).await;
    app.paid_ride("old").await;
    wait_for(&receiver, 1).await;
    diesel::sql_query("UPDATE webhook_events SET created_at = now() - interval '25 hours'")
        .execute(&mut app.db())
        .unwrap();

    app.paid_ride("new").await;
    wait_for(&receiver, 2).await;

    let deleted = eventually(Duration::from_secs(10), || {
        app.count("webhook_events") == 1 && app.count("webhook_deliveries") == 1
    })
    .await;
    assert!(deleted);
}
