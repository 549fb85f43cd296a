use crate::common::app::{ride_with, spawn_app, TestApp, RIDE};

async fn post_raw(
    app: &TestApp,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> crate::common::app::Answer {
    let mut request = app
        .client
        .post(format!("{}/api/rides", app.address))
        .bearer_auth(&app.user.api_key);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    crate::common::app::Answer::read(request.body(body).send().await.unwrap()).await
}

#[tokio::test]
async fn a_missing_idempotency_key_is_a_400_and_writes_nothing() {
    let app = spawn_app().await;

    let answer = post_raw(&app, &[("Content-Type", "application/json")], RIDE.into()).await;

    answer.assert_problem(400, "idempotency-key-missing");
    assert_eq!(app.counts(), (0, 0, 0));
}

#[tokio::test]
async fn an_invalid_idempotency_key_is_a_400_and_writes_nothing() {
    let app = spawn_app().await;
    let too_long = "k".repeat(256);
    for key in ["", "   ", "\"unterminated", "\"a\"b\"", too_long.as_str()] {
        let answer = post_raw(
            &app,
            &[
                ("Content-Type", "application/json"),
                ("Idempotency-Key", key),
            ],
            RIDE.into(),
        )
        .await;
        answer.assert_problem(400, "idempotency-key-invalid");
    }
    let non_ascii = app
        .client
        .post(format!("{}/api/rides", app.address))
        .bearer_auth(&app.user.api_key)
        .header("Content-Type", "application/json")
        .header(
            "Idempotency-Key",
            reqwest::header::HeaderValue::from_bytes(b"cl\xc3\xa9").unwrap(),
        )
        .body(RIDE)
        .send()
        .await
        .unwrap();
    crate::common::app::Answer::read(non_ascii)
        .await
        .assert_problem(400, "idempotency-key-invalid");
    assert_eq!(app.counts(), (0, 0, 0));
}

#[tokio::test]
async fn an_invalid_body_is_a_400_naming_the_fields_and_the_key_is_not_consumed() {
    let app = spawn_app().await;

    let answer = app
        .post_ride(
            "fix-me",
            &ride_with(serde_json::json!({ "amount_cents": 10, "origin_lat": 100 })),
        )
        .await;

    let problem = answer.assert_problem(400, "invalid-request");
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["origin_lat", "amount_cents"]);
    assert_eq!(app.counts(), (0, 0, 0));
    assert_eq!(app.post_ride("fix-me", RIDE).await.status, 201);
}

#[tokio::test]
async fn unknown_duplicate_and_mistyped_fields_are_400s() {
    let app = spawn_app().await;
    for (body, field) in [
        (r#"{"tip": 1}"#.to_owned(), "tip"),
        (
            RIDE.replacen('{', r#"{"amount_cents": 2000, "#, 1),
            "amount_cents",
        ),
        (
            ride_with(serde_json::json!({ "amount_cents": 20.5 })),
            "amount_cents",
        ),
        ("[1, 2]".to_owned(), "body"),
        // A valid ride's values as an array, which serde alone would take.
        ("[37.77, -122.42, 37.8, -122.27, 2000]".to_owned(), "body"),
        ("{\"origin_lat\": ".to_owned(), "body"),
        // A valid ride with something after it.
        (format!("{RIDE} x"), "body"),
        (format!("{RIDE}{RIDE}"), "body"),
    ] {
        let problem = app
            .post_ride("bad", &body)
            .await
            .assert_problem(400, "invalid-request");
        assert_eq!(problem["errors"][0]["field"], field, "{body}");
    }
    assert_eq!(app.counts(), (0, 0, 0));
}

#[tokio::test]
async fn a_body_over_16_kib_is_a_413_and_writes_nothing() {
    let app = spawn_app().await;
    let padding = " ".repeat(16 * 1024);
    let body = format!("{RIDE}{padding}");

    let answer = post_raw(
        &app,
        &[
            ("Content-Type", "application/json"),
            ("Idempotency-Key", "big"),
        ],
        body.into(),
    )
    .await;

    answer.assert_problem(413, "payload-too-large");
    assert_eq!(app.counts(), (0, 0, 0));
}

#[tokio::test]
async fn a_body_that_is_not_json_is_a_415_and_writes_nothing() {
    let app = spawn_app().await;
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let mut headers = vec![("Idempotency-Key", "typed")];
        if let Some(content_type) = content_type {
            headers.push(("Content-Type", content_type));
        }
        let answer = post_raw(&app, &headers, RIDE.into()).await;
        answer.assert_problem(415, "unsupported-media-type");
    }
    let with_charset = post_raw(
        &app,
        &[
            ("Content-Type", "application/json; charset=utf-8"),
            ("Idempotency-Key", "typed"),
        ],
        RIDE.into(),
    )
    .await;
    assert_eq!(with_charset.status, 201);
    assert_eq!(app.counts(), (1, 1, 1));
}
