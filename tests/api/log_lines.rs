//! What a stranger can make ridepay write in its log: no query value in an
//! access line (queries carry client secrets), and no ERROR line per
//! malformed request.

use std::io::Write;
use std::time::Duration;

use crate::helpers::{database_only, raw, read_all};
use crate::server_process::ServerProcess;

/// The log a server writes (at `rust_log`) while `act` runs against it.
async fn log_of<F: std::future::Future<Output = ()>>(
    rust_log: &str,
    act: impl FnOnce(String) -> F,
) -> String {
    let app = database_only();
    let log =
        std::env::temp_dir().join(format!("ridepay-log-{}.txt", uuid::Uuid::new_v4().simple()));
    let server = ServerProcess::start_logged(&app.database_url, &[("RUST_LOG", rust_log)], &log);
    act(server.address.clone()).await;
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::remove_file(&log).ok();
    text
}

#[tokio::test]
async fn the_access_log_shows_no_query_value() {
    let text = log_of("info", |address| async move {
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
    let text = log_of("info", |address| async move {
        let address = address.trim_start_matches("http://").to_owned();
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
