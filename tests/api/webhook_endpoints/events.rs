//! The events of a user's rides: each staged with the change it reports,
//! carrying the ride as the API shows it, reaching only the destinations
//! subscribed to it, and deleted after their retention.

use std::time::Duration;

use chrono::DateTime;
use diesel::prelude::*;
use serde_json::{json, Value};

use super::{app_sending, assert_verified, register, register_as, wait_for};
use crate::common::app::{create_user, held_ride};
use crate::common::ids::Id;
use crate::common::receiver::{Received, Receiver};
use crate::common::wait::eventually;

#[tokio::test]
async fn a_rides_events_reach_its_destination_signed_as_the_standard_says() {
    let app = app_sending(&[0], |_| {}).await;
    let receiver = Receiver::start();
    let endpoint = register(&app, &receiver, json!(["ride.*", "refund.*"])).await;
    let secret = endpoint["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{endpoint}");

    let ride_id = app.held_ride("held", "pm_card_visa").await;
    app.post_complete(ride_id, "done", r#"{"final_amount_cents": 1800}"#)
        .await
        .assert_status(200);
    app.post_refund(ride_id, "refund", r#"{"amount_cents": 500}"#)
        .await
        .assert_status(201);

    let received = wait_for(&receiver, 3).await;
    let mut events: Vec<Value> = received
        .iter()
        .map(|request| {
            assert_verified(&secret, request);
            assert_eq!(request.header("content-type"), "application/json");
            request.json()
        })
        .collect();
    events.sort_by_key(|event| event["sequence"].as_i64());
    let summary: Vec<(&str, i64, &str)> = events
        .iter()
        .map(|event| {
            (
                event["type"].as_str().unwrap(),
                event["sequence"].as_i64().unwrap(),
                event["data"]["ride"]["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("ride.authorized", 1, "authorized"),
            ("ride.captured", 2, "captured"),
            ("refund.succeeded", 3, "captured"),
        ]
    );
    // The last event carries the ride as it is now.
    assert_eq!(events[2]["data"]["ride"], app.ride(ride_id).await);
    assert_eq!(events[2]["data"]["refund"]["amount_cents"], 500);
    assert!(DateTime::parse_from_rfc3339(events[0]["timestamp"].as_str().unwrap()).is_ok());
}

/// Every event carries the ride byte for byte as the API shows it, for
/// rides in every status ridepay reports: both are rendered by the same
/// renderer from the same row.
#[tokio::test]
async fn the_ride_an_event_carries_is_byte_for_byte_the_ride_the_api_shows() {
    let app = app_sending(&[0], |_| {}).await;
    let receiver = Receiver::start();
    register(&app, &receiver, json!(["*"])).await;
    let held = app.held_ride("held", "pm_card_visa").await;
    let tipped = app.held_ride("tipped", "pm_card_visa").await;
    app.post_tip(tipped, "tip", r#"{"amount_cents": 300}"#)
        .await
        .assert_status(200);
    let paid = app.paid_ride("paid").await;
    let waiting = Id::of(&app.waiting_ride("waiting").await["id"]);
    let declined = Id::of(
        &app.post_ride("declined", &held_ride("pm_card_visa_chargeDeclined"))
            .await
            .json()["ride_id"],
    );
    app.post_refund(paid, "all", "{}").await.assert_status(201);

    // authorized x2, tipped, captured, refund.succeeded, requires_action,
    // payment_declined.
    let received = wait_for(&receiver, 7).await;
    for ride_id in [held, tipped, paid, waiting, declined] {
        let last = received
            .iter()
            .filter(|event| event.json()["data"]["ride"]["id"] == ride_id)
            .max_by_key(|event| event.json()["sequence"].as_i64())
            .unwrap_or_else(|| panic!("no event of ride {ride_id}"));
        let shown = app.get(&format!("/api/rides/{ride_id}")).await.body;
        let carried = format!(r#""ride":{}"#, String::from_utf8(shown).unwrap());
        let body = String::from_utf8(last.body.clone()).unwrap();
        assert!(body.contains(&carried), "{body}\ndoes not carry\n{carried}");
    }
}

#[tokio::test]
async fn only_the_events_a_destination_subscribed_to_reach_it_and_never_another_users() {
    let app = app_sending(&[0], |_| {}).await;
    let captures = Receiver::start();
    let everything = Receiver::start();
    let strangers = Receiver::start();
    register(&app, &captures, json!(["ride.captured"])).await;
    register(&app, &everything, json!(["*"])).await;
    let stranger = create_user(&app.database_url, Some("cus_stranger"));
    register_as(
        &app,
        &stranger,
        "theirs",
        json!({"url": strangers.url, "events": ["*"]}),
    )
    .await
    .assert_status(201);

    app.paid_ride("paid").await;
    app.held_ride("held", "pm_card_visa").await;

    let all = wait_for(&everything, 2).await;
    let captured = wait_for(&captures, 1).await;
    let types = |received: &[Received]| -> Vec<String> {
        let mut types: Vec<String> = received
            .iter()
            .map(|request| request.json()["type"].as_str().unwrap().to_owned())
            .collect();
        types.sort();
        types
    };
    assert_eq!(types(&all), ["ride.authorized", "ride.captured"]);
    assert_eq!(types(&captured), ["ride.captured"]);
    // Both deliveries made: nothing was staged for the stranger's.
    assert_eq!(strangers.received().len(), 0);
    assert_eq!(
        app.count(&format!(
            "webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id \
                 WHERE e.user_id = {}",
            stranger.id
        )),
        0
    );
}

#[tokio::test]
async fn events_past_their_retention_are_deleted_with_their_deliveries() {
    let app = app_sending(&[0], |settings| {
        settings.user_webhooks.retention = Duration::from_secs(24 * 3600);
    })
    .await;
    let receiver = Receiver::start();
    register(&app, &receiver, json!(["*"])).await;
    app.paid_ride("old").await;
    wait_for(&receiver, 1).await;
    diesel::sql_query("UPDATE webhook_events SET created_at = now() - interval '25 hours'")
        .execute(&mut app.db())
        .unwrap();

    app.paid_ride("new").await;
    wait_for(&receiver, 2).await;

    let deleted = eventually(Duration::from_secs(10), || {
        app.count("webhook_events") == 1 && app.count("webhook_deliveries") == 1
    })
    .await;
    assert!(deleted);
}
