//! The keys and metadata of gateway calls come from what the client sent,
//! never from ids the database assigns: a key row lost at an asynchronous
//! failover, and made again by the client's retry, meets the payment it
//! already made, and a request that gets a lost row's id again makes its
//! own. A key of an earlier call version is resent exactly as it was
//! made, and a key of a version this release does not know is left alone.

use diesel::{Connection, RunQueryDsl};
use ridepay::payments::{self, CaptureMethod, CreateIntent, PaymentGateway};
use ridepay::rides::create::RecoveryPoint;
use ridepay_doubles::{SimulatedGateway, SimulatedGatewaySettings};
use serde_json::json;

use crate::common::app::{ride_with, spawn_app, TestApp, RIDE};
use crate::common::database::count;
use crate::common::database::{lose_rides, sql};
use crate::common::gateway::RETURN_URL;
use crate::common::keys::{expire_leases, leave_key_at, RideRequest};

/// What an asynchronous failover does to the rows of a request the client
/// was answered for: gone, and their ids handed out again.
fn lose_rows_of(app: &TestApp, key: &str) {
    let mut conn = app.db();
    conn.transaction(|conn| {
        let lost = format!(
            "(SELECT r.id FROM rides r JOIN idempotency_keys k \
             ON k.id = r.idempotency_key_id WHERE k.key = '{key}')"
        );
        lose_rides(conn, &format!("id = {lost}"));
        sql(
            conn,
            &format!(
                "SELECT setval('idempotency_keys_id_seq', id, false) FROM idempotency_keys \
                 WHERE key = '{key}'"
            ),
        );
        sql(
            conn,
            &format!("DELETE FROM idempotency_keys WHERE key = '{key}'"),
        );
        diesel::QueryResult::Ok(())
    })
    .unwrap();
}

#[tokio::test]
async fn a_retry_after_a_failover_lost_the_key_row_meets_the_payment_it_already_made() {
    let app = spawn_app().await;
    let first = app.post_ride("lost at the failover", RIDE).await;
    assert_eq!(first.status, 201);
    let intent = first.json()["payment_intent_id"].clone();

    lose_rows_of(&app, "lost at the failover");
    // Another client's request gets the lost key row's id, with other
    // parameters: its own payment.
    let other = app
        .post_ride(
            "another",
            &ride_with(serde_json::json!({ "amount_cents": 2500 })),
        )
        .await;
    assert_eq!(other.status, 201, "{}", other.body_text());
    assert_ne!(other.json()["payment_intent_id"], intent);
    // The client retries the request it was answered for: the gateway
    // answers with the payment it made.
    let retried = app.post_ride("lost at the failover", RIDE).await;
    assert_eq!(retried.status, 201, "{}", retried.body_text());
    assert_eq!(retried.json()["payment_intent_id"], intent);
    assert_eq!(count(&mut app.db(), "simulated_payment_intents"), 2);
}

/// A key in flight from before call version 3, whose hold asks for
/// increments only: the retry sends that very call (its `ridepay2-` key, no
/// overcapture or extended authorization asked), and the gateway answers
/// with the PaymentIntent it made.
#[tokio::test]
async fn a_key_of_call_version_2_is_resent_exactly_as_before() {
    resent_exactly_as_made(2, payments::HoldRequest::INCREMENTS_ONLY).await;
}

/// A key in flight from before call version 4: the retry sends its
/// `ridepay3-` call with neither a `transfer_group` nor the balance
/// transaction asked for, and the gateway answers with the PaymentIntent it
/// made, which brings no balance transaction.
#[tokio::test]
async fn a_key_of_call_version_3_is_resent_exactly_as_before() {
    resent_exactly_as_made(3, payments::HoldRequest::RIDE_HAILING).await;
}

/// A key left at `ride_created` whose PaymentIntent a release of call
/// `version` made (its holds asking `hold`): its retry is answered with
/// that PaymentIntent, which the simulated gateway gives only to the very
/// same call (other parameters under its key are refused).
async fn resent_exactly_as_made(version: i16, hold: payments::HoldRequest) {
    let app = spawn_app().await;
    let key = format!("version {version}");
    leave_key_at(&app, &key, RecoveryPoint::RideCreated);
    let mut conn = app.db();
    sql(
        &mut conn,
        &format!("UPDATE idempotency_keys SET call_version = {version} WHERE key = '{key}'"),
    );
    let request = RideRequest::new(&app, &key);
    let installation = ridepay::startup::Installation::load(&mut conn).unwrap().id;
    let earlier = made_earlier(
        &app,
        CreateIntent {
            idempotency_key: request.payment_key_of_version(version),
            amount_cents: 2000,
            currency: "usd".to_owned(),
            customer: None,
            payment_method: "pm_card_visa".to_owned(),
            capture_method: CaptureMethod::Automatic,
            return_url: RETURN_URL.to_owned(),
            metadata: vec![
                ("ridepay_installation".to_owned(), installation.to_string()),
                ("ridepay_key".to_owned(), request.ridepay_key().to_hex()),
                ("ridepay_generation".to_owned(), "0".to_owned()),
            ],
            hold,
            off_session: false,
            transfer_group: None,
            expand_balance_transaction: false,
        },
    );

    let retried = app.post_ride(&key, RIDE).await;

    assert_eq!(retried.status, 201, "{}", retried.body_text());
    assert_eq!(retried.json()["payment_intent_id"], earlier.id.as_str());
    assert_eq!(earlier.balance_transaction, None);
    assert_eq!(count(&mut conn, "simulated_payment_intents"), 1);
}

