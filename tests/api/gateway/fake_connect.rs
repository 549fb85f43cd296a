//! The fake Stripe's Connect events: its connected accounts' changes, sent
//! to the Connect endpoint apart from the payment events, signed with the
//! Connect endpoint's secret, as Stripe renders a Connect event.

use std::time::Duration;

use diesel::{Connection, PgConnection};
use ridepay_doubles::accounts;
use ridepay_doubles::fake_stripe::{
    ConnectionLimits, FakeGateway, FakeGatewayConfig, WebhookTarget,
};
use ridepay_gateway::stripe_signature;
use serde_json::{json, Value};

use crate::common::gateway::{post_form, FAKE_API_KEY};
use crate::common::receiver::{Received, Receiver, Reply};
use crate::common::test_databases::create_test_database;
use crate::common::wait::eventually;
use crate::gateway::stripe_spec::spec;

const PAYMENTS_SECRET: &str = "whsec_payments";
const CONNECT_SECRET: &str = "whsec_connect";

fn signed_with(delivery: &Received, secret: &str) -> bool {
    let now = chrono::Utc::now().timestamp();
    let header = delivery.header("stripe-signature");
    stripe_signature::verify(header, &delivery.body, secret, now, 300).is_ok()
}

/// The deliveries taken (answered 200 by the receiver): all but those
/// told to fail, which come first.
async fn taken(receiver: &Receiver, failed: usize, count: usize) -> Vec<Value> {
    let arrived = eventually(Duration::from_secs(10), || {
        receiver.received().len() >= failed + count
    })
    .await;
    assert!(arrived, "{:?}", receiver.received());
    receiver.received()[failed..]
        .iter()
        .map(Received::json)
        .collect()
}

#[tokio::test]
async fn an_accounts_updates_reach_the_connect_endpoint_signed_with_its_secret() {
    let (payments, connect) = (Receiver::start(), Receiver::start());
    let records = create_test_database();
    let fake = FakeGateway::start(FakeGatewayConfig {
        bind: "127.0.0.1:0".to_owned(),
        database_url: records.clone(),
        faults: Default::default(),
        api_key: Some(FAKE_API_KEY.to_owned()),
        webhook: Some(WebhookTarget {
            url: payments.url.clone(),
            secret: PAYMENTS_SECRET.to_owned(),
        }),
        connect_webhook: Some(WebhookTarget {
            url: connect.url.clone(),
            secret: CONNECT_SECRET.to_owned(),
        }),
        limits: ConnectionLimits::default(),
    })
    .unwrap();
    // The first delivery is refused: it is sent again.
    connect.reply([Reply::Status(500, Vec::new())]);
    let client = reqwest::Client::new();
    let (sender, base) = (&client, fake.url());
    let post = move |path: &str, key: &'static str, form: &'static [(&str, &str)]| {
        let url = format!("{base}{path}");
        async move { post_form(sender, &url, key, form).await }
    };
    let made = post(
        "/v1/accounts",
        "driver",
        &[
            ("type", "express"),
            ("country", "FR"),
            ("email", "driver@example.com"),
            ("capabilities[transfers][requested]", "true"),
        ],
    )
    .await;
    let account: Value = made.json().await.unwrap();
    let id = account["id"].as_str().unwrap().to_owned();
    let paid = post(
        "/v1/payment_intents",
        "paid",
        &[
            ("amount", "2000"),
            ("currency", "eur"),
            ("confirm", "true"),
            ("capture_method", "automatic"),
            ("payment_method", "pm_card_visa"),
        ],
    )
    .await;
    assert_eq!(paid.status(), 200);
    let read = || async {
        client
            .get(format!("{}/v1/accounts/{id}", fake.url()))
            .bearer_auth(FAKE_API_KEY)
            .send()
            .await
            .unwrap()
            .json::<Value>()
            .await
            .unwrap()
    };
    let mut records = PgConnection::establish(&records).unwrap();

    accounts::activate(&mut records, &id).unwrap();
    let activated = taken(&connect, 1, 1).await;
    let active = read().await;
    accounts::restrict(&mut records, &id).unwrap();
    let restricted = taken(&connect, 1, 2).await;
    let inactive = read().await;

    let deliveries = connect.received();
    assert_eq!(deliveries[0].json()["id"], activated[0]["id"]);
    for delivery in &deliveries {
        assert!(signed_with(delivery, CONNECT_SECRET), "{delivery:?}");
        assert!(!signed_with(delivery, PAYMENTS_SECRET));
    }
    for (event, now) in [(&activated[0], &active), (&restricted[1], &inactive)] {
        assert_eq!(
            (
                &event["object"],
                &event["type"],
                &event["account"],
                &event["livemode"]
            ),
            (
                &json!("event"),
                &json!("account.updated"),
                &json!(id),
                &json!(false)
            )
        );
        assert_eq!(&event["data"]["object"], now);
        let mut errors = spec().check_object("event", event);
        errors.extend(spec().check_object("account", &event["data"]["object"]));
        assert!(errors.is_empty(), "{errors:#?}\n{event:#}");
    }
    assert_eq!(active["capabilities"]["transfers"], "active");
    assert_eq!(inactive["capabilities"]["transfers"], "inactive");
    // Payment events go to the payments endpoint, and only they.
    let payment_events = taken(&payments, 0, 1).await;
    assert_eq!(payment_events[0]["type"], "payment_intent.succeeded");
    assert!(payments
        .received()
        .iter()
        .all(|delivery| signed_with(delivery, PAYMENTS_SECRET)
            && delivery.json()["type"] != "account.updated"));
}
