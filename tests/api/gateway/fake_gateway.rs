//! The fake gateway's wire behaviour, seen by a plain HTTP client: Stripe's
//! idempotency, refunds listed per payment, keys and unknown routes.

use reqwest::Client;
use serde_json::Value;

use crate::common::app::Answer;
use crate::common::gateway::{post_form, spawn_fake_gateway, FAKE_API_KEY};

async fn post(client: &Client, url: &str, key: &str, form: &[(&str, &str)]) -> Answer {
    Answer::read(post_form(client, url, key, form).await).await
}

async fn pay(client: &Client, base: &str, key: &str, amount: &str) -> Answer {
    let form = [
        ("amount", amount),
        ("currency", "usd"),
        ("confirm", "true"),
        ("capture_method", "automatic"),
        ("payment_method", "pm_card_visa"),
        ("metadata[ride_id]", "7"),
    ];
    post(client, &format!("{base}/v1/payment_intents"), key, &form).await
}

async fn get(client: &Client, url: &str) -> Answer {
    let response = client
        .get(url)
        .bearer_auth(FAKE_API_KEY)
        .send()
        .await
        .unwrap();
    Answer::read(response).await
}

#[tokio::test]
async fn a_keyed_payment_is_replayed_and_refused_with_other_parameters() {
    let (fake, _records) = spawn_fake_gateway(|_| {});
    let (client, base) = (Client::new(), fake.url());

    let first = pay(&client, &base, "key-1", "2000").await;
    let again = pay(&client, &base, "key-1", "2000").await;
    let other = pay(&client, &base, "key-1", "2500").await;

    assert_eq!(first.status, 200);
    let intent = first.json();
    assert_eq!(
        (&intent["object"], &intent["amount"], &intent["status"]),
        (
            &Value::from("payment_intent"),
            &Value::from(2000),
            &Value::from("succeeded")
        )
    );
    assert_eq!(intent["metadata"]["ride_id"], "7");
    assert_eq!(again.status, 200);
    assert_eq!(again.json()["id"], intent["id"]);
    assert_eq!(other.status, 400);
    assert_eq!(other.json()["error"]["type"], "idempotency_error");
    let anonymous = client
        .get(format!("{base}/v1/refunds"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let charges = get(&client, &format!("{base}/v1/charges")).await;
    assert_eq!(charges.status, 404);
    assert_eq!(charges.json()["error"]["code"], "resource_missing");
}

#[tokio::test]
async fn a_payments_refunds_are_listed_newest_first_and_its_charge_expanded_on_request() {
    let (fake, _records) = spawn_fake_gateway(|_| {});
    let (client, base) = (Client::new(), fake.url());
    let intent = pay(&client, &base, "paid", "3000").await.json();
    let id = intent["id"].as_str().unwrap();
    let mut refunds = Vec::new();
    for (key, amount) in [("r1", "1000"), ("r2", "500")] {
        let form = [("payment_intent", id), ("amount", amount)];
        let made = post(&client, &format!("{base}/v1/refunds"), key, &form).await;
        assert_eq!(made.status, 200);
        refunds.push(made.json()["id"].as_str().unwrap().to_owned());
    }
    let beyond = post(
        &client,
        &format!("{base}/v1/refunds"),
        "r3",
        &[("payment_intent", id), ("amount", "1501")],
    )
    .await;

    let listed = get(&client, &format!("{base}/v1/refunds?payment_intent={id}")).await;
    let plain = get(&client, &format!("{base}/v1/payment_intents/{id}")).await;
    let expanded = get(
        &client,
        &format!("{base}/v1/payment_intents/{id}?expand[]=latest_charge"),
    )
    .await;

    assert_eq!(beyond.json()["error"]["code"], "amount_too_large");
    let listed = listed.json();
    let ids: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|refund| refund["id"].as_str().unwrap())
        .collect();
    refunds.reverse();
    assert_eq!(ids, refunds);
    assert_eq!(
        (&listed["object"], &listed["url"]),
        (&Value::from("list"), &Value::from("/v1/refunds"))
    );
    assert!(plain.json()["latest_charge"].is_string());
    let charge = &expanded.json()["latest_charge"];
    assert_eq!(
        (&charge["object"], &charge["id"], &charge["disputed"]),
        (
            &Value::from("charge"),
            &plain.json()["latest_charge"],
            &Value::from(false)
        )
    );
}

/// Connects and sends the start of a request, then a byte every 200 ms
/// from a thread of its own until the fake hangs up (or 6 s pass).
fn trickling(address: std::net::SocketAddr) -> (std::net::TcpStream, std::thread::JoinHandle<()>) {
    use std::io::Write;
    let stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(6)))
        .unwrap();
    let mut writer = stream.try_clone().unwrap();
    writer
        .write_all(b"POST /v1/payment_intents HTTP/1.1\r\n")
        .unwrap();
    let sender = std::thread::spawn(move || {
        let started = std::time::Instant::now();
        while started.elapsed() < std::time::Duration::from_secs(6)
            && writer.write_all(b"X").is_ok()
        {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    });
    (stream, sender)
}

#[test]
fn the_fake_bounds_its_connections_and_the_time_a_request_may_take() {
    use crate::common::raw_http::read_all;
    use crate::common::test_databases::create_test_database;
    use ridepay_doubles::fake_stripe::{ConnectionLimits, FakeGateway, FakeGatewayConfig};
    let fake = FakeGateway::start(FakeGatewayConfig {
        bind: "127.0.0.1:0".to_owned(),
        database_url: create_test_database(),
        faults: Default::default(),
        api_key: None,
        webhook: None,
        connect_webhook: None,
        limits: ConnectionLimits {
            max_connections: 4,
            request_timeout: std::time::Duration::from_secs(1),
        },
    })
    .unwrap();
    let started = std::time::Instant::now();
    let slow: Vec<_> = (0..4).map(|_| trickling(fake.address())).collect();
    // Accepted in order: the fifth finds every slot taken.
    let mut fifth = std::net::TcpStream::connect(fake.address()).unwrap();
    fifth
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let over_the_limit = read_all(&mut fifth);

    let mut ended = Vec::new();
    for (mut stream, sender) in slow {
        let answer = read_all(&mut stream);
        ended.push((answer, started.elapsed()));
        drop(stream);
        sender.join().unwrap();
    }

    assert!(
        over_the_limit.starts_with("HTTP/1.1 429"),
        "{over_the_limit:.200}"
    );
    assert!(over_the_limit.contains("Stripe-Should-Retry: true"));
    for (answer, when) in ended {
        // Hung up on at the deadline, without an answer, not when the
        // client stopped sending.
        assert_eq!(answer, "");
        assert!(when < std::time::Duration::from_secs(5), "{when:?}");
    }
    // The slots are free again.
    let mut after = std::net::TcpStream::connect(fake.address()).unwrap();
    std::io::Write::write_all(&mut after, b"GET /v1/refunds HTTP/1.1\r\n\r\n").unwrap();
    after
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let answer = read_all(&mut after);
    assert!(answer.starts_with("HTTP/1.1 401"), "{answer:.200}");
}
