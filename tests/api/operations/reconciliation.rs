//! Reconciliation with the gateway: a call the gateway answered with a
//! failure it saved under the call's key (Stripe's 500 replayed to every
//! retry) is found in the gateway's lists and recorded, or proven never
//! made and sent again under the next generation's key, or, past the
//! deadline, ended with a stored 502; a payment no ride records is
//! released. Passes are driven directly, never waited for.

use diesel::RunQueryDsl;
use ridepay::config::{GatewayKind, Settings};
use ridepay_doubles::intents::save_failure;
use serde_json::json;

use crate::common::app::{
    held_ride, ride_with, spawn_app_with, spawn_server, Answer, TestApp, RIDE,
};
use crate::common::database::count;
use crate::common::database::{lose_rides, sql};
use crate::common::gateway::{
    reconcile, reconcile_with, records_count, spawn_fake_gateway, stripe_settings,
};
use crate::common::ids::Id;
use crate::common::keys::RideRequest;
use crate::common::server_process::run_json;

/// The gateway's PaymentIntents: (metadata generation, status), oldest first.
fn intents(app: &TestApp) -> Vec<(String, String)> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        generation: String,
        #[diesel(sql_type = diesel::sql_types::Text)]
        status: String,
    }
    diesel::sql_query(
        "SELECT coalesce(metadata->>'ridepay_generation', '') AS generation, status \
         FROM simulated_payment_intents ORDER BY created_at, id",
    )
    .load::<Row>(&mut app.db())
    .unwrap()
    .into_iter()
    .map(|row| (row.generation, row.status))
    .collect()
}

/// A request answered 503 while its key waits for reconciliation.
fn assert_reconciling(answer: &Answer) {
    let problem = answer.assert_problem(503, "payment-gateway-unavailable");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("reconciliation"),
        "{problem}"
    );
    assert!(answer.header("retry-after").is_some());
}

fn waits_for_reconciliation(app: &TestApp, key: &str) -> bool {
    count(
        &mut app.db(),
        &format!("idempotency_keys WHERE key = '{key}' AND outcome_unknown_at IS NOT NULL"),
    ) == 1
}

/// A key whose create the gateway failed and saved before acting: every
/// retry meets the saved 500.
async fn saved_before_acting(app: &TestApp, key: &str) {
    save_failure(&mut app.db(), &RideRequest::new(app, key).payment_key()).unwrap();
    assert_reconciling(&app.post_ride(key, RIDE).await);
    assert!(waits_for_reconciliation(app, key));
}

#[tokio::test]
async fn a_saved_500_before_the_gateway_acted_is_sent_again_under_the_next_generation() {
    let app = spawn_app_with(|_| {}).await;
    saved_before_acting(&app, "saved before").await;
    // Neither the client's retries nor the completer call again.
    assert_reconciling(&app.post_ride("saved before", RIDE).await);
    assert_eq!(intents(&app), []);

    let summary = reconcile(&app);

    assert_eq!((summary.reissued, summary.recorded), (1, 0), "{summary:?}");
    let ride = app.post_ride("saved before", RIDE).await;
    assert_eq!(ride.status, 201, "{}", ride.body_text());
    assert_eq!(intents(&app), [("1".to_owned(), "succeeded".to_owned())]);
    assert_eq!(
        ride.json()["payment_intent_id"],
        app.ride(Id::of(&ride.json()["id"])).await["payment_intent_id"]
    );
    assert!(!waits_for_reconciliation(&app, "saved before"));
    // A later pass finds the payment recorded, and nothing to do.
    let later = reconcile(&app);
    assert_eq!(
        later,
        ridepay::reconciliation::Summary {
            matched: 1,
            ..Default::default()
        }
    );
}

