//! The gateway's side: Stripe events signed as Stripe signs them, the fake
//! Stripe on its own records, gateway requests built as ridepay builds them,
//! and reconciliation run on demand.
use std::time::Duration;

use diesel::{Connection, PgConnection};
use ridepay::config::{Settings, SimulatedGatewaySettings, StripeSettings};
use ridepay_doubles::fake_stripe::{ConnectionLimits, FakeGateway, FakeGatewayConfig};
use serde_json::{json, Value};

use super::app::TestApp;
use super::database::count;
use super::test_databases::create_test_database;

/// The secret that signs the suite's Stripe webhooks.
pub const WEBHOOK_SECRET: &str = "whsec_ridepay_suite";

/// A Stripe event of `event_type` about `object`, created at `created`.
pub fn stripe_event(id: &str, event_type: &str, created: i64, object: Value) -> String {
    json!({
        "id": id,
        "object": "event",
        "type": event_type,
        "created": created,
        "data": { "object": object },
    })
    .to_string()
}

/// The key the fake gateways of the suite accept.
pub const FAKE_API_KEY: &str = "sk_test_ridepay_suite";

/// A form POST to the fake Stripe under its API key and `key`, as the
/// Stripe client sends one.
pub async fn post_form(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    client
        .post(url)
        .bearer_auth(FAKE_API_KEY)
        .header("Idempotency-Key", key)
        .form(form)
        .send()
        .await
        .expect("the fake Stripe answers")
}

/// A fake Stripe on loopback, keeping its records in `records_url` (a database
/// of its own, as an external system's).
pub fn start_fake_gateway(records_url: &str, faults: SimulatedGatewaySettings) -> FakeGateway {
    FakeGateway::start(FakeGatewayConfig {
        bind: "127.0.0.1:0".to_owned(),
        database_url: records_url.to_owned(),
        faults,
        api_key: Some(FAKE_API_KEY.to_owned()),
        webhook: None,
        connect_webhook: None,
        limits: ConnectionLimits::default(),
    })
    .expect("start the fake gateway")
}

/// Settings of a Stripe client talking to `fake`.
pub fn stripe_settings(fake: &FakeGateway) -> StripeSettings {
    StripeSettings {
        api_key: Some(FAKE_API_KEY.to_owned().into()),
        api_base: fake.url(),
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(1),
        webhook_secret: None,
        connect_webhook_secret: None,
    }
}

/// The PaymentIntents a gateway's records hold (`WHERE ...` optional).
pub fn records_count(records_url: &str, filter: &str) -> i64 {
    count(
        &mut PgConnection::establish(records_url).unwrap(),
        &format!("simulated_payment_intents {filter}"),
    )
}

/// A fake gateway on a records database of its own, with the faults set by
/// `configure`; returns it and its records' URL.
pub fn spawn_fake_gateway(
    configure: impl FnOnce(&mut SimulatedGatewaySettings),
) -> (FakeGateway, String) {
    let records = create_test_database();
    let mut faults = SimulatedGatewaySettings::default();
    configure(&mut faults);
    (start_fake_gateway(&records, faults), records)
}

/// A PaymentIntent of 20 EUR for ride 7 under `key`.
pub fn intent_request(
    key: &str,
    payment_method: &str,
    capture_method: ridepay::payments::CaptureMethod,
) -> ridepay::payments::CreateIntent {
    ridepay::payments::CreateIntent {
        idempotency_key: key.to_owned(),
        amount_cents: 2000,
        currency: "eur".to_owned(),
        customer: None,
        payment_method: payment_method.to_owned(),
        capture_method,
        return_url: RETURN_URL.to_owned(),
        metadata: vec![("ride_id".to_owned(), "7".to_owned())],
        hold: ridepay::payments::HoldRequest::INCREMENTS_ONLY,
        off_session: false,
        transfer_group: None,
        expand_balance_transaction: false,
    }
}

/// The return URL of rides the tests make without a server.
pub const RETURN_URL: &str = "http://127.0.0.1:8080/payments/return";

/// The capture of `cents` of intent `id` under `key`.
pub fn capture_request(key: &str, id: &str, cents: i64) -> ridepay::payments::CaptureIntent {
    ridepay::payments::CaptureIntent {
        idempotency_key: key.to_owned(),
        intent_id: id.to_owned(),
        amount_to_capture_cents: cents,
        expand_balance_transaction: false,
    }
}

/// One reconciliation pass on the app's database, as an instance with
/// `configure`'s settings runs it (search lag and orphan grace none, so the
/// test need not wait for them).
pub fn reconcile_with(
    app: &TestApp,
    dry_run: bool,
    configure: impl FnOnce(&mut Settings),
) -> ridepay::reconciliation::Summary {
    let mut settings = super::settings::test_settings(&app.database_url);
    settings.reconcile.search_lag = Duration::ZERO;
    settings.reconcile.orphan_grace = Duration::ZERO;
    configure(&mut settings);
    let installation = ridepay::startup::Installation::load(&mut app.db()).unwrap();
    let pool = ridepay::db::build_pool(&app.database_url, &settings.database);
    let context = std::sync::Arc::new(
        ridepay::startup::service_context(&settings, pool, installation, &app.address).unwrap(),
    );
    let resumable = ridepay::endpoints::resumable(&context);
    let endpoints: Vec<_> = resumable.iter().map(AsRef::as_ref).collect();
    let options = ridepay::reconciliation::PassOptions {
        since: None,
        dry_run,
    };
    ridepay::reconciliation::run_pass(&context, &endpoints, &settings.reconcile, options).unwrap()
}

/// `reconcile_with` on the simulated gateway, without faults.
pub fn reconcile(app: &TestApp) -> ridepay::reconciliation::Summary {
    reconcile_with(app, false, |_| {})
}
