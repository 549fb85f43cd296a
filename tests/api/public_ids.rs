//! The ids the API hands out: opaque, of the documented pattern wherever
//! they appear, and never naming another row, not even after a failover
//! lost the row a client was told about and handed its integer key to
//! another.

use serde_json::{json, Value};

use crate::common::app::{ride_with, spawn_app, TestApp};
use crate::common::database::sql;
use crate::common::ids::{is_public_id, Id};
use crate::common::receiver::Receiver;
use crate::webhook_endpoints::{app_sending, register, wait_for};

/// What an asynchronous failover does to the rows of the request made
/// under `key`: gone, with the key row, and the sequences of `tables`
/// behind, so that the next rows get the lost rows' integer keys.
fn lose_rows_of(app: &TestApp, key: &str, table: &str, tables: &[&str]) {
    let mut conn = app.db();
    sql(
        &mut conn,
        &format!(
            "DELETE FROM {table} WHERE idempotency_key_id = \
             (SELECT id FROM idempotency_keys WHERE key = '{key}')"
        ),
    );
    sql(
        &mut conn,
        &format!("DELETE FROM idempotency_keys WHERE key = '{key}'"),
    );
    for table in tables {
        sql(
            &mut conn,
            &format!(
                "SELECT setval('{table}_id_seq', coalesce((SELECT max(id) FROM {table}), 0) + 1, false)"
            ),
        );
    }
}

