//! The background workers, in process: the completer and the reaper (the
//! outbox's sender: `outbound_webhooks`, `receipts`).

use std::sync::Arc;
use std::time::Duration;

use diesel::RunQueryDsl;
use ridepay::backoff::Backoff;
use ridepay::config::SimulatedGatewaySettings;
use ridepay::context::ServiceContext;
use ridepay::idempotency::completer::{self, CompleterSettings, Resumable};
use ridepay::idempotency::reaper;
use ridepay::idempotency::KeyRows;
use ridepay::rides::create::RecoveryPoint;
use ridepay::rides::create::RideEndpoint;

use crate::common::app::{spawn_app, spawn_app_with, spawn_server, TestApp, RIDE};
use crate::common::keys::{expire_leases, leave_key_at, service_context, POLICY};
use crate::common::wait::eventually;

pub fn context(app: &TestApp, faults: SimulatedGatewaySettings) -> Arc<ServiceContext> {
    let pool = crate::common::settings::pool(&app.database_url);
    Arc::new(service_context(pool, faults))
}

pub fn completer_settings(max_attempts: i32) -> CompleterSettings {
    CompleterSettings {
        policy: POLICY,
        batch_size: 10,
        max_attempts,
        backoff: Backoff {
            base: Duration::ZERO,
            max: Duration::ZERO,
        },
    }
}

pub fn complete_once(
    context: &Arc<ServiceContext>,
    settings: &CompleterSettings,
) -> completer::CompleterReport {
    let rides = KeyRows::<RideEndpoint>::new(context.clone());
    let endpoints: [&dyn Resumable; 1] = [&rides];
    completer::run_once(&context.pool, &endpoints, settings).unwrap()
}

#[tokio::test]
async fn the_completer_finishes_a_key_released_after_a_gateway_failure() {
    let failing = spawn_app_with(|s| s.gateway.simulated.fail_rate = 1.0).await;
    failing
        .post_ride("abandoned", RIDE)
        .await
        .assert_problem(503, "payment-gateway-unavailable");
    // Another instance, whose completer runs, and no client retry.
    spawn_server(&failing.database_url, |s| s.completer.enabled = true).await;

    let finished = eventually(Duration::from_secs(10), || {
        failing.key_state("abandoned")["recovery_point"] == "finished"
    })
    .await;

    assert!(finished, "{}", failing.key_state("abandoned"));
    assert_eq!(failing.counts(), (1, 1, 1));
    // The client's retry gets the stored response.
    let replay = failing.post_ride("abandoned", RIDE).await;
    assert_eq!(replay.status, 201);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
}

#[tokio::test]
async fn the_completer_finishes_keys_left_at_every_recovery_point_with_one_charge_each() {
    let app = spawn_app().await;
    let charges: Vec<_> = [
        ("at-started", RecoveryPoint::Started),
        ("at-ride-created", RecoveryPoint::RideCreated),
        ("at-charge-completed", RecoveryPoint::ChargeCompleted),
    ]
    .into_iter()
    .map(|(key, point)| leave_key_at(&app, key, point))
    .collect();
    let context = context(&app, SimulatedGatewaySettings::default());
    // Leases still young: the completer leaves them alone.
    assert_eq!(
        complete_once(&context, &completer_settings(5)),
        Default::default()
    );
    expire_leases(&app);

    let report = complete_once(&context, &completer_settings(5));

    assert_eq!(report.finished, 3);
    assert_eq!(app.counts(), (3, 3, 3));
    let made = charges.into_iter().flatten().next().unwrap();
    assert_eq!(
        app.count(&format!("rides WHERE payment_intent_id = '{}'", made.id)),
        1
    );
    assert_eq!(
        app.count("idempotency_keys WHERE recovery_point = 'finished'"),
        3
    );
}

