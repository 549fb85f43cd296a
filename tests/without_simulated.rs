//! The service built without its `simulated` feature (`cargo test
//! --no-default-features`, as CI runs it): no simulated gateway, table, route
//! or subcommand, `GATEWAY` required, and rides paid through the Stripe
//! client against the fake Stripe, which the tests take as a dev-dependency.
#![cfg(not(feature = "simulated"))]

mod common;

use common::database::count_at;

use std::time::Duration;

use diesel::{Connection, PgConnection, RunQueryDsl};
use ridepay::config::{GatewayKind, StripeSettings};
use ridepay::embedded_postgres::{connect_with_retry, EmbeddedPostgres};
use ridepay::startup::Application;
use ridepay_doubles::fake_stripe::{ConnectionLimits, FakeGateway, FakeGatewayConfig};

const STRIPE_KEY: &str = "sk_test_without_simulated";
const RIDE: &str = r#"{"origin_lat": 37.77, "origin_lon": -122.42, "target_lat": 37.80, "target_lon": -122.27, "amount_cents": 2000, "payment_method": "pm_card_visa"}"#;

/// A throwaway cluster, stopped and deleted when the test process ends, and
/// two fresh databases on it: the service's and the fake Stripe's records.
fn databases() -> (String, String) {
    let dir = std::env::temp_dir().join(format!(
        "ridepay-test-stripe-only-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let cluster = EmbeddedPostgres::ensure_running(&dir).expect("start the test PostgreSQL");
    cluster.stop_when_process_exits(&dir).unwrap();
    let mut admin = connect_with_retry(&cluster.superuser_url("postgres")).unwrap();
    let [service, records] = ["service", "records"].map(|name| {
        diesel::sql_query(format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .unwrap();
        cluster.superuser_url(name)
    });
    (service, records)
}

#[tokio::test]
async fn a_ride_is_paid_through_stripe_and_replayed_and_nothing_simulated_exists() {
    let (service, records) = databases();
    let fake = FakeGateway::start(FakeGatewayConfig {
        bind: "127.0.0.1:0".to_owned(),
        database_url: records.clone(),
        faults: Default::default(),
        api_key: Some(STRIPE_KEY.to_owned()),
        webhook: None,
        connect_webhook: None,
        limits: ConnectionLimits::default(),
    })
    .unwrap();
    let mut settings = common::settings::test_settings(&service);
    assert_eq!(settings.gateway.kind, GatewayKind::Stripe);
    settings.gateway.stripe = StripeSettings {
        api_key: Some(STRIPE_KEY.to_owned().into()),
        api_base: fake.url(),
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(1),
        webhook_secret: None,
        connect_webhook_secret: None,
    };
    let app = Application::build(&settings, &service).unwrap();
    let address = format!("http://{}", app.address());
    tokio::spawn(app.run_until_stopped());
    let card = ridepay::users::SavedCard {
        customer: Some("cus_stripe_only"),
        payment_method: Some("pm_card_visa"),
    };
    let (_, api_key) = ridepay::users::create(
        &mut PgConnection::establish(&service).unwrap(),
        "stripe-only@example.com",
        card,
    )
    .unwrap();
    let client = reqwest::Client::new();
    let post = || {
        client
            .post(format!("{address}/api/rides"))
            .bearer_auth(api_key.expose())
            .header("Idempotency-Key", "stripe-only")
            .header("Content-Type", "application/json")
            .body(RIDE)
            .send()
    };

    let first = post().await.unwrap();
    let (first_status, first_body) = (first.status(), first.bytes().await.unwrap());
    let replay = post().await.unwrap();
    let replayed = replay.headers().get("idempotent-replayed").cloned();
    let (replay_status, replay_body) = (replay.status(), replay.bytes().await.unwrap());
    let bank_page = client
        .get(format!("{address}/simulated-gateway/authenticate"))
        .send()
        .await
        .unwrap();

    assert_eq!(first_status, 201, "{first_body:?}");
    let ride: serde_json::Value = serde_json::from_slice(&first_body).unwrap();
    assert_eq!(ride["status"], "authorized");
    assert!(
        ride["payment_intent_id"]
            .as_str()
            .unwrap()
            .starts_with("pi_"),
        "{ride}"
    );
    assert_eq!((replay_status, replay_body), (first_status, first_body));
    assert_eq!(replayed.unwrap(), "true");
    assert_eq!(bank_page.status(), 404);
    // One PaymentIntent at the fake; no simulated table in the service's
    // database.
    assert_eq!(count_at(&records, "simulated_payment_intents"), 1);
    assert_eq!(
        count_at(&service, "pg_tables WHERE tablename LIKE 'simulated%'"),
        0
    );
}

/// `ridepay <args>` with `env`; the settings are refused before the
/// database, which names nothing, would be reached.
fn ridepay(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let env: Vec<(&str, &str)> = [
        ("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none"),
        ("RIDEPAY_DATA_DIR", "/nonexistent"),
    ]
    .into_iter()
    .chain(env.iter().copied())
    .collect();
    common::server_process::run_refused(args, &env)
}

#[test]
fn gateway_must_be_set_and_nothing_simulated_can_be_asked_for() {
    let (unset, unset_says) = ridepay(&["serve"], &[]);
    let (simulated, simulated_says) = ridepay(&["serve"], &[("GATEWAY", "simulated")]);
    let (fake, fake_says) = ridepay(&["fake-gateway", "--help"], &[]);

    assert!(
        !unset && unset_says.contains("GATEWAY must be set"),
        "{unset_says}"
    );
    assert!(
        !simulated && simulated_says.contains("no simulated gateway"),
        "{simulated_says}"
    );
    assert!(!fake && fake_says.contains("fake-gateway"), "{fake_says}");
}
