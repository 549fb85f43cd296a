//! The fake gateway's wire behaviour, seen by a plain HTTP client: Stripe's
//! idempotency, refunds listed per payment, keys and unknown routes.

use reqwest::Client;
use serde_json::Value;

use crate::helpers::{spawn_fake_gateway, Answer, FAKE_API_KEY};

async fn post(client: &Client, url: &str, key: &str, form: &[(&str, &str)]) -> Answer {
    let response = client
        .post(url)
        .bearer_auth(FAKE_API_KEY)
        .header("Idempotency-Key", key)
        .form(form)
        .send()
        .await
        .unwrap();
    Answer::read(response).await
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
    let (fake, _ledger) = spawn_fake_gateway(|_| {});
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
    let (fake, _ledger) = spawn_fake_gateway(|_| {});
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
