//! A driver's pay across an asynchronous failover: transfers and a
//! reversal the gateway made whose records were lost with the primary.

use std::time::Duration;

use diesel::{Connection, PgConnection};
use serde_json::{json, Value};

use crate::clients;
use crate::common::database::count_at;
use crate::patroni::{wait_for, Tools};
use crate::{gateway, reconcile, ride_id, ridepay, run_against, streaming, user};

/// Ride `i` costs `fare(i)`, so that a transfer made from the wrong
/// charge would show.
fn fare(i: usize) -> i64 {
    2000 + 10 * i as i64
}
const RIDES: usize = 8;

/// Requests as the rider and the platform send them to one server.
struct Clients {
    http: reqwest::Client,
    address: String,
    rider: String,
    platform: String,
}

impl Clients {
    /// `body` POSTed to `path` under `key` with `api_key` until a final
    /// answer (a broken connection, a 409 or a 503 while the database
    /// changes hands is sent again); the answer's status and body.
    async fn post(&self, api_key: &str, path: &str, key: &str, body: &Value) -> (u16, Value) {
        let url = format!("{}{path}", self.address);
        let body = body.to_string();
        let patience = Duration::from_secs(30);
        let (statuses, answer) =
            clients::until_final_at(&self.http, &url, api_key, key, &body, patience).await;
        let status = *statuses.last().unwrap();
        assert!(
            !matches!(status, 0 | 409 | 503),
            "{path} under {key}: {statuses:?}"
        );
        (status, serde_json::from_slice(&answer).unwrap_or_default())
    }

    /// Assigns `ride` to `driver` under `key`.
    async fn assign(&self, ride: &str, driver: &str, key: String) {
        let path = format!("/api/rides/{ride}/driver");
        let body = json!({ "driver_id": driver });
        let (status, answer) = self.post(&self.platform, &path, &key, &body).await;
        assert_eq!(status, 200, "{key}: {answer}");
    }

    /// Refunds `cents` of `ride` under `key`.
    async fn refund(&self, ride: &str, cents: i64, key: &str) {
        let path = format!("/api/rides/{ride}/refunds");
        let body = json!({ "amount_cents": cents });
        let (status, answer) = self.post(&self.rider, &path, key, &body).await;
        assert_eq!(status, 201, "{key}: {answer}");
    }

    /// A driver registered by the platform, their account made active at
    /// the gateway and learnt so by ridepay from their return page: the
    /// driver's id and account.
    async fn active_driver(&self, records_url: &str) -> (String, String) {
        let body = json!({"email": "ada@example.com", "country": "US"});
        let (status, driver) = self
            .post(&self.platform, "/api/drivers", "ada", &body)
            .await;
        assert_eq!(status, 201, "{driver}");
        let text = |field: &str| driver[field].as_str().unwrap().to_owned();
        let (id, account, onboarding) = (text("id"), text("account_id"), text("onboarding_url"));
        let mut records = PgConnection::establish(records_url).unwrap();
        ridepay_doubles::accounts::activate(&mut records, &account).unwrap();
        let pages = onboarding.find("/drivers/onboarding/").unwrap();
        let back = format!(
            "{}{}",
            self.address,
            onboarding[pages..].replace("/start", "/return")
        );
        let page = self.http.get(back).send().await.unwrap();
        assert!(page
            .text()
            .await
            .unwrap()
            .contains("data-status=\"active\""));
        (id, account)
    }
}

/// A platform user on `database_url`; returns their API key.
fn platform_user(database_url: &str) -> String {
    let mut conn = PgConnection::establish(database_url).unwrap();
    let (_, key) = ridepay::users::create_platform(&mut conn, "platform@example.com").unwrap();
    key.expose().to_owned()
}

/// Waits until `database_url` counts `count` rows in `from_where`.
fn await_count(database_url: &str, from_where: &str, count: i64) {
    wait_for(from_where, Duration::from_secs(60), || {
        count_at(database_url, from_where) == count
    });
}

