//! The fake gateway's wire format, seen by a plain HTTP client: Stripe's
//! idempotency, charge and list objects, and error objects.

use reqwest::Client;
use serde_json::Value;

use crate::helpers::{spawn_fake_gateway, Answer, FAKE_API_KEY};

async fn create_charge(client: &Client, base: &str, key: &str, amount: &str) -> Answer {
    let response = client
        .post(format!("{base}/v1/charges"))
        .bearer_auth(FAKE_API_KEY)
        .header("Idempotency-Key", key)
        .form(&[
            ("amount", amount),
            ("currency", "usd"),
            ("source", "tok_visa"),
            ("metadata[ride_id]", "7"),
        ])
        .send()
        .await
        .unwrap();
    Answer::read(response).await
}

async fn get(client: &Client, base: &str, path: &str) -> Answer {
    let response = client
        .get(format!("{base}{path}"))
        .bearer_auth(FAKE_API_KEY)
        .send()
        .await
        .unwrap();
    Answer::read(response).await
}

#[tokio::test]
async fn a_keyed_charge_is_replayed_and_refused_with_other_parameters() {
    let (fake, _ledger) = spawn_fake_gateway(|_| {});
    let (client, base) = (Client::new(), fake.url());

    let first = create_charge(&client, &base, "key-1", "2000").await;
    let again = create_charge(&client, &base, "key-1", "2000").await;
    let other = create_charge(&client, &base, "key-1", "2500").await;

    assert_eq!(first.status, 200);
    let charge = first.json();
    assert_eq!(
        (&charge["object"], &charge["amount"], &charge["status"]),
        (
            &Value::from("charge"),
            &Value::from(2000),
            &Value::from("succeeded")
        )
    );
    assert_eq!(charge["metadata"]["ride_id"], "7");
    assert_eq!(first.header("idempotent-replayed"), None);
    assert_eq!(again.status, 200);
    assert_eq!(again.body, first.body);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(other.status, 400);
    assert_eq!(other.json()["error"]["type"], "idempotency_error");
    let anonymous = client
        .get(format!("{base}/v1/charges"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
}

#[tokio::test]
async fn charges_are_retrieved_and_listed_newest_first_in_pages() {
    let (fake, _ledger) = spawn_fake_gateway(|_| {});
    let (client, base) = (Client::new(), fake.url());
    let mut ids = Vec::new();
    for key in ["a", "b", "c"] {
        let created = create_charge(&client, &base, key, "1000").await.json();
        ids.push(created["id"].as_str().unwrap().to_owned());
    }

    let retrieved = get(&client, &base, &format!("/v1/charges/{}", ids[0])).await;
    let first_page = get(&client, &base, "/v1/charges?limit=2").await.json();
    let last = first_page["data"][1]["id"].as_str().unwrap();
    let second_page = get(
        &client,
        &base,
        &format!("/v1/charges?limit=2&starting_after={last}"),
    )
    .await
    .json();
    let missing = get(&client, &base, "/v1/charges/ch_nope").await;

    assert_eq!(retrieved.status, 200);
    assert_eq!(retrieved.json()["id"], ids[0]);
    assert_eq!(first_page["object"], "list");
    assert_eq!(first_page["url"], "/v1/charges");
    assert_eq!(first_page["has_more"], true);
    let page_ids = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|charge| charge["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut listed = page_ids(&first_page);
    listed.extend(page_ids(&second_page));
    ids.reverse();
    assert_eq!(listed, ids);
    assert_eq!(second_page["has_more"], false);
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"]["type"], "invalid_request_error");
}
