//! The service under test: the real HTTP server on a free port over a
//! database of its own, a user with an API key, and one method per endpoint
//! of the API (`TestApp`); the answers as read (`Answer`).
use std::time::Duration;

use diesel::{Connection, PgConnection, RunQueryDsl};
use reqwest::{Client, Response};
use ridepay::config::Settings;
use ridepay::embedded_postgres::connect_with_retry;
use ridepay::startup::Application;
use serde_json::{json, Value};

use super::client::send_idempotent;
use super::gateway::WEBHOOK_SECRET;
use super::test_databases::{create_test_database, maintenance_url};

/// A ride paid at once (`automatic`), so that it can be refunded.
pub const RIDE: &str = r#"{"origin_lat": 37.77, "origin_lon": -122.42, "target_lat": 37.80, "target_lon": -122.27, "amount_cents": 2000, "currency": "usd", "payment_method": "pm_card_visa", "capture_method": "automatic"}"#;

/// A ride whose fare is held (`manual`, the default), named by its card.
pub fn held_ride(payment_method: &str) -> String {
    ride_with(json!({ "payment_method": payment_method, "capture_method": null }))
}

pub fn ride_with(changes: Value) -> String {
    let mut ride: Value = serde_json::from_str(RIDE).unwrap();
    for (field, value) in changes.as_object().unwrap() {
        if value.is_null() {
            ride.as_object_mut().unwrap().remove(field);
        } else {
            ride[field] = value.clone();
        }
    }
    ride.to_string()
}

pub struct TestUser {
    pub id: i64,
    pub api_key: String,
}

pub struct TestApp {
    pub address: String,
    pub database_url: String,
    pub client: Client,
    /// A user with a stored customer id.
    pub user: TestUser,
}

/// A fresh database and a user, with no server: the test starts its own
/// (a child process, say) and sets `address`.
pub fn database_only() -> TestApp {
    on_database(create_test_database())
}

/// A user on a migrated database of the test's choosing, with no server.
pub fn on_database(database_url: String) -> TestApp {
    let user = create_user(&database_url, Some("cus_test"));
    TestApp {
        address: String::new(),
        database_url,
        client: Client::new(),
        user,
    }
}

/// The server on a fresh database with default settings.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

pub async fn spawn_app_with(configure: impl FnOnce(&mut Settings)) -> TestApp {
    let database_url = create_test_database();
    let app = spawn_server(&database_url, configure).await;
    let user = create_user(&database_url, Some("cus_test"));
    TestApp {
        address: app,
        database_url,
        client: Client::new(),
        user,
    }
}

/// Another server on the same database, as a second instance would be.
pub async fn spawn_server(database_url: &str, configure: impl FnOnce(&mut Settings)) -> String {
    let mut settings = super::settings::test_settings(database_url);
    configure(&mut settings);
    let app = Application::build(&settings, database_url).expect("build the application");
    let address = format!("http://{}", app.address());
    tokio::spawn(app.run_until_stopped());
    address
}

pub fn create_user(database_url: &str, customer: Option<&str>) -> TestUser {
    let mut conn = PgConnection::establish(database_url).unwrap();
    let email = format!("{}@example.com", uuid::Uuid::new_v4().simple());
    let card = ridepay::users::SavedCard {
        customer,
        payment_method: customer.map(|_| "pm_card_visa"),
    };
    let (user, key) = ridepay::users::create(&mut conn, &email, card).unwrap();
    TestUser {
        id: user.id.0,
        api_key: key.expose().to_owned(),
    }
}

/// A platform user (no card): its key reads every ride and makes none.
pub fn create_platform_user(database_url: &str) -> TestUser {
    let mut conn = PgConnection::establish(database_url).unwrap();
    let email = format!("{}@example.com", uuid::Uuid::new_v4().simple());
    let (user, key) = ridepay::users::create_platform(&mut conn, &email).unwrap();
    TestUser {
        id: user.id.0,
        api_key: key.expose().to_owned(),
    }
}

/// Says, where `cargo test` shows it, that `test` did not run and why: the
/// test harness hides what a passing test prints, and a skip must not pass
/// unseen. Under `CI=true` a skip is not allowed at all.
pub fn skip(test: &str, why: &str) {
    use std::io::Write;
    assert!(
        std::env::var_os("CI").is_none(),
        "{test} cannot be skipped in CI: {why}"
    );
    let _ = writeln!(std::io::stderr(), "skipped {test}: {why}");
}