#[tokio::test]
async fn an_id_a_failover_lost_names_nothing_until_its_request_makes_the_ride_again() {
    let app = spawn_app().await;
    let lost_body = ride_with(json!({"amount_cents": 1234, "capture_method": "manual"}));
    let lost = app.post_ride("lost", &lost_body).await;
    lost.assert_status(201);
    let lost_id = Id::of(&lost.json()["id"]);
    let lost_key = app.row_key(lost_id);
    lose_rows_of(&app, "lost", "rides", &["rides", "idempotency_keys"]);

    // Another request of the same rider gets the lost ride's integer key,
    // never its id.
    let other = app
        .post_ride(
            "other",
            &ride_with(json!({"amount_cents": 1500, "capture_method": "manual"})),
        )
        .await;
    other.assert_status(201);
    let other_id = Id::of(&other.json()["id"]);
    assert_eq!(app.row_key(other_id), lost_key);
    assert_ne!(other_id, lost_id);

    // Before the client retries, its id names nothing, and nothing sent to
    // it changes anything.
    let before = (app.count("idempotency_keys"), app.count("audit_records"));
    app.get(&format!("/api/rides/{lost_id}"))
        .await
        .assert_problem(404, "not-found");
    for (action, body) in [
        ("complete", r#"{"final_amount_cents": 1234}"#),
        ("cancel", "{}"),
        ("refunds", "{}"),
        ("tip", r#"{"amount_cents": 100}"#),
    ] {
        let path = format!("/api/rides/{lost_id}/{action}");
        app.post_as(&app.user, &path, &format!("fresh {action}"), body)
            .await
            .assert_problem(404, "not-found");
    }
    assert_eq!(
        (app.count("idempotency_keys"), app.count("audit_records")),
        before
    );
    let untouched = app.ride(other_id).await;
    assert_eq!(
        (&untouched["status"], &untouched["amount_cents"]),
        (&json!("authorized"), &json!(1500))
    );

    // The retry makes the ride again, under the id the client was given,
    // on the payment it was first answered with.
    let again = app.post_ride("lost", &lost_body).await;
    again.assert_status(201);
    assert_eq!(again.json()["id"], lost_id);
    assert_eq!(
        again.json()["payment_intent_id"],
        lost.json()["payment_intent_id"]
    );
    assert_eq!(app.ride(lost_id).await["amount_cents"], 1234);
    assert_eq!(app.count("simulated_payment_intents"), 2);
}

#[tokio::test]
async fn a_refund_a_failover_lost_is_made_again_under_its_id() {
    let app = spawn_app().await;
    let ride = app.paid_ride("paid").await;
    let refunded = app
        .post_refund(ride, "refund", r#"{"amount_cents": 700}"#)
        .await;
    refunded.assert_status(201);
    let refund_id = Id::of(&refunded.json()["id"]);
    let path = format!("/api/rides/{ride}/refunds/{refund_id}");
    lose_rows_of(&app, "refund", "refunds", &["refunds", "idempotency_keys"]);
    sql(
        &mut app.db(),
        "UPDATE rides SET amount_refunded_cents = 0, status = 'captured'",
    );

    app.get(&path).await.assert_problem(404, "not-found");
    let again = app
        .post_refund(ride, "refund", r#"{"amount_cents": 700}"#)
        .await;
    again.assert_status(201);
    assert_eq!(again.json()["id"], refund_id);
    assert_eq!(app.get(&path).await.json()["amount_cents"], 700);
    assert_eq!(app.count("simulated_refunds"), 1);
}

/// A client key used again once its key row was deleted after retention is
/// a new request with the same ridepay key: a new ride, under the next id
/// derived from it, while the first keeps its own.
#[tokio::test]
async fn a_key_used_again_after_its_retention_makes_a_ride_of_its_own() {
    let app = spawn_app().await;
    let first = app.post_ride("reused", &ride_with(json!({}))).await;
    first.assert_status(201);
    sql(&mut app.db(), "DELETE FROM idempotency_keys");
    sql(&mut app.db(), "DELETE FROM simulated_intent_calls");

    let second = app.post_ride("reused", &ride_with(json!({}))).await;
    second.assert_status(201);
    assert_ne!(second.json()["id"], first.json()["id"]);
    assert_eq!(app.count("rides"), 2);
}

/// Every id in every answer and every event has its kind's pattern:
/// `ride_`, `rfnd_`, `whep_`, `whdl_` and 29 base32 characters; events
/// keep Standard Webhooks' `msg_` ids.
#[tokio::test]
async fn every_id_in_every_answer_and_event_has_its_kinds_pattern() {
    let app = app_sending(&[0], |_| {}).await;
    let receiver = Receiver::start();
    let destination = register(&app, &receiver, json!(["*"])).await;
    let mut answers = vec![destination.clone()];
    let ride = app.held_ride("held", "pm_card_visa").await;
    for answer in [
        app.post_complete(ride, "done", r#"{"final_amount_cents": 1800}"#)
            .await,
        app.post_refund(ride, "refund", r#"{"amount_cents": 500}"#)
            .await,
        app.post_ride(
            "declined",
            &ride_with(json!({"payment_method": "pm_card_visa_chargeDeclined"})),
        )
        .await,
        app.post_test_event(&destination["id"], "test").await,
        app.post_roll_secret(&destination["id"], "roll").await,
        app.get("/api/rides").await,
        app.get(&format!("/api/rides/{ride}")).await,
        app.get(&format!("/api/rides/{ride}/refunds")).await,
        app.get("/api/webhook_endpoints").await,
    ] {
        answers.push(answer.json());
    }
    let events: Vec<Value> = wait_for(&receiver, 5)
        .await
        .iter()
        .map(|received| received.json())
        .collect();
    let deliveries = app
        .get(&format!(
            "/api/webhook_endpoints/{}/deliveries",
            Id::of(&destination["id"])
        ))
        .await
        .json();
    answers.push(deliveries);

    let mut seen = Vec::new();
    for value in answers.iter().chain(&events) {
        ids_in(value, &mut seen);
    }
    for prefix in ["ride_", "rfnd_", "whep_", "whdl_", "msg_"] {
        assert!(
            seen.iter().any(|(_, id)| id.starts_with(prefix)),
            "no {prefix} id seen: {seen:?}"
        );
    }
    for (field, id) in &seen {
        let kind = match field.as_str() {
            "ride_id" => "ride_",
            "refund_id" => "rfnd_",
            "event_id" => "msg_",
            _ => &id[..id.find('_').map_or(0, |at| at + 1)],
        };
        let well_formed = match kind {
            "msg_" => id.len() == 36 && id[4..].bytes().all(|b| b.is_ascii_hexdigit()),
            _ => ["ride_", "rfnd_", "whep_", "whdl_"].contains(&kind) && is_public_id(kind, id),
        };
        assert!(well_formed, "{field}: {id}");
    }
}

/// Every `id`, `ride_id`, `refund_id` and `event_id` in `value`, with its
/// field's name.
fn ids_in(value: &Value, seen: &mut Vec<(String, String)>) {
    match value {
        Value::Object(fields) => {
            for (field, value) in fields {
                if ["id", "ride_id", "refund_id", "event_id"].contains(&field.as_str()) {
                    let text = value.as_str().unwrap_or_else(|| panic!("{field}: {value}"));
                    seen.push((field.clone(), text.to_owned()));
                } else {
                    ids_in(value, seen);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| ids_in(item, seen)),
        _ => {}
    }
}