/// The search lags an hour, as Stripe's may in an incident: the list finds
/// the payment all the same.
#[tokio::test]
async fn a_saved_500_after_the_gateway_acted_is_recorded_and_never_made_again() {
    let lagging = |settings: &mut Settings| {
        settings.gateway.simulated.search_lag = std::time::Duration::from_secs(3600);
    };
    let app = spawn_app_with(|settings| {
        lagging(settings);
        settings.gateway.simulated.lost_response_rate = 1.0;
        // No event may record the payment before its key meets the 500.
        settings.gateway.simulated.events_enabled = false;
    })
    .await;
    // The gateway acts and the answer is lost; then it saves a 500 in its
    // place.
    app.post_ride("saved after", RIDE)
        .await
        .assert_problem(503, "payment-gateway-unavailable");
    assert_eq!(intents(&app).len(), 1);
    save_failure(
        &mut app.db(),
        &RideRequest::new(&app, "saved after").payment_key(),
    )
    .unwrap();
    assert_reconciling(&app.post_ride("saved after", RIDE).await);

    let summary = reconcile_with(&app, false, lagging);

    assert_eq!((summary.recorded, summary.reissued), (1, 0), "{summary:?}");
    let ride = app.post_ride("saved after", RIDE).await;
    assert_eq!(ride.status, 201, "{}", ride.body_text());
    assert_eq!(ride.header("idempotent-replayed"), Some("true"));
    assert_eq!(intents(&app), [("0".to_owned(), "succeeded".to_owned())]);
}

#[tokio::test]
async fn past_the_deadline_a_call_proven_never_made_ends_with_a_stored_502() {
    let app = spawn_app_with(|_| {}).await;
    saved_before_acting(&app, "too late").await;
    sql(
        &mut app.db(),
        "UPDATE idempotency_keys SET created_at = now() - interval '13 hours'",
    );

    let summary = reconcile(&app);

    assert_eq!((summary.refused, summary.reissued), (1, 0), "{summary:?}");
    let answer = app.post_ride("too late", RIDE).await;
    answer.assert_problem(502, "payment-gateway-rejected");
    assert_eq!(answer.header("idempotent-replayed"), Some("true"));
    assert_eq!(intents(&app), []);
    assert_eq!(
        count(&mut app.db(), "rides WHERE status = 'payment_failed'"),
        1
    );
}

#[tokio::test]
async fn a_dry_run_reports_what_a_pass_would_do_and_changes_nothing() {
    let app = spawn_app_with(|_| {}).await;
    saved_before_acting(&app, "dry").await;
    let paid = app.post_ride("lost ride", RIDE).await;
    assert_eq!(paid.status, 201);
    lose_rides(&mut app.db(), "payment_intent_id IS NOT NULL");
    sql(
        &mut app.db(),
        "DELETE FROM idempotency_keys WHERE key = 'lost ride'",
    );

    let dry = reconcile_with(&app, true, |_| {});

    assert_eq!((dry.reissued, dry.orphans_refunded), (1, 1), "{dry:?}");
    assert!(waits_for_reconciliation(&app, "dry"));
    assert_eq!(count(&mut app.db(), "released_payments"), 0);
    assert_eq!(count(&mut app.db(), "simulated_refunds"), 0);
    assert_eq!(intents(&app).len(), 1);
    // The real pass does what the dry one said.
    let done = reconcile(&app);
    assert_eq!((done.reissued, done.orphans_refunded), (1, 1), "{done:?}");
}

/// The create of generation 0 surfaces after reconciliation proved it
/// absent and generation 1 was made (as a request the gateway queued can):
/// two holds for one ride, and the one no ride records is cancelled.
#[tokio::test]
async fn a_late_surfacing_earlier_generation_is_cancelled() {
    let app = spawn_app_with(|_| {}).await;
    let body = held_ride("pm_card_visa");
    let request = RideRequest::with_body(&app, "late", &body);
    save_failure(&mut app.db(), &request.payment_key()).unwrap();
    assert_reconciling(&app.post_ride("late", &body).await);
    reconcile(&app);
    let ride = app.post_ride("late", &body).await;
    assert_eq!(ride.status, 201, "{}", ride.body_text());
    assert_eq!(ride.json()["status"], "authorized");
    // Generation 0's PaymentIntent, as the gateway made it late.
    sql(
        &mut app.db(),
        "INSERT INTO simulated_payment_intents (id, client_secret, amount_cents, \
         amount_capturable_cents, amount_received_cents, currency, payment_method, \
         capture_method, status, metadata, gateway) \
         SELECT 'pi_sim_late', 'pi_sim_late_secret', amount_cents, amount_capturable_cents, 0, \
         currency, payment_method, capture_method, status, \
         jsonb_set(metadata, '{ridepay_generation}', '\"0\"'), gateway \
         FROM simulated_payment_intents",
    );

    let summary = reconcile(&app);

    assert_eq!(
        (summary.orphans_cancelled, summary.matched),
        (1, 1),
        "{summary:?}"
    );
    let statuses = intents(&app);
    assert!(
        statuses.contains(&("0".to_owned(), "canceled".to_owned())),
        "{statuses:?}"
    );
    assert!(
        statuses.contains(&("1".to_owned(), "requires_capture".to_owned())),
        "{statuses:?}"
    );
    assert_eq!(
        count(
            &mut app.db(),
            "released_payments WHERE payment_intent_id = 'pi_sim_late' AND action = 'cancel' \
             AND released_at IS NOT NULL"
        ),
        1
    );
    let ride_id = Id::of(&ride.json()["id"]);
    assert_eq!(app.ride(ride_id).await["status"], "authorized");
}

