//! What a stranger or a user can make ridepay write in its log: no query
//! value in an access line (queries carry client secrets), no ERROR line
//! per malformed request or per attempt at a deleted destination, and no
//! receiver's token.

use std::io::Write;
use std::time::Duration;

use serde_json::json;

use crate::common::app::{database_only, spawn_server, TestApp, RIDE};
use crate::common::ids::Id;
use crate::common::raw_http::{raw, read_all};
use crate::common::receiver::{Receiver, Reply};
use crate::common::server_process::ServerProcess;
use crate::common::wait::eventually;

/// The log a server writes (at `rust_log`, with `env`) while `act` runs
/// against it, given the app the server serves and its log.
async fn log_of<F: std::future::Future<Output = ()>>(
    rust_log: &str,
    env: &[(&str, &str)],
    act: impl FnOnce(TestApp, Log) -> F,
) -> String {
    let mut app = database_only();
    let log = Log(
        std::env::temp_dir().join(format!("ridepay-log-{}.txt", uuid::Uuid::new_v4().simple()))
    );
    let mut env = env.to_vec();
    env.push(("RUST_LOG", rust_log));
    let server = ServerProcess::start_logged(&app.database_url, &env, &log.0);
    app.address = server.address.clone();
    act(app, log.clone()).await;
    drop(server);
    let text = log.text();
    std::fs::remove_file(&log.0).ok();
    text
}

/// A server's log file, read as it grows.
#[derive(Clone)]
struct Log(std::path::PathBuf);

impl Log {
    fn text(&self) -> String {
        std::fs::read_to_string(&self.0).unwrap_or_default()
    }

    /// Waits up to `limit` until the log shows `needle`: whether it does.
    async fn shows(&self, needle: &str, limit: Duration) -> bool {
        eventually(limit, || self.text().contains(needle)).await
    }
}

#[tokio::test]
async fn the_access_log_shows_no_query_value() {
    let text = log_of("info", &[], |app, _| async move {
        let address = app.address;
        let client = reqwest::Client::new();
        for path in [
            "/payments/return?payment_intent=pi_logged&payment_intent_client_secret=pi_logged_secret_4bQx9&redirect_status=succeeded",
            "/simulated-gateway/authenticate?payment_intent=pi_logged&client_secret=pi_logged_secret_7zKw2",
        ] {
            let answer = client.get(format!("{address}{path}")).send().await.unwrap();
            assert_eq!(answer.status(), 404);
        }
    })
    .await;

    let access: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("actix_web::middleware::logger"))
        .collect();
    assert!(
        access.iter().any(|line| line.contains(
            "GET /payments/return?payment_intent=***&payment_intent_client_secret=***&redirect_status=*** HTTP/1.1"
        )),
        "{text}"
    );
    assert!(
        access.iter().any(|line| line
            .contains("GET /simulated-gateway/authenticate?payment_intent=***&client_secret=***")),
        "{text}"
    );
    for secret in ["secret_4bQx9", "secret_7zKw2", "pi_logged", "succeeded"] {
        assert!(!text.contains(secret), "the log shows {secret}:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_write_one_warning_not_an_error_each() {
    let text = log_of("info", &[], |app, _| async move {
        let address = app.address.trim_start_matches("http://").to_owned();
        tokio::task::spawn_blocking(move || {
            for i in 0..300 {
                let mut stream = raw(&address, Duration::from_secs(5));
                stream
                    .write_all(
                        format!("GET /{i} HTTP/1.1\r\nHost: t\r\nBad Header\r\n\r\n").as_bytes(),
                    )
                    .unwrap();
                let answer = read_all(&mut stream);
                assert!(answer.starts_with("HTTP/1.1 400"), "{answer:.200}");
            }
        })
        .await
        .unwrap();
    })
    .await;

    let reported: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("actix_http"))
        .collect();
    assert_eq!(reported.len(), 1, "{text}");
    assert!(reported[0].contains(" WARN "), "{}", reported[0]);
    assert!(!text.contains(" ERROR "), "{text}");
}

