//! How many statements a request costs, as PostgreSQL counts them
//! (`pg_stat_statements`, which the suite's own cluster preloads): every
//! round trip on the request's path, the pool's checks, `BEGIN` and
//! `COMMIT` and the simulated gateway's own included. A statement count is
//! not a timing: the budgets below are exact ceilings, and a change that
//! adds a statement to a request fails here.

use diesel::sql_types::BigInt;
use diesel::{QueryableByName, RunQueryDsl};

use ridepay::drivers::transfers::make_due;

use crate::common::app::{create_platform_user, skip, spawn_app_with, TestApp, TestUser, RIDE};
use crate::common::ids::Id;
use crate::drivers::active_driver;

/// Statements per request today. Lower them as round trips go; never raise
/// them without saying why in the commit. The pool checks a connection
/// without a round trip (`db::Connections`); a change is sent with its
/// audit record and staged job as one statement (`db::recorded`); and a
/// request's last phase goes with the key's final write as one statement,
/// with no transaction around it (`idempotency::Finishing`).
///
/// - A replay: the caller with their key row in one SELECT; a GET likewise,
///   with the ride.
/// - A new ride: the caller and their key; the claim's transaction
///   (`BEGIN`, the key inserted at the point its first phase reaches, the
///   ride with its audit record, `COMMIT`); the simulated gateway's one (the
///   PaymentIntent, its event and its kept answer);
///   and the ride paid, with its receipt job and the key finished.
/// - A completion whose hold covers the fare: the caller and their key; the
///   claim's transaction (`BEGIN`, the key, the ride taken with its audit
///   record, `COMMIT`); the simulated gateway's two for the capture (the
///   intent with any kept answer, then the change, its event and its kept
///   answer); and
///   the ride captured, with its receipt job, its audit record and the key
///   finished.
/// - A completion of a ride assigned to a driver: the same, the transfer
///   owed recorded by the statement that captures it.
/// - The driver's transfer, by the transfer worker: the transfer claimed
///   (with its driver's status); the simulated gateway's nine (its
///   transaction: what the charge has left, the account, the kept call and
///   its answer, the charge's intent, the transfer); the transfer recorded
///   under its ride's lock in one statement (posted by its trigger); and the
///   ride's event staged at that commit by a deferred trigger, which
///   `pg_stat_statements` counts as a statement of its own.
const NEW_RIDE: i64 = 7;
const REPLAY: i64 = 1;
const GET: i64 = 1;
const COMPLETION: i64 = 8;
const ASSIGNED_COMPLETION: i64 = 8;
const TRANSFER: i64 = 12;

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    count: i64,
}

/// Whether this database's cluster counts statements (the suite's own
/// cluster does; a server of one's own may not preload the module).
fn counting(app: &TestApp) -> bool {
    diesel::sql_query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .execute(&mut app.db())
        .is_ok()
        && diesel::sql_query("SELECT count(*) AS count FROM pg_stat_statements")
            .get_result::<Count>(&mut app.db())
            .is_ok()
}

/// The statements clients sent to this database while `request` ran (the
/// test's own, on a connection opened before, left out).
async fn statements_of<F: std::future::Future>(app: &TestApp, request: F) -> i64 {
    let this_database = "(SELECT oid FROM pg_database WHERE datname = current_database())";
    let mut conn = app.db();
    diesel::sql_query(format!(
        "SELECT pg_stat_statements_reset(0, {this_database}, 0)"
    ))
    .execute(&mut conn)
    .unwrap();
    request.await;
    diesel::sql_query(format!(
        "SELECT COALESCE(sum(calls), 0)::bigint AS count FROM pg_stat_statements \
         WHERE dbid = {this_database} AND query NOT LIKE '%pg_stat_statements%'"
    ))
    .get_result::<Count>(&mut conn)
    .unwrap()
    .count
}

/// A ride held under `key` and assigned to `driver`.
async fn assigned_ride(app: &TestApp, platform: &TestUser, driver: Id, key: &str) -> Id {
    let ride = app.held_ride(key, "pm_card_visa").await;
    app.post_assign_driver(platform, ride, driver, &format!("assign {key}"))
        .await
        .assert_status(200);
    ride
}

#[tokio::test]
async fn a_new_ride_a_replay_a_get_a_completion_and_a_transfer_stay_within_their_statement_budgets()
{
    // Nothing in the background: the gateway's clock and events are off,
    // as are the workers (`Settings::for_database`).
    let app = spawn_app_with(|s| s.gateway.simulated.events_enabled = false).await;
    if !counting(&app) {
        return skip(
            "statements::a_new_ride_...",
            "the database server does not preload pg_stat_statements",
        );
    }
    // The pool's connections are open, and every statement prepared.
    let first = app.paid_ride("warm-1").await;
    let first = format!("/api/rides/{first}");
    for key in ["warm-2", "warm-3"] {
        app.post_ride(key, RIDE).await.assert_status(201);
        app.get(&first).await.assert_status(200);
    }
    let warm = app.held_ride("warm-held", "pm_card_visa").await;
    app.post_complete(warm, "warm-complete", r#"{"final_amount_cents": 1500}"#)
        .await
        .assert_status(200);
    let held = app.held_ride("held", "pm_card_visa").await;
    let platform = create_platform_user(&app.database_url);
    let driver = active_driver(&app, &platform, "ada").await;
    let warm = assigned_ride(&app, &platform, driver, "warm-assigned").await;
    app.post_complete(
        warm,
        "warm-complete-assigned",
        r#"{"final_amount_cents": 1500}"#,
    )
    .await
    .assert_status(200);
    assert_eq!(make_due(&app.service_context(), 10).unwrap().made, 1);
    let assigned = assigned_ride(&app, &platform, driver, "assigned").await;

    let new_ride = statements_of(&app, async {
        app.post_ride("measured", RIDE).await.assert_status(201);
    })
    .await;
    let replay = statements_of(&app, async {
        app.post_ride("measured", RIDE).await.assert_status(201);
    })
    .await;
    let get = statements_of(&app, async {
        app.get(&first).await.assert_status(200);
    })
    .await;
    let completion = statements_of(&app, async {
        app.post_complete(held, "measured-complete", r#"{"final_amount_cents": 1500}"#)
            .await
            .assert_status(200);
    })
    .await;

    let assigned_completion = statements_of(&app, async {
        app.post_complete(
            assigned,
            "measured-assigned",
            r#"{"final_amount_cents": 1500}"#,
        )
        .await
        .assert_status(200);
    })
    .await;
    let context = app.service_context();
    let transfer = statements_of(&app, async {
        assert_eq!(make_due(&context, 10).unwrap().made, 1);
    })
    .await;

    let counted = [
        new_ride,
        replay,
        get,
        completion,
        assigned_completion,
        transfer,
    ];
    let budgets = [
        NEW_RIDE,
        REPLAY,
        GET,
        COMPLETION,
        ASSIGNED_COMPLETION,
        TRANSFER,
    ];
    eprintln!(
        "statements (new ride, replay, GET, completion, assigned completion, transfer): \
         {counted:?}"
    );
    assert!(
        counted.iter().zip(budgets).all(|(n, budget)| *n <= budget),
        "statements (new ride, replay, GET, completion, assigned completion, transfer): \
         {counted:?}, budgets {budgets:?}"
    );
}
