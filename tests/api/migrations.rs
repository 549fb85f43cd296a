//! The migrations to PaymentIntents carry over what a database held before
//! them: rides paid through the Charges API (captured, refunded by their
//! charge), keys in flight whose stored request names `payment_source`, and
//! stored answers, which replay byte for byte.

use std::time::Duration;

use diesel::{Connection, PgConnection, RunQueryDsl};
use diesel_migrations::MigrationHarness;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::helpers::{create_test_database, on_database, spawn_server, TestApp};
use crate::workers::eventually;

/// The last migration before PaymentIntents.
const BEFORE_PAYMENT_INTENTS: &str = "20261201000015";

/// The last migration before gateway keys from what the client sent.
const BEFORE_CALL_VERSIONS: &str = "20261201000018";

/// The body a client sent before PaymentIntents, paying with the user's
/// stored customer, and its canonical form then.
const OLD_BODY: &str = r#"{"origin_lat": 37.77, "origin_lon": -122.42, "target_lat": 37.80, "target_lon": -122.27, "amount_cents": 2000}"#;
const OLD_CANONICAL: &str = r#"{"amount_cents":2000,"currency":"usd","origin_lat":37.77,"origin_lon":-122.42,"payment_source":null,"target_lat":37.8,"target_lon":-122.27}"#;

