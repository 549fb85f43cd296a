//! Receipts: `ride.captured`, `ride.canceled` and `ride.tipped` of every
//! user's rides, sent to the installation's own destination
//! (`RECEIPT_WEBHOOK_URL`), signed with `RECEIPT_WEBHOOK_SECRET` as every
//! webhook is, and verified here by the specification's own library.

use std::collections::BTreeSet;
use std::time::Duration;

use diesel::prelude::*;
use diesel_migrations::MigrationHarness;
use ridepay::config::{ReceiptDestination, Settings};
use serde_json::Value;
use standardwebhooks::Webhook;

use crate::common::app::{create_user, spawn_app_with, spawn_server, TestApp, RIDE};
use crate::common::ids::Id;
use crate::common::receiver::{Received, Receiver};
use crate::common::wait::eventually;

/// The installation's secret: `whsec_` and the base64 of 32 bytes.
pub const SECRET: &str = "whsec_cmVjZWlwdHMtb2YtdGhlLWluc3RhbGxhdGlvbi0zMmI=";

/// Sending receipts to `url`; users' destinations may not be loopback
/// addresses, so the receiver is reached only as the operator's setting.
pub fn sending_receipts(url: &str) -> impl FnOnce(&mut Settings) + '_ {
    move |settings| {
        settings.user_webhooks.enabled = true;
        settings.user_webhooks.allow_loopback = false;
        settings.user_webhooks.receipts = Some(ReceiptDestination {
            url: url.to_owned(),
            secret: SECRET.to_owned().into(),
        });
    }
}

/// Waits until the receiver has `count` requests; returns each verified,
/// as JSON.
async fn receipts(receiver: &Receiver, count: usize) -> Vec<Value> {
    let arrived = eventually(Duration::from_secs(30), || {
        receiver.received().len() >= count
    })
    .await;
    assert!(arrived, "{} of {count} arrived", receiver.received().len());
    receiver.received().iter().map(verified).collect()
}

/// The receipt, verified by the specification's library with the
/// installation's secret.
pub fn verified(received: &Received) -> Value {
    Webhook::new(SECRET)
        .unwrap()
        .verify(&received.body, &received.headers)
        .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&received.body)));
    received.json()
}

#[tokio::test]
async fn every_users_captures_cancellations_and_tips_reach_the_receipts_destination_signed() {
    let receiver = Receiver::start();
    let app = spawn_app_with(sending_receipts(&receiver.url)).await;
    let other = create_user(&app.database_url, Some("cus_other"));

    let paid = app.saved_card_ride("paid").await;
    app.post_tip(paid, "tip", r#"{"amount_cents": 300}"#)
        .await
        .assert_status(200);
    let held = app.held_ride("held", "pm_card_visa").await;
    app.post_cancel(held, "cancel", "{}")
        .await
        .assert_status(200);
    let others = app.post_ride_as(&other.api_key, "others", RIDE).await;
    others.assert_status(201);
    let others = Id::of(&others.json()["id"]);

    let received = receipts(&receiver, 4).await;
    let seen: BTreeSet<(Id, &str)> = received
        .iter()
        .map(|event| {
            (
                Id::of(&event["data"]["ride"]["id"]),
                event["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        BTreeSet::from([
            (paid, "ride.captured"),
            (paid, "ride.tipped"),
            (held, "ride.canceled"),
            (others, "ride.captured"),
        ]),
        "the held ride's ride.authorized is no receipt"
    );
    let tipped = received.iter().find(|event| event["type"] == "ride.tipped");
    assert_eq!(tipped.unwrap()["data"]["ride"]["tip_cents"], 300);
    // Every receipt delivered, and nothing else owed to the destination.
    let delivered = eventually(Duration::from_secs(30), || {
        app.count(
            "webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id \
             WHERE e.user_id IS NULL AND d.status = 'succeeded'",
        ) == 4
    })
    .await;
    assert!(delivered);
    assert_eq!(app.count("webhook_deliveries"), 4);
    assert_eq!(app.count("receipts"), 0, "the old table is not written");
}

#[tokio::test]
async fn without_a_url_the_receipts_destination_is_disabled_and_owed_nothing() {
    let app = spawn_app_with(|settings| settings.user_webhooks.enabled = true).await;
    app.paid_ride("paid").await;

    assert_eq!(
        app.count(
            "webhook_endpoints WHERE user_id IS NULL AND status = 'disabled' \
             AND disabled_reason = 'RECEIPT_WEBHOOK_URL is not set'"
        ),
        1
    );
    // Nothing subscribes to the capture: no event is staged for it.
    assert_eq!(app.count("webhook_events"), 0);
    assert_eq!(app.count("webhook_deliveries"), 0);
}

/// The migration that made receipts events (and every one after it),
/// reverted and applied again around a receipt job staged as the release
/// before staged them.
/// Returns the integer the ride was shown under before public ids.
fn stage_receipt_job_before_receipts_became_events(
    app: &TestApp,
    ride_id: Id,
    user_id: i64,
) -> i64 {
    let ride_key = app.row_key(ride_id);
    let mut conn = app.db();
    while !conn
        .revert_last_migration(ridepay::db::MIGRATIONS)
        .unwrap()
        .to_string()
        .ends_with("000029")
    {}
    diesel::sql_query(format!(
        "INSERT INTO staged_jobs (job_type, payload) \
         VALUES ('ride_receipt', jsonb_build_object('ride_id', {ride_key}, 'user_id', {user_id}))"
    ))
    .execute(&mut conn)
    .unwrap();
    ridepay::db::run_migrations(&mut conn).unwrap();
    ride_key
}

#[tokio::test]
async fn a_receipt_job_staged_before_the_upgrade_is_delivered_once() {
    // A ride paid on a server without receipts, its job left staged.
    let app = spawn_app_with(|_| {}).await;
    let ride_id = app.paid_ride("before").await;
    let shown_as = stage_receipt_job_before_receipts_became_events(&app, ride_id, app.user.id);
    assert_eq!(
        app.count(
            "webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id \
             WHERE e.user_id IS NULL AND d.status = 'pending'"
        ),
        1,
        "kept for the receipts destination"
    );

    // The upgraded server, given a URL: the receipt arrives.
    let receiver = Receiver::start();
    spawn_server(&app.database_url, sending_receipts(&receiver.url)).await;
    let carried = receipts(&receiver, 1).await.remove(0);
    assert_eq!(carried["type"], "ride.captured");
    // Rendered as it was staged, before public ids: under the integer the
    // ride had then, which still names it.
    assert_eq!(carried["data"]["ride"]["id"], shown_as);
    app.get(&format!("/api/rides/{shown_as}"))
        .await
        .assert_status(200);
    assert_eq!(carried["data"]["ride"]["status"], "captured");
    assert_eq!(carried["sequence"], 2, "after the capture's own event");

    // A restart delivers it no more: the next ride's receipt comes alone.
    let restarted = spawn_server(&app.database_url, sending_receipts(&receiver.url)).await;
    app.post_ride_to(&restarted, &app.user.api_key, "after", RIDE)
        .await
        .assert_status(201);
    let received = receipts(&receiver, 2).await;
    let carried_id = &carried["id"];
    assert_eq!(
        received
            .iter()
            .filter(|event| &event["id"] == carried_id)
            .count(),
        1
    );
    assert_eq!(app.count("receipts"), 0);
}
