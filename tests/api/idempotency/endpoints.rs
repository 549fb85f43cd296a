//! The endpoint registry against the database: each key names its endpoint,
//! each endpoint's recovery points are rows its migration inserted, and keys
//! written before endpoints were named are carried over by their paths.

use diesel::sql_types::Text;
use diesel::{Connection, PgConnection, QueryableByName, RunQueryDsl};
use diesel_migrations::MigrationHarness;
use ridepay::endpoints;

use crate::common::app::{create_user, spawn_app, RIDE};
use crate::common::test_databases::{create_test_database, migrate_until};
use crate::operations::migrations::BEFORE_RETIRING_VERSION_1;

#[derive(QueryableByName)]
struct Named {
    #[diesel(sql_type = Text)]
    name: String,
}

fn names(conn: &mut PgConnection, sql: &str) -> Vec<String> {
    diesel::sql_query(sql)
        .load::<Named>(conn)
        .unwrap()
        .into_iter()
        .map(|row| row.name)
        .collect()
}

#[test]
fn every_registered_endpoint_has_its_recovery_points_in_the_database() {
    let mut conn = PgConnection::establish(&create_test_database()).unwrap();
    for endpoint in endpoints::all() {
        let mut stored = names(
            &mut conn,
            &format!(
                "SELECT point AS name FROM recovery_points WHERE endpoint = '{}'",
                endpoint.name
            ),
        );
        let mut declared: Vec<String> = endpoint
            .recovery_points
            .iter()
            .map(|point| point.to_string())
            .collect();
        stored.sort();
        declared.sort();
        assert_eq!(
            stored, declared,
            "{}: add them in its migration",
            endpoint.name
        );
    }
}

#[tokio::test]
async fn a_key_names_its_endpoint_and_cannot_reach_another_endpoints_point() {
    let app = spawn_app().await;
    let ride_id = app.paid_ride("ride").await;
    app.post_refund(ride_id, "refund", "{}")
        .await
        .assert_status(201);
    let mut conn = app.db();

    let endpoints = names(
        &mut conn,
        "SELECT key || ' ' || endpoint AS name FROM idempotency_keys ORDER BY id",
    );
    let moved = diesel::sql_query(
        "UPDATE idempotency_keys SET recovery_point = 'refund_created', \
         response_status = NULL, response_headers = NULL, response_body = NULL \
         WHERE key = 'ride'",
    )
    .execute(&mut conn);

    assert_eq!(endpoints, ["ride rides.create", "refund refunds.create"]);
    let refused = moved.unwrap_err().to_string();
    assert!(refused.contains("recovery_point_fkey"), "{refused}");
}

#[test]
fn keys_written_before_endpoints_were_named_are_carried_over_by_their_paths() {
    let url = create_test_database();
    let user = create_user(&url, None);
    let mut conn = PgConnection::establish(&url).unwrap();
    // Back to before the migration that named endpoints, and no further.
    loop {
        let reverted = conn
            .revert_last_migration(ridepay::db::MIGRATIONS)
            .unwrap()
            .to_string();
        // Versions are the migration folders' dates and numbers.
        if reverted.replace('-', "").ends_with("20261201000013") {
            break;
        }
    }
    for (key, path, point) in [
        ("old-ride", "/api/rides", "ride_created"),
        ("old-refund", "/api/rides/7/refunds", "refund_created"),
    ] {
        diesel::sql_query(format!(
            "INSERT INTO idempotency_keys (user_id, key, request_method, request_path, \
             request_fingerprint, request_params, recovery_point) \
             VALUES ({}, '{key}', 'POST', '{path}', 'v1:{}', '{RIDE}', '{point}')",
            user.id,
            "0".repeat(64)
        ))
        .execute(&mut conn)
        .unwrap();
    }

    // As far as the release before the retirement of version 1 keys.
    migrate_until(&mut conn, BEFORE_RETIRING_VERSION_1);

    assert_eq!(
        names(
            &mut conn,
            "SELECT key || ' ' || endpoint AS name FROM idempotency_keys ORDER BY id"
        ),
        ["old-ride rides.create", "old-refund refunds.create"]
    );
}
