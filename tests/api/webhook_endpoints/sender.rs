//! The sender: each attempt signed afresh with the same id and body, sent
//! again on a schedule, a destination that fails or hangs never holding up
//! another's or another user's, and every attempt only to an address it may
//! reach, never through a proxy.

use std::time::Duration;

use ridepay::config::ReceiptDestination;
use serde_json::json;

use super::{app_sending, assert_verified, register, register_as, wait_for};
use crate::common::app::{create_user, spawn_server, RIDE};
use crate::common::ids::Id;
use crate::common::receiver::{Receiver, Reply};
use crate::common::wait::eventually;

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
    let path = format!(
        "/api/webhook_endpoints/{}/deliveries",
        Id::of(&endpoint["id"])
    );
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
        .get(&format!(
            "/api/webhook_endpoints/{}",
            Id::of(&gone_endpoint["id"])
        ))
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
            secret: crate::webhook_endpoints::receipts::SECRET.to_owned().into(),
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
    let body = json!({"url": theirs.url, "events": ["ride.captured"]});
    register_as(&app, &bystander, "register", body)
        .await
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
