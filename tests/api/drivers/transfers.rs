//! The transfer worker: what a driver is owed is made at the gateway once,
//! under its derived key, across lost and saved answers and two workers at
//! once; a driver not active gets no call until they are active again.

use ridepay::config::SimulatedGatewaySettings;
use ridepay::drivers::transfers::{make_due, Made, DRIVER_NOT_ACTIVE};

use super::{account_of, active_driver};
use crate::common::app::{create_platform_user, spawn_app, TestApp};
use crate::common::ids::Id;
use crate::common::keys::service_context;
use crate::common::settings::pool;
use crate::ledger::assert_exact;

/// A captured ride of 2000 assigned to an active driver: (driver, ride).
async fn owed(app: &TestApp, platform: &crate::common::app::TestUser) -> (Id, Id) {
    let driver = active_driver(app, platform, "ada").await;
    let ride = app.paid_ride("paid").await;
    app.post_assign_driver(platform, ride, driver, "assign")
        .await
        .assert_status(200);
    (driver, ride)
}

/// The transfers the gateway holds: (destination, amount).
fn at_the_gateway(app: &TestApp) -> Vec<(String, i64)> {
    use diesel::prelude::*;
    use ridepay_doubles::schema::simulated_transfers as made;
    made::table
        .select((made::destination, made::amount_cents))
        .load(&mut app.db())
        .unwrap()
}

fn transfer_state(app: &TestApp) -> (String, Option<String>, Option<String>) {
    use diesel::prelude::*;
    use ridepay::schema::transfers;
    transfers::table
        .select((
            transfers::status,
            transfers::gateway_transfer_id,
            transfers::failure_reason,
        ))
        .first(&mut app.db())
        .unwrap()
}

#[tokio::test]
async fn a_driver_is_paid_what_they_are_owed_once() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let (driver, _) = owed(&app, &platform).await;
    let context = app.service_context();

    let made = make_due(&context, 10).unwrap();
    assert_eq!(
        made,
        Made {
            made: 1,
            failed: 0,
            left: 0
        }
    );
    let (status, id, _) = transfer_state(&app);
    assert_eq!(status, "paid");
    assert!(id.unwrap().starts_with("tr_"));
    assert_eq!(at_the_gateway(&app).len(), 1);
    assert_eq!(at_the_gateway(&app)[0].1, 1600);
    // Nothing more is owed.
    assert_eq!(make_due(&context, 10).unwrap(), Made::default());
    assert_eq!(at_the_gateway(&app).len(), 1);

    let balances = app
        .get_as(&platform.api_key, &format!("/api/drivers/{driver}"))
        .await
        .json()["balances"]
        .clone();
    assert_eq!(balances[0]["payable_cents"], 0);
    assert_eq!(balances[0]["transferred_cents"], 1600);
    assert_eq!(app.count("ledger_transactions WHERE kind = 'transfer'"), 1);
    assert_exact(&app, "paid");
}

#[tokio::test]
async fn a_restricted_driver_gets_no_call_until_they_are_active_again() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let (driver, _) = owed(&app, &platform).await;
    let account = account_of(&app, &platform.api_key, driver).await;
    let context = app.service_context();
    let follows = |status: &'static str| {
        let app = &app;
        let account = account.clone();
        async move {
            crate::common::wait::eventually(std::time::Duration::from_secs(10), || {
                app.count(&format!(
                    "drivers WHERE account_id = '{account}' AND status = '{status}'"
                )) == 1
            })
            .await
        }
    };

    ridepay_doubles::accounts::restrict(&mut app.db(), &account).unwrap();
    assert!(follows("restricted").await);
    assert_eq!(make_due(&context, 10).unwrap().failed, 1);
    let (status, id, reason) = transfer_state(&app);
    assert_eq!(
        (status.as_str(), id, reason.as_deref()),
        ("failed", None, Some(DRIVER_NOT_ACTIVE))
    );
    assert!(at_the_gateway(&app).is_empty());
    // Still restricted: not sent again.
    assert_eq!(make_due(&context, 10).unwrap(), Made::default());

    ridepay_doubles::accounts::activate(&mut app.db(), &account).unwrap();
    assert!(follows("active").await);
    assert_eq!(make_due(&context, 10).unwrap().made, 1);
    assert_eq!(transfer_state(&app).0, "paid");
    assert_eq!(at_the_gateway(&app).len(), 1);
    assert_exact(&app, "paid once active again");
}