/// The fingerprint ridepay stored then: version 1, SHA-256 over each part
/// after its length.
fn version_1_fingerprint(path: &str, canonical: &str) -> String {
    let mut hasher = Sha256::new();
    for part in [
        "ridepay-fingerprint-v1".as_bytes(),
        b"POST",
        path.as_bytes(),
        canonical.as_bytes(),
    ] {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    format!("v1:{}", hex::encode(hasher.finalize()))
}

fn sql(conn: &mut PgConnection, statement: &str) {
    diesel::sql_query(statement).execute(conn).unwrap();
}

/// A database as the release before PaymentIntents left it, with a user.
fn database_before_payment_intents() -> TestApp {
    database_at(BEFORE_PAYMENT_INTENTS)
}

/// A database whose newest migration is `last`, with a user.
fn database_at(last: &str) -> TestApp {
    let url = create_test_database();
    let mut conn = PgConnection::establish(&url).unwrap();
    let newest = |conn: &mut PgConnection| {
        let applied = conn.applied_migrations().unwrap();
        applied
            .iter()
            .map(|version| version.to_string())
            .max()
            .unwrap()
    };
    while newest(&mut conn).as_str() > last {
        conn.revert_last_migration(ridepay::db::MIGRATIONS).unwrap();
    }
    assert_eq!(newest(&mut conn), last);
    on_database(url)
}

/// The answer stored with the finished key, as the old release wrote it.
const STORED: &str =
    r#"{"id":1,"status":"charged","charge_id":"ch_legacy_done","payment_source":"cus_test"}"#;

/// A key of `POST /api/rides` with the old request (finished: with
/// `STORED`), and its ride.
fn old_ride(conn: &mut PgConnection, user: i64, key: &str, point: &str, ride: &str) {
    let fingerprint = version_1_fingerprint("/api/rides", OLD_CANONICAL);
    let (status, headers, body) = if point == "finished" {
        (
            "201",
            r#"'[["Content-Type", "application/json"], ["Location", "/api/rides/1"]]'"#.to_owned(),
            format!("'{STORED}'"),
        )
    } else {
        ("NULL", "NULL".to_owned(), "NULL".to_owned())
    };
    sql(
        conn,
        &format!(
            "INSERT INTO idempotency_keys (user_id, key, request_method, request_path, \
             request_fingerprint, request_params, recovery_point, endpoint, locked_at, last_run_at, \
             response_status, response_headers, response_body) \
             VALUES ({user}, '{key}', 'POST', '/api/rides', '{fingerprint}', '{OLD_CANONICAL}', \
             '{point}', 'rides.create', NULL, now() - interval '1 hour', \
             {status}, {headers}, convert_to({body}, 'UTF8'))"
        ),
    );
    sql(
        conn,
        &format!(
            "INSERT INTO rides (user_id, idempotency_key_id, origin_lat, origin_lon, target_lat, \
             target_lon, amount_cents, currency, payment_source, {ride}) \
             SELECT {user}, id, 37.77, -122.42, 37.8, -122.27, 2000, 'usd', 'cus_test', {} \
             FROM idempotency_keys WHERE key = '{key}'",
            match ride {
                "status" => "'pending'".to_owned(),
                _ => format!("'charged', 'ch_legacy_{key}'"),
            }
        ),
    );
    sql(
        conn,
        &format!(
            "INSERT INTO simulated_charges (id, idempotency_key, amount_cents, currency, source, status) \
             VALUES ('ch_legacy_{key}', 'gateway-{key}', 2000, 'usd', 'cus_test', 'succeeded')"
        ),
    );
}

#[tokio::test]
async fn rides_keys_and_answers_from_before_payment_intents_are_carried_over() {
    let mut app = database_before_payment_intents();
    let user = app.user.id;
    let mut conn = app.db();
    // Finished: charged, 500 refunded, its 201 stored.
    old_ride(&mut conn, user, "done", "finished", "status, charge_id");
    sql(
        &mut conn,
        "UPDATE rides SET amount_refunded_cents = 500 WHERE charge_id = 'ch_legacy_done'",
    );
    sql(
        &mut conn,
        &format!(
            "INSERT INTO refunds (ride_id, user_id, amount_cents, currency, status, gateway_refund_id) \
             SELECT id, {user}, 500, 'usd', 'succeeded', 're_legacy' FROM rides \
             WHERE charge_id = 'ch_legacy_done'"
        ),
    );
    sql(
        &mut conn,
        "INSERT INTO simulated_refunds (id, idempotency_key, charge_id, amount_cents, currency, status) \
         VALUES ('re_legacy', 'gateway-refund', 'ch_legacy_done', 500, 'usd', 'succeeded')",
    );
    // Charged, its answer not stored yet: anyone may finish it.
    old_ride(
        &mut conn,
        user,
        "charged",
        "charge_completed",
        "status, charge_id",
    );
    // Sent to the Charges API with the outcome unknown: for an operator.
    old_ride(&mut conn, user, "unknown", "ride_created", "status");

    ridepay::db::run_migrations(&mut conn).unwrap();

    let state = |key: &str| -> Value {
        let row: Vec<(String, Option<String>, String, bool)> = diesel::dsl::sql::<(
            diesel::sql_types::Text,
            diesel::sql_types::Nullable<diesel::sql_types::Text>,
            diesel::sql_types::Text,
            diesel::sql_types::Bool,
        )>(&format!(
            "SELECT r.status, r.charge_id, k.request_params::text, k.needs_attention_at IS NOT NULL \
             FROM rides r JOIN idempotency_keys k ON k.id = r.idempotency_key_id WHERE k.key = '{key}'"
        ))
        .load(&mut PgConnection::establish(&app.database_url).unwrap())
        .unwrap();
        let (status, charge, params, attention) = row[0].clone();
        json!({"status": status, "charge": charge, "params": serde_json::from_str::<Value>(&params).unwrap(), "attention": attention})
    };
    let done = state("done");
    assert_eq!(
        (done["status"].as_str(), done["attention"].as_bool()),
        (Some("captured"), Some(false))
    );
    assert_eq!(done["params"]["capture_method"], "automatic");
    assert_eq!(done["params"].get("payment_source"), None);
    assert_eq!(state("charged")["attention"], false);
    assert_eq!(
        (
            state("unknown")["status"].as_str(),
            state("unknown")["attention"].as_bool()
        ),
        (Some("pending"), Some(true))
    );
    assert_eq!(
        app.count(
            "rides WHERE status = 'captured' AND amount_captured_cents = 2000 \
             AND amount_authorized_cents = 2000 AND capture_method = 'automatic'"
        ),
        2
    );
    // Refunds are checked against what was captured.
    let beyond = diesel::sql_query(
        "UPDATE rides SET amount_refunded_cents = 2001 WHERE charge_id = 'ch_legacy_done'",
    )
    .execute(&mut conn);
    assert!(beyond.is_err());

    app.address = spawn_server(&app.database_url, |s| s.completer.enabled = true).await;

    // The stored answer replays byte for byte to the retry of the old body.
    let replay = app.post_ride("done", OLD_BODY).await;
    assert_eq!(
        (replay.status, replay.body.as_slice()),
        (201, STORED.as_bytes())
    );
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(replay.header("location"), Some("/api/rides/1"));
    // The key left charged is finished without paying again.
    let finished = eventually(Duration::from_secs(10), || {
        app.key_state("charged")["recovery_point"] == "finished"
    })
    .await;
    assert!(finished, "{}", app.key_state("charged"));
    let answer = app.post_ride("charged", OLD_BODY).await;
    assert_eq!(answer.status, 201);
    assert_eq!(answer.json()["status"], "captured");
    assert_eq!(answer.json()["payment_intent_id"], json!(null));
    // The one for an operator is left alone, and its retry is told so.
    assert_eq!(app.key_state("unknown")["recovery_point"], "ride_created");
    app.post_ride("unknown", OLD_BODY)
        .await
        .assert_problem(500, "internal-error");
    assert_eq!(app.count("simulated_payment_intents"), 0);

    // A ride paid through the Charges API is refunded by its charge.
    let ride_id = answer.json()["id"].as_i64().unwrap();
    let refund = app
        .post_refund(ride_id, "refund", r#"{"amount_cents": 2000}"#)
        .await;
    refund.assert_status(201);
    assert_eq!(
        app.count(
            "simulated_refunds WHERE charge_id = 'ch_legacy_charged' AND payment_intent IS NULL \
             AND amount_cents = 2000"
        ),
        1
    );
    assert_eq!(app.ride(ride_id).await["status"], "refunded");
}

/// Keys made before gateway keys were derived from what the client sent are
/// of call version 1 (their calls resent as that release made them), and
/// every user gets a public id of their own.
#[test]
fn keys_from_before_call_versions_are_of_version_1_and_users_get_public_ids() {
    let app = database_at(BEFORE_CALL_VERSIONS);
    let mut conn = app.db();
    crate::helpers::create_user(&app.database_url, None);
    sql(
        &mut conn,
        &format!(
            "INSERT INTO idempotency_keys (user_id, key, request_method, request_path, \
             request_fingerprint, request_params, recovery_point, endpoint, last_run_at) \
             VALUES ({}, 'in flight', 'POST', '/api/rides', 'v2:{}', '{{}}', 'ride_created', \
             'rides.create', now())",
            app.user.id,
            "0".repeat(64)
        ),
    );

    ridepay::db::run_migrations(&mut conn).unwrap();

    #[derive(diesel::QueryableByName, Debug, PartialEq)]
    struct Key {
        #[diesel(sql_type = diesel::sql_types::SmallInt)]
        call_version: i16,
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
        ridepay_key: Option<String>,
    }
    let key: Key = diesel::sql_query("SELECT call_version, ridepay_key FROM idempotency_keys")
        .get_result(&mut conn)
        .unwrap();
    assert_eq!(
        key,
        Key {
            call_version: 1,
            ridepay_key: None
        }
    );
    assert_eq!(
        crate::helpers::count(&mut conn, "(SELECT DISTINCT public_id FROM users) AS ids"),
        2
    );
}
