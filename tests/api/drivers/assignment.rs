//! `POST /api/rides/{id}/driver`: a ride's driver, assigned once; whatever
//! order capture and assignment come in, the driver is owed 80 % of the
//! fare and all of a tip, once per charge, reallocated in the ledger.

use ridepay::public_ids::PublicId;
use serde_json::Value;

use super::{active_driver, registered};
use crate::common::app::{create_platform_user, ride_with, spawn_app, TestApp};
use crate::common::ids::Id;
use crate::ledger::assert_exact;

/// The transfers owed for a ride: (amount, netted, status), oldest first.
fn transfers_of(app: &TestApp, ride: Id) -> Vec<(i64, i64, String)> {
    use diesel::prelude::*;
    use ridepay::schema::{rides, transfers};
    let public = ridepay::public_ids::RidePublicId::parse(&ride.to_string()).unwrap();
    transfers::table
        .inner_join(rides::table)
        .filter(rides::public_id.eq(public))
        .order(transfers::id.asc())
        .select((
            transfers::amount_cents,
            transfers::netted_cents,
            transfers::status,
        ))
        .load(&mut app.db())
        .unwrap()
}

async fn payable(app: &TestApp, platform_key: &str, driver: Id) -> Value {
    let driver = app
        .get_as(platform_key, &format!("/api/drivers/{driver}"))
        .await;
    driver.json()["balances"].clone()
}

#[tokio::test]
async fn a_paid_ride_assigned_owes_its_driver_80_percent_of_the_fare_once() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let ride = app.paid_ride("paid").await;

    let answer = app
        .post_assign_driver(&platform, ride, driver, "assign")
        .await;
    answer.assert_status(200);
    let json = answer.json();
    assert_eq!(json["id"], ride.to_string());
    assert_eq!(json["status"], "captured");
    let assigned = &json["driver"];
    assert_eq!(assigned["id"], driver.to_string());
    assert_eq!(assigned["amount_cents"], 1600);
    assert_eq!(assigned["platform_fee_cents"], 400);
    let transfer = &assigned["transfers"][0];
    assert_eq!(transfer["amount_cents"], 1600);
    assert_eq!(transfer["netted_cents"], 0);
    assert_eq!(transfer["status"], "pending");
    assert_eq!(transfer["id"], Value::Null);
    assert!(transfer["source_charge"]
        .as_str()
        .unwrap()
        .starts_with("ch_"));

    let replay = app
        .post_assign_driver(&platform, ride, driver, "assign")
        .await;
    assert_eq!(replay.body, answer.body);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    // Another key, or another driver: the ride has its driver.
    let other = active_driver(&app, &platform, "grace").await;
    for (who, key) in [(driver, "again"), (other, "other")] {
        app.post_assign_driver(&platform, ride, who, key)
            .await
            .assert_problem(422, "invalid-ride-state");
    }
    assert_eq!(transfers_of(&app, ride), [(1600, 0, "pending".to_owned())]);
    let balances = payable(&app, &platform.api_key, driver).await;
    assert_eq!(balances[0]["currency"], "usd");
    assert_eq!(balances[0]["payable_cents"], 1600);
    assert_eq!(balances[0]["transferred_cents"], 0);
    assert_eq!(
        app.count("ledger_transactions WHERE kind = 'reallocation'"),
        1
    );
    assert_exact(&app, "assigned after capture");
}

