//! The fake Stripe's PaymentIntents over HTTP, every answer checked against
//! Stripe's specification (`stripe_spec`).

use serde_json::{json, Value};

use crate::common::gateway::{post_form, spawn_fake_gateway, FAKE_API_KEY};
use crate::gateway::stripe_spec::spec;

pub(crate) struct Fake {
    pub(crate) url: String,
    pub(crate) client: reqwest::Client,
}

impl Fake {
    /// A form POST under `key`; the status and the JSON answer.
    pub(crate) async fn post(&self, path: &str, key: &str, form: &[(&str, &str)]) -> (u16, Value) {
        let url = format!("{}{path}", self.url);
        let response = post_form(&self.client, &url, key, form).await;
        (response.status().as_u16(), response.json().await.unwrap())
    }

    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        self.get_as(path, None).await
    }

    /// A GET as the connected account `account` (`Stripe-Account`), when
    /// one is named.
    pub(crate) async fn get_as(&self, path: &str, account: Option<&str>) -> (u16, Value) {
        let mut request = self
            .client
            .get(format!("{}{path}", self.url))
            .bearer_auth(FAKE_API_KEY);
        if let Some(account) = account {
            request = request.header("Stripe-Account", account);
        }
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }
}

/// What a charge's card says a hold allows, newer than the vendored
/// specification (as Stripe's 2026 example charge has them): the only
/// fields of the fake's answers not checked against it.
const NEWER_CHARGE_CARD_FIELDS: &[&str] = &[
    "capture_before",
    "overcapture",
    "extended_authorization",
    "incremental_authorization",
];

/// Asserts that the answer is what the specification says `method` on the
/// path template answers with `status`.
pub(crate) fn conforms(method: &str, template: &str, (status, body): &(u16, Value)) {
    let mut checked = body.clone();
    if let Some(card) = checked
        .pointer_mut("/latest_charge/payment_method_details/card")
        .and_then(Value::as_object_mut)
    {
        for newer in NEWER_CHARGE_CARD_FIELDS {
            card.remove(*newer);
        }
    }
    let errors = spec().check_response(method, template, *status, &checked);
    assert!(
        errors.is_empty(),
        "{method} {template} {status}: {errors:#?}\n{body:#}"
    );
}

fn create_form<'a>(payment_method: &'a str, capture_method: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("amount", "2000"),
        ("currency", "eur"),
        ("confirm", "true"),
        ("capture_method", capture_method),
        ("payment_method", payment_method),
        ("return_url", "http://127.0.0.1:8080/payments/return"),
        ("metadata[ride_id]", "7"),
    ]
}

