//! Beyond one database server: ridepay on PostgreSQL replicated under
//! Patroni, with retrying clients, the Stripe client against
//! `ridepay fake-gateway` (its records in a PostgreSQL of its own: a
//! gateway's records do not fail over with ridepay's), and the primary
//! crashed mid-run. This binary runs after the main suite; it needs
//! Debian's `patroni` and `etcd-server` (under `CI=true` a missing one
//! fails it; elsewhere it is skipped, saying why).

mod clients;
#[path = "../common/mod.rs"]
mod common;
mod drivers;
mod patroni;
mod streaming;
// Shared with the main suite, which uses all of it.
#[allow(dead_code)]
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use diesel::{Connection, PgConnection, RunQueryDsl};
use ridepay::embedded_postgres::EmbeddedPostgres;
use ridepay_doubles::fake_stripe::{ConnectionLimits, FakeGateway, FakeGatewayConfig};
use ridepay_doubles::SimulatedGatewaySettings;

use clients::Answered;
use common::database::count_at;
use common::server_process::ServerProcess;
use patroni::{Cluster, Tools};

const FAKE_API_KEY: &str = "sk_test_ridepay_ha";

/// `ridepay fake-gateway` keeping its records in a PostgreSQL of its own,
/// losing one response in ten after acting.
struct Gateway {
    fake: FakeGateway,
    records_url: String,
}