/// An asynchronous failover lost the ride and its key after the client was
/// answered: its payment, a capture, is refunded; the client's retry then
/// meets the released payment (the gateway answers the create again) and
/// ends with a 502, not a ride recording money given back.
#[tokio::test]
async fn a_payment_whose_ride_was_lost_is_refunded_and_its_retry_ends_with_a_502() {
    let app = spawn_app_with(|_| {}).await;
    let first = app.post_ride("lost", RIDE).await;
    assert_eq!(first.status, 201);
    lose_rides(&mut app.db(), "true");
    sql(&mut app.db(), "DELETE FROM idempotency_keys");

    let summary = reconcile(&app);

    assert_eq!(summary.orphans_refunded, 1, "{summary:?}");
    assert_eq!(
        count(&mut app.db(), "simulated_refunds WHERE amount_cents = 2000"),
        1
    );
    let retried = app.post_ride("lost", RIDE).await;
    retried.assert_problem(502, "payment-gateway-rejected");
    assert_eq!(count(&mut app.db(), "simulated_payment_intents"), 1);
    assert_eq!(
        count(&mut app.db(), "rides WHERE status = 'payment_failed'"),
        1
    );
    // Released once: a later pass finds nothing to do.
    let again = reconcile(&app);
    assert_eq!((again.orphans_refunded, again.orphans_cancelled), (0, 0));
    assert_eq!(count(&mut app.db(), "simulated_refunds"), 1);
    // What the payment moved is posted with its release, against suspense:
    // its capture, the gateway's fee, the refund that gave it back.
    let fee = crate::ledger::fee_of(2000);
    assert_eq!(
        crate::ledger::postings_without_ride(&app),
        [
            crate::ledger::posting(
                "capture",
                &[("gateway:usd", 2000), ("platform:suspense:usd", -2000)]
            ),
            crate::ledger::posting("fee", &[("gateway:usd", -fee), ("platform:fees:usd", fee)]),
            crate::ledger::posting(
                "refund",
                &[("gateway:usd", -2000), ("platform:suspense:usd", 2000)]
            ),
        ]
    );
    crate::ledger::assert_exact(&app, "after the release");
}

/// Refunds through a gateway that saves a 500 for every refund call (half
/// before acting, half after): each key ends with one refund.
#[tokio::test]
async fn a_refund_whose_answer_was_a_saved_500_is_not_made_twice() {
    let app = spawn_app_with(|_| {}).await;
    let saving = spawn_server(&app.database_url, |settings| {
        settings.gateway.simulated.saved_error_rate = 1.0;
    })
    .await;
    let paid = app.post_ride("paid", RIDE).await;
    let ride_id = Id::of(&paid.json()["id"]);
    let body = r#"{"amount_cents": 100}"#;
    let keys: Vec<String> = (0..6).map(|i| format!("refund {i}")).collect();
    let refund_through_saving = |key: &str| {
        let (app, saving) = (&app, &saving);
        let key = key.to_owned();
        async move {
            app.post_refund_to(saving, &app.user.api_key, ride_id, &key, body)
                .await
                .expect("the server answers")
        }
    };
    for key in &keys {
        refund_through_saving(key)
            .await
            .assert_problem(503, "payment-gateway-unavailable");
        assert_reconciling(&refund_through_saving(key).await);
    }

    let summary = reconcile(&app);

    assert_eq!(
        summary.recorded + summary.reissued,
        keys.len(),
        "{summary:?}"
    );
    for key in &keys {
        let refund = app.post_refund(ride_id, key, body).await;
        assert_eq!(refund.status, 201, "{key}: {}", refund.body_text());
    }
    assert_eq!(count(&mut app.db(), "simulated_refunds"), keys.len() as i64);
    assert_eq!(
        app.ride(ride_id).await["amount_refunded_cents"],
        json!(100 * keys.len())
    );
}