#[tokio::test]
async fn a_driver_assigned_first_is_owed_as_the_ride_is_captured_with_its_tip() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let ride = app.held_ride("held", "pm_card_visa").await;

    let answer = app
        .post_assign_driver(&platform, ride, driver, "assign")
        .await;
    answer.assert_status(200);
    assert_eq!(answer.json()["driver"]["amount_cents"], 0);
    assert_eq!(answer.json()["driver"]["transfers"], serde_json::json!([]));
    assert!(transfers_of(&app, ride).is_empty());

    app.post_tip(ride, "tip", r#"{"amount_cents": 300}"#)
        .await
        .assert_status(200);
    app.post_complete(ride, "complete", r#"{"final_amount_cents": 1800}"#)
        .await
        .assert_status(200);
    // 1800 - 360 of the fare, and the whole tip, in the fare's charge.
    assert_eq!(transfers_of(&app, ride), [(1740, 0, "pending".to_owned())]);
    let balances = payable(&app, &platform.api_key, driver).await;
    assert_eq!(balances[0]["payable_cents"], 1740);
    assert_exact(&app, "assigned before capture");
}

#[tokio::test]
async fn a_tip_after_the_capture_is_the_drivers_to_the_cent() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let paid = app
        .post_ride(
            "saved card",
            &ride_with(serde_json::json!({"payment_method": null})),
        )
        .await;
    paid.assert_status(201);
    let ride = Id::of(&paid.json()["id"]);
    app.post_assign_driver(&platform, ride, driver, "assign")
        .await
        .assert_status(200);
    app.post_tip(ride, "tip", r#"{"amount_cents": 500}"#)
        .await
        .assert_status(200);
    assert_eq!(
        transfers_of(&app, ride),
        [
            (1600, 0, "pending".to_owned()),
            (500, 0, "pending".to_owned())
        ]
    );
    let balances = payable(&app, &platform.api_key, driver).await;
    assert_eq!(balances[0]["payable_cents"], 2100);
    assert_exact(&app, "a tip of its own");
}

#[tokio::test]
async fn only_the_platform_assigns_an_active_driver_to_a_ride_that_pays() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let (onboarding, _) = registered(&app, &platform, "later").await;
    let ride = app.paid_ride("paid").await;

    app.post_assign_driver(&app.user, ride, driver, "rider")
        .await
        .assert_problem(403, "forbidden");
    app.post_assign_driver(&platform, ride, onboarding, "onboarding")
        .await
        .assert_problem(422, "driver-not-payable");
    let nobody = Id::nothing::<ridepay::public_ids::DriverPublicId>();
    let unknown = app
        .post_assign_driver(&platform, ride, nobody, "nobody")
        .await;
    unknown.assert_status(400);
    assert_eq!(unknown.json()["errors"][0]["field"], "driver_id");
    let unpaid = app.held_ride("held", "pm_card_visa").await;
    app.post_cancel(unpaid, "cancel", "{}")
        .await
        .assert_status(200);
    app.post_assign_driver(&platform, unpaid, driver, "cancelled")
        .await
        .assert_problem(422, "invalid-ride-state");
    let missing = Id::nothing::<ridepay::public_ids::RidePublicId>();
    app.post_assign_driver(&platform, missing, driver, "missing")
        .await
        .assert_status(404);
    assert_eq!(app.count("ride_drivers"), 0);
    assert_eq!(app.count("transfers"), 0);
    // Refused requests consumed no key: the first one now succeeds.
    app.post_assign_driver(&platform, ride, driver, "onboarding")
        .await
        .assert_status(200);
}

/// Many assignments of one ride at once, each under its own key: one
/// driver, one reallocation, one transfer owed; the rest refused.
#[tokio::test]
async fn concurrent_assignments_of_one_ride_owe_its_driver_once() {
    let app = crate::common::app::spawn_app_with(|s| s.database.pool_size = 8).await;
    let platform = create_platform_user(&app.database_url);
    let drivers = [
        active_driver(&app, &platform, "ada").await,
        active_driver(&app, &platform, "grace").await,
    ];
    let ride = app.paid_ride("paid").await;
    let answers = futures_util::future::join_all((0..12).map(|n| {
        let (app, platform) = (&app, &platform);
        async move {
            app.post_assign_driver(platform, ride, drivers[n % 2], &format!("at once {n}"))
                .await
        }
    }))
    .await;
    let statuses: Vec<u16> = answers.iter().map(|answer| answer.status).collect();
    assert_eq!(
        statuses.iter().filter(|status| **status == 200).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|status| [200, 422].contains(status)),
        "{statuses:?}"
    );
    assert_eq!(app.count("ride_drivers"), 1);
    assert_eq!(transfers_of(&app, ride).len(), 1);
    assert_eq!(
        app.count("ledger_transactions WHERE kind = 'reallocation'"),
        1
    );
    assert_exact(&app, "concurrent assignments");
}