fn gateway() -> Gateway {
    let dir = std::env::temp_dir().join(format!(
        "ridepay-test-ha-gateway-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let cluster = EmbeddedPostgres::ensure_running(&dir).expect("start the gateway's PostgreSQL");
    cluster.stop_when_process_exits(&dir).unwrap();
    let mut admin = PgConnection::establish(&cluster.superuser_url("postgres")).unwrap();
    diesel::sql_query("CREATE DATABASE records")
        .execute(&mut admin)
        .unwrap();
    let records_url = cluster.superuser_url("records");
    let fake = FakeGateway::start(FakeGatewayConfig {
        bind: "127.0.0.1:0".to_owned(),
        database_url: records_url.clone(),
        faults: SimulatedGatewaySettings {
            lost_response_rate: 0.1,
            ..SimulatedGatewaySettings::default()
        },
        api_key: Some(FAKE_API_KEY.to_owned()),
        webhook: None,
        connect_webhook: None,
        limits: ConnectionLimits::default(),
    })
    .expect("start the fake gateway");
    Gateway { fake, records_url }
}

/// ridepay on `database_url`, paying through the Stripe client at
/// `gateway`, its completer on, with `extra` settings.
fn ridepay(database_url: &str, gateway: &Gateway, extra: &[(&str, &str)]) -> ServerProcess {
    let base = gateway.fake.url();
    let mut env = vec![
        ("GATEWAY", "stripe"),
        ("STRIPE_API_KEY", FAKE_API_KEY),
        ("STRIPE_API_BASE", base.as_str()),
        ("STRIPE_TIMEOUT_MS", "500"),
        ("STRIPE_CONNECT_TIMEOUT_MS", "300"),
        ("COMPLETER_ENABLED", "true"),
    ];
    env.extend_from_slice(extra);
    ServerProcess::start(database_url, &env)
}

/// Whether a new connection to `database_url` reaches a primary.
fn on_primary(database_url: &str) -> bool {
    #[derive(diesel::QueryableByName)]
    struct Recovery {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        standby: bool,
    }
    PgConnection::establish(database_url)
        .ok()
        .and_then(|mut conn| {
            diesel::sql_query("SELECT pg_is_in_recovery() AS standby")
                .get_result::<Recovery>(&mut conn)
                .ok()
        })
        .is_some_and(|recovery| !recovery.standby)
}

/// A user of the service on `database_url`; returns their API key.
fn user(database_url: &str) -> String {
    let mut conn = PgConnection::establish(database_url).unwrap();
    let card = ridepay::users::SavedCard {
        customer: None,
        payment_method: None,
    };
    let (_, key) = ridepay::users::create(&mut conn, "rider@example.com", card).unwrap();
    key.expose().to_owned()
}

/// What every run must end with, failover or not: every request answered,
/// and never with a 500 (a 503 or a 409 while the database changes hands);
/// each key answered 201 once, with its own ride, replayed byte for byte;
/// each key finished once in the database; one PaymentIntent per request at
/// the gateway.
async fn assert_every_key_paid_once(
    answers: &[Answered],
    address: &str,
    api_key: &str,
    database_url: &str,
    records_url: &str,
) {
    let client = reqwest::Client::new();
    for answer in answers {
        answer.assert_paid();
        let ride: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
        assert_eq!(ride["amount_cents"], answer.amount_cents, "{}", answer.key);
        let (status, body, replayed) = clients::post(
            &client,
            address,
            api_key,
            &answer.key,
            &clients::ride(answer.amount_cents),
        )
        .await;
        assert_eq!(
            (status, replayed.as_deref()),
            (201, Some("true")),
            "{}",
            answer.key
        );
        assert_eq!(body, answer.body, "{}: the replay differs", answer.key);
    }
    let keys = answers.len() as i64;
    assert_eq!(
        count_at(
            database_url,
            "idempotency_keys WHERE recovery_point = 'finished'"
        ),
        keys
    );
    assert_eq!(count_at(database_url, "rides"), keys);
    assert_eq!(
        count_at(
            records_url,
            "(SELECT DISTINCT metadata->>\'ridepay_key\' FROM simulated_payment_intents) AS keys"
        ),
        keys,
        "one request per key"
    );
    assert_eq!(
        count_at(records_url, "simulated_payment_intents"),
        keys,
        "one PaymentIntent per key"
    );
}

/// Returns once `count` rides have been acknowledged.
async fn reached(acknowledged: &AtomicUsize, count: usize) {
    while acknowledged.load(Ordering::SeqCst) < count {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn statuses_seen(answers: &[Answered]) -> BTreeMap<u16, usize> {
    let mut seen = BTreeMap::new();
    for status in answers.iter().flat_map(|answer| &answer.statuses) {
        *seen.entry(*status).or_default() += 1;
    }
    seen
}

/// How ridepay reaches the Patroni cluster.
#[derive(Clone, Copy)]
enum Route {
    /// A `DATABASE_URL` naming every node.
    Libpq,
    /// A PgBouncer on each node in this pool mode, going down with its
    /// node, and HAProxy in front sending connections to the PgBouncer of
    /// the node Patroni names primary; migrations straight to the nodes.
    /// (libpq cannot pick the primary's PgBouncer itself: PgBouncer hands
    /// its clients the server's parameters as they were when it first
    /// connected, so after a promotion `target_session_attrs` still reads
    /// the new primary's as a standby's.)
    PgBouncer(&'static str),
}

/// ridepay paying through the fake gateway on a database of the Patroni
/// cluster, with a user.
struct Deployment {
    cluster: Cluster,
    database_url: String,
    gateway: Gateway,
    server: ServerProcess,
    api_key: String,
    /// Each node's PgBouncer, when the route has them.
    poolers: Vec<Option<common::pgbouncer::PgBouncer>>,
    _proxy: Option<patroni::HaProxy>,
}

impl Deployment {
    /// `None` when a tool is missing (and not under `CI=true`).
    fn start(tools: &Tools, route: Route) -> Option<Deployment> {
        let cluster = Cluster::start(tools);
        cluster.create_database("ridepay", "ridepay-ha", "ridepay");
        let direct_url = cluster.url_of_every_node("ridepay", "ridepay-ha", "ridepay");
        let gateway = gateway();
        let (database_url, poolers, proxy, env) = match route {
            Route::Libpq => (direct_url.clone(), Vec::new(), None, Vec::new()),
            Route::PgBouncer(mode) => {
                let binary = common::pgbouncer::pgbouncer_binary()?;
                let poolers: Vec<common::pgbouncer::PgBouncer> = cluster
                    .nodes
                    .iter()
                    .map(|node| {
                        let node_url = format!(
                            "host=127.0.0.1 port={} user=ridepay password=ridepay-ha \
                             dbname=ridepay",
                            node.pg_port
                        );
                        common::pgbouncer::PgBouncer::start(&binary, &node_url, mode)
                    })
                    .collect();
                let backends: Vec<(u16, u16)> = poolers
                    .iter()
                    .zip(&cluster.nodes)
                    .map(|(pooler, node)| (pooler.port(), node.rest_port))
                    .collect();
                let proxy = patroni::HaProxy::start(&backends)?;
                let poolers = poolers.into_iter().map(Some).collect();
                let url = format!(
                    "host=127.0.0.1 port={} user=ridepay password=ridepay-ha dbname=ridepay \
                     connect_timeout=2",
                    proxy.port
                );
                // HAProxy takes every server for up until its first checks:
                // awaited, ten new connections in a row on the primary.
                let mut in_a_row = 0;
                patroni::wait_for(
                    "HAProxy to send only to the primary",
                    Duration::from_secs(30),
                    || {
                        in_a_row = if on_primary(&url) { in_a_row + 1 } else { 0 };
                        in_a_row >= 10
                    },
                );
                let mut env = vec![("DATABASE_DIRECT_URL", direct_url.clone())];
                if mode == "transaction" {
                    env.push(("DATABASE_PREPARED_STATEMENTS", "off".to_owned()));
                }
                (url, poolers, Some(proxy), env)
            }
        };
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let server = ridepay(&database_url, &gateway, &env);
        let api_key = user(&direct_url);
        Some(Deployment {
            cluster,
            database_url: direct_url,
            gateway,
            server,
            api_key,
            poolers,
            _proxy: proxy,
        })
    }

    /// A machine crash of node `i`: its Patroni, its PostgreSQL and its
    /// PgBouncer, if it has one, all SIGKILLed.
    fn crash(&mut self, i: usize) {
        self.cluster.crash(i);
        if let Some(pooler) = self.poolers.get_mut(i) {
            pooler.take();
        }
    }

    async fn assert_every_key_paid_once(&self, answers: &[Answered]) {
        assert_every_key_paid_once(
            answers,
            &self.server.address,
            &self.api_key,
            &self.database_url,
            &self.gateway.records_url,
        )
        .await;
    }
}

/// The primary crashes (Patroni and PostgreSQL SIGKILLed together) while
/// 16 clients send rides through `route`: the synchronous standby is
/// promoted by Patroni, ridepay follows by itself, and no acknowledged ride
/// is lost nor any key paid twice.
async fn failover_under_load(route: Route) {
    let Some(tools) = Tools::find() else {
        return;
    };
    let Some(mut deployment) = Deployment::start(&tools, route) else {
        return;
    };
    let acknowledged = AtomicUsize::new(0);
    let primary = deployment
        .cluster
        .await_primary(None, Duration::from_secs(30));
    let (address, api_key) = (
        deployment.server.address.clone(),
        deployment.api_key.clone(),
    );

    let load = clients::run(
        &address,
        &api_key,
        16,
        12,
        &acknowledged,
        Duration::from_secs(150),
    );
    let rest_ports = deployment.cluster.rest_ports();
    let deployed = &mut deployment;
    let failover = async {
        reached(&acknowledged, 40).await;
        let before = acknowledged.load(Ordering::SeqCst);
        deployed.crash(primary);
        // Off the clients' task: they keep sending while Patroni promotes.
        tokio::task::spawn_blocking(move || {
            patroni::await_primary_among(&rest_ports, Some(primary), Duration::from_secs(90))
        })
        .await
        .unwrap();
        before
    };
    let (answers, acknowledged_before) = tokio::join!(load, failover);

    eprintln!(
        "{acknowledged_before} rides acknowledged before the crash; answers seen: {:?}",
        statuses_seen(&answers)
    );
    deployment.assert_every_key_paid_once(&answers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patroni_failover_loses_no_acknowledged_ride_and_pays_each_key_once() {
    failover_under_load(Route::Libpq).await;
}

/// The same through a PgBouncer on each node, which goes down with it,
/// behind HAProxy checking Patroni's `/primary`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_through_pgbouncer_in_session_mode() {
    failover_under_load(Route::PgBouncer("session")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_through_pgbouncer_in_transaction_mode_with_prepared_statements_off() {
    failover_under_load(Route::PgBouncer("transaction")).await;
}

/// The synchronous standby's PostgreSQL stops answering (SIGSTOP), its
/// Patroni still running: every commit waits for it, and no ride is
/// answered 201 meanwhile, though `statement_timeout` (5 s) passes many
/// times over. A cancelled wait would commit locally and answer success
/// with nothing replicated. Once the standby answers again, every key
/// ends, paid once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synchronous_standby_that_stops_answering_never_lets_a_ride_be_answered_201() {
    let Some(tools) = Tools::find() else {
        return;
    };
    let Some(deployment) = Deployment::start(&tools, Route::Libpq) else {
        return;
    };
    let primary = deployment
        .cluster
        .await_primary(None, Duration::from_secs(30));
    let standby = 1 - primary;
    let (address, api_key) = (&deployment.server.address, &deployment.api_key);
    let client = reqwest::Client::new();
    let patience = Duration::from_secs(60);
    let warm = clients::until_final(&client, address, api_key, "warm", 999, patience).await;
    assert_eq!(warm.status(), 201, "{:?}", warm.statuses);

    deployment
        .cluster
        .signal_postgres(standby, nix::sys::signal::Signal::SIGSTOP);
    // Each waits 12 s for an answer: well past the statement timeout, well
    // within the standby's wal_sender_timeout (60 s).
    let frozen: Vec<(u16, Vec<u8>, Option<String>)> =
        futures_util::future::join_all((0..8).map(|i| {
            let client = client.clone();
            async move {
                let key = format!("frozen-{i}");
                tokio::time::timeout(
                    Duration::from_secs(12),
                    clients::post(&client, address, api_key, &key, &clients::ride(2000 + i)),
                )
                .await
                .unwrap_or((0, Vec::new(), None))
            }
        }))
        .await;
    deployment
        .cluster
        .signal_postgres(standby, nix::sys::signal::Signal::SIGCONT);

    for (status, body, _) in &frozen {
        assert_ne!(
            *status,
            201,
            "answered 201 while the synchronous standby was stopped: {}",
            String::from_utf8_lossy(body)
        );
    }
    let mut answers = vec![warm];
    for i in 0..8 {
        let key = format!("frozen-{i}");
        answers
            .push(clients::until_final(&client, address, api_key, &key, 2000 + i, patience).await);
    }
    deployment.assert_every_key_paid_once(&answers).await;
}

/// An asynchronous standby that missed the primary's last commits: its WAL
/// receiver stopped while commits go on, then the primary crashes and the
/// standby is promoted by hand. Rides acknowledged after the stop are lost
/// with the primary; their payments are not. No client key pays twice:
/// every key a client sends again soon, the lost ones included, meets the
/// PaymentIntent it was first answered with, and requests handed a lost
/// row's id again make their own. Reconciliation then refunds the payments
/// of the lost rides no client came back for, and a client that comes back
/// after that gets a 502 for its key: every payment at the gateway is a
/// ride's or was given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asynchronous_failover_that_loses_commits_never_pays_a_key_twice() {
    let Some(tools) = Tools::find() else {
        return;
    };
    let mut pair = streaming::Pair::start(&tools);
    pair.create_database("ridepay", "ridepay");
    let database_url = pair.url("ridepay", "ridepay");
    let gateway = gateway();
    // Reconciliation (off in the server) is run by hand below, once half
    // the keys are back.
    let server = ridepay(&database_url, &gateway, &[]);
    let api_key = user(&database_url);
    let acknowledged = AtomicUsize::new(0);

    let load = clients::run(
        &server.address,
        &api_key,
        16,
        12,
        &acknowledged,
        Duration::from_secs(150),
    );
    let pair = &mut pair;
    let acknowledged = &acknowledged;
    let failover = async {
        reached(acknowledged, 40).await;
        pair.stop_streaming();
        // Rides acknowledged from here on reach only the primary.
        reached(acknowledged, 80).await;
        pair.crash_primary();
        pair.promote_standby();
    };
    let (answers, ()) = tokio::join!(load, failover);

    let client = reqwest::Client::new();
    for answer in &answers {
        answer.assert_paid();
    }
    // Every id a client was given names its own ride or nothing, though
    // the new primary handed the lost rides' integer keys out again.
    for answer in &answers {
        assert_names_its_ride_or_nothing(&client, &server.address, &api_key, answer).await;
    }
    let intents = "simulated_payment_intents";
    let lost = count_at(&gateway.records_url, intents) - count_at(&database_url, "rides");
    // Half the clients send their keys again at once, as a client whose
    // answer was lost would: the payment each was first answered with, never
    // a second one. The other half come back only after reconciliation has
    // released the payments of rides lost with the primary.
    let (soon, late): (Vec<_>, Vec<_>) = answers.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    for (_, answer) in &soon {
        let again = resend(&client, &server.address, &api_key, answer).await;
        assert_eq!(again.status(), 201, "{}: {:?}", answer.key, again.statuses);
        assert_same_payment(answer, &again);
        // Made again, a lost ride has the id its client was given.
        assert_eq!(ride_id(&again), ride_id(answer), "{}", answer.key);
        let shown = get_ride(&client, &server.address, &api_key, answer).await;
        assert_eq!(shown.0, 200, "{}", answer.key);
    }
    // Keys lost whole with the primary (a key whose row survived at an
    // earlier point is finished by the completer, or a retry, instead).
    let late_and_lost: Vec<&str> = late
        .iter()
        .filter(|(_, answer)| !kept(&database_url, answer))
        .map(|(_, answer)| answer.key.as_str())
        .collect();

    // Passes until none leaves a release unconfirmed (the fake loses one
    // answer in ten; a release is sent again under its key).
    let mut released = 0;
    let mut refunded = 0;
    let mut summary = serde_json::Value::Null;
    for _ in 0..10 {
        summary = reconcile(&database_url, &gateway);
        refunded += summary["orphans_refunded"].as_u64().unwrap();
        released += summary["orphans_refunded"].as_u64().unwrap()
            + summary["orphans_cancelled"].as_u64().unwrap();
        if summary["unresolved"] == 0 {
            break;
        }
    }

    eprintln!(
        "answers seen: {:?}; {lost} payments whose rides were lost with the primary, \
         {} of them released by reconciliation: {summary}",
        statuses_seen(&answers),
        late_and_lost.len()
    );
    assert_eq!(released, late_and_lost.len() as u64, "{summary}");
    // A late key whose ride was lost meets its released payment: a 502,
    // never a ride recording money given back; every other late key its
    // first payment.
    for (_, answer) in &late {
        let again = resend(&client, &server.address, &api_key, answer).await;
        if late_and_lost.contains(&answer.key.as_str()) {
            assert_eq!(again.status(), 502, "{}: {:?}", answer.key, again.statuses);
        } else {
            assert_eq!(again.status(), 201, "{}: {:?}", answer.key, again.statuses);
            assert_same_payment(answer, &again);
        }
    }
    assert_eq!(
        count_at(&gateway.records_url, intents),
        answers.len() as i64,
        "one PaymentIntent per key"
    );
    // Every payment at the gateway is a ride's, or was given back.
    assert_eq!(
        count_at(&database_url, "rides WHERE status = 'captured'") + released as i64,
        answers.len() as i64
    );
    // What the new primary kept of the ledger agrees with itself, with the
    // rides it kept and with the gateway: the payments it lost are posted
    // with their releases, against suspense, which they leave at zero.
    let report = run_against(&database_url, &gateway, &["ledger", "check"], &[]);
    assert_eq!(report["violations"], serde_json::json!([]), "{report}");
    assert_eq!(report["unposted"], serde_json::json!({}), "{report}");
    assert_eq!(
        count_at(
            &database_url,
            "ledger_transactions WHERE ride_id IS NULL AND kind = 'refund'"
        ),
        refunded as i64
    );
    assert_eq!(
        count_at(
            &database_url,
            "(SELECT FROM ledger_entries e JOIN ledger_accounts a ON a.id = e.account_id \
              WHERE a.kind = 'suspense' GROUP BY a.id HAVING sum(e.amount_cents) <> 0) AS owed"
        ),
        0
    );
}

/// `answer`'s key sent again until its answer is final.
async fn resend(
    client: &reqwest::Client,
    address: &str,
    api_key: &str,
    answer: &Answered,
) -> Answered {
    clients::until_final(
        client,
        address,
        api_key,
        &answer.key,
        answer.amount_cents,
        Duration::from_secs(60),
    )
    .await
}

/// The id of the ride `answer` was given.
fn ride_id(answer: &Answered) -> serde_json::Value {
    serde_json::from_slice::<serde_json::Value>(&answer.body).unwrap()["id"].clone()
}

/// `GET` of the ride `answer` was given: the status and the ride.
async fn get_ride(
    client: &reqwest::Client,
    address: &str,
    api_key: &str,
    answer: &Answered,
) -> (u16, serde_json::Value) {
    let id = ride_id(answer);
    let url = format!("{address}/api/rides/{}", id.as_str().unwrap());
    let response = client.get(url).bearer_auth(api_key).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

/// The id `answer` gave names the ride of that answer (its fare) or, lost
/// with the primary, nothing: never another ride.
async fn assert_names_its_ride_or_nothing(
    client: &reqwest::Client,
    address: &str,
    api_key: &str,
    answer: &Answered,
) {
    match get_ride(client, address, api_key, answer).await {
        (404, _) => {}
        (200, ride) => assert_eq!(ride["amount_cents"], answer.amount_cents, "{}", answer.key),
        other => panic!("{}: {other:?}", answer.key),
    }
}

fn assert_same_payment(first: &Answered, again: &Answered) {
    let intent = |answer: &Answered| {
        serde_json::from_slice::<serde_json::Value>(&answer.body).unwrap()["payment_intent_id"]
            .clone()
    };
    assert_eq!(intent(again), intent(first), "{}: paid twice", first.key);
}

/// Whether the key `answer` was acknowledged for is in the database.
fn kept(database_url: &str, answer: &Answered) -> bool {
    count_at(
        database_url,
        &format!("idempotency_keys WHERE key = '{}'", answer.key),
    ) == 1
}

/// One reconciliation pass by `ridepay reconcile`, releasing at once what
/// no ride records; its summary.
fn reconcile(database_url: &str, gateway: &Gateway) -> serde_json::Value {
    run_against(
        database_url,
        gateway,
        &["reconcile"],
        &[
            ("RECONCILE_ORPHAN_GRACE_SECS", "0"),
            ("RECONCILE_SEARCH_LAG_SECS", "0"),
        ],
    )
}

/// `ridepay <args>` on the fake gateway, and what it printed.
fn run_against(
    database_url: &str,
    gateway: &Gateway,
    args: &[&str],
    env: &[(&str, &str)],
) -> serde_json::Value {
    let base = gateway.fake.url();
    let reaching = [
        ("GATEWAY", "stripe"),
        ("STRIPE_API_KEY", FAKE_API_KEY),
        ("STRIPE_API_BASE", &base),
    ];
    common::server_process::run_json(database_url, args, &[&reaching[..], env].concat())
}