#[tokio::test]
async fn the_completer_backs_off_then_leaves_a_key_for_an_operator() {
    let app = spawn_app().await;
    leave_key_at(&app, "doomed", RecoveryPoint::RideCreated);
    expire_leases(&app);
    let failing = context(
        &app,
        SimulatedGatewaySettings {
            fail_rate: 1.0,
            ..Default::default()
        },
    );

    let first = complete_once(&failing, &completer_settings(2));
    let second = complete_once(&failing, &completer_settings(2));
    let third = complete_once(&failing, &completer_settings(2));

    assert_eq!((first.failed, first.needs_attention), (1, 0));
    assert_eq!((second.failed, second.needs_attention), (1, 1));
    assert_eq!(third, Default::default());
    assert_eq!(
        app.count("idempotency_keys WHERE attempts = 2 AND needs_attention_at IS NOT NULL AND last_error LIKE 'gave up%'"),
        1
    );
    assert_eq!(app.counts(), (1, 0, 1));
    // A client retry is not charged either.
    app.post_ride("doomed", RIDE)
        .await
        .assert_problem(500, "internal-error");
    assert_eq!(app.counts(), (1, 0, 1));
}

#[tokio::test]
async fn no_charge_is_retried_past_the_deadline() {
    let app = spawn_app().await;
    leave_key_at(&app, "stale", RecoveryPoint::RideCreated);
    leave_key_at(&app, "recorded", RecoveryPoint::ChargeCompleted);
    expire_leases(&app);
    diesel::sql_query("UPDATE idempotency_keys SET created_at = now() - interval '13 hours'")
        .execute(&mut app.db())
        .unwrap();
    let context = context(&app, SimulatedGatewaySettings::default());

    let report = complete_once(&context, &completer_settings(5));

    // The key still to charge is left alone; the one already charged finishes.
    assert_eq!((report.finished, report.needs_attention), (1, 1));
    assert_eq!(app.key_state("stale")["recovery_point"], "ride_created");
    assert_eq!(app.key_state("recorded")["recovery_point"], "finished");
    assert_eq!(app.count("simulated_payment_intents"), 1);
    app.post_ride("stale", RIDE)
        .await
        .assert_problem(500, "internal-error");
    assert_eq!(app.count("simulated_payment_intents"), 1);
}

#[tokio::test]
async fn the_reaper_deletes_old_finished_keys_only_and_rides_keep_their_data() {
    let app = spawn_app().await;
    let old = app.post_ride("old", RIDE).await;
    app.post_ride("young", RIDE).await;
    leave_key_at(&app, "unfinished", RecoveryPoint::RideCreated);
    diesel::sql_query(
        "UPDATE idempotency_keys SET created_at = now() - interval '49 hours', \
         updated_at = now() - interval '49 hours' WHERE key IN ('old', 'unfinished')",
    )
    .execute(&mut app.db())
    .unwrap();
    // Made long ago, finished (its last gateway call) lately: kept.
    diesel::sql_query(
        "UPDATE idempotency_keys SET created_at = now() - interval '60 hours' WHERE key = 'young'",
    )
    .execute(&mut app.db())
    .unwrap();

    let deleted = reaper::reap(&mut app.db(), Duration::from_secs(48 * 3600)).unwrap();

    assert_eq!(deleted, 1);
    assert_eq!(app.count("idempotency_keys WHERE key = 'old'"), 0);
    assert_eq!(
        app.count("idempotency_keys WHERE key IN ('young', 'unfinished')"),
        2
    );
    let ride = app.get(old.header("location").unwrap()).await;
    assert_eq!(ride.body, old.body);
    assert_eq!(app.count("rides WHERE idempotency_key_id IS NULL"), 1);
    // After retention the key names a new request. Its gateway key is the
    // one the first request used (it derives from what the client sent):
    // the retention outlasts the gateway's memory of keys (24 hours at
    // Stripe), which the simulated gateway is made to forget here.
    diesel::sql_query("DELETE FROM simulated_intent_calls")
        .execute(&mut app.db())
        .unwrap();
    let reused = app.post_ride("old", RIDE).await;
    assert_eq!(reused.status, 201);
    assert_ne!(reused.json()["id"], old.json()["id"]);
}