/// A refund of a ride whose driver has their share: the change in their
/// entitlement comes back from their payable (the rest from the
/// commission), and the transfer not made yet owes that much less.
#[tokio::test]
async fn a_refund_takes_the_drivers_share_back_from_a_transfer_not_made_yet() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let ride = app.paid_ride("paid").await;
    app.post_assign_driver(&platform, ride, driver, "assign")
        .await
        .assert_status(200);

    app.post_refund(ride, "half", r#"{"amount_cents": 1000}"#)
        .await
        .assert_status(201);
    // 1600 - floor(1000 * 1600 / 2000).
    assert_eq!(transfers_of(&app, ride), [(800, 0, "pending".to_owned())]);
    assert_eq!(
        payable(&app, &platform.api_key, driver).await[0]["payable_cents"],
        800
    );
    assert_exact(&app, "half refunded");

    app.post_refund(ride, "rest", r#"{"amount_cents": 1000}"#)
        .await
        .assert_status(201);
    assert_eq!(transfers_of(&app, ride), [(0, 0, "netted".to_owned())]);
    assert_eq!(
        payable(&app, &platform.api_key, driver).await[0]["payable_cents"],
        0
    );
    assert_exact(&app, "all refunded");
}

/// A refund the gateway fails after making it: taken back entry for entry,
/// and the transfer owes again what the refund took off it.
#[tokio::test]
async fn a_refund_that_fails_owes_the_driver_their_share_again() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let paid = app
        .post_ride(
            "failing refund",
            &ride_with(serde_json::json!({"payment_method": "pm_card_refundFail"})),
        )
        .await;
    let ride = Id::of(&paid.json()["id"]);
    app.post_assign_driver(&platform, ride, driver, "assign")
        .await
        .assert_status(200);
    app.post_refund(ride, "refund", r#"{"amount_cents": 2000}"#)
        .await
        .assert_status(201);
    assert_eq!(transfers_of(&app, ride), [(0, 0, "netted".to_owned())]);

    // The gateway fails the refund later, and says so in an event.
    let failed = crate::common::wait::eventually(std::time::Duration::from_secs(20), || {
        app.count("refunds WHERE status = 'failed'") == 1
    })
    .await;
    assert!(failed);
    assert_eq!(transfers_of(&app, ride), [(1600, 0, "pending".to_owned())]);
    assert_eq!(
        payable(&app, &platform.api_key, driver).await[0]["payable_cents"],
        1600
    );
    assert_exact(&app, "refund failed");
}

/// A ride refunded before its driver is assigned: the entitlement already
/// reflects the refund, and the refund stays posted as it was.
#[tokio::test]
async fn a_driver_assigned_after_a_refund_is_owed_what_is_left() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let ride = app.paid_ride("paid").await;
    app.post_refund(ride, "refund", r#"{"amount_cents": 500}"#)
        .await
        .assert_status(201);
    let answer = app
        .post_assign_driver(&platform, ride, driver, "assign")
        .await;
    answer.assert_status(200);
    // 1600 - floor(500 * 1600 / 2000); the platform keeps 1500 - 1200.
    assert_eq!(answer.json()["driver"]["amount_cents"], 1200);
    assert_eq!(answer.json()["driver"]["platform_fee_cents"], 300);
    assert_eq!(transfers_of(&app, ride), [(1200, 0, "pending".to_owned())]);
    assert_exact(&app, "refunded, then assigned");
}

/// Two rides given one driver at once: the other assignment has written
/// its ride's driver (which holds a key share on the driver's row) and is
/// about to lock the driver's row, as owing the transfer does, when this
/// one arrives. This one locks the driver before writing its own ride's
/// driver, so it waits behind the other instead of holding a share the
/// other must wait for: no deadlock, and both go through.
#[tokio::test]
async fn two_rides_given_one_driver_at_once_do_not_deadlock() {
    use diesel::prelude::*;
    use diesel::sql_types::BigInt;
    use ridepay::public_ids::{DriverPublicId, RidePublicId};
    use ridepay::schema::{drivers, rides};
    use std::time::Duration;

    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let (first, second) = (app.paid_ride("first").await, app.paid_ride("second").await);
    let mut other = app.db();
    let second_row: i64 = rides::table
        .filter(rides::public_id.eq(RidePublicId::parse(&second.to_string()).unwrap()))
        .select(rides::id)
        .first(&mut other)
        .unwrap();
    let driver_row: i64 = drivers::table
        .filter(drivers::public_id.eq(DriverPublicId::parse(&driver.to_string()).unwrap()))
        .select(drivers::id)
        .first(&mut other)
        .unwrap();
    diesel::sql_query("BEGIN").execute(&mut other).unwrap();
    diesel::sql_query(
        "INSERT INTO ride_drivers (ride_id, driver_id, commission_bps) VALUES ($1, $2, 2000)",
    )
    .bind::<BigInt, _>(second_row)
    .bind::<BigInt, _>(driver_row)
    .execute(&mut other)
    .unwrap();

    let (answer, locked) = tokio::join!(
        app.post_assign_driver(&platform, first, driver, "assign first"),
        async {
            let waiting = crate::common::wait::eventually(Duration::from_secs(10), || {
                app.count(
                    "pg_stat_activity WHERE wait_event_type = 'Lock' \
                     AND datname = current_database()",
                ) > 0
            })
            .await;
            assert!(waiting, "the assignment never waited for the driver");
            let locked = diesel::sql_query("SELECT id FROM drivers WHERE id = $1 FOR UPDATE")
                .bind::<BigInt, _>(driver_row)
                .execute(&mut other);
            diesel::sql_query("ROLLBACK").execute(&mut other).unwrap();
            locked
        }
    );
    locked.expect("the other assignment could not lock its driver");
    answer.assert_status(200);
    assert_eq!(answer.json()["driver"]["amount_cents"], 1600);
}

/// The ride JSON's `driver`, on every read of a ride: null before one is
/// assigned; then the rider's key sees who drives, and the platform's key
/// what they are owed and the transfers, as the assignment answered.
#[tokio::test]
async fn a_rides_driver_is_who_drives_for_the_rider_and_their_pay_for_the_platform() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let ride = app.paid_ride("paid").await;
    let path = format!("/api/rides/{ride}");
    assert_eq!(app.ride(ride).await["driver"], Value::Null);
    assert_eq!(
        app.get_as(&platform.api_key, &path).await.json()["driver"],
        Value::Null
    );

    let assigned = app
        .post_assign_driver(&platform, ride, driver, "assign")
        .await
        .json();

    let riders = app.ride(ride).await;
    assert_eq!(
        riders["driver"],
        serde_json::json!({"id": driver.to_string()})
    );
    let platforms = app.get_as(&platform.api_key, &path).await.json();
    assert_eq!(platforms, assigned);
    assert_eq!(platforms["driver"]["amount_cents"], 1600);
    assert_eq!(platforms["driver"]["transfers"][0]["status"], "pending");
    // Everything else about the ride, each sees alike.
    let mut without_driver = platforms.clone();
    without_driver["driver"] = riders["driver"].clone();
    assert_eq!(without_driver, riders);

    // The lists show each the same.
    let listed = |body: Value| body["data"][0].clone();
    assert_eq!(listed(app.get("/api/rides").await.json()), riders);
    assert_eq!(
        listed(app.get_as(&platform.api_key, "/api/rides").await.json()),
        platforms
    );
    // And so does the answer of a change to a ride it drives.
    let held = app.held_ride("held", "pm_card_visa").await;
    app.post_assign_driver(&platform, held, driver, "assign held")
        .await
        .assert_status(200);
    let completed = app
        .post_complete(held, "complete", r#"{"final_amount_cents": 1500}"#)
        .await;
    completed.assert_status(200);
    assert_eq!(completed.json()["driver"], riders["driver"]);
}

/// A ride paid at once whose payment waits (`processing`, the bank slow),
/// given its driver meanwhile: the gateway's event captures it, and that
/// capture owes the driver their share, once.
#[tokio::test]
async fn a_driver_assigned_while_the_payment_settles_is_owed_when_an_event_captures_it() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let slow = ride_with(serde_json::json!({"payment_method": "pm_card_ridepay_processing"}));
    let answer = app.post_ride("slow bank", &slow).await;
    answer.assert_status(202);
    let ride = Id::of(&answer.json()["id"]);
    app.post_assign_driver(&platform, ride, driver, "assign")
        .await
        .assert_status(200);

    let captured = crate::common::wait::eventually(std::time::Duration::from_secs(20), || {
        app.count("charges") == 1
    })
    .await;
    assert!(captured);
    assert_eq!(app.ride(ride).await["status"], "captured");
    assert_eq!(transfers_of(&app, ride), [(1600, 0, "pending".to_owned())]);
    assert_exact(&app, "captured by an event");
}

