//! Refunds take the driver's share back from a transfer already made: a
//! reversal owed by the refund's posting, made once by the worker; what
//! the gateway refuses to reverse stays as the driver's debt, netted by
//! their next transfer; a refund that fails after its reversal owes the
//! driver a new transfer, and one that fails before it cancels it.

use diesel::prelude::*;
use ridepay::config::SimulatedGatewaySettings;
use ridepay::context::ServiceContext;
use ridepay::drivers::reversals;
use ridepay::drivers::transfers::{make_due, Made};
use serde_json::{json, Value};

use super::{account_of, active_driver};
use crate::common::app::{
    create_platform_user, ride_with, spawn_app, spawn_app_with, TestApp, TestUser,
};
use crate::common::gateway::{stripe_event, WEBHOOK_SECRET};
use crate::common::ids::Id;
use crate::common::keys::service_context;
use crate::common::settings::pool;
use crate::ledger::assert_exact;

/// A ride paid with `payment_method` (2000), assigned to `driver`, and
/// its transfer (1600) made.
async fn transferred(app: &TestApp, platform: &TestUser, driver: Id, key: &str, card: &str) -> Id {
    let paid = app
        .post_ride(key, &ride_with(json!({"payment_method": card})))
        .await;
    paid.assert_status(201);
    let ride = Id::of(&paid.json()["id"]);
    app.post_assign_driver(platform, ride, driver, &format!("assign {key}"))
        .await
        .assert_status(200);
    assert_eq!(make_due(&app.service_context(), 10).unwrap().made, 1);
    ride
}

/// A ride paid with `card`, its driver paid their 1600 and their money made
/// available at the gateway, then all of it refunded: (platform, driver,
/// ride).
async fn refunded_after_its_transfer(app: &TestApp, card: &str) -> (TestUser, Id, Id) {
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(app, &platform, "ada").await;
    let ride = transferred(app, &platform, driver, "ride", card).await;
    let account = account_of(app, &platform.api_key, driver).await;
    ridepay_doubles::accounts::make_available(&mut app.db(), &account).unwrap();
    app.post_refund(ride, "refund", "{}")
        .await
        .assert_status(201);
    (platform, driver, ride)
}

/// The reversals ridepay owes or made: (amount, status), oldest first.
fn reversals_owed(app: &TestApp) -> Vec<(i64, String)> {
    use ridepay::schema::transfer_reversals as owed;
    owed::table
        .order(owed::id)
        .select((owed::amount_cents, owed::status))
        .load(&mut app.db())
        .unwrap()
}

/// The reversals the gateway made: their amounts.
fn reversed_at_the_gateway(app: &TestApp) -> Vec<i64> {
    use ridepay_doubles::schema::simulated_transfer_reversals as made;
    made::table
        .order(made::created_at)
        .select(made::amount_cents)
        .load(&mut app.db())
        .unwrap()
}

async fn balance(app: &TestApp, platform_key: &str, driver: Id) -> Value {
    app.get_as(platform_key, &format!("/api/drivers/{driver}"))
        .await
        .json()["balances"][0]
        .clone()
}

fn pass(cx: &ServiceContext) -> Made {
    reversals::make_due(cx, 10).unwrap()
}

#[tokio::test]
async fn refunds_after_the_transfer_take_the_share_back_once() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let ride = transferred(&app, &platform, driver, "ride", "pm_card_visa").await;
    let account = account_of(&app, &platform.api_key, driver).await;
    ridepay_doubles::accounts::make_available(&mut app.db(), &account).unwrap();

    // A quarter of the fare back: a quarter of the share.
    app.post_refund(ride, "quarter", r#"{"amount_cents": 500}"#)
        .await
        .assert_status(201);
    assert_eq!(reversals_owed(&app), [(400, "pending".to_owned())]);
    assert_eq!(
        pass(&app.service_context()),
        Made {
            made: 1,
            ..Default::default()
        }
    );
    // The rest, made by two workers at once: once.
    app.post_refund(ride, "rest", "{}").await.assert_status(201);
    let (one, other) = (app.service_context(), app.service_context());
    let passes = std::thread::scope(|scope| {
        let first = scope.spawn(|| pass(&one));
        let second = scope.spawn(|| pass(&other));
        [first.join().unwrap(), second.join().unwrap()]
    });
    assert_eq!(
        passes.iter().map(|done| done.made).sum::<usize>(),
        1,
        "{passes:?}"
    );
    assert_eq!(pass(&app.service_context()), Made::default());

    assert_eq!(
        reversals_owed(&app),
        [(400, "reversed".to_owned()), (1200, "reversed".to_owned())]
    );
    assert_eq!(reversed_at_the_gateway(&app), [400, 1200]);
    assert_eq!(
        balance(&app, &platform.api_key, driver).await,
        json!({"currency": "usd", "payable_cents": 0, "transferred_cents": 0})
    );
    assert_eq!(
        app.count("ledger_transactions WHERE kind = 'transfer_reversal'"),
        2
    );
    assert_exact(&app, "refunds reversed");
}

