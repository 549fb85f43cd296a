//! Fares as ride services charge them: a hold asks the card for overcapture
//! and an extended authorization, a final fare within the overcapture room
//! is captured at once with no raise, and above it the hold is raised
//! first. The ride shows what may be captured and when the hold lapses.

use serde_json::Value;

use crate::common::app::{spawn_app, TestApp};
use crate::common::database::count;
use crate::common::ids::Id;

fn raises(app: &TestApp) -> i64 {
    count(
        &mut app.db(),
        "simulated_intent_calls WHERE operation = 'increment_authorization'",
    )
}

/// Days from now to the ride's `hold_expires_at`, rounded.
fn hold_days(ride: &Value) -> i64 {
    let at: chrono::DateTime<chrono::Utc> =
        ride["hold_expires_at"].as_str().unwrap().parse().unwrap();
    ((at - chrono::Utc::now()).num_hours() + 12) / 24
}

async fn complete(app: &TestApp, ride_id: Id, cents: i64) -> Value {
    let answer = app
        .post_complete(
            ride_id,
            &format!("complete {cents}"),
            &format!(r#"{{"final_amount_cents": {cents}}}"#),
        )
        .await;
    answer.assert_status(200);
    answer.json()
}

#[tokio::test]
async fn a_fare_within_the_overcapture_room_is_captured_at_once_without_a_raise() {
    let app = spawn_app().await;
    let ride_id = app.held_ride("held", "pm_card_visa").await;
    let held = app.ride(ride_id).await;
    assert_eq!(
        (
            held["amount_authorized_cents"].as_i64(),
            held["amount_capturable_max_cents"].as_i64()
        ),
        (Some(2000), Some(2400))
    );
    assert_eq!(hold_days(&held), 7);

    let ride = complete(&app, ride_id, 2350).await;

    assert_eq!(
        (
            ride["status"].as_str(),
            ride["amount_captured_cents"].as_i64()
        ),
        (Some("captured"), Some(2350))
    );
    assert_eq!(
        (
            &ride["amount_capturable_max_cents"],
            &ride["hold_expires_at"]
        ),
        (&Value::Null, &Value::Null)
    );
    assert_eq!(raises(&app), 0);
}

#[tokio::test]
async fn above_the_room_or_on_a_card_without_overcapture_the_hold_is_raised_first() {
    let app = spawn_app().await;
    let visa = app.held_ride("visa", "pm_card_visa").await;
    let plain = app
        .held_ride("plain", "pm_card_ridepay_noOvercapture")
        .await;
    assert_eq!(
        app.ride(plain).await["amount_capturable_max_cents"].as_i64(),
        Some(2000)
    );

    let above = complete(&app, visa, 2600).await;
    let over_plain = complete(&app, plain, 2100).await;

    assert_eq!(above["amount_captured_cents"], 2600);
    assert_eq!(over_plain["amount_captured_cents"], 2100);
    assert_eq!(raises(&app), 2);
}

#[tokio::test]
async fn an_extended_hold_lasts_thirty_days() {
    let app = spawn_app().await;
    let ride_id = app
        .held_ride("extended", "pm_card_ridepay_extendedHold")
        .await;

    let ride = app.ride(ride_id).await;

    assert_eq!(hold_days(&ride), 30);
    assert_eq!(ride["amount_capturable_max_cents"], 2400);
}
