//! Hostile input and isolation: floods, oversized and slow requests, and one
//! user trying to reach another's rides and keys.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use futures_util::future::join_all;

use crate::common::app::{create_user, ride_with, spawn_app, spawn_app_with, Answer, RIDE};
use crate::common::raw_http::{raw, read_all};

#[tokio::test]
async fn a_flooding_key_is_rate_limited_and_another_key_is_not() {
    let app = spawn_app_with(|s| {
        s.server.rate_limit.per_second = 5;
        s.server.rate_limit.burst = 5;
    })
    .await;
    let calm = create_user(&app.database_url, None);

    let flood = join_all((0..30).map(|_| app.get("/api/rides"))).await;
    let others = join_all((0..3).map(|_| app.get_as(&calm.api_key, "/api/rides"))).await;

    let limited: Vec<_> = flood.iter().filter(|a| a.status == 429).collect();
    assert!(limited.len() >= 20, "{} of 30 limited", limited.len());
    for answer in &limited {
        answer.assert_rate_limited();
    }
    assert!(others.iter().all(|a| a.status == 200));
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

/// Raw SQL in the service takes bind parameters; none is spliced together
/// with `format!`.
#[test]
fn no_sql_is_built_from_strings() {
    let mut offenders = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src"
    ))];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let compact: String = text.split_whitespace().collect();
        for call in [
            "sql_query(format!",
            "sql_query(&format!",
            "sql::<",
            "batch_execute(&format!",
        ] {
            if call == "sql::<" {
                // `sql::<T>("literal")` is fine; a formatted argument is not.
                if compact.contains("sql::<")
                    && compact.split("sql::<").skip(1).any(|rest| {
                        rest.split_once(">(").is_some_and(|(_, arg)| {
                            arg.starts_with("format!") || arg.starts_with("&format!")
                        })
                    })
                {
                    offenders.push(path.display().to_string());
                }
            } else if compact.contains(call) {
                offenders.push(path.display().to_string());
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "SQL built with format! in {offenders:?}"
    );
}
