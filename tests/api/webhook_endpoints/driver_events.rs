//! The events of drivers and of their pay: `ride.driver_assigned` to the
//! ride's user and to the platform's destinations, what a driver is paid
//! and `driver.updated` to the platform's alone; each destination sees the
//! ride's driver as its user reads the ride.

use ridepay::drivers::transfers::make_due;
use serde_json::{json, Value};

use super::{app_sending, assert_verified, register, register_as, wait_for};
use crate::common::app::{create_platform_user, create_user, TestApp, TestUser};
use crate::common::ids::Id;
use crate::common::receiver::{Received, Receiver};
use crate::drivers::{account_of, active_driver, follows};

/// The types of the events staged for `user`'s destinations, in order.
fn staged_for(app: &TestApp, user: &TestUser) -> Vec<String> {
    use diesel::prelude::*;
    use ridepay::schema::{webhook_deliveries, webhook_endpoints, webhook_events};
    webhook_deliveries::table
        .inner_join(webhook_endpoints::table)
        .inner_join(webhook_events::table)
        .filter(webhook_endpoints::user_id.eq(user.id))
        .order(webhook_events::created_at.asc())
        .select(webhook_events::type_)
        .load(&mut app.db())
        .unwrap()
}

/// The received event of `type`, the last of them.
fn last_of<'a>(received: &'a [Received], event_type: &str) -> &'a Received {
    received
        .iter()
        .filter(|event| event.json()["type"] == event_type)
        .max_by_key(|event| event.json()["sequence"].as_i64())
        .unwrap_or_else(|| panic!("no {event_type}"))
}

/// `body` carries `value` byte for byte as the API answered it.
fn carries(received: &Received, field: &str, answered: &[u8]) {
    let carried = format!(r#""{field}":{}"#, String::from_utf8_lossy(answered));
    let body = String::from_utf8_lossy(&received.body);
    assert!(body.contains(&carried), "{body}\ndoes not carry\n{carried}");
}

#[tokio::test]
async fn a_drivers_events_reach_the_platform_with_their_pay_and_the_rider_only_who_drives() {
    let app = app_sending(&[0], |_| {}).await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let account = account_of(&app, &platform.api_key, driver).await;
    let (riders, platforms, strangers) = (Receiver::start(), Receiver::start(), Receiver::start());
    // Each subscribes to everything, `driver.*` included.
    let rider_secret = register(&app, &riders, json!(["*"])).await["secret"].clone();
    let platform_secret = register_as(
        &app,
        &platform,
        "platform's",
        json!({"url": platforms.url, "events": ["ride.*", "driver.*"]}),
    )
    .await
    .json()["secret"]
        .clone();
    let stranger = create_user(&app.database_url, Some("cus_stranger"));
    register_as(
        &app,
        &stranger,
        "stranger's",
        json!({"url": strangers.url, "events": ["*", "driver.*"]}),
    )
    .await
    .assert_status(201);

    let ride = app.paid_ride("paid").await;
    app.post_assign_driver(&platform, ride, driver, "assign")
        .await
        .assert_status(200);
    // The gateway restricts the driver: the transfer is refused unsent.
    ridepay_doubles::accounts::restrict(&mut app.db(), &account).unwrap();
    assert!(follows(&app, &account, "restricted").await);
    let context = app.service_context();
    assert_eq!(make_due(&context, 10).unwrap().failed, 1);
    // Active again: paid.
    ridepay_doubles::accounts::activate(&mut app.db(), &account).unwrap();
    assert!(follows(&app, &account, "active").await);
    let driver_path = format!("/api/drivers/{driver}");
    let driver_then = app.get_as(&platform.api_key, &driver_path).await.body;
    assert_eq!(make_due(&context, 10).unwrap().made, 1);

    assert_eq!(
        staged_for(&app, &platform),
        [
            "ride.driver_assigned",
            "driver.updated",
            "ride.driver_transfer_failed",
            "driver.updated",
            "ride.driver_paid",
        ]
    );
    assert_eq!(
        staged_for(&app, &app.user),
        ["ride.captured", "ride.driver_assigned"]
    );
    assert!(staged_for(&app, &stranger).is_empty());

    // The platform's see the driver's pay, as the platform reads the ride
    // and the driver.
    let received = wait_for(&platforms, 5).await;
    for event in &received {
        assert_verified(platform_secret.as_str().unwrap(), event);
    }
    let ride_path = format!("/api/rides/{ride}");
    let paid = last_of(&received, "ride.driver_paid");
    carries(
        paid,
        "ride",
        &app.get_as(&platform.api_key, &ride_path).await.body,
    );
    assert_eq!(
        paid.json()["data"]["ride"]["driver"]["transfers"][0]["status"],
        "paid"
    );
    let failed = last_of(&received, "ride.driver_transfer_failed").json();
    let transfer = &failed["data"]["ride"]["driver"]["transfers"][0];
    assert_eq!(transfer["status"], "failed");
    assert_eq!(transfer["failure_reason"], "driver_not_active");
    let assigned = last_of(&received, "ride.driver_assigned").json();
    assert_eq!(assigned["data"]["ride"]["driver"]["amount_cents"], 1600);
    assert_eq!(
        assigned["data"]["ride"]["driver"]["transfers"][0]["status"],
        "pending"
    );
    let updates: Vec<Value> = received
        .iter()
        .map(Received::json)
        .filter(|event| event["type"] == "driver.updated")
        .collect();
    let statuses: Vec<&Value> = updates
        .iter()
        .map(|e| &e["data"]["driver"]["status"])
        .collect();
    assert_eq!(statuses, ["restricted", "active"]);
    assert!(updates[0]["sequence"].as_i64() < updates[1]["sequence"].as_i64());
    carries(last_of(&received, "driver.updated"), "driver", &driver_then);

    // The rider's see who drives, as the rider reads the ride.
    let received = wait_for(&riders, 2).await;
    for event in &received {
        assert_verified(rider_secret.as_str().unwrap(), event);
    }
    let assigned = last_of(&received, "ride.driver_assigned");
    assert_eq!(
        assigned.json()["data"]["ride"]["driver"],
        json!({"id": driver.to_string()})
    );
    carries(assigned, "ride", &app.get(&ride_path).await.body);
    assert_eq!(Id::of(&assigned.json()["data"]["ride"]["id"]), ride);
    assert!(strangers.received().is_empty());
}