/// A response read whole, so tests can compare bodies byte for byte.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    pub async fn read(response: Response) -> Answer {
        Answer {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: response.bytes().await.unwrap().to_vec(),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&self.body)))
    }

    /// Asserts the status, showing the body when it is another.
    pub fn assert_status(&self, status: u16) -> &Self {
        assert_eq!(
            self.status,
            status,
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
        self
    }

    /// Asserts a 429 `rate-limited` that says how long to wait.
    pub fn assert_rate_limited(&self) {
        self.assert_problem(429, "rate-limited");
        let wait: u64 = self.header("retry-after").unwrap().parse().unwrap();
        assert!(wait >= 1, "Retry-After: {wait}");
    }

    /// Asserts a problem+json answer of `slug` and `status`; returns its body.
    /// The body as text, for a failure's message.
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn assert_problem(&self, status: u16, slug: &str) -> Value {
        assert_eq!(
            self.status,
            status,
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json")
        );
        let problem = self.json();
        assert_eq!(
            problem["type"],
            format!("https://ridepay.dev/problems/{slug}")
        );
        assert_eq!(problem["status"], status);
        assert!(problem["title"].is_string() && problem["detail"].is_string());
        problem
    }
}

impl TestApp {
    pub async fn post_ride(&self, key: &str, body: &str) -> Answer {
        self.post_ride_as(&self.user.api_key, key, body).await
    }

    pub async fn post_ride_as(&self, api_key: &str, key: &str, body: &str) -> Answer {
        self.post_ride_to(&self.address, api_key, key, body).await
    }

    /// The same request to another server (instance) on this database.
    pub async fn post_ride_to(
        &self,
        address: &str,
        api_key: &str,
        key: &str,
        body: &str,
    ) -> Answer {
        self.try_post_ride_to(address, api_key, key, body)
            .await
            .expect("the server answers")
    }

    /// The request, where the server may die or drop the connection.
    pub async fn try_post_ride_to(
        &self,
        address: &str,
        api_key: &str,
        key: &str,
        body: &str,
    ) -> Result<Answer, reqwest::Error> {
        self.post_idempotent(&format!("{address}/api/rides"), api_key, key, body)
            .await
    }

    /// An idempotent JSON POST to `url`.
    pub async fn post_idempotent(
        &self,
        url: &str,
        api_key: &str,
        key: &str,
        body: &str,
    ) -> Result<Answer, reqwest::Error> {
        Ok(Answer::read(send_idempotent(&self.client, url, api_key, key, body).await?).await)
    }

    /// Retries like a real client (on 409, 5xx and lost connections) until the
    /// answer is final, and returns it.
    pub async fn retry_until_final(&self, address: &str, key: &str) -> Answer {
        self.retry_body_until_final(address, key, RIDE).await
    }