/// An answer lost after the gateway acted: the same key again finds it
/// made. A 500 the gateway saved under the key (having acted or not, as
/// the dice said): the worker looks in the destination's transfers; made,
/// it is recorded; proven not made, the next pass sends it under the next
/// key. One transfer, whatever happened.
#[tokio::test]
async fn lost_and_saved_answers_make_one_transfer() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    owed(&app, &platform).await;
    let faulty =
        |faults: SimulatedGatewaySettings| service_context(pool(&app.database_url), faults);
    let clean = app.service_context();

    let lost = faulty(SimulatedGatewaySettings {
        lost_response_rate: 1.0,
        ..Default::default()
    });
    assert_eq!(make_due(&lost, 10).unwrap().left, 1);
    assert_eq!(at_the_gateway(&app).len(), 1);
    assert_eq!(make_due(&clean, 10).unwrap().made, 1);
    assert_eq!(at_the_gateway(&app).len(), 1);

    let ride = app.paid_ride("second").await;
    let driver = crate::common::ids::Id::of(
        &app.get_as(&platform.api_key, "/api/drivers").await.json()["data"][0]["id"],
    );
    app.post_assign_driver(&platform, ride, driver, "second")
        .await
        .assert_status(200);
    let saved = faulty(SimulatedGatewaySettings {
        saved_error_rate: 1.0,
        ..Default::default()
    });
    assert_eq!(make_due(&saved, 10).unwrap().left, 1);
    let acted = at_the_gateway(&app).len() == 2;
    // The saved 500 again, then the lookup.
    let looked_up = make_due(&clean, 10).unwrap();
    assert_eq!(looked_up.made, usize::from(acted), "{looked_up:?}");
    if !acted {
        assert_eq!(
            app.count("transfers WHERE generation = 1 AND status = 'pending'"),
            1
        );
        assert_eq!(make_due(&clean, 10).unwrap().made, 1);
    }
    assert_eq!(at_the_gateway(&app).len(), 2);
    assert_eq!(app.count("transfers WHERE status = 'paid'"), 2);
    assert_exact(&app, "lost and saved answers");
}

/// The answer to a transfer lost, then a refund of its charge before the
/// next pass: the first call may have made the transfer, for the amount
/// then, and the gateway would refuse its key with another, so the amount
/// of a transfer once sent stays as it was. The next pass sends the same
/// call and records what the first made: one transfer; what the refund
/// took stays as the driver's debt.
#[tokio::test]
async fn a_transfer_sent_keeps_its_amount_when_its_charge_is_refunded() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let (driver, ride) = owed(&app, &platform).await;
    let lost = service_context(
        pool(&app.database_url),
        SimulatedGatewaySettings {
            lost_response_rate: 1.0,
            ..Default::default()
        },
    );
    assert_eq!(make_due(&lost, 10).unwrap().left, 1);
    app.post_refund(ride, "quarter", r#"{"amount_cents": 500}"#)
        .await
        .assert_status(201);
    assert_eq!(
        app.count("transfers WHERE amount_cents = 1600 AND status = 'pending'"),
        1
    );

    assert_eq!(make_due(&app.service_context(), 10).unwrap().made, 1);
    let account = account_of(&app, &platform.api_key, driver).await;
    assert_eq!(at_the_gateway(&app), [(account, 1600)]);
    assert_eq!(
        app.count("transfers WHERE amount_cents = 1600 AND status = 'paid'"),
        1
    );
    let balances = app
        .get_as(&platform.api_key, &format!("/api/drivers/{driver}"))
        .await
        .json()["balances"]
        .clone();
    assert_eq!(balances[0]["payable_cents"], -400);
    assert_eq!(balances[0]["transferred_cents"], 1600);
    assert_exact(&app, "a lost transfer refunded");
}

