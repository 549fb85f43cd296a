//! Every body that ridepay reads, JSON or form, is taken as sent, never
//! inflated, and under the same size and time limits.

use std::io::Write;
use std::time::Duration;

use serde_json::Value;

use crate::common::app::{spawn_app_with, TestApp, RIDE};
use crate::common::gateway::WEBHOOK_SECRET;
use crate::common::raw_http::trickle;

const FORM: &str = "application/x-www-form-urlencoded";
const PAGE: &str = "/simulated-gateway/authenticate";

fn compressed(encoding: &str, body: &[u8]) -> Vec<u8> {
    let level = flate2::Compression::best();
    match encoding {
        "gzip" => {
            let mut encoder = flate2::write::GzEncoder::new(Vec::new(), level);
            encoder.write_all(body).unwrap();
            encoder.finish().unwrap()
        }
        "deflate" => {
            let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), level);
            encoder.write_all(body).unwrap();
            encoder.finish().unwrap()
        }
        other => panic!("no encoder for {other}"),
    }
}

/// The form the simulated bank's page posts for `ride` (waiting for the
/// rider's authentication): its PaymentIntent and client secret, confirmed.
fn confirmation(ride: &Value) -> String {
    let page = ride["next_action"]["redirect_to_url"]["url"]
        .as_str()
        .unwrap();
    let (_, query) = page.split_once('?').unwrap();
    format!("{query}&outcome=complete")
}

async fn post(
    app: &TestApp,
    path: &str,
    content_type: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> crate::common::app::Answer {
    let mut request = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(format!("{}{path}", app.address))
        .header("Content-Type", content_type)
        .body(body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    crate::common::app::Answer::read(request.send().await.unwrap()).await
}

async fn app() -> TestApp {
    spawn_app_with(|s| {
        s.gateway.stripe.webhook_secret = Some(WEBHOOK_SECRET.to_owned().into());
        s.server.limits.body_timeout = Duration::from_secs(1);
    })
    .await
}

#[tokio::test]
async fn a_compressed_body_is_a_415_wherever_a_body_is_read_and_is_never_inflated() {
    let app = app().await;
    let waiting = app.waiting_ride("waiting").await;
    let before = app.counts();
    let bearer = format!("Bearer {}", app.user.api_key);
    // 64 MiB of zeros in about 64 KiB: far over every limit once inflated.
    let bomb = vec![0u8; 64 << 20];
    for encoding in ["gzip", "deflate"] {
        let cases = [
            ("/api/rides", "application/json", RIDE.as_bytes().to_vec()),
            ("/api/rides", "application/json", bomb.clone()),
            ("/webhooks/stripe", "application/json", bomb.clone()),
            (PAGE, FORM, confirmation(&waiting).into_bytes()),
            (PAGE, FORM, bomb.clone()),
        ];
        for (i, (path, content_type, body)) in cases.into_iter().enumerate() {
            let key = format!("{encoding}-{i}");
            let headers = [
                ("Content-Encoding", encoding),
                ("Authorization", bearer.as_str()),
                ("Idempotency-Key", key.as_str()),
                ("Stripe-Signature", "t=1,v1=00"),
            ];
            let answer = post(
                &app,
                path,
                content_type,
                &headers,
                compressed(encoding, &body),
            )
            .await;
            answer.assert_problem(415, "unsupported-media-type");
        }
    }

    assert_eq!(app.counts(), before, "nothing was written");
    let ride = app.ride(waiting["id"].as_i64().unwrap()).await;
    assert_eq!(
        ride["status"], "requires_action",
        "the bank's page took no answer"
    );
    // A body sent as it is may say so.
    let identity = post(
        &app,
        "/api/rides",
        "application/json",
        &[
            ("Content-Encoding", "identity"),
            ("Authorization", bearer.as_str()),
            ("Idempotency-Key", "identity"),
        ],
        RIDE.as_bytes().to_vec(),
    )
    .await;
    identity.assert_status(201);
}

#[tokio::test]
async fn a_form_over_the_size_limit_is_a_413_and_changes_nothing() {
    let app = app().await;
    let waiting = app.waiting_ride("waiting").await;
    let padded = format!(
        "{}&padding={}",
        confirmation(&waiting),
        "x".repeat(16 * 1024)
    );

    let answer = post(&app, PAGE, FORM, &[], padded.into_bytes()).await;

    answer.assert_problem(413, "payload-too-large");
    let ride = app.ride(waiting["id"].as_i64().unwrap()).await;
    assert_eq!(ride["status"], "requires_action");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_trickled_past_the_time_limit_is_a_408_and_the_connection_is_closed() {
    let app = app().await;
    let address = app.address.clone();
    let head = format!(
        "POST {PAGE} HTTP/1.1\r\nHost: t\r\nContent-Type: {FORM}\r\n\
         Content-Length: 100\r\nConnection: close\r\n\r\n"
    );
    let (answer, waited) = tokio::task::spawn_blocking(move || trickle(&address, head))
        .await
        .unwrap();

    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:.300}");
    assert!(answer.contains("/problems/request-timeout"), "{answer}");
    // Answered and hung up on at the limit, not when the client stopped.
    assert!(waited < Duration::from_secs(4), "{waited:?}");
}