#[tokio::test]
async fn every_payment_intent_answer_of_the_fake_is_what_stripes_specification_describes() {
    let (fake, _records) = spawn_fake_gateway(|_| {});
    let fake = Fake {
        url: fake.url(),
        client: reqwest::Client::new(),
    };
    let create = "/v1/payment_intents";

    let hold = fake
        .post(create, "hold", &create_form("pm_card_visa", "manual"))
        .await;
    let paid = fake
        .post(create, "paid", &create_form("pm_card_visa", "automatic"))
        .await;
    let action = fake
        .post(
            create,
            "auth",
            &create_form("pm_card_authenticationRequired", "manual"),
        )
        .await;
    let declined = fake
        .post(
            create,
            "declined",
            &create_form("pm_card_visa_chargeDeclined", "manual"),
        )
        .await;
    let unknown = fake
        .post(create, "unknown", &create_form("pm_nope", "manual"))
        .await;
    let id = hold.1["id"].as_str().unwrap().to_owned();
    let raised = fake
        .post(
            &format!("{create}/{id}/increment_authorization"),
            "raise",
            &[("amount", "2500")],
        )
        .await;
    let captured = fake
        .post(
            &format!("{create}/{id}/capture"),
            "capture",
            &[("amount_to_capture", "2200")],
        )
        .await;
    let retrieved = fake.get(&format!("{create}/{id}")).await;
    let action_id = action.1["id"].as_str().unwrap().to_owned();
    let canceled = fake
        .post(
            &format!("{create}/{action_id}/cancel"),
            "cancel",
            &[("cancellation_reason", "requested_by_customer")],
        )
        .await;
    let missing = fake.get(&format!("{create}/pi_missing")).await;

    assert_eq!(
        [hold.0, paid.0, action.0, declined.0, unknown.0, raised.0, captured.0],
        [200, 200, 200, 402, 400, 200, 200]
    );
    assert_eq!((retrieved.0, canceled.0, missing.0), (200, 200, 404));
    for (template, answer) in [
        (create, &hold),
        (create, &paid),
        (create, &action),
        (create, &declined),
        (create, &unknown),
    ] {
        conforms("POST", template, answer);
    }
    conforms(
        "POST",
        "/v1/payment_intents/{intent}/increment_authorization",
        &raised,
    );
    conforms("POST", "/v1/payment_intents/{intent}/capture", &captured);
    conforms("POST", "/v1/payment_intents/{intent}/cancel", &canceled);
    conforms("GET", "/v1/payment_intents/{intent}", &retrieved);
    conforms("GET", "/v1/payment_intents/{intent}", &missing);
    // Reconciliation's lookups: a list by `created`, page by page, and a
    // search by metadata; a query the fake cannot read is a 400.
    let since = chrono::Utc::now().timestamp() - 60;
    let first_page = fake
        .get(&format!("{create}?created[gte]={since}&limit=2"))
        .await;
    let last = first_page.1["data"][1]["id"].as_str().unwrap().to_owned();
    let next_page = fake
        .get(&format!(
            "{create}?created[gte]={since}&limit=2&starting_after={last}"
        ))
        .await;
    let found = fake
        .get(&format!(
            "{create}/search?query=metadata%5B%27ride_id%27%5D%3A%277%27"
        ))
        .await;
    let unreadable = fake
        .get(&format!("{create}/search?query=status%3A%27x%27"))
        .await;
    for listed in [&first_page, &next_page] {
        conforms("GET", create, listed);
    }
    conforms("GET", "/v1/payment_intents/search", &found);
    conforms("GET", "/v1/payment_intents/search", &unreadable);
    assert_eq!(
        (
            first_page.1["has_more"].as_bool(),
            next_page.1["data"].as_array().map(Vec::len)
        ),
        (Some(true), Some(2))
    );
    assert_eq!(found.1["data"].as_array().map(Vec::len), Some(4));
    assert_eq!(unreadable.0, 400);

    assert_eq!(hold.1["status"], "requires_capture");
    assert_eq!(paid.1["status"], "succeeded");
    assert_eq!(action.1["next_action"]["type"], "redirect_to_url");
    let page = action.1["next_action"]["redirect_to_url"]["url"]
        .as_str()
        .unwrap();
    assert!(
        page.starts_with(&format!("{}/fake/authenticate?", fake.url)),
        "{page}"
    );
    assert_eq!(declined.1["error"]["decline_code"], "generic_decline");
    assert_eq!(
        (
            &unknown.1["error"]["type"],
            &unknown.1["error"]["code"],
            &unknown.1["error"]["param"]
        ),
        (
            &json!("invalid_request_error"),
            &json!("resource_missing"),
            &json!("payment_method")
        )
    );
    assert_eq!(
        (
            captured.1["amount_received"].as_i64(),
            retrieved.1["status"].as_str()
        ),
        (Some(2200), Some("succeeded"))
    );
    assert_eq!(canceled.1["cancellation_reason"], "requested_by_customer");
}

