//! The platform's key beside riders': it reads every ride and lists every
//! user's, and makes none; a rider's key still reaches only its own.

use serde_json::json;

use crate::common::app::{create_platform_user, create_user, ride_with, spawn_app, RIDE};
use crate::common::database::sql;
use crate::common::ids::Id;

#[tokio::test]
async fn the_platform_key_reads_every_ride_and_makes_none() {
    let app = spawn_app().await;
    let other = create_user(&app.database_url, Some("cus_other"));
    let platform = create_platform_user(&app.database_url);
    let mine = app.paid_ride("mine").await;
    let theirs = app
        .post_ride_as(&other.api_key, "theirs", &ride_with(json!({})))
        .await;
    let theirs = Id::of(&theirs.json()["id"]);

    // Any ride, as its owner sees it.
    for (ride, owner) in [(mine, &app.user.api_key), (theirs, &other.api_key)] {
        let path = format!("/api/rides/{ride}");
        let seen = app.get_as(&platform.api_key, &path).await;
        seen.assert_status(200);
        assert_eq!(seen.body, app.get_as(owner, &path).await.body);
    }
    // Every user's, newest first, paged.
    let first = app
        .get_as(&platform.api_key, "/api/rides?limit=1")
        .await
        .json();
    assert_eq!(
        (&first["data"][0]["id"], &first["has_more"]),
        (&json!(theirs.as_str()), &json!(true))
    );
    let rest = app
        .get_as(
            &platform.api_key,
            &format!("/api/rides?starting_after={theirs}"),
        )
        .await
        .json();
    assert_eq!(rest["data"].as_array().unwrap().len(), 1);
    assert_eq!(
        (&rest["data"][0]["id"], &rest["has_more"]),
        (&json!(mine.as_str()), &json!(false))
    );
    // A rider still sees only their own.
    app.get_as(&other.api_key, &format!("/api/rides/{mine}"))
        .await
        .assert_problem(404, "not-found");
    let listed = app.get_as(&other.api_key, "/api/rides").await.json();
    assert_eq!(listed["data"].as_array().unwrap().len(), 1);

    // No ride of its own: a 403, nothing written, the key not consumed.
    let before = (app.count("idempotency_keys"), app.count("rides"));
    app.post_as(&platform, "/api/rides", "a ride", RIDE)
        .await
        .assert_problem(403, "forbidden");
    assert_eq!((app.count("idempotency_keys"), app.count("rides")), before);
}

/// An integer shown before public ids names its ride for the ride's own
/// user only, the platform's key included.
#[tokio::test]
async fn a_legacy_integer_names_a_ride_for_its_owner_only() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let ride = app.paid_ride("old").await;
    let integer = app.row_key(ride);
    sql(
        &mut app.db(),
        &format!("UPDATE rides SET legacy_id = {integer}"),
    );
    let path = format!("/api/rides/{integer}");

    assert_eq!(app.get(&path).await.json()["id"], ride);
    app.get_as(&platform.api_key, &path)
        .await
        .assert_problem(404, "not-found");
    app.get_as(&platform.api_key, &format!("/api/rides/{ride}"))
        .await
        .assert_status(200);
}