/// The standby stops receiving WAL once it holds four rides' transfers;
/// the primary then pays the other four and reverses part of the first,
/// and crashes; the standby is promoted. The records of four transfers
/// and of the reversal are lost; the gateway's transfers and reversal are
/// not. Two riders' assignments and the refund are sent again under their
/// keys: their transfers and the reversal are recorded as the gateway made
/// them, under the same derived keys, not made again. The other two
/// assignments nobody sends again: reconciliation finds their transfers,
/// which no ride records, and reverses each once. At the gateway every
/// charge paid its driver once and nothing is reversed twice, and
/// `ridepay ledger check` agrees with it, driver by driver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asynchronous_failover_that_loses_transfers_makes_each_once() {
    let Some(tools) = Tools::find() else {
        return;
    };
    let mut pair = streaming::Pair::start(&tools);
    pair.create_database("ridepay", "ridepay");
    let database_url = pair.url("ridepay", "ridepay");
    let standby_url = pair.standby.superuser_url("ridepay");
    let gateway = gateway();
    let records_url = gateway.records_url.as_str();
    let server = ridepay(
        &database_url,
        &gateway,
        &[
            ("TRANSFER_WORKER_ENABLED", "true"),
            ("TRANSFER_WORKER_INTERVAL_MS", "200"),
            ("TRANSFER_CLAIM_SECS", "2"),
        ],
    );
    let clients = Clients {
        http: reqwest::Client::new(),
        address: server.address.clone(),
        rider: user(&database_url),
        platform: platform_user(&database_url),
    };
    let (driver, account) = clients.active_driver(records_url).await;
    let mut rides = Vec::new();
    for i in 0..RIDES {
        let paid = clients::until_final(
            &clients.http,
            &clients.address,
            &clients.rider,
            &format!("ride-{i}"),
            fare(i),
            Duration::from_secs(30),
        )
        .await;
        paid.assert_paid();
        rides.push(ride_id(&paid).as_str().unwrap().to_owned());
    }
    let assign = |i: usize| clients.assign(&rides[i], &driver, format!("assign-{i}"));

    for i in 0..4 {
        assign(i).await;
    }
    await_count(&standby_url, "transfers WHERE status = 'paid'", 4);
    pair.stop_streaming();
    // From here on the primary's commits reach only the primary.
    for i in 4..RIDES {
        assign(i).await;
    }
    await_count(
        &database_url,
        "transfers WHERE status = 'paid'",
        RIDES as i64,
    );
    ridepay_doubles::accounts::make_available(
        &mut PgConnection::establish(records_url).unwrap(),
        &account,
    )
    .unwrap();
    clients.refund(&rides[0], 1000, "refund-0").await;
    await_count(
        &database_url,
        "transfer_reversals WHERE status = 'reversed'",
        1,
    );
    pair.crash_primary();
    pair.promote_standby();

    // The new primary knows four transfers made, and no refund.
    assert_eq!(count_at(&database_url, "transfers"), 4);
    assert_eq!(count_at(&database_url, "refunds"), 0);
    let at_the_gateway = "simulated_transfers";
    assert_eq!(count_at(records_url, at_the_gateway), RIDES as i64);

    for i in 4..6 {
        assign(i).await;
    }
    clients.refund(&rides[0], 1000, "refund-0").await;
    await_count(&database_url, "transfers WHERE status = 'paid'", 6);
    await_count(
        &database_url,
        "transfer_reversals WHERE status = 'reversed'",
        1,
    );

    // Passes until none leaves a stray unreversed (the fake loses one
    // answer in ten; a reversal is sent again under its key).
    let mut reversed = 0;
    for _ in 0..10 {
        let summary = reconcile(&database_url, &gateway);
        reversed += summary["strays_reversed"].as_u64().unwrap();
        if reversed == 2 {
            break;
        }
    }
    assert_eq!(reversed, 2);
    assert_eq!(count_at(&database_url, "stray_transfers"), 2);

    // One transfer per charge, of 80 % of its fare.
    assert_eq!(count_at(records_url, at_the_gateway), RIDES as i64);
    let shares: i64 = (0..RIDES).map(|i| fare(i) * 8 / 10).sum();
    assert_eq!(
        count_at(
            records_url,
            &format!(
                "(SELECT FROM simulated_transfers GROUP BY destination \
                  HAVING count(DISTINCT source_transaction) = {RIDES} \
                     AND sum(amount_cents) = {shares}) AS paid"
            )
        ),
        1
    );
    // Three reversals, each of its own transfer: the refund's share of the
    // first ride, and the whole of each of the last two rides' transfers.
    assert_eq!(count_at(records_url, "simulated_transfer_reversals"), 3);
    let reversed_whole = format!(
        "simulated_transfers t JOIN simulated_transfer_reversals r ON r.transfer = t.id \
         WHERE r.amount_cents = t.amount_cents AND t.amount_cents IN ({}, {})",
        fare(6) * 8 / 10,
        fare(7) * 8 / 10
    );
    assert_eq!(count_at(records_url, &reversed_whole), 2);
    assert_eq!(
        count_at(
            records_url,
            "simulated_transfer_reversals WHERE amount_cents = 800"
        ),
        1
    );
    let report = run_against(&database_url, &gateway, &["ledger", "check"], &[]);
    assert_eq!(report["violations"], json!([]), "{report}");
}