/// A charge's balance transaction as `expand[]` asks for it: whole with
/// `latest_charge.balance_transaction` (which expands the charge too), by
/// its id with `latest_charge`, null while the charge is a hold's; a
/// payment that expands nothing (as call version 3 pays) shows its
/// charge's id alone. Every answer is what the specification describes.
#[tokio::test]
async fn the_fake_shows_a_charges_balance_transaction_as_expand_asks() {
    let (fake, _records) = spawn_fake_gateway(|_| {});
    let fake = Fake {
        url: fake.url(),
        client: reqwest::Client::new(),
    };
    let create = "/v1/payment_intents";
    let whole = ("expand[]", "latest_charge.balance_transaction");
    let asking = |capture_method, expand| {
        let mut form = create_form("pm_card_visa", capture_method);
        form.extend([expand, ("transfer_group", "ridepay-ab12")]);
        form
    };

    let paid = fake.post(create, "paid", &asking("automatic", whole)).await;
    let by_id = fake
        .post(
            create,
            "by id",
            &asking("automatic", ("expand[]", "latest_charge")),
        )
        .await;
    let plain = fake
        .post(create, "plain", &create_form("pm_card_visa", "automatic"))
        .await;
    let hold = fake.post(create, "hold", &asking("manual", whole)).await;
    let id = hold.1["id"].as_str().unwrap().to_owned();
    let captured = fake
        .post(
            &format!("{create}/{id}/capture"),
            "capture",
            &[("amount_to_capture", "1500"), whole],
        )
        .await;
    let retrieved = fake
        .get(&format!(
            "{create}/{id}?expand[]=latest_charge.balance_transaction"
        ))
        .await;
    let plain_id = plain.1["id"].as_str().unwrap().to_owned();
    let refunded = fake
        .post(
            "/v1/refunds",
            "refund",
            &[("payment_intent", &plain_id), ("amount", "500")],
        )
        .await;
    let balance = fake.get("/v1/balance_transactions?limit=100").await;

    for answer in [&paid, &by_id, &plain, &hold] {
        conforms("POST", create, answer);
    }
    conforms("POST", "/v1/payment_intents/{intent}/capture", &captured);
    conforms("GET", "/v1/payment_intents/{intent}", &retrieved);
    conforms("GET", "/v1/balance_transactions", &balance);
    let charge = &paid.1["latest_charge"];
    let transaction = &charge["balance_transaction"];
    assert_eq!(
        json!([
            transaction["object"],
            transaction["type"],
            transaction["source"],
            transaction["currency"],
            transaction["exchange_rate"],
        ]),
        json!(["balance_transaction", "charge", charge["id"], "eur", null])
    );
    let amounts = |transaction: &Value| {
        ["amount", "fee", "net"].map(|field| transaction[field].as_i64().unwrap())
    };
    assert_eq!(amounts(transaction), [2000, 88, 1912]);
    assert_eq!(transaction["fee_details"][0]["amount"], 88);
    assert_eq!(
        by_id.1["latest_charge"]["balance_transaction"]
            .as_str()
            .map(|id| id.starts_with("txn_")),
        Some(true)
    );
    assert!(plain.1["latest_charge"].is_string(), "{}", plain.1);
    assert_eq!(hold.1["latest_charge"]["balance_transaction"], Value::Null);
    let captured_transaction = &captured.1["latest_charge"]["balance_transaction"];
    assert_eq!(amounts(captured_transaction), [1500, 74, 1426]);
    assert_eq!(
        &retrieved.1["latest_charge"]["balance_transaction"],
        captured_transaction
    );
    // The balance's list: the refund, then each captured charge, newest
    // first, as their answers showed them.
    let listed = balance.1["data"].as_array().unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|transaction| (transaction["type"].as_str().unwrap(), amounts(transaction)))
            .collect::<Vec<_>>(),
        [
            ("refund", [-500, 0, -500]),
            ("charge", [1500, 74, 1426]),
            ("charge", [2000, 88, 1912]),
            ("charge", [2000, 88, 1912]),
            ("charge", [2000, 88, 1912]),
        ]
    );
    assert_eq!(listed[0]["source"], refunded.1["id"]);
    assert_eq!(&listed[1], captured_transaction);
    assert_eq!(&listed[4], transaction);
}

/// Event bodies as a webhook endpoint receives them, over HTTP on loopback.
fn receive_events() -> (String, std::sync::mpsc::Receiver<Value>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/webhooks/stripe", listener.local_addr().unwrap());
    let (sender, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("content-length") {
                        length = value.trim().parse().unwrap();
                    }
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let _ = sender.send(serde_json::from_slice(&body).unwrap());
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    (url, received)
}

#[tokio::test]
async fn the_fakes_refunds_and_signed_events_are_what_stripes_specification_describes() {
    let (gateway, records) = spawn_fake_gateway(|_| {});
    let (url, received) = receive_events();
    gateway.send_webhooks_to(ridepay_doubles::fake_stripe::WebhookTarget {
        url,
        secret: "whsec_test".to_owned(),
    });
    let fake = Fake {
        url: gateway.url(),
        client: reqwest::Client::new(),
    };
    let create = "/v1/payment_intents";
    let paid = fake
        .post(
            create,
            "paid",
            &create_form("pm_card_pendingRefund", "automatic"),
        )
        .await;
    let id = paid.1["id"].as_str().unwrap().to_owned();

    let refunded = fake
        .post(
            "/v1/refunds",
            "refund",
            &[("payment_intent", &id), ("amount", "500")],
        )
        .await;
    let too_much = fake
        .post(
            "/v1/refunds",
            "greedy",
            &[("payment_intent", &id), ("amount", "5000")],
        )
        .await;
    let listed = fake.get(&format!("/v1/refunds?payment_intent={id}")).await;
    ridepay_doubles::intents::open_dispute(
        &mut diesel::Connection::establish(&records).unwrap(),
        &id,
    )
    .unwrap();
    let expanded = fake
        .get(&format!("{create}/{id}?expand[]=latest_charge"))
        .await;

    assert_eq!(
        (refunded.0, too_much.0, listed.0, expanded.0),
        (200, 400, 200, 200)
    );
    conforms("POST", "/v1/refunds", &refunded);
    conforms("POST", "/v1/refunds", &too_much);
    conforms("GET", "/v1/refunds", &listed);
    conforms("GET", "/v1/payment_intents/{intent}", &expanded);
    assert_eq!(refunded.1["status"], "pending");
    assert_eq!(expanded.1["latest_charge"]["disputed"], true);

    // The intent paid, the refund created, then settled, and the dispute.
    let mut events = Vec::new();
    while let Ok(event) = received.recv_timeout(std::time::Duration::from_secs(5)) {
        events.push(event);
        if events.len() == 6 {
            break;
        }
    }
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "payment_intent.succeeded",
            "refund.created",
            "charge.dispute.created",
            "refund.updated",
            "charge.refund.updated",
            "charge.refunded"
        ]
    );
    let kinds = [
        "payment_intent",
        "refund",
        "dispute",
        "refund",
        "refund",
        "charge",
    ];
    for (event, kind) in events.iter().zip(kinds) {
        let mut errors = spec().check_object("event", event);
        errors.extend(
            spec()
                .check_object(kind, &event["data"]["object"])
                .into_iter()
                .filter(|error| {
                    !NEWER_CHARGE_CARD_FIELDS.iter().any(|newer| {
                        *error
                            == format!(
                                "charge.payment_method_details.card.{newer}: not in the schema"
                            )
                    })
                }),
        );
        assert!(
            errors.is_empty(),
            "{}: {errors:#?}\n{event:#}",
            event["type"]
        );
    }
    assert_eq!(events[5]["data"]["object"]["amount_refunded"], 500);
}

