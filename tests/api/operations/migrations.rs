//! The migrations carry over what a database held before them: rides paid
//! through the Charges API (captured, refunded by their charge), keys in
//! flight whose stored request names `payment_source`, keys of call
//! version 1; the release that retires version 1 keys waits until none
//! is left that it would answer differently; events staged with their
//! rows get a body when their renderer is reverted; and charges the
//! doubles captured before they kept when are in the balance's list.

use diesel::{Connection, PgConnection, RunQueryDsl};
use diesel_migrations::MigrationHarness;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::common::app::{spawn_server, TestApp, TestUser};
use crate::common::database::{revert_through, sql};
use crate::common::ids::Id;
use crate::common::test_databases::{create_test_database, migrate_until};

/// The last migration before PaymentIntents.
const BEFORE_PAYMENT_INTENTS: &str = "20261201000015";

/// The last migration before gateway keys from what the client sent.
const BEFORE_CALL_VERSIONS: &str = "20261201000018";

/// The last migration before version 1 fingerprints and calls were retired.
pub const BEFORE_RETIRING_VERSION_1: &str = "20261203000030";

/// The canonical form of a ride request before PaymentIntents, paying with
/// the user's stored customer.
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
    TestApp {
        address: String::new(),
        user: rider_as_made_then(&mut conn, "rider@example.com", Some("cus_test")),
        database_url: url,
        client: reqwest::Client::new(),
    }
}

/// A rider as an old release made one: with the columns it had.
fn rider_as_made_then(conn: &mut PgConnection, email: &str, customer: Option<&str>) -> TestUser {
    #[derive(diesel::QueryableByName)]
    struct Made {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        id: i64,
    }
    let api_key = ridepay::users::ApiKey::generate();
    let made: Made = diesel::sql_query(
        "INSERT INTO users (email, api_key_hash, stripe_customer_id) VALUES ($1, $2, $3) \
         RETURNING id",
    )
    .bind::<diesel::sql_types::Text, _>(email)
    .bind::<diesel::sql_types::Bytea, _>(ridepay::users::hash_api_key(api_key.expose()))
    .bind::<diesel::sql_types::Nullable<diesel::sql_types::Text>, _>(customer)
    .get_result(conn)
    .unwrap();
    TestUser {
        id: made.id,
        api_key: api_key.expose().to_owned(),
    }
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
async fn rides_and_keys_from_before_payment_intents_are_carried_over() {
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

    migrate_until(&mut conn, BEFORE_RETIRING_VERSION_1);

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

    // Their keys are gone once the release before finished them and its
    // reaper deleted them (and an operator settled the one left to them):
    // the upgrade goes on, and the rides stay.
    sql(&mut conn, "DELETE FROM idempotency_keys");
    ridepay::db::run_migrations(&mut conn).unwrap();
    app.address = spawn_server(&app.database_url, |_| {}).await;

    // A ride paid through the Charges API is refunded by its charge.
    // Made before public ids, it is reached by the integer it had.
    let legacy: i64 = diesel::dsl::sql::<diesel::sql_types::BigInt>(
        "SELECT id FROM rides WHERE charge_id = 'ch_legacy_charged'",
    )
    .get_result(&mut conn)
    .unwrap();
    let ride_id = Id::new(&legacy.to_string());
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

/// This release matches no version 1 fingerprint and makes no version 1
/// call, so the migration that retires them refuses to run, saying what to
/// do, while a key has such a fingerprint or an unfinished key makes such
/// calls; once they are gone it runs, and a finished key of call version 1
/// (nothing left to call) may stay.
#[test]
fn the_retirement_of_version_1_keys_waits_until_none_is_left() {
    let app = database_at(BEFORE_RETIRING_VERSION_1);
    let mut conn = app.db();
    let insert = |conn: &mut PgConnection, key: &str, fingerprint: &str, point: &str| {
        let finished = match point {
            "finished" => "201, '[]', convert_to('{}', 'UTF8')",
            _ => "NULL, NULL, NULL",
        };
        sql(
            conn,
            &format!(
                "INSERT INTO idempotency_keys (user_id, key, request_method, request_path, \
                 request_fingerprint, request_params, recovery_point, endpoint, call_version, \
                 last_run_at, response_status, response_headers, response_body) \
                 VALUES ({}, '{key}', 'POST', '/api/rides', '{fingerprint}:{}', '{{}}', '{point}', \
                 'rides.create', 1, now(), {finished})",
                app.user.id,
                "0".repeat(64)
            ),
        )
    };
    insert(&mut conn, "replayed", "v1", "finished");
    insert(&mut conn, "in flight", "v2", "ride_created");
    insert(&mut conn, "done", "v2", "finished");

    let refused = ridepay::db::run_migrations(&mut conn)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("cannot retire version 1 keys yet: 1 keys have a version 1 fingerprint and 1 unfinished keys make version 1 calls"),
        "{refused}"
    );

    sql(
        &mut conn,
        "DELETE FROM idempotency_keys WHERE key = 'replayed'",
    );
    assert!(ridepay::db::run_migrations(&mut conn).is_err());
    sql(
        &mut conn,
        "UPDATE idempotency_keys SET recovery_point = 'finished', response_status = 201, \
         response_headers = '[]', response_body = convert_to('{}', 'UTF8') WHERE key = 'in flight'",
    );
    ridepay::db::run_migrations(&mut conn).unwrap();
    assert_eq!(app.count("idempotency_keys WHERE call_version = 1"), 2);
    // And none comes back.
    let again = diesel::sql_query(format!(
        "UPDATE idempotency_keys SET request_fingerprint = 'v1:{}' WHERE key = 'done'",
        "0".repeat(64)
    ))
    .execute(&mut conn);
    assert!(again.is_err());
}

/// Keys made before gateway keys were derived from what the client sent are
/// of call version 1 (their calls resent as that release made them), and
/// every user gets a public id of their own.
#[test]
fn keys_from_before_call_versions_are_of_version_1_and_users_get_public_ids() {
    let app = database_at(BEFORE_CALL_VERSIONS);
    let mut conn = app.db();
    rider_as_made_then(&mut conn, "second@example.com", None);
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

    migrate_until(&mut conn, BEFORE_RETIRING_VERSION_1);

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
        crate::common::database::count(&mut conn, "(SELECT DISTINCT public_id FROM users) AS ids"),
        2
    );
}