/// The driver's money is still pending at the gateway (Stripe's two days):
/// the reversal is refused with `balance_insufficient`, and what it would
/// have taken stays as the driver's debt until their next transfer.
#[tokio::test]
async fn a_reversal_refused_leaves_a_debt_that_the_next_transfer_nets() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let ride = transferred(&app, &platform, driver, "ride", "pm_card_visa").await;
    app.post_refund(ride, "half", r#"{"amount_cents": 1000}"#)
        .await
        .assert_status(201);

    assert_eq!(
        pass(&app.service_context()),
        Made {
            failed: 1,
            ..Default::default()
        }
    );
    assert_eq!(reversals_owed(&app), [(800, "failed".to_owned())]);
    assert!(reversed_at_the_gateway(&app).is_empty());
    // Refused for good: not tried again.
    assert_eq!(pass(&app.service_context()), Made::default());
    assert_eq!(
        balance(&app, &platform.api_key, driver).await["payable_cents"],
        -800
    );

    // The next ride's share nets the debt.
    let paid = app.paid_ride("next").await;
    app.post_assign_driver(&platform, paid, driver, "assign next")
        .await
        .assert_status(200);
    let next: (i64, i64, String) = {
        use ridepay::schema::transfers as owed;
        owed::table
            .order(owed::id.desc())
            .select((owed::amount_cents, owed::netted_cents, owed::status))
            .first(&mut app.db())
            .unwrap()
    };
    assert_eq!(next, (800, 800, "pending".to_owned()));
    assert_eq!(make_due(&app.service_context(), 10).unwrap().made, 1);
    assert_eq!(
        balance(&app, &platform.api_key, driver).await,
        json!({"currency": "usd", "payable_cents": 0, "transferred_cents": 2400})
    );
    assert_exact(&app, "debt netted");
}

/// An answer lost on the way back, then a 500 the gateway saved under the
/// key (acted or not, as the dice said): one reversal either way.
#[tokio::test]
async fn lost_and_saved_answers_make_one_reversal() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let account = account_of(&app, &platform.api_key, driver).await;
    let faulty =
        |faults: SimulatedGatewaySettings| service_context(pool(&app.database_url), faults);
    let clean = app.service_context();

    let first = transferred(&app, &platform, driver, "first", "pm_card_visa").await;
    ridepay_doubles::accounts::make_available(&mut app.db(), &account).unwrap();
    app.post_refund(first, "refund first", "{}")
        .await
        .assert_status(201);
    let lost = faulty(SimulatedGatewaySettings {
        lost_response_rate: 1.0,
        ..Default::default()
    });
    assert_eq!(pass(&lost).left, 1);
    assert_eq!(reversed_at_the_gateway(&app).len(), 1);
    assert_eq!(pass(&clean).made, 1);
    assert_eq!(reversed_at_the_gateway(&app).len(), 1);

    let second = transferred(&app, &platform, driver, "second", "pm_card_visa").await;
    ridepay_doubles::accounts::make_available(&mut app.db(), &account).unwrap();
    app.post_refund(second, "refund second", "{}")
        .await
        .assert_status(201);
    let saved = faulty(SimulatedGatewaySettings {
        saved_error_rate: 1.0,
        ..Default::default()
    });
    assert_eq!(pass(&saved).left, 1);
    let acted = reversed_at_the_gateway(&app).len() == 2;
    let looked_up = pass(&clean);
    assert_eq!(looked_up.made, usize::from(acted), "{looked_up:?}");
    if !acted {
        assert_eq!(
            app.count("transfer_reversals WHERE generation = 1 AND status = 'pending'"),
            1
        );
        assert_eq!(pass(&clean).made, 1);
    }
    assert_eq!(reversed_at_the_gateway(&app), [1600, 1600]);
    assert_eq!(app.count("transfer_reversals WHERE status = 'reversed'"), 2);
    assert_exact(&app, "lost and saved answers");
}

