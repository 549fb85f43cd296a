use ridepay::public_ids::{DestinationPublicId, RidePublicId};
use serde_json::json;

use crate::common::app::{create_user, ride_with, spawn_app};
use crate::common::ids::Id;

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
async fn rides_list_newest_first_in_pages_either_way() {
    let app = spawn_app().await;
    let other = create_user(&app.database_url, Some("cus_x"));
    for i in 0..5 {
        let body = ride_with(json!({ "amount_cents": 100 + i }));
        assert_eq!(app.post_ride(&format!("list-{i}"), &body).await.status, 201);
    }
    let theirs = app
        .post_ride_as(&other.api_key, "theirs", &ride_with(json!({})))
        .await;
    let page = |query: String| {
        let app = &app;
        async move {
            let page = app.get(&format!("/api/rides?{query}")).await.json();
            let rides = page["data"].as_array().unwrap().clone();
            let amounts: Vec<i64> = rides
                .iter()
                .map(|ride| ride["amount_cents"].as_i64().unwrap())
                .collect();
            let ids: Vec<Id> = rides.iter().map(|ride| Id::of(&ride["id"])).collect();
            (amounts, ids, page["has_more"].clone())
        }
    };

    let (amounts, first, more) = page("limit=2".into()).await;
    assert_eq!((amounts, more), (vec![104, 103], json!(true)));
    let (amounts, rest, more) = page(format!("limit=10&starting_after={}", first[1])).await;
    assert_eq!((amounts, more), (vec![102, 101, 100], json!(false)));
    // Back from the oldest: the page just newer, still newest first.
    let (amounts, _, more) = page(format!("limit=2&ending_before={}", rest[2])).await;
    assert_eq!((amounts, more), (vec![102, 101], json!(true)));
    let (amounts, _, more) = page(format!("limit=2&ending_before={}", first[1])).await;
    assert_eq!((amounts, more), (vec![104], json!(false)));
    let (amounts, _, _) = page(String::new()).await;
    assert_eq!(amounts.len(), 5);

    // A cursor must name one of the caller's rides.
    let another_users = Id::of(&theirs.json()["id"]);
    for (query, field) in [
        (format!("starting_after={another_users}"), "starting_after"),
        (
            format!("ending_before={}", Id::nothing::<RidePublicId>()),
            "ending_before",
        ),
        ("starting_after=17".to_owned(), "starting_after"),
        (
            format!("starting_after={}&ending_before={}", first[0], first[1]),
            "ending_before",
        ),
    ] {
        let refused = app.get(&format!("/api/rides?{query}")).await;
        refused.assert_problem(400, "invalid-request");
        assert_eq!(refused.json()["errors"][0]["field"], field, "{query}");
    }
}

#[tokio::test]
async fn a_list_limit_outside_1_to_100_is_invalid() {
    let app = spawn_app().await;
    for query in ["limit=0", "limit=101", "limit=abc"] {
        app.get(&format!("/api/rides?{query}"))
            .await
            .assert_problem(400, "invalid-request");
    }
}

/// An integer cursor (`before_id`) is refused by name, not ignored: a
/// client paging by integers learns it at once, on either list.
#[tokio::test]
async fn before_id_is_refused_by_name() {
    let app = spawn_app().await;
    app.paid_ride("one").await;
    let refused = app.get("/api/rides?before_id=2").await;
    refused.assert_problem(400, "invalid-request");
    assert_eq!(refused.json()["errors"][0]["field"], "before_id");

    let destination = app.registered_destination("destination").await;
    let deliveries = format!("/api/webhook_endpoints/{destination}/deliveries");
    app.get(&deliveries).await.assert_status(200);
    let refused = app.get(&format!("{deliveries}?before_id=2")).await;
    refused.assert_problem(400, "invalid-request");
    assert_eq!(refused.json()["errors"][0]["field"], "before_id");
    // The destination is looked for first: a 404 for one that is not theirs.
    let nowhere = format!(
        "/api/webhook_endpoints/{}/deliveries?before_id=2",
        Id::nothing::<DestinationPublicId>()
    );
    app.get(&nowhere).await.assert_problem(404, "not-found");
}
