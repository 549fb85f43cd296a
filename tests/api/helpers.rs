//! The test harness: a PostgreSQL per test process (the suite's own, unless
//! `TEST_DATABASE_URL` names one), a database per test cloned from a migrated
//! template, and the real HTTP server on a free port.

use std::sync::OnceLock;
use std::time::Duration;

use diesel::{Connection, PgConnection, RunQueryDsl};
use reqwest::{Client, Response};
use ridepay::config::{Settings, SimulatedGatewaySettings, StripeSettings};
use ridepay::embedded_postgres::{connect_with_retry, EmbeddedPostgres};
use ridepay::idempotency::{
    self, CanonicalRequest, Claim, Fingerprint, GatewayCalls, IdempotencyKey, IdempotentRequest,
    KeyPolicy, RidepayKey,
};
use ridepay::ids::UserId;
use ridepay::payments::{self, Final, PaymentIntent};
use ridepay::rides::create as phases;
use ridepay::rides::create::RecoveryPoint;
use ridepay::rides::create::RideParams;
use ridepay::service_error::ServiceError;
use ridepay::startup::Application;
use ridepay_doubles::fake_stripe::{ConnectionLimits, FakeGateway, FakeGatewayConfig};
use ridepay_doubles::SimulatedGateway;
use serde_json::{json, Value};

pub struct DatabaseServer {
    /// A maintenance database URL of a role that may create databases.
    maintenance_url: String,
    template: String,
}

static SERVER: OnceLock<DatabaseServer> = OnceLock::new();

fn database_server() -> &'static DatabaseServer {
    SERVER.get_or_init(|| {
        let maintenance_url = match std::env::var("TEST_DATABASE_URL") {
            Ok(url) if !url.is_empty() => url,
            _ => start_own_cluster(),
        };
        let template = create_template(&maintenance_url);
        DatabaseServer {
            maintenance_url,
            template,
        }
    })
}

