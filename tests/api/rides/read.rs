use serde_json::json;

use crate::common::app::{create_user, ride_with, spawn_app};

#[tokio::test]
async fn a_ride_reads_back_as_created() {
    let app = spawn_app().await;
    let created = app.post_ride("read-me", &ride_with(json!({}))).await;

    let read = app.get(created.header("location").unwrap()).await;

    assert_eq!(read.status, 200);
    assert_eq!(read.header("content-type"), Some("application/json"));
    assert_eq!(read.body, created.body);
}

#[tokio::test]
async fn another_users_ride_is_not_found() {
    let app = spawn_app().await;
    let other = create_user(&app.database_url, None);
    let created = app.post_ride("private", &ride_with(json!({}))).await;

    let answer = app
        .get_as(&other.api_key, created.header("location").unwrap())
        .await;

    answer.assert_problem(404, "not-found");
    // Indistinguishable from a ride that does not exist.
    let missing = app.get("/api/rides/999999").await;
    missing.assert_problem(404, "not-found");
    assert_eq!(missing.body, answer.body);
    app.get("/api/rides/not-a-number")
        .await
        .assert_problem(404, "not-found");
}

#[tokio::test]
async fn rides_list_newest_first_in_pages() {
    let app = spawn_app().await;
    let other = create_user(&app.database_url, Some("cus_x"));
    for i in 0..5 {
        let body = ride_with(json!({ "amount_cents": 100 + i }));
        assert_eq!(app.post_ride(&format!("list-{i}"), &body).await.status, 201);
    }
    app.post_ride_as(&other.api_key, "theirs", &ride_with(json!({})))
        .await;

    let first = app.get("/api/rides?limit=2").await.json();
    let ids: Vec<i64> = first["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    assert_eq!(first["has_more"], true);
    assert_eq!(first["data"][0]["amount_cents"], 104);
    assert!(ids[0] > ids[1]);

    let rest = app
        .get(&format!("/api/rides?limit=10&before_id={}", ids[1]))
        .await
        .json();
    assert_eq!(rest["has_more"], false);
    let amounts: Vec<i64> = rest["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["amount_cents"].as_i64().unwrap())
        .collect();
    assert_eq!(amounts, [102, 101, 100]);

    let everything = app.get("/api/rides").await.json();
    assert_eq!(everything["data"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn a_list_limit_outside_1_to_100_is_invalid() {
    let app = spawn_app().await;
    for query in ["limit=0", "limit=101", "limit=abc", "before_id=x"] {
        app.get(&format!("/api/rides?{query}"))
            .await
            .assert_problem(400, "invalid-request");
    }
}