/// Two workers at once (two instances): each transfer claimed by one.
#[tokio::test]
async fn two_workers_at_once_make_each_transfer_once() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    for n in 0..3 {
        let driver = active_driver(&app, &platform, &format!("driver{n}")).await;
        let ride = app.paid_ride(&format!("paid {n}")).await;
        app.post_assign_driver(&platform, ride, driver, &format!("assign {n}"))
            .await
            .assert_status(200);
    }
    let (one, other) = (app.service_context(), app.service_context());
    let passes = std::thread::scope(|scope| {
        let first = scope.spawn(|| make_due(&one, 10).unwrap());
        let second = scope.spawn(|| make_due(&other, 10).unwrap());
        [first.join().unwrap(), second.join().unwrap()]
    });
    assert_eq!(
        passes.iter().map(|made| made.made).sum::<usize>(),
        3,
        "{passes:?}"
    );
    assert_eq!(at_the_gateway(&app).len(), 3);
    assert_eq!(app.count("transfers WHERE status = 'paid'"), 3);
    assert_exact(&app, "two workers");
}

/// What ridepay knows of an active driver is older than
/// `DRIVER_STATUS_MAX_AGE_SECS` (the account's event lost, here never
/// sent): the worker reads the account again before paying, and a driver
/// the gateway restricted meanwhile gets no call.
#[tokio::test]
async fn a_driver_known_active_too_long_ago_is_read_again_before_being_paid() {
    let app = crate::common::app::spawn_app_with(|s| {
        s.gateway.simulated.events_enabled = false;
    })
    .await;
    let platform = create_platform_user(&app.database_url);
    let (driver, _) = owed(&app, &platform).await;
    let account = account_of(&app, &platform.api_key, driver).await;
    ridepay_doubles::accounts::restrict(&mut app.db(), &account).unwrap();
    let context = app.service_context();
    // Recently learnt: trusted, and paid (the gateway's refusal would be
    // the second guard; the doubles refuse as Stripe does).
    let made = make_due(&context, 10).unwrap();
    assert_eq!(made.failed, 1, "{made:?}");
    assert!(transfer_state(&app)
        .2
        .unwrap()
        .contains("insufficient_capabilities"));

    // Learnt long ago (as ridepay would know it had it missed the event):
    // read again first, and not sent.
    for setting in [
        "UPDATE drivers SET status = 'active', status_checked_at = now() - interval '1 hour'",
        "UPDATE transfers SET updated_at = now() - interval '2 hours'",
    ] {
        diesel::RunQueryDsl::execute(diesel::sql_query(setting), &mut app.db()).unwrap();
    }
    let sent_before = at_the_gateway(&app).len();
    let made = make_due(&context, 10).unwrap();
    assert_eq!(made.failed, 1, "{made:?}");
    assert_eq!(transfer_state(&app).2.as_deref(), Some(DRIVER_NOT_ACTIVE));
    assert_eq!(at_the_gateway(&app).len(), sent_before);
    assert_eq!(app.count("drivers WHERE status = 'restricted'"), 1);
}

/// A request that may leave a driver owed rings its instance's transfer
/// worker, which makes the transfer (and, after a refund, the reversal) at
/// once, long before its interval is up.
#[tokio::test]
async fn a_request_that_owes_a_driver_wakes_the_transfer_worker() {
    let app = crate::common::app::spawn_app_with(|s| {
        s.drivers.transfers.enabled = true;
        s.drivers.transfers.interval = std::time::Duration::from_secs(3600);
    })
    .await;
    let platform = create_platform_user(&app.database_url);
    let (driver, ride) = owed(&app, &platform).await;
    let paid = crate::common::wait::eventually(std::time::Duration::from_secs(20), || {
        app.count("transfers WHERE status = 'paid'") == 1
    })
    .await;
    assert!(paid);

    let account = account_of(&app, &platform.api_key, driver).await;
    ridepay_doubles::accounts::make_available(&mut app.db(), &account).unwrap();
    app.post_refund(ride, "refund", "{}")
        .await
        .assert_status(201);
    let reversed = crate::common::wait::eventually(std::time::Duration::from_secs(20), || {
        app.count("transfer_reversals WHERE status = 'reversed'") == 1
    })
    .await;
    assert!(reversed);
    assert_exact(&app, "woken");
}