#[tokio::test]
async fn the_fakes_connected_accounts_and_their_onboarding_are_what_stripe_describes() {
    let (fake, _records) = spawn_fake_gateway(|_| {});
    let fake = Fake {
        url: fake.url(),
        client: reqwest::Client::new(),
    };
    let form = [
        ("type", "express"),
        ("country", "US"),
        ("email", "driver@example.com"),
        ("capabilities[transfers][requested]", "true"),
        ("metadata[ridepay_driver]", "drv_1"),
    ];
    let made = fake.post("/v1/accounts", "driver", &form).await;
    conforms("POST", "/v1/accounts", &made);
    assert_eq!(made.1["capabilities"]["transfers"], "inactive");
    let id = made.1["id"].as_str().unwrap();
    let read = fake.get(&format!("/v1/accounts/{id}")).await;
    conforms("GET", "/v1/accounts/{account}", &read);
    assert_eq!(read, made);
    let missing = fake.get("/v1/accounts/acct_none").await;
    conforms("GET", "/v1/accounts/{account}", &missing);
    assert_eq!(missing.0, 404);
    let since = made.1["created"].as_i64().unwrap();
    let listed = fake
        .get(&format!("/v1/accounts?created[gte]={since}&limit=10"))
        .await;
    conforms("GET", "/v1/accounts", &listed);
    assert_eq!(listed.1["data"][0], made.1);
    assert_eq!(listed.1["has_more"], false);
    let standard = fake
        .post("/v1/accounts", "standard", &[("type", "standard")])
        .await;
    conforms("POST", "/v1/accounts", &standard);
    assert_eq!(standard.0, 400);

    // Onboarded through the fake's page: the driver submits, and is sent
    // back to the return page; the link is spent, and sends them to the
    // refresh page after that.
    let (refresh, back) = ("http://127.0.0.1:9/refresh", "http://127.0.0.1:9/return");
    let link_form = [
        ("account", id),
        ("type", "account_onboarding"),
        ("refresh_url", refresh),
        ("return_url", back),
    ];
    let link = fake.post("/v1/account_links", "link", &link_form).await;
    conforms("POST", "/v1/account_links", &link);
    let url = link.1["url"].as_str().unwrap();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = browser.get(url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("driver@example.com") && html.contains("id=\"complete\""));
    let link_id = url.split("link=").nth(1).unwrap();
    let answer = browser
        .post(format!("{}/fake/onboard", fake.url))
        .form(&[("link", link_id), ("outcome", "complete")])
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 303);
    assert_eq!(answer.headers()["location"], back);
    let onboarded = fake.get(&format!("/v1/accounts/{id}")).await;
    assert_eq!(
        (
            &onboarded.1["capabilities"]["transfers"],
            &onboarded.1["details_submitted"]
        ),
        (&json!("active"), &json!(true))
    );
    let again = browser.get(url).send().await.unwrap();
    assert_eq!(again.status(), 303);
    assert_eq!(again.headers()["location"], refresh);
    let unknown = browser
        .get(format!("{}/fake/onboard?link=link_none", fake.url))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}