/// Sends webhooks at once, gives up on a receiver after 2 s, on loopback.
const SENDING: [(&str, &str); 4] = [
    ("OUTBOX_ENABLED", "true"),
    ("OUTBOUND_WEBHOOK_ALLOW_LOOPBACK", "true"),
    ("OUTBOUND_WEBHOOK_TIMEOUT_SECS", "2"),
    ("OUTBOUND_WEBHOOK_RETRY_SCHEDULE_SECS", "0"),
];

/// A destination `url` of `app`'s user, registered; its id.
async fn register(app: &TestApp, url: &str) -> serde_json::Value {
    let answer = app
        .post_webhook_endpoint(url, &json!({"url": url, "events": ["*"]}))
        .await;
    answer.assert_status(201);
    answer.json()["id"].clone()
}

/// A user who deletes a destination while an attempt at it is in flight
/// makes no ERROR line: the attempt is dropped quietly.
#[tokio::test]
async fn an_attempt_at_a_destination_deleted_meanwhile_is_dropped_without_an_error() {
    let gone = "dropped: its destination or event is gone";
    let text = log_of("ridepay=debug", &SENDING, |app, log| async move {
        let receiver = Receiver::start();
        receiver.reply([Reply::Hang]);
        let id = register(&app, &receiver.url).await;
        app.post_ride("paid", RIDE).await.assert_status(201);
        let in_flight =
            eventually(Duration::from_secs(20), || !receiver.received().is_empty()).await;
        assert!(in_flight);
        let deleted = app
            .client
            .delete(format!(
                "{}/api/webhook_endpoints/{}",
                app.address,
                Id::of(&id)
            ))
            .bearer_auth(&app.user.api_key)
            .send()
            .await
            .unwrap();
        assert_eq!(deleted.status(), 204);
        // The attempt ends at the timeout and finds its delivery gone.
        assert!(
            log.shows(" webhook delivery ", Duration::from_secs(20))
                .await
        );
    })
    .await;
    assert!(text.contains(gone), "{text}");
    assert!(!text.contains(" ERROR "), "{text}");
}

/// A destination whose host comes to resolve where the sender may not go
/// (here: a sender not allowed loopback) is named in the log by its id and
/// host, once a minute, never by its URL, whose query may carry the
/// receiver's token.
#[tokio::test]
async fn a_refused_destination_is_logged_once_by_its_id_and_host_without_its_query() {
    let strict = [
        ("OUTBOX_ENABLED", "true"),
        ("OUTBOUND_WEBHOOK_ALLOW_LOOPBACK", "false"),
        ("OUTBOUND_WEBHOOK_RETRY_SCHEDULE_SECS", "0,1,1"),
    ];
    let mut id = serde_json::Value::Null;
    let text = log_of("info", &strict, |mut app, _| {
        let id = &mut id;
        async move {
            let receiver = Receiver::start();
            let sender = app.address.clone();
            // Registered where loopback was allowed.
            app.address = spawn_server(&app.database_url, |_| {}).await;
            *id = register(
                &app,
                &format!("{}?code=tok3n-of-the-receiver", receiver.url),
            )
            .await;
            app.post_ride("paid", RIDE).await.assert_status(201);
            let refused = eventually(Duration::from_secs(20), || {
                app.count("webhook_attempts WHERE error = 'host not found'") == 3
            })
            .await;
            assert!(refused, "sent by {sender}");
            assert!(receiver.received().is_empty());
        }
    })
    .await;
    let named: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("resolves to no address it may reach"))
        .collect();
    assert_eq!(named.len(), 1, "{text}");
    assert!(
        named[0].contains(&format!("webhook destination {} on 127.0.0.1", Id::of(&id))),
        "{}",
        named[0]
    );
    assert!(!text.contains("tok3n"), "{text}");
}