/// The same through Stripe's HTTP API: the fake gateway saves a 500 for
/// half its calls (half of those after acting) and answers retries with it
/// replayed; reconciliation (whose own calls meet the same faults) runs
/// until every key ends, each with one live payment and no hold left
/// without a ride.
#[tokio::test]
async fn saved_500s_through_stripe_end_with_one_payment_per_key() {
    let (fake, records) = spawn_fake_gateway(|faults| faults.saved_error_rate = 0.5);
    let stripe = |settings: &mut Settings| {
        settings.gateway.kind = GatewayKind::Stripe;
        settings.gateway.stripe = stripe_settings(&fake);
    };
    let app = spawn_app_with(stripe).await;
    let keys: Vec<String> = (0..8).map(|i| format!("stripe {i}")).collect();
    let body = |i: usize| ride_with(json!({ "amount_cents": 1000 + i }));
    let mut answers = Vec::new();
    for pass in 0..40 {
        answers.clear();
        for (i, key) in keys.iter().enumerate() {
            answers.push(app.post_ride(key, &body(i)).await);
        }
        if answers.iter().all(|answer| answer.status == 201) {
            break;
        }
        for answer in &answers {
            if answer.status != 201 {
                answer.assert_problem(503, "payment-gateway-unavailable");
            }
        }
        reconcile_with(&app, false, stripe);
        assert!(pass < 39, "keys never ended");
    }
    let paid: Vec<&str> = answers
        .iter()
        .map(|answer| {
            answer.json()["payment_intent_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .map(|id| &*Box::leak(id.into_boxed_str()))
        .collect();
    for id in &paid {
        assert_eq!(
            records_count(
                &records,
                &format!("WHERE id = '{id}' AND status = 'succeeded'")
            ),
            1
        );
    }
    // Every PaymentIntent the gateway made is a recorded ride's, or was
    // released.
    assert_eq!(
        records_count(&records, "WHERE status <> 'canceled'"),
        keys.len() as i64
    );
}

/// Neither the completer nor a retry calls the gateway for a key left to
/// reconciliation, however long it has waited: the saved 500 would only be
/// answered again. `ridepay keys stuck` says what reconciliation will do.
#[tokio::test]
async fn a_key_left_to_reconciliation_is_left_to_it() {
    let app = spawn_app_with(|_| {}).await;
    saved_before_acting(&app, "left").await;
    crate::common::keys::expire_leases(&app);
    let context = crate::operations::workers::context(&app, Default::default());

    let report = crate::operations::workers::complete_once(
        &context,
        &crate::operations::workers::completer_settings(1),
    );

    assert_eq!(report, Default::default());
    assert!(waits_for_reconciliation(&app, "left"));
    let stuck = run_json(
        &app.database_url,
        &["keys", "stuck", "--idle-secs", "0"],
        &[],
    );
    let next = stuck["next"].as_str().unwrap();
    assert!(
        next.contains("reconciliation") && next.contains("generation 1"),
        "{next}"
    );
}

/// Completions and cancellations through a gateway that saves a 500 for
/// every call: the raise, the capture and the fee's capture are each made
/// once, and the rides end as their requests asked.
#[tokio::test]
async fn captures_raises_and_cancellations_whose_answer_was_a_saved_500_are_made_once() {
    let app = spawn_app_with(|_| {}).await;
    let saving = spawn_server(&app.database_url, |settings| {
        settings.gateway.simulated.saved_error_rate = 1.0;
    })
    .await;
    // (action, body, the ride's status and captured amount at the end)
    let asked = [
        (
            "complete",
            r#"{"final_amount_cents": 1500}"#,
            "captured",
            1500,
        ),
        (
            "complete",
            r#"{"final_amount_cents": 2600}"#,
            "captured",
            2600,
        ),
        (
            "cancel",
            r#"{"cancellation_fee_cents": 300}"#,
            "canceled",
            300,
        ),
        ("cancel", r#"{}"#, "canceled", 0),
    ];
    let mut rides = Vec::new();
    for (i, (action, body, ..)) in asked.iter().enumerate() {
        let ride_id = app.held_ride(&format!("ride {i}"), "pm_card_visa").await;
        let key = format!("{action} {i}");
        let url = format!("{saving}/api/rides/{ride_id}/{action}");
        let through_saving = || app.post_idempotent(&url, &app.user.api_key, &key, body);
        through_saving()
            .await
            .unwrap()
            .assert_problem(503, "payment-gateway-unavailable");
        let answer = through_saving().await.unwrap();
        assert_reconciling(&answer);
        rides.push((ride_id, key));
    }

    // Some calls are sent again (a raise first, then its capture): as many
    // passes as it takes, each resolving what the last one left.
    for _ in 0..4 {
        reconcile(&app);
    }

    for ((ride_id, key), (action, body, status, captured)) in rides.iter().zip(asked) {
        let path = format!("/api/rides/{ride_id}/{action}");
        let answer = app.post_as(&app.user, &path, key, body).await;
        assert_eq!(answer.status, 200, "{key}: {}", answer.body_text());
        let ride = app.ride(*ride_id).await;
        assert_eq!(
            (
                ride["status"].as_str(),
                ride["amount_captured_cents"].as_i64()
            ),
            (Some(status), Some(captured)),
            "{ride}"
        );
        assert!(
            ride["amount_authorized_cents"].as_i64() >= ride["amount_captured_cents"].as_i64(),
            "{ride}"
        );
    }
    // One capture call per PaymentIntent the gateway kept, whatever its
    // generation.
    assert_eq!(
        count(
            &mut app.db(),
            "(SELECT parameters->>'intent_id' FROM simulated_intent_calls \
              WHERE operation = 'capture' GROUP BY 1 HAVING count(*) > 1) AS twice"
        ),
        0
    );
}

/// One pass at a time across instances: a pass finds the lease held and
/// does nothing; once the holder's lease has run out (it died), the next
/// pass runs.
#[tokio::test]
async fn a_pass_runs_only_while_no_other_holds_the_lease() {
    let app = spawn_app_with(|_| {}).await;
    saved_before_acting(&app, "one at a time").await;
    sql(
        &mut app.db(),
        "UPDATE reconciliation SET holder = gen_random_uuid(), \
         held_until = now() + interval '1 hour'",
    );

    let skipped = reconcile(&app);

    assert!(skipped.skipped, "{skipped:?}");
    assert!(waits_for_reconciliation(&app, "one at a time"));
    sql(
        &mut app.db(),
        "UPDATE reconciliation SET held_until = now() - interval '1 second'",
    );
    let ran = reconcile(&app);
    assert_eq!((ran.skipped, ran.reissued), (false, 1), "{ran:?}");
    assert_eq!(
        count(&mut app.db(), "reconciliation WHERE holder IS NULL"),
        1
    );
}

/// `ridepay reconcile` runs one pass and prints its summary; `--dry-run`
/// first says what it would do and does nothing.
#[tokio::test]
async fn ridepay_reconcile_prints_its_summary_and_a_dry_run_changes_nothing() {
    let app = spawn_app_with(|_| {}).await;
    saved_before_acting(&app, "from the command line").await;
    let run = |args: &[&str]| {
        let args = [&["reconcile"], args].concat();
        run_json(
            &app.database_url,
            &args,
            &[("RECONCILE_SEARCH_LAG_SECS", "0")],
        )
    };

    let dry = run(&["--dry-run", "--since", "2h"]);
    assert!(waits_for_reconciliation(&app, "from the command line"));
    let done = run(&[]);

    // The pass that made the payment then finds it recorded.
    assert_eq!((&dry["matched"], &done["matched"]), (&json!(0), &json!(1)));
    for summary in [&dry, &done] {
        assert_eq!(summary["reissued"], 1, "{summary}");
        for field in [
            "recorded",
            "orphans_cancelled",
            "orphans_refunded",
            "needs_attention",
        ] {
            assert_eq!(summary[field], 0, "{field}: {summary}");
        }
    }
    assert_eq!(
        app.post_ride("from the command line", RIDE).await.status,
        201
    );
}

/// A change at the gateway whose event never came (here the hold lapsed
/// with no event sent): the pass that matches the PaymentIntent to its ride
/// moves the ride as the event would have.
#[tokio::test]
async fn a_ride_whose_event_never_came_takes_the_gateways_state() {
    let app = spawn_app_with(|_| {}).await;
    let ride_id = app.held_ride("held", "pm_card_visa").await;
    sql(
        &mut app.db(),
        "UPDATE simulated_payment_intents SET status = 'canceled', \
         cancellation_reason = 'automatic', amount_capturable_cents = 0",
    );

    let summary = reconcile(&app);

    assert_eq!(summary.matched, 1, "{summary:?}");
    assert_eq!(app.ride(ride_id).await["status"], "expired");
    assert_eq!(
        count(&mut app.db(), "audit_records WHERE action = 'ride.expired'"),
        1
    );
}