/// A throwaway cluster that stops, and is deleted, when this process ends.
fn start_own_cluster() -> String {
    let dir = std::env::temp_dir().join(format!(
        "ridepay-test-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    let cluster = EmbeddedPostgres::ensure_running(&dir).expect("start the test PostgreSQL");
    cluster
        .stop_when_process_exits(&dir)
        .expect("arrange for the test PostgreSQL to stop");
    cluster.superuser_url("postgres")
}

/// A migrated template named after the migrations, so test processes sharing a
/// server (TEST_DATABASE_URL) build it once and never use a stale one.
fn create_template(maintenance_url: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut entries: Vec<_> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for dir in entries {
        for file in ["up.sql", "down.sql"] {
            hasher.update(std::fs::read(dir.join(file)).unwrap_or_default());
        }
    }
    let template = format!("ridepay_template_{}", &hex::encode(hasher.finalize())[..16]);
    let mut conn = connect_with_retry(maintenance_url).expect("connect to the test server");
    diesel::sql_query("SELECT pg_advisory_lock(4242)")
        .execute(&mut conn)
        .unwrap();
    if !database_exists(&mut conn, &template) {
        let building = format!("{template}_building");
        diesel::sql_query(format!("DROP DATABASE IF EXISTS {building}"))
            .execute(&mut conn)
            .unwrap();
        diesel::sql_query(format!("CREATE DATABASE {building}"))
            .execute(&mut conn)
            .unwrap();
        {
            let mut template_conn =
                PgConnection::establish(&with_database(maintenance_url, &building)).unwrap();
            ridepay::db::run_migrations(&mut template_conn).expect("migrate the template");
        }
        diesel::sql_query(format!("ALTER DATABASE {building} RENAME TO {template}"))
            .execute(&mut conn)
            .unwrap();
    }
    diesel::sql_query("SELECT pg_advisory_unlock(4242)")
        .execute(&mut conn)
        .unwrap();
    template
}

fn database_exists(conn: &mut PgConnection, name: &str) -> bool {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    diesel::sql_query("SELECT count(*) AS count FROM pg_database WHERE datname = $1")
        .bind::<diesel::sql_types::Text, _>(name)
        .get_result::<Count>(conn)
        .unwrap()
        .count
        > 0
}

/// `url` with its database replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    let (base, _) = url.rsplit_once('/').expect("a database URL has a path");
    let query = url
        .split_once('?')
        .map(|(_, q)| format!("?{q}"))
        .unwrap_or_default();
    format!("{base}/{database}{query}")
}

/// A fresh database cloned from the migrated template.
pub fn create_test_database() -> String {
    let server = database_server();
    let name = format!("test_{}", uuid::Uuid::new_v4().simple());
    let mut conn = connect_with_retry(&server.maintenance_url).unwrap();
    diesel::sql_query(format!(
        "CREATE DATABASE {name} TEMPLATE {}",
        server.template
    ))
    .execute(&mut conn)
    .expect("clone the template");
    with_database(&server.maintenance_url, &name)
}

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

/// Applies the pending migrations up to version `last` (`20261203000030`)
/// and no further, as the release that ended there did.
pub fn migrate_until(conn: &mut PgConnection, last: &str) {
    use diesel_migrations::MigrationHarness;
    loop {
        let pending = conn.pending_migrations(ridepay::db::MIGRATIONS).unwrap();
        let Some(next) = pending.first() else {
            return;
        };
        if next.name().version().to_string().as_str() > last {
            return;
        }
        conn.run_migration(next).unwrap();
    }
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
    let mut settings = crate::common::settings::test_settings(database_url);
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

/// Raw HTTP over TCP, for what a misbehaving client sends.
pub fn raw(address: &str, read_timeout: Duration) -> std::net::TcpStream {
    let stream = std::net::TcpStream::connect(address.trim_start_matches("http://")).unwrap();
    stream.set_read_timeout(Some(read_timeout)).unwrap();
    stream
}

/// Sends `head`, then the body one byte every 200 ms until the server hangs
/// up (or 6 s pass); returns what the server answered and how long it took.
pub fn trickle(address: &str, head: String) -> (String, Duration) {
    use std::io::Write;
    use std::time::Instant;
    let mut stream = raw(address, Duration::from_secs(6));
    stream.write_all(head.as_bytes()).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let started = Instant::now();
    let sender = std::thread::spawn(move || {
        while started.elapsed() < Duration::from_secs(6) {
            if writer.write_all(b" ").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let answer = read_all(&mut stream);
    let waited = started.elapsed();
    drop(stream);
    let _ = sender.join();
    (answer, waited)
}

/// Everything the server sends until it hangs up (or the read times out).
pub fn read_all(stream: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
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
        let response = self
            .client
            .post(url)
            .bearer_auth(api_key)
            .header("Idempotency-Key", key)
            .header("Content-Type", "application/json")
            .body(body.to_owned())
            .timeout(Duration::from_secs(30))
            .send()
            .await?;
        Ok(Answer::read(response).await)
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
    pub async fn post_refund(&self, ride_id: i64, key: &str, body: &str) -> Answer {
        self.post_refund_to(&self.address, &self.user.api_key, ride_id, key, body)
            .await
            .expect("the server answers")
    }

    pub async fn post_refund_to(
        &self,
        address: &str,
        api_key: &str,
        ride_id: i64,
        key: &str,
        body: &str,
    ) -> Result<Answer, reqwest::Error> {
        let url = format!("{address}/api/rides/{ride_id}/refunds");
        self.post_idempotent(&url, api_key, key, body).await
    }

    /// `POST /api/rides/{ride_id}/{action}` (`complete`, `cancel`) as the
    /// test's user.
    pub async fn post_on_ride(&self, ride_id: i64, action: &str, key: &str, body: &str) -> Answer {
        let url = format!("{}/api/rides/{ride_id}/{action}", self.address);
        self.post_idempotent(&url, &self.user.api_key, key, body)
            .await
            .expect("the server answers")
    }

    /// A ride whose fare is held on `payment_method`, through the API;
    /// returns its id.
    pub async fn held_ride(&self, key: &str, payment_method: &str) -> i64 {
        let answer = self.post_ride(key, &held_ride(payment_method)).await;
        answer.assert_status(201);
        assert_eq!(answer.json()["status"], "authorized");
        answer.json()["id"].as_i64().unwrap()
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

    /// How many times `ride` took a status (`ride.authorized`, ...): the
    /// audit record each transition writes.
    pub fn transitions(&self, ride: &Value, action: &str) -> i64 {
        self.count(&format!(
            "audit_records WHERE resource_type = 'ride' AND resource_id = {} AND action = '{action}'",
            ride["id"]
        ))
    }

    /// A ride paid at once with the user's saved card (`captured`), through
    /// the API; returns its id.
    pub async fn saved_card_ride(&self, key: &str) -> i64 {
        let answer = self
            .post_ride(key, &ride_with(json!({ "payment_method": null })))
            .await;
        answer.assert_status(201);
        assert_eq!(answer.json()["status"], "captured");
        answer.json()["id"].as_i64().unwrap()
    }

    /// A ride, paid, through the API; returns its id.
    pub async fn paid_ride(&self, key: &str) -> i64 {
        let answer = self.post_ride(key, RIDE).await;
        answer.assert_status(201);
        answer.json()["id"].as_i64().unwrap()
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
    pub async fn ride(&self, ride_id: i64) -> Value {
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
        let mut admin = connect_with_retry(&database_server().maintenance_url).unwrap();
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

pub use crate::common::database::count;

pub const POLICY: KeyPolicy = KeyPolicy {
    lease_timeout: Duration::from_secs(30),
    effect_deadline: Duration::from_secs(12 * 3600),
};

/// The random public id of user `user_id`.
pub fn public_id(conn: &mut PgConnection, user_id: i64) -> uuid::Uuid {
    use diesel::prelude::*;
    use ridepay::schema::users;
    users::table
        .find(user_id)
        .select(users::public_id)
        .first(conn)
        .unwrap()
}

/// `RIDE` under `key` for the app's user, as the claim sees it.
pub struct RideRequest {
    pub user_id: i64,
    user_public_id: uuid::Uuid,
    installation: uuid::Uuid,
    pub key: IdempotencyKey,
    pub params: RideParams,
    canonical: CanonicalRequest,
}

impl RideRequest {
    pub fn new(app: &TestApp, key: &str) -> RideRequest {
        Self::with_body(app, key, RIDE)
    }

    /// `body` under `key`.
    pub fn with_body(app: &TestApp, key: &str, body: &str) -> RideRequest {
        let params = RideParams::parse(body.as_bytes()).unwrap();
        let mut conn = app.db();
        RideRequest {
            user_id: app.user.id,
            user_public_id: public_id(&mut conn, app.user.id),
            installation: payments::installation_id(&mut conn).unwrap(),
            key: IdempotencyKey::parse(key.as_bytes()).unwrap(),
            canonical: params.canonical(),
            params,
        }
    }

    /// What the request's gateway calls are derived from.
    pub fn ridepay_key(&self) -> RidepayKey {
        let fingerprint = Fingerprint::compute("POST", "/api/rides", self.canonical.as_bytes());
        RidepayKey::of(
            self.installation,
            self.user_public_id,
            &self.key,
            &fingerprint,
        )
    }

    /// The gateway key of its PaymentIntent's create, in generation 0.
    pub fn payment_key(&self) -> String {
        let calls = GatewayCalls::first(self.ridepay_key());
        payments::gateway_key(calls, phases::PAYMENT_KEY_PURPOSE)
    }

    /// The same, as a key of call version `version` derives it.
    pub fn payment_key_of_version(&self, version: i16) -> String {
        let calls = GatewayCalls {
            version,
            ..GatewayCalls::first(self.ridepay_key())
        };
        payments::gateway_key(calls, phases::PAYMENT_KEY_PURPOSE)
    }

    pub fn claimable(&self) -> IdempotentRequest<'_> {
        let caller = ridepay::idempotency::Requester {
            id: UserId(self.user_id),
            public_id: self.user_public_id,
        };
        IdempotentRequest::post(
            caller,
            self.installation,
            &self.key,
            "/api/rides",
            &self.canonical,
        )
    }
}

/// Runs the real phases up to `point` and stops there, lease held, as a process
/// killed at that moment would. Returns the PaymentIntent made, if any.
pub fn leave_key_at(app: &TestApp, key: &str, point: RecoveryPoint) -> Option<PaymentIntent> {
    let mut conn = app.db();
    let ride = RideRequest::new(app, key);
    let (request, params) = (ride.claimable(), &ride.params);
    let mut lease = conn
        .transaction(|conn| {
            let Claim::Acquired(mut lease) =
                idempotency::claim::<RecoveryPoint>(conn, &request, &POLICY)?
            else {
                panic!("a new key is claimable");
            };
            if point != RecoveryPoint::Started {
                phases::create_ride(conn, &lease, params, RETURN_URL)?;
                lease.advance(conn, RecoveryPoint::RideCreated)?;
            }
            Ok::<_, ServiceError>(lease)
        })
        .unwrap();
    if point != RecoveryPoint::ChargeCompleted {
        return None;
    }
    let ride = ridepay::rides::model::find_by_key(&mut conn, lease.key_id()).unwrap();
    let pool = ridepay::db::build_pool(
        &app.database_url,
        &crate::common::settings::test_settings(&app.database_url),
    );
    let gateway = SimulatedGateway::new(pool, SimulatedGatewaySettings::default());
    let installation = payments::installation_id(&mut conn).unwrap();
    let intent = phases::pay(&gateway, installation, &lease, &ride).unwrap();
    idempotency::in_transaction(&mut conn, &mut lease, |conn, lease| {
        let Final::Made(_) = phases::record_payment(conn, &ride, &intent)? else {
            panic!("the simulated gateway authorizes the test card");
        };
        lease.advance(conn, RecoveryPoint::ChargeCompleted)
    })
    .unwrap();
    Some(intent)
}

/// What two holders of one key's lease, the second taking it over while the
/// first waits on the gateway, must end with: the first's commit fenced off
/// (503), and one ride and one payment once a retry finishes the key. The
/// taker may be fenced off too, by the gateway's own event, which takes the
/// lease of a ride whose holder looks gone to settle it.
pub async fn assert_takeover_fenced(app: &TestApp, key: &str, first: Answer, second: Answer) {
    first.assert_problem(503, "service-unavailable");
    if second.status != 201 {
        second.assert_problem(503, "service-unavailable");
    }
    let finished = app.post_ride(key, RIDE).await;
    assert_eq!(finished.status, 201);
    if second.status == 201 {
        assert_eq!(finished.body, second.body);
    }
    assert!(app.key_state(key)["lease_epoch"].as_i64().unwrap() >= 2);
    assert_eq!(app.counts(), (1, 1, 1));
}

/// Moves the lease back in time past its timeout, as waiting would.
pub fn expire_leases(app: &TestApp) {
    diesel::sql_query("UPDATE idempotency_keys SET locked_at = now() - interval '1 hour'")
        .execute(&mut app.db())
        .unwrap();
}

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

/// A fake Stripe on loopback, keeping its ledger in `ledger_url` (a database
/// of its own, as an external system's).
pub fn start_fake_gateway(ledger_url: &str, faults: SimulatedGatewaySettings) -> FakeGateway {
    FakeGateway::start(FakeGatewayConfig {
        bind: "127.0.0.1:0".to_owned(),
        database_url: ledger_url.to_owned(),
        faults,
        api_key: Some(FAKE_API_KEY.to_owned()),
        webhook: None,
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
    }
}

/// The PaymentIntents a gateway's ledger holds (`WHERE ...` optional).
pub fn ledger_count(ledger_url: &str, filter: &str) -> i64 {
    count(
        &mut PgConnection::establish(ledger_url).unwrap(),
        &format!("simulated_payment_intents {filter}"),
    )
}

/// A fake gateway on a ledger database of its own, with the faults set by
/// `configure`; returns it and the ledger's URL.
pub fn spawn_fake_gateway(
    configure: impl FnOnce(&mut SimulatedGatewaySettings),
) -> (FakeGateway, String) {
    let ledger = create_test_database();
    let mut faults = SimulatedGatewaySettings::default();
    configure(&mut faults);
    (start_fake_gateway(&ledger, faults), ledger)
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
    let mut settings = crate::common::settings::test_settings(&app.database_url);
    settings.reconcile.search_lag = Duration::ZERO;
    settings.reconcile.orphan_grace = Duration::ZERO;
    configure(&mut settings);
    let installation = payments::installation_id(&mut app.db()).unwrap();
    let pool = ridepay::db::build_pool(&app.database_url, &settings);
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