    /// `retry_until_final` with a body of the caller's.
    pub async fn retry_body_until_final(&self, address: &str, key: &str, body: &str) -> Answer {
        for _ in 0..200 {
            match self
                .try_post_ride_to(address, &self.user.api_key, key, body)
                .await
            {
                Ok(answer) if answer.status != 409 && answer.status < 500 => return answer,
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        panic!("key {key} never reached a final answer");
    }

    /// `POST /api/rides/{ride_id}/refunds` as the test's user.
    pub async fn post_refund(&self, ride_id: Id, key: &str, body: &str) -> Answer {
        self.post_refund_to(&self.address, &self.user.api_key, ride_id, key, body)
            .await
            .expect("the server answers")
    }

    pub async fn post_refund_to(
        &self,
        address: &str,
        api_key: &str,
        ride_id: Id,
        key: &str,
        body: &str,
    ) -> Result<Answer, reqwest::Error> {
        let url = format!("{address}/api/rides/{ride_id}/refunds");
        self.post_idempotent(&url, api_key, key, body).await
    }

    /// `POST /api/rides/{ride_id}/complete` as the test's user.
    pub async fn post_complete(&self, ride_id: Id, key: &str, body: &str) -> Answer {
        let path = format!("/api/rides/{ride_id}/complete");
        self.post_as(&self.user, &path, key, body).await
    }

    /// `POST /api/rides/{ride_id}/cancel` as the test's user.
    pub async fn post_cancel(&self, ride_id: Id, key: &str, body: &str) -> Answer {
        let path = format!("/api/rides/{ride_id}/cancel");
        self.post_as(&self.user, &path, key, body).await
    }

    /// `POST /api/rides/{ride_id}/tip` as the test's user.
    pub async fn post_tip(&self, ride_id: Id, key: &str, body: &str) -> Answer {
        let path = format!("/api/rides/{ride_id}/tip");
        self.post_as(&self.user, &path, key, body).await
    }

    /// `POST /api/drivers` as `platform`.
    pub async fn post_driver(&self, platform: &TestUser, key: &str, body: &Value) -> Answer {
        self.post_as(platform, "/api/drivers", key, &body.to_string())
            .await
    }

    /// `POST /api/drivers/{id}/onboarding_link` as `platform`.
    pub async fn post_onboarding_link(&self, platform: &TestUser, driver: Id, key: &str) -> Answer {
        let path = format!("/api/drivers/{driver}/onboarding_link");
        self.post_as(platform, &path, key, "{}").await
    }

    /// `POST /api/rides/{ride_id}/driver` as `platform`.
    pub async fn post_assign_driver(
        &self,
        platform: &TestUser,
        ride_id: Id,
        driver: Id,
        key: &str,
    ) -> Answer {
        let path = format!("/api/rides/{ride_id}/driver");
        let body = json!({ "driver_id": driver.to_string() }).to_string();
        self.post_as(platform, &path, key, &body).await
    }

    /// `POST /api/webhook_endpoints` as the test's user.
    pub async fn post_webhook_endpoint(&self, key: &str, body: &Value) -> Answer {
        let body = body.to_string();
        self.post_as(&self.user, "/api/webhook_endpoints", key, &body)
            .await
    }

    /// A destination of every event, registered under `key` at a loopback
    /// port where nothing listens; its id.
    pub async fn registered_destination(&self, key: &str) -> Id {
        let body = json!({"url": "http://127.0.0.1:9/hook", "events": ["*"]});
        let answer = self.post_webhook_endpoint(key, &body).await;
        answer.assert_status(201);
        Id::of(&answer.json()["id"])
    }

    /// `POST /api/webhook_endpoints/{id}/roll_secret` as the test's user.
    pub async fn post_roll_secret(&self, endpoint_id: &Value, key: &str) -> Answer {
        let path = format!("/api/webhook_endpoints/{}/roll_secret", Id::of(endpoint_id));
        self.post_as(&self.user, &path, key, "{}").await
    }

    /// `POST /api/webhook_endpoints/{id}/test` as the test's user.
    pub async fn post_test_event(&self, endpoint_id: &Value, key: &str) -> Answer {
        let path = format!("/api/webhook_endpoints/{}/test", Id::of(endpoint_id));
        self.post_as(&self.user, &path, key, "{}").await
    }

    /// `POST /api/webhook_endpoints/{id}/deliveries/{delivery}/retry` as the
    /// test's user.
    pub async fn post_delivery_retry(
        &self,
        endpoint_id: &Value,
        delivery_id: &Value,
        key: &str,
    ) -> Answer {
        let path = format!(
            "/api/webhook_endpoints/{}/deliveries/{}/retry",
            Id::of(endpoint_id),
            Id::of(delivery_id)
        );
        self.post_as(&self.user, &path, key, "{}").await
    }

    /// An idempotent POST of `body` to `path` as `user`: any endpoint, as
    /// another user than the test's.
    pub async fn post_as(&self, user: &TestUser, path: &str, key: &str, body: &str) -> Answer {
        let url = format!("{}{path}", self.address);
        self.post_idempotent(&url, &user.api_key, key, body)
            .await
            .expect("the server answers")
    }

    /// A ride whose fare is held on `payment_method`, through the API;
    /// returns its id.
    pub async fn held_ride(&self, key: &str, payment_method: &str) -> Id {
        let answer = self.post_ride(key, &held_ride(payment_method)).await;
        answer.assert_status(201);
        assert_eq!(answer.json()["status"], "authorized");
        Id::of(&answer.json()["id"])
    }

    /// A ride whose card needs the rider's authentication (202
    /// `requires_action`), through the API; returns its JSON.
    pub async fn waiting_ride(&self, key: &str) -> Value {
        let answer = self
            .post_ride(key, &held_ride("pm_card_authenticationRequired"))
            .await;
        answer.assert_status(202);
        answer.json()
    }

    /// The integer key of the row `id` names.
    pub fn row_key(&self, id: Id) -> i64 {
        diesel::dsl::sql::<diesel::sql_types::BigInt>(&format!("SELECT {}", id.row_key()))
            .get_result(&mut self.db())
            .unwrap()
    }

    /// How many times `ride` took a status (`ride.authorized`, ...): the
    /// audit record each transition writes.
    pub fn transitions(&self, ride: &Value, action: &str) -> i64 {
        self.count(&format!(
            "audit_records WHERE resource_type = 'ride' AND resource_id = {} AND action = '{action}'",
            super::ids::Id::of(&ride["id"]).row_key()
        ))
    }

    /// A ride paid at once with the user's saved card (`captured`), through
    /// the API; returns its id.
    pub async fn saved_card_ride(&self, key: &str) -> Id {
        let answer = self
            .post_ride(key, &ride_with(json!({ "payment_method": null })))
            .await;
        answer.assert_status(201);
        assert_eq!(answer.json()["status"], "captured");
        Id::of(&answer.json()["id"])
    }

    /// A ride, paid, through the API; returns its id.
    /// The service's context on its own pool, the simulated gateway without
    /// faults: for tests that drive the steps in process.
    pub fn service_context(&self) -> ridepay::context::ServiceContext {
        super::keys::service_context(
            super::settings::pool(&self.database_url),
            Default::default(),
        )
    }

    pub async fn paid_ride(&self, key: &str) -> Id {
        let answer = self.post_ride(key, RIDE).await;
        answer.assert_status(201);
        Id::of(&answer.json()["id"])
    }

    /// A Stripe event delivered to `POST /webhooks/stripe` with the given
    /// `Stripe-Signature` (None: no header).
    pub async fn post_webhook(&self, body: &str, signature: Option<&str>) -> Answer {
        let mut request = self
            .client
            .post(format!("{}/webhooks/stripe", self.address))
            .header("Content-Type", "application/json")
            .body(body.to_owned());
        if let Some(signature) = signature {
            request = request.header("Stripe-Signature", signature);
        }
        Answer::read(request.send().await.unwrap()).await
    }

    /// The event, signed now with the suite's webhook secret.
    pub async fn post_signed_webhook(&self, body: &str) -> Answer {
        let signature = ridepay::payments::stripe::signature::sign(
            WEBHOOK_SECRET,
            chrono::Utc::now().timestamp(),
            body.as_bytes(),
        );
        self.post_webhook(body, Some(&signature)).await
    }

    /// The ride as the API shows it.
    pub async fn ride(&self, ride_id: Id) -> Value {
        self.get(&format!("/api/rides/{ride_id}")).await.json()
    }

    pub async fn get(&self, path: &str) -> Answer {
        self.get_as(&self.user.api_key, path).await
    }

    pub async fn get_as(&self, api_key: &str, path: &str) -> Answer {
        let response = self
            .client
            .get(format!("{}{path}", self.address))
            .bearer_auth(api_key)
            .send()
            .await
            .unwrap();
        Answer::read(response).await
    }

    pub fn db(&self) -> PgConnection {
        PgConnection::establish(&self.database_url).unwrap()
    }

    pub fn count(&self, sql_from_where: &str) -> i64 {
        count(&mut self.db(), sql_from_where)
    }

    /// Rows: rides, gateway PaymentIntents, and idempotency keys.
    pub fn counts(&self) -> (i64, i64, i64) {
        let mut conn = self.db();
        (
            count(&mut conn, "rides"),
            count(&mut conn, "simulated_payment_intents"),
            count(&mut conn, "idempotency_keys"),
        )
    }

    /// Refuses new sessions to this test's database and ends the server's, as
    /// a database outage would.
    pub fn take_database_away(&self) {
        let mut admin = self.allow_connections(false);
        diesel::sql_query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = $1 AND application_name = 'ridepay'",
        )
        .bind::<diesel::sql_types::Text, _>(self.database_name())
        .execute(&mut admin)
        .unwrap();
    }

    pub fn give_database_back(&self) {
        self.allow_connections(true);
    }

    fn database_name(&self) -> &str {
        self.database_url.rsplit('/').next().unwrap()
    }

    fn allow_connections(&self, allow: bool) -> PgConnection {
        let mut admin = connect_with_retry(maintenance_url()).unwrap();
        // Identifiers cannot be bound; this one is the harness's own name.
        diesel::sql_query(format!(
            "ALTER DATABASE {} ALLOW_CONNECTIONS {allow}",
            self.database_name()
        ))
        .execute(&mut admin)
        .unwrap();
        admin
    }

    pub fn key_state(&self, key: &str) -> Value {
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Jsonb)]
            state: Value,
        }
        diesel::sql_query(
            "SELECT jsonb_build_object('recovery_point', recovery_point, 'locked', locked_at IS NOT NULL, \
             'lease_epoch', lease_epoch, 'response_status', response_status) AS state \
             FROM idempotency_keys WHERE key = $1",
        )
        .bind::<diesel::sql_types::Text, _>(key)
        .get_result::<Row>(&mut self.db())
        .map(|row| row.state)
        .unwrap_or(json!(null))
    }
}

pub use super::database::count;

pub use super::ids::Id;