/// Reverted, the migration that renders events as the answers are
/// rendered leaves every event it staged with the body the database
/// rendered before it: the same ride, and the same refund part.
#[tokio::test]
async fn reverting_the_renderer_gives_every_event_staged_with_its_rows_a_body() {
    #[derive(diesel::QueryableByName)]
    struct Body {
        #[diesel(sql_type = diesel::sql_types::Text)]
        body: String,
    }
    let app = crate::common::app::spawn_app().await;
    app.registered_destination("destination").await;
    let ride_id = app.paid_ride("paid").await;
    app.post_refund(ride_id, "part", r#"{"amount_cents": 500}"#)
        .await
        .assert_status(201);
    let ride = app.ride(ride_id).await;
    let mut conn = app.db();
    // Before public ids, a ride was shown under its integer key.
    let key = app.row_key(ride_id);
    revert_through(&mut conn, "000032");

    let events: Vec<Value> = diesel::sql_query(
        "SELECT convert_from(body, 'UTF8') AS body FROM webhook_events ORDER BY sequence",
    )
    .load::<Body>(&mut conn)
    .unwrap()
    .into_iter()
    .map(|row| serde_json::from_str(&row.body).unwrap())
    .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ride.captured", "refund.succeeded"]);
    let (carried, api) = (&events[1]["data"]["ride"], &ride);
    assert_eq!(carried["id"], key);
    for field in ["status", "amount_captured_cents", "amount_refunded_cents"] {
        assert_eq!(carried[field], api[field], "{field}");
    }
    let at = |value: &Value| chrono::DateTime::parse_from_rfc3339(value.as_str().unwrap()).unwrap();
    assert_eq!(at(&carried["created_at"]), at(&api["created_at"]));
    assert_eq!(events[1]["data"]["refund"]["amount_cents"], 500);
    assert_eq!(events[1]["data"]["refund"]["ride_id"], key);

    ridepay::db::run_migrations(&mut conn).unwrap();
}

/// Rows made before public ids keep the integers they were shown under, as
/// `legacy_id`: a path naming one reaches the row for its own user only,
/// the answers stored then replay byte for byte, and an answer stored
/// after carries the row's public id.
#[tokio::test]
async fn rows_made_before_public_ids_keep_their_integers_and_their_answers() {
    let mut app = crate::common::app::spawn_app().await;
    let held = app.held_ride("held", "pm_card_visa").await;
    let paid = app.paid_ride("paid").await;
    let refund = app
        .post_refund(paid, "refund", r#"{"amount_cents": 300}"#)
        .await;
    refund.assert_status(201);
    let refund = Id::of(&refund.json()["id"]);
    let destination = app.registered_destination("destination").await;
    let integers: Vec<(Id, i64)> = [held, paid, refund, destination]
        .into_iter()
        .map(|id| (id, app.row_key(id)))
        .collect();

    // The release before: no public ids, its answers stored under the
    // integers.
    let mut conn = app.db();
    revert_through(&mut conn, "000033");
    for (id, integer) in &integers {
        sql(
            &mut conn,
            &format!(
                "UPDATE idempotency_keys SET \
                 response_body = convert_to(replace(convert_from(response_body, 'UTF8'), \
                     '\"{id}\"', '{integer}'), 'UTF8'), \
                 response_headers = replace(response_headers::text, '{id}', '{integer}')::jsonb"
            ),
        );
    }
    let stored = |conn: &mut PgConnection, key: &str| -> Vec<u8> {
        diesel::dsl::sql::<diesel::sql_types::Bytea>(&format!(
            "SELECT response_body FROM idempotency_keys WHERE key = '{key}'"
        ))
        .get_result(conn)
        .unwrap()
    };
    let before: Vec<Vec<u8>> = ["held", "paid", "refund", "destination"]
        .iter()
        .map(|key| stored(&mut conn, key))
        .collect();
    ridepay::db::run_migrations(&mut conn).unwrap();
    app.address = spawn_server(&app.database_url, |_| {}).await;

    // Stored before, replayed byte for byte, under the integers.
    let (held_int, paid_int, refund_int, destination_int) =
        (integers[0].1, integers[1].1, integers[2].1, integers[3].1);
    let replay = app
        .post_ride("held", &crate::common::app::held_ride("pm_card_visa"))
        .await;
    assert_eq!(replay.body, before[0]);
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(
        replay.header("location"),
        Some(format!("/api/rides/{held_int}").as_str())
    );
    assert_eq!(replay.json()["id"], held_int);

    // Reached by their integers, shown under their public ids.
    let shown = app.get(&format!("/api/rides/{held_int}")).await.json();
    assert!(crate::common::ids::is_public_id(
        "ride_",
        shown["id"].as_str().unwrap()
    ));
    assert_ne!(shown["id"], held);
    assert_eq!(shown["status"], "authorized");
    let refund_path = format!("/api/rides/{paid_int}/refunds/{refund_int}");
    let shown = app.get(&refund_path).await.json();
    assert_eq!(shown["amount_cents"], 300);
    assert!(crate::common::ids::is_public_id(
        "rfnd_",
        shown["id"].as_str().unwrap()
    ));
    app.get(&format!("/api/webhook_endpoints/{destination_int}"))
        .await
        .assert_status(200);
    // Only for their own user.
    let stranger = crate::common::app::create_user(&app.database_url, None);
    for path in [
        format!("/api/rides/{held_int}"),
        refund_path,
        format!("/api/webhook_endpoints/{destination_int}"),
    ] {
        app.get_as(&stranger.api_key, &path)
            .await
            .assert_problem(404, "not-found");
    }

    // Stored after, under the public id, whichever way the path named it.
    let completed = app
        .post_complete(
            Id::new(&held_int.to_string()),
            "complete",
            r#"{"final_amount_cents": 1500}"#,
        )
        .await;
    completed.assert_status(200);
    let public = completed.json()["id"].clone();
    assert!(crate::common::ids::is_public_id(
        "ride_",
        public.as_str().unwrap()
    ));
    assert_eq!(
        app.get(&format!("/api/rides/{held_int}")).await.json()["id"],
        public
    );
}

/// Charges the doubles captured before they kept when: the balance's list
/// shows each as captured when its intent last changed, and a hold not at
/// all.
#[tokio::test]
async fn charges_captured_before_the_balance_list_are_listed_and_holds_are_not() {
    use ridepay::payments::{ListBalanceTransactions, PaymentGateway};
    let app = crate::common::app::spawn_app().await;
    app.held_ride("held", "pm_card_visa").await;
    app.paid_ride("paid").await;
    let mut conn = app.db();
    revert_through(&mut conn, "000036");

    ridepay::db::run_migrations(&mut conn).unwrap();

    let gateway = ridepay_doubles::SimulatedGateway::new(
        crate::common::settings::pool(&app.database_url),
        ridepay::config::SimulatedGatewaySettings::default(),
    );
    let page = gateway
        .list_balance_transactions(&ListBalanceTransactions::since(None))
        .unwrap();
    let listed: Vec<_> = page
        .transactions
        .iter()
        .map(|listed| {
            let transaction = &listed.transaction;
            (
                listed.kind.as_str(),
                transaction.amount_cents,
                transaction.fee_cents,
            )
        })
        .collect();
    assert_eq!(listed, [("charge", 2000, 88)]);
}