/// The server with the simulated gateway's own events off: these tests
/// tell it when a refund failed.
async fn refunds_failing_on_cue() -> TestApp {
    spawn_app_with(|s| {
        s.gateway.stripe.webhook_secret = Some(WEBHOOK_SECRET.to_owned().into());
        s.gateway.simulated.events_enabled = false;
    })
    .await
}

/// The gateway fails `ride`'s refund now, and says so.
async fn refund_fails(app: &TestApp, ride: Id) {
    use ridepay_doubles::schema::simulated_refunds;
    diesel::update(simulated_refunds::table)
        .set(simulated_refunds::settles_at.eq(diesel::dsl::now))
        .execute(&mut app.db())
        .unwrap();
    let intent: Option<String> = {
        use ridepay::public_ids::RidePublicId;
        use ridepay::schema::rides;
        rides::table
            .filter(rides::public_id.eq(ride.public::<RidePublicId>()))
            .select(rides::payment_intent_id)
            .first(&mut app.db())
            .unwrap()
    };
    let event = stripe_event(
        "evt_refund_failed",
        "charge.refund.updated",
        chrono::Utc::now().timestamp(),
        json!({"id": "re_x", "charge": "ch_x", "payment_intent": intent.unwrap()}),
    );
    let answer = app.post_signed_webhook(&event).await;
    assert_eq!(answer.status, 200);
    assert_eq!(app.count("refunds WHERE status = 'failed'"), 1);
}

#[tokio::test]
async fn a_refund_that_fails_after_its_reversal_owes_the_driver_a_new_transfer() {
    let app = refunds_failing_on_cue().await;
    let (platform, driver, ride) = refunded_after_its_transfer(&app, "pm_card_refundFail").await;
    assert_eq!(pass(&app.service_context()).made, 1);

    refund_fails(&app, ride).await;
    assert_eq!(
        app.count("transfers WHERE reowes_reversal_id IS NOT NULL AND status = 'pending' AND amount_cents = 1600"),
        1
    );
    assert_eq!(make_due(&app.service_context(), 10).unwrap().made, 1);
    assert_eq!(app.count("transfers WHERE status = 'paid'"), 2);
    assert_eq!(
        balance(&app, &platform.api_key, driver).await,
        json!({"currency": "usd", "payable_cents": 0, "transferred_cents": 1600})
    );
    assert_exact(&app, "refund failed after its reversal");
}

#[tokio::test]
async fn a_refund_that_fails_before_its_reversal_cancels_it() {
    let app = refunds_failing_on_cue().await;
    let (platform, driver, ride) = refunded_after_its_transfer(&app, "pm_card_refundFail").await;
    assert_eq!(reversals_owed(&app), [(1600, "pending".to_owned())]);

    refund_fails(&app, ride).await;
    assert_eq!(reversals_owed(&app), [(1600, "canceled".to_owned())]);
    assert_eq!(pass(&app.service_context()), Made::default());
    assert!(reversed_at_the_gateway(&app).is_empty());
    assert_eq!(app.count("transfers"), 1);
    assert_eq!(
        balance(&app, &platform.api_key, driver).await,
        json!({"currency": "usd", "payable_cents": 0, "transferred_cents": 1600})
    );
    assert_exact(&app, "refund failed before its reversal");
}

/// A reversal owed and not made yet will take its amount back itself: a
/// transfer owed meanwhile is not netted against it too.
#[tokio::test]
async fn a_transfer_owed_while_a_reversal_is_owed_is_not_netted_against_it() {
    let app = spawn_app().await;
    let (platform, driver, _) = refunded_after_its_transfer(&app, "pm_card_visa").await;
    assert_eq!(reversals_owed(&app), [(1600, "pending".to_owned())]);

    let next = app.paid_ride("next").await;
    app.post_assign_driver(&platform, next, driver, "assign next")
        .await
        .assert_status(200);
    assert_eq!(
        app.count("transfers WHERE amount_cents = 1600 AND netted_cents = 0"),
        2
    );
    assert_eq!(pass(&app.service_context()).made, 1);
    assert_eq!(make_due(&app.service_context(), 10).unwrap().made, 1);
    assert_eq!(
        balance(&app, &platform.api_key, driver).await,
        json!({"currency": "usd", "payable_cents": 0, "transferred_cents": 1600})
    );
    assert_exact(&app, "a reversal and a transfer owed at once");
}
