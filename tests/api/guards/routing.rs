//! What names nothing: unknown routes (404) and methods (405) answered as
//! problems, paths longer than their column, and invented methods and paths
//! that add no metric series.

use futures_util::future::join_all;

use crate::common::app::{spawn_app, Answer, TestApp};

/// The series of ridepay's HTTP request metrics for methods it does not
/// know: what invented requests could add to. (Other tests share the
/// process's registry, and add series of known routes and methods as they
/// run.)
async fn invented_method_series(app: &TestApp) -> usize {
    let scrape = app.get("/metrics").await;
    String::from_utf8(scrape.body)
        .unwrap()
        .lines()
        .filter(|line| {
            line.starts_with("ridepay_http_request") && line.contains(r#"method="other""#)
        })
        .count()
}

#[tokio::test]
async fn thousands_of_invented_methods_and_paths_add_no_metric_series() {
    let app = spawn_app().await;
    let invent = |i: usize| {
        let method =
            reqwest::Method::from_bytes(format!("M{i}{}", "Z".repeat(200)).as_bytes()).unwrap();
        app.client
            .request(method, format!("{}/x{i}/{}", app.address, "y".repeat(100)))
            .send()
    };
    // One of each kind first, so the fixed series all exist.
    for response in join_all((0..2).map(invent)).await {
        assert_eq!(response.unwrap().status(), 404);
    }
    let before = invented_method_series(&app).await;

    for batch in 0..10 {
        let answers = join_all((0..300).map(|i| invent(1000 + batch * 300 + i))).await;
        assert!(answers.into_iter().all(|a| a.unwrap().status() == 404));
    }

    let after = invented_method_series(&app).await;
    assert!(before > 0);
    assert_eq!(before, after, "3,000 invented requests added series");
    let scrape = String::from_utf8(app.get("/metrics").await.body).unwrap();
    assert!(scrape.contains(r#"route="unmatched""#), "{scrape:.2000}");
    assert!(!scrape.contains("ZZZZ"));
    assert!(!scrape.contains("yyyy"));
}

#[tokio::test]
async fn a_path_too_long_for_its_column_is_a_404_and_writes_nothing() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("ride").await;
    let padded = format!("{}{ride_id}", "0".repeat(2100));

    let answer = Answer::read(
        app.client
            .post(format!("{}/api/rides/{padded}/refunds", app.address))
            .bearer_auth(&app.user.api_key)
            .header("Idempotency-Key", "padded")
            .header("Content-Type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap(),
    )
    .await;

    answer.assert_problem(404, "not-found");
    assert_eq!(app.count("idempotency_keys"), 1, "only the ride's key");
    assert_eq!(app.count("refunds"), 0);
}

#[tokio::test]
async fn unknown_routes_are_404_problems() {
    let app = spawn_app().await;
    app.get("/api/nothing-here")
        .await
        .assert_problem(404, "not-found");
    app.get("/nothing").await.assert_problem(404, "not-found");
}

#[tokio::test]
async fn wrong_methods_are_405_problems_with_allow() {
    let app = spawn_app().await;
    let answer = Answer::read(
        app.client
            .delete(format!("{}/api/rides", app.address))
            .bearer_auth(&app.user.api_key)
            .send()
            .await
            .unwrap(),
    )
    .await;
    answer.assert_problem(405, "method-not-allowed");
    assert_eq!(answer.header("allow"), Some("GET, POST"));
    let put = Answer::read(
        app.client
            .put(format!("{}/api/rides/1", app.address))
            .send()
            .await
            .unwrap(),
    )
    .await;
    put.assert_problem(405, "method-not-allowed");
}