/// A new key's calls are of the current call version: its PaymentIntent
/// names the request's transfer group, and each call that can capture asks
/// for the charge's balance transaction, which the hold's answer lacks
/// (nothing captured yet) and the completion's capture brings, with the
/// gateway's fee on what it captured.
#[tokio::test]
async fn a_new_keys_calls_name_its_transfer_group_and_its_capture_brings_the_fee() {
    use diesel::prelude::*;
    use ridepay_doubles::schema::simulated_intent_calls as calls;
    let app = spawn_app().await;
    let ride_id = app.held_ride("held", "pm_card_visa").await;
    app.post_complete(ride_id, "done", r#"{"final_amount_cents": 1800}"#)
        .await
        .assert_status(200);

    let mut conn = app.db();
    let ridepay_key: String = ridepay::schema::idempotency_keys::table
        .filter(ridepay::schema::idempotency_keys::key.eq("held"))
        .select(ridepay::schema::idempotency_keys::ridepay_key.assume_not_null())
        .first(&mut conn)
        .unwrap();
    let kept: Vec<(String, serde_json::Value, serde_json::Value)> = calls::table
        .order(calls::created_at)
        .select((calls::operation, calls::parameters, calls::answer))
        .load(&mut conn)
        .unwrap();
    let [(create, held, hold_answer), (capture, completion, capture_answer)] = &kept[..] else {
        panic!("{kept:#?}");
    };
    assert_eq!((create.as_str(), capture.as_str()), ("create", "capture"));
    assert_eq!(held["transfer_group"], format!("ridepay-{ridepay_key}"));
    assert_eq!(
        (
            &held["expand_balance_transaction"],
            &completion["expand_balance_transaction"]
        ),
        (&json!(true), &json!(true))
    );
    assert_eq!(hold_answer["made"]["balance_transaction"], json!(null));
    assert_eq!(
        capture_answer["made"]["balance_transaction"],
        json!({
            "id": capture_answer["made"]["balance_transaction"]["id"],
            "amount_cents": 1800,
            "fee_cents": 82,
            "net_cents": 1718,
            "currency": "usd",
            "exchange_rate": null,
        })
    );
}

/// `RIDE`'s PaymentIntent as a key of an earlier call version made it; and
/// the key's lease expired, for its retry to take.
fn made_earlier(app: &TestApp, call: CreateIntent) -> payments::PaymentIntent {
    let pool = crate::common::settings::pool(&app.database_url);
    let made = SimulatedGateway::new(pool, SimulatedGatewaySettings::default())
        .create_intent(&call)
        .unwrap();
    expire_leases(app);
    made
}

/// A newer release's key met during a rolling deploy: this release would
/// not make its calls the same way, so it makes none.
#[tokio::test]
async fn a_key_of_a_call_version_this_release_does_not_know_is_left_alone() {
    let app = spawn_app().await;
    leave_key_at(&app, "from a newer release", RecoveryPoint::RideCreated);
    let mut conn = app.db();
    sql(
        &mut conn,
        &format!(
            "UPDATE idempotency_keys SET call_version = {} WHERE key = 'from a newer release'",
            ridepay::idempotency::CURRENT_CALL_VERSION + 1
        ),
    );
    expire_leases(&app);

    let answer = app.post_ride("from a newer release", RIDE).await;

    answer.assert_problem(500, "internal-error");
    assert_eq!(count(&mut conn, "simulated_payment_intents"), 0);
    assert_eq!(
        app.key_state("from a newer release")["recovery_point"],
        "ride_created"
    );
}

/// Metadata names no row: the gateway learns the installation and the
/// request's `ridepay_key`, which the key row holds.
#[tokio::test]
async fn a_payment_intents_metadata_names_the_request_and_no_row() {
    let app = spawn_app().await;
    let ride = app.post_ride("named", RIDE).await;
    assert_eq!(ride.status, 201);
    #[derive(diesel::QueryableByName)]
    struct Named {
        #[diesel(sql_type = diesel::sql_types::Jsonb)]
        metadata: serde_json::Value,
        #[diesel(sql_type = diesel::sql_types::Text)]
        ridepay_key: String,
    }
    let named: Named = diesel::sql_query(
        "SELECT i.metadata, k.ridepay_key FROM simulated_payment_intents i, idempotency_keys k \
         WHERE k.key = 'named'",
    )
    .get_result(&mut app.db())
    .unwrap();
    let installation = ridepay::startup::Installation::load(&mut app.db())
        .unwrap()
        .id;
    assert_eq!(
        named.metadata,
        serde_json::json!({
            "ridepay_installation": installation.to_string(),
            "ridepay_key": named.ridepay_key,
            "ridepay_generation": "0",
        })
    );
}
