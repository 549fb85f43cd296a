//! What a ride's money movements post, each once, in the statement that
//! records the movement: a capture (the fare, a cancellation fee, a tip)
//! into the gateway, owed to no driver yet, and the gateway's fee on each
//! charge.

use crate::common::app::spawn_app;
use crate::common::ids::Id;
use crate::ledger::{fee_of, posting, postings};

#[tokio::test]
async fn a_paid_ride_posts_its_capture_and_the_gateways_fee_once() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("paid").await;
    let posted = vec![
        posting(
            "capture",
            &[("gateway:usd", 2000), ("platform:unassigned:usd", -2000)],
        ),
        posting("fee", &[("gateway:usd", -88), ("platform:fees:usd", 88)]),
    ];
    assert_eq!(postings(&app, ride_id), posted);
    assert_eq!(fee_of(2000), 88);

    // The answer replayed, and the ride read: nothing posted again.
    app.post_ride("paid", crate::common::app::RIDE)
        .await
        .assert_status(201);
    app.ride(ride_id).await;
    assert_eq!(postings(&app, ride_id), posted);
    assert_eq!(app.count("charges"), 1);
}

#[tokio::test]
async fn a_completion_a_cancellation_fee_and_a_tip_after_capture_each_post_their_charge() {
    let app = spawn_app().await;
    let completed = app.held_ride("held", "pm_card_visa").await;
    app.post_complete(completed, "complete", r#"{"final_amount_cents": 1500}"#)
        .await
        .assert_status(200);
    assert_eq!(
        postings(&app, completed),
        vec![
            posting(
                "capture",
                &[("gateway:usd", 1500), ("platform:unassigned:usd", -1500)]
            ),
            posting(
                "fee",
                &[
                    ("gateway:usd", -fee_of(1500)),
                    ("platform:fees:usd", fee_of(1500))
                ]
            ),
        ]
    );

    let canceled = app.held_ride("to-cancel", "pm_card_visa").await;
    app.post_cancel(canceled, "cancel", r#"{"cancellation_fee_cents": 500}"#)
        .await
        .assert_status(200);
    assert_eq!(
        postings(&app, canceled),
        vec![
            posting(
                "capture",
                &[("gateway:usd", 500), ("platform:unassigned:usd", -500)]
            ),
            posting("fee", &[("gateway:usd", -45), ("platform:fees:usd", 45)]),
        ]
    );

    // A tip after the fare was captured is a charge of its own.
    let tipped = app.saved_card_ride("saved").await;
    app.post_tip(tipped, "tip", r#"{"amount_cents": 300}"#)
        .await
        .assert_status(200);
    let tip = [
        posting(
            "capture",
            &[("gateway:usd", 300), ("platform:unassigned:usd", -300)],
        ),
        posting(
            "fee",
            &[
                ("gateway:usd", -fee_of(300)),
                ("platform:fees:usd", fee_of(300)),
            ],
        ),
    ];
    assert_eq!(postings(&app, tipped)[2..], tip[..]);
    assert_eq!(
        app.count(&format!(
            "charges WHERE ride_id = {}",
            Id::of(&app.ride(tipped).await["id"]).row_key()
        )),
        2
    );
}
