//! What one request may take: its body's size, nesting and time, its
//! headers, a connection's idle time and the number of connections; every
//! body, JSON or form, read as sent and never inflated.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::app::{spawn_app, spawn_app_with, Answer, TestApp, RIDE};
use crate::common::gateway::WEBHOOK_SECRET;
use crate::common::ids::Id;
use crate::common::raw_http::{post_head, raw, read_all, trickle};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_trickled_past_the_time_limit_is_a_408_and_the_connection_is_closed() {
    let app = spawn_app_with(|s| {
        s.server.limits.body_timeout = Duration::from_secs(1);
        s.gateway.stripe.webhook_secret = Some(WEBHOOK_SECRET.to_owned().into());
    })
    .await;
    let rides = post_head(
        "/api/rides",
        &format!(
            "Authorization: Bearer {}\r\nIdempotency-Key: slow\r\n",
            app.user.api_key
        ),
    );
    let webhooks = post_head("/webhooks/stripe", "Stripe-Signature: t=1,v1=00\r\n");
    for head in [rides, webhooks] {
        let address = app.address.clone();
        assert_cut_off_at_the_limit(address, head).await;
    }
    assert_eq!(app.counts(), (0, 0, 0));
}

#[tokio::test]
async fn deeply_nested_json_is_a_400_without_recursing() {
    let app = spawn_app().await;
    // The parser refuses at the first token that does not fit the request, so
    // nesting never gets deep enough to cost a stack.
    let in_a_field = format!(
        r#"{{"origin_lat": {}1{}}}"#,
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let at_the_top = format!("{}{}", "[".repeat(8000), "]".repeat(8000));
    for (body, field) in [(in_a_field, "origin_lat"), (at_the_top, "body")] {
        let problem = app
            .post_ride("nested", &body)
            .await
            .assert_problem(400, "invalid-request");
        assert_eq!(problem["errors"][0]["field"], field);
    }
    assert_eq!(app.counts(), (0, 0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_headers_are_refused_by_actix_http_before_routing() {
    let app = spawn_app().await;
    let send = |head: String| {
        let address = app.address.clone();
        tokio::task::spawn_blocking(move || {
            let mut stream = raw(&address, Duration::from_secs(5));
            let request = format!("GET /healthz HTTP/1.1\r\nHost: t\r\n{head}\r\n");
            let _ = stream.write_all(request.as_bytes());
            read_all(&mut stream)
        })
    };
    let huge = send(format!("X-Big: {}\r\n", "x".repeat(256 * 1024)))
        .await
        .unwrap();
    let many = send((0..120).map(|i| format!("X-H{i}: v\r\n")).collect())
        .await
        .unwrap();
    // actix-http's own answers (documented in the README), not problems.
    assert!(huge.starts_with("HTTP/1.1 431"), "{huge:.80}");
    assert!(many.starts_with("HTTP/1.1 431"), "{many:.80}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_too_slow_to_send_its_request_is_cut_off() {
    let app =
        spawn_app_with(|s| s.server.limits.client_request_timeout = Duration::from_millis(500))
            .await;
    let address = app.address.clone();
    let (answer, waited) = tokio::task::spawn_blocking(move || {
        let mut stream = raw(&address, Duration::from_secs(5));
        stream
            .write_all(b"POST /api/rides HTTP/1.1\r\nHost: t\r\n")
            .unwrap();
        let started = Instant::now();
        (read_all(&mut stream), started.elapsed())
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:.80}");
    assert!(waited < Duration::from_secs(4), "{waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed() {
    let app = spawn_app_with(|s| s.server.limits.keep_alive = Duration::from_secs(1)).await;
    let address = app.address.clone();
    let (first, rest) = tokio::task::spawn_blocking(move || {
        let mut stream = raw(&address, Duration::from_secs(5));
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let mut first = [0u8; 512];
        let n = stream.read(&mut first).unwrap();
        // Then nothing: the server must hang up, not wait forever.
        (
            String::from_utf8_lossy(&first[..n]).into_owned(),
            read_all(&mut stream),
        )
    })
    .await
    .unwrap();
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    assert_eq!(rest, "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_wait_until_one_closes() {
    let app = spawn_app_with(|s| {
        s.server.workers = 1;
        s.server.limits.max_connections = 2;
    })
    .await;
    let address = app.address.clone();
    let (blocked, served) = tokio::task::spawn_blocking(move || {
        let hold: Vec<_> = (0..2)
            .map(|_| raw(&address, Duration::from_secs(5)))
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        let mut third = raw(&address, Duration::from_secs(5));
        third
            .set_read_timeout(Some(Duration::from_millis(700)))
            .unwrap();
        third
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut buffer = [0u8; 64];
        let blocked = third.read(&mut buffer).is_err();
        drop(hold);
        third
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        (blocked, read_all(&mut third))
    })
    .await
    .unwrap();
    assert!(blocked, "a third connection was served while two were open");
    assert!(served.starts_with("HTTP/1.1 200"), "{served:.80}");
}

#[tokio::test]
async fn a_webhook_sized_body_is_still_too_large_for_the_api() {
    let app = spawn_app().await;
    let answer = Answer::read(
        app.client
            .post(format!("{}/api/rides", app.address))
            .bearer_auth(&app.user.api_key)
            .header("Idempotency-Key", "big")
            .header("Content-Type", "application/json")
            .body(vec![b' '; 100 * 1024])
            .send()
            .await
            .unwrap(),
    )
    .await;
    answer.assert_problem(413, "payload-too-large");
}

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

async fn post_as_sent(
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

async fn app_reading_bodies() -> TestApp {
    spawn_app_with(|s| {
        s.gateway.stripe.webhook_secret = Some(WEBHOOK_SECRET.to_owned().into());
        s.server.limits.body_timeout = Duration::from_secs(1);
    })
    .await
}

#[tokio::test]
async fn a_compressed_body_is_a_415_wherever_a_body_is_read_and_is_never_inflated() {
    let app = app_reading_bodies().await;
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
            let answer = post_as_sent(
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
    let ride = app.ride(Id::of(&waiting["id"])).await;
    assert_eq!(
        ride["status"], "requires_action",
        "the bank's page took no answer"
    );
    // A body sent as it is may say so.
    let identity = post_as_sent(
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
    let app = app_reading_bodies().await;
    let waiting = app.waiting_ride("waiting").await;
    let padded = format!(
        "{}&padding={}",
        confirmation(&waiting),
        "x".repeat(16 * 1024)
    );

    let answer = post_as_sent(&app, PAGE, FORM, &[], padded.into_bytes()).await;

    answer.assert_problem(413, "payload-too-large");
    let ride = app.ride(Id::of(&waiting["id"])).await;
    assert_eq!(ride["status"], "requires_action");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_trickled_past_the_time_limit_is_a_408_and_the_connection_is_closed() {
    let app = app_reading_bodies().await;
    let address = app.address.clone();
    let head = format!(
        "POST {PAGE} HTTP/1.1\r\nHost: t\r\nContent-Type: {FORM}\r\n\
         Content-Length: 100\r\nConnection: close\r\n\r\n"
    );
    assert_cut_off_at_the_limit(address, head).await;
}

/// Trickles `head` to `address`: the answer is a 408 problem, sent and hung
/// up on at the limit, not when the client stopped.
async fn assert_cut_off_at_the_limit(address: String, head: String) {
    let (answer, waited) = tokio::task::spawn_blocking(move || trickle(&address, head))
        .await
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:.300}");
    assert!(answer.contains("/problems/request-timeout"), "{answer}");
    assert!(waited < Duration::from_secs(4), "{waited:?}");
}