/// A ride paid at once whose card asks the rider to authenticate, given
/// its driver while it waits; the rider authenticates and lands on the
/// return page (the gateway's events off: the page alone captures it),
/// which owes the driver their share, once, however often it is opened.
#[tokio::test]
async fn a_driver_assigned_while_the_rider_authenticates_is_owed_when_the_return_page_captures_it()
{
    let app = crate::common::app::spawn_app_with(|s| {
        s.gateway.simulated.events_enabled = false;
    })
    .await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let asking = ride_with(serde_json::json!({"payment_method": "pm_card_authenticationRequired"}));
    let answer = app.post_ride("3ds", &asking).await;
    answer.assert_status(202);
    let waiting = answer.json();
    let ride = Id::of(&waiting["id"]);
    app.post_assign_driver(&platform, ride, driver, "assign")
        .await
        .assert_status(200);
    assert!(transfers_of(&app, ride).is_empty());

    let intent = waiting["payment_intent_id"].as_str().unwrap();
    let secret = waiting["next_action"]["client_secret"].as_str().unwrap();
    ridepay_doubles::intents::authenticate(
        &mut app.db(),
        intent,
        secret,
        ridepay_doubles::intents::Authentication::Completed,
        &ridepay_doubles::intents::IntentSettings {
            double: ridepay_doubles::events::Double::Simulated,
            authentication_page: "http://127.0.0.1/unused".to_owned(),
            authorization_ttl: std::time::Duration::from_secs(3600),
            extended_authorization_ttl: std::time::Duration::from_secs(3600),
        },
    )
    .unwrap()
    .unwrap();
    for _ in 0..2 {
        let page = app
            .client
            .get(format!("{}/payments/return", app.address))
            .query(&[
                ("payment_intent", intent),
                ("payment_intent_client_secret", secret),
                ("redirect_status", "succeeded"),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 200);
    }
    assert_eq!(app.ride(ride).await["status"], "captured");
    assert_eq!(transfers_of(&app, ride), [(1600, 0, "pending".to_owned())]);
    assert_exact(&app, "captured by the return page");
}
