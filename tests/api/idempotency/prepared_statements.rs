//! The request path keeps its statements prepared: once a connection has
//! served one ride, further rides and replays prepare nothing new, so
//! PostgreSQL neither parses nor plans them again (Diesel leaves UPDATEs,
//! raw SQL and INSERTs with optional fields out of its cache unless told).

use diesel::sql_types::Text;
use diesel::{PgConnection, QueryableByName, RunQueryDsl};
use ridepay::config::{DatabaseSettings, SimulatedGatewaySettings};
use ridepay::context::ServiceContext;
use ridepay::db::DbPool;
use ridepay::idempotency::flow;
use ridepay::idempotency::{IdempotencyKey, Outcome};
use ridepay::rides::create::RideEndpoint;
use ridepay::rides::create::RideParams;
use ridepay::users;

use crate::common::app::{database_only, RIDE};
use crate::common::keys::service_context;

#[derive(QueryableByName)]
struct Prepared {
    #[diesel(sql_type = Text)]
    statement: String,
}

fn prepared(conn: &mut PgConnection) -> Vec<String> {
    diesel::sql_query("SELECT statement FROM pg_prepared_statements ORDER BY statement")
        .load::<Prepared>(conn)
        .unwrap()
        .into_iter()
        .map(|prepared| prepared.statement)
        .filter(|statement| !statement.contains("pg_prepared_statements"))
        .collect()
}

/// One connection serves the whole request, gateway included, so its
/// session holds every statement the request prepared.
fn one_connection_context(database_url: &str) -> ServiceContext {
    let settings = DatabaseSettings {
        pool_size: 1,
        ..DatabaseSettings::default()
    };
    let pool: DbPool = ridepay::db::build_pool(database_url, &settings);
    service_context(pool, SimulatedGatewaySettings::default())
}

fn post_ride(context: &ServiceContext, api_key: &str, key: &str) -> Outcome {
    let conn = context.pool.get().unwrap();
    let key = IdempotencyKey::parse(key.as_bytes()).unwrap();
    let params = RideParams::parse(RIDE.as_bytes()).unwrap();
    let api_key_hash = users::hash_api_key(api_key);
    flow::serve::<RideEndpoint>(context, conn, &api_key_hash, &key, "/api/rides", &params).unwrap()
}

#[test]
fn a_second_ride_and_a_replay_prepare_no_new_statement() {
    let app = database_only();
    let context = one_connection_context(&app.database_url);
    let first = post_ride(&context, &app.user.api_key, "first");
    assert_eq!(first.response.status, 201);
    assert!(!first.replayed);
    let after_first = prepared(&mut context.pool.get().unwrap());
    for statement in [
        r#"UPDATE "idempotency_keys" SET "recovery_point""#,
        r#"UPDATE "rides" SET "status""#,
        r#"INSERT INTO "rides""#,
        "WITH intent AS (INSERT INTO simulated_payment_intents",
    ] {
        assert!(
            // A change sent with its records starts `WITH changed AS (`.
            after_first.iter().any(|s| s.contains(statement)),
            "{statement} is not kept prepared: {after_first:#?}"
        );
    }

    let second = post_ride(&context, &app.user.api_key, "second");
    let replay = post_ride(&context, &app.user.api_key, "second");
    assert_eq!((second.response.status, second.replayed), (201, false));
    assert_eq!((replay.response.status, replay.replayed), (201, true));
    assert_eq!(prepared(&mut context.pool.get().unwrap()), after_first);
}
