//! The fake Stripe's transfers, reversals (made and listed) and
//! connected-account balances over HTTP, every answer (refusals too)
//! checked against Stripe's specification (`stripe_spec`).

use serde_json::{json, Value};

use ridepay_doubles::accounts;

use crate::common::gateway::spawn_fake_gateway;
use crate::gateway::fake_intents::{conforms, Fake};

const TRANSFERS: &str = "/v1/transfers";
const REVERSALS: &str = "/v1/transfers/{id}/reversals";

/// An Express account of the fake, its `transfers` capability active when
/// `payable`.
async fn account(fake: &Fake, records: &str, key: &str, payable: bool) -> String {
    let form = [
        ("type", "express"),
        ("country", "US"),
        ("email", "driver@example.com"),
        ("capabilities[transfers][requested]", "true"),
    ];
    let made = fake.post("/v1/accounts", key, &form).await;
    let id = made.1["id"].as_str().unwrap().to_owned();
    if payable {
        let mut conn = diesel::Connection::establish(records).unwrap();
        accounts::activate(&mut conn, &id).unwrap();
    }
    id
}

fn transfer_form<'a>(
    destination: &'a str,
    charge: &'a str,
    amount: &'a str,
) -> Vec<(&'a str, &'a str)> {
    vec![
        ("amount", amount),
        ("currency", "usd"),
        ("destination", destination),
        ("source_transaction", charge),
        ("metadata[ridepay_key]", "k1"),
    ]
}

#[tokio::test]
async fn every_transfer_answer_of_the_fake_is_what_stripes_specification_describes() {
    let (fake, records) = spawn_fake_gateway(|_| {});
    let fake = Fake {
        url: fake.url(),
        client: reqwest::Client::new(),
    };
    let driver = account(&fake, &records, "driver", true).await;
    let onboarding = account(&fake, &records, "onboarding", false).await;
    let paid = fake
        .post(
            "/v1/payment_intents",
            "fare",
            &[
                ("amount", "2000"),
                ("currency", "usd"),
                ("confirm", "true"),
                ("capture_method", "automatic"),
                ("payment_method", "pm_card_visa"),
                ("transfer_group", "ridepay-fare"),
            ],
        )
        .await;
    let charge = paid.1["latest_charge"].as_str().unwrap();

    let made = fake
        .post(TRANSFERS, "share", &transfer_form(&driver, charge, "1600"))
        .await;
    let to_onboarding = fake
        .post(
            TRANSFERS,
            "early",
            &transfer_form(&onboarding, charge, "100"),
        )
        .await;
    let too_much = fake
        .post(TRANSFERS, "much", &transfer_form(&driver, charge, "401"))
        .await;
    let id = made.1["id"].as_str().unwrap();
    let reversals = format!("{TRANSFERS}/{id}/reversals");
    let short = fake.post(&reversals, "short", &[("amount", "100")]).await;
    let pending = fake.get_as("/v1/balance", Some(&driver)).await;
    accounts::make_available(
        &mut diesel::Connection::establish(&records).unwrap(),
        &driver,
    )
    .unwrap();
    let reversed = fake
        .post(
            &reversals,
            "back",
            &[("amount", "500"), ("metadata[ridepay_key]", "r1")],
        )
        .await;
    let listed = fake
        .get(&format!(
            "{TRANSFERS}?destination={driver}&created[gte]=0&limit=10"
        ))
        .await;
    let reversals_listed = fake.get(&format!("{reversals}?limit=1")).await;
    let of_group = fake
        .get(&format!("{TRANSFERS}?transfer_group=ridepay-fare"))
        .await;
    let available = fake.get_as("/v1/balance", Some(&driver)).await;
    let platform = fake.get("/v1/balance").await;

    for answer in [&made, &to_onboarding, &too_much] {
        conforms("POST", TRANSFERS, answer);
    }
    for answer in [&short, &reversed] {
        conforms("POST", REVERSALS, answer);
    }
    for answer in [&listed, &of_group] {
        conforms("GET", TRANSFERS, answer);
    }
    conforms("GET", REVERSALS, &reversals_listed);
    for answer in [&pending, &available, &platform] {
        conforms("GET", "/v1/balance", answer);
    }
    assert_eq!(
        (
            &made.1["transfer_group"],
            &made.1["source_transaction"],
            &made.1["amount"]
        ),
        (&json!("ridepay-fare"), &json!(charge), &json!(1600))
    );
    let code = |answer: &(u16, Value)| (answer.0, answer.1["error"]["code"].clone());
    assert_eq!(
        code(&to_onboarding),
        (400, json!("insufficient_capabilities_for_transfer"))
    );
    assert_eq!(code(&too_much), (400, json!("amount_too_large")));
    assert_eq!(code(&short), (400, json!("balance_insufficient")));
    assert_eq!(
        (
            &pending.1["pending"][0]["amount"],
            &pending.1["available"][0]["amount"]
        ),
        (&json!(1600), &json!(0))
    );
    assert_eq!(reversed.1["amount"], 500);
    assert_eq!(listed.1["data"][0]["amount_reversed"], 500);
    assert_eq!(listed.1["data"][0]["reversals"]["data"][0], reversed.1);
    assert_eq!(of_group.1["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        reversals_listed.1,
        json!({
            "object": "list",
            "data": [reversed.1],
            "has_more": false,
            "url": format!("/v1/transfers/{id}/reversals"),
        })
    );
    assert_eq!(available.1["available"][0]["amount"], 1100);
    assert_eq!(platform.0, 400);
}

#[tokio::test]
async fn the_fake_takes_no_transfer_group_and_names_what_it_does_not_have() {
    let (fake, records) = spawn_fake_gateway(|_| {});
    let fake = Fake {
        url: fake.url(),
        client: reqwest::Client::new(),
    };
    let driver = account(&fake, &records, "driver", true).await;
    let mut grouped = transfer_form(&driver, "ch_none", "100");
    grouped.push(("transfer_group", "mine"));

    let with_group = fake.post(TRANSFERS, "grouped", &grouped).await;
    let no_charge = fake
        .post(
            TRANSFERS,
            "nothing",
            &transfer_form(&driver, "ch_none", "100"),
        )
        .await;
    let no_transfer = fake
        .post(
            "/v1/transfers/tr_none/reversals",
            "none",
            &[("amount", "1")],
        )
        .await;
    let no_account = fake.get_as("/v1/balance", Some("acct_none")).await;
    let no_transfer_listed = fake.get("/v1/transfers/tr_none/reversals").await;

    for (answer, template) in [
        (&with_group, TRANSFERS),
        (&no_charge, TRANSFERS),
        (&no_transfer, REVERSALS),
    ] {
        conforms("POST", template, answer);
        assert_eq!(answer.0, 400);
    }
    conforms("GET", "/v1/balance", &no_account);
    conforms("GET", REVERSALS, &no_transfer_listed);
    assert_eq!(
        (
            no_transfer_listed.0,
            &no_transfer_listed.1["error"]["code"],
            &no_transfer_listed.1["error"]["message"]
        ),
        (
            404,
            &json!("resource_missing"),
            &json!("No such transfer: 'tr_none'")
        )
    );
    assert!(no_charge.1["error"]["message"]
        .as_str()
        .unwrap()
        .contains("No such charge"));
    assert!(no_transfer.1["error"]["message"]
        .as_str()
        .unwrap()
        .contains("No such transfer"));
    assert!(no_account.1["error"]["message"]
        .as_str()
        .unwrap()
        .contains("No such account"));
}
