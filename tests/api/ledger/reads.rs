//! The ledger as the platform's key reads it, and a rider's key refused.

use serde_json::{json, Value};

use crate::common::app::{create_platform_user, spawn_app};
use crate::ledger::fee_of;

#[tokio::test]
async fn the_platform_reads_balances_and_transactions_and_a_rider_is_forbidden() {
    let app = spawn_app().await;
    let platform = create_platform_user(&app.database_url);
    let ride = app.paid_ride("paid").await;
    let fee = fee_of(2000);

    let accounts = app
        .get_as(&platform.api_key, "/api/ledger/accounts?limit=100")
        .await;
    accounts.assert_status(200);
    let balance = |code: &str| -> Value {
        accounts.json()["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|account| account["code"] == code)
            .map(|account| account["balance_cents"].clone())
            .unwrap()
    };
    assert_eq!(balance("gateway:usd"), 2000 - fee);
    assert_eq!(balance("platform:unassigned:usd"), -2000);
    assert_eq!(balance("platform:fees:usd"), fee);
    assert_eq!(balance("gateway:eur"), 0);
    // Paged by code.
    let first = app
        .get_as(&platform.api_key, "/api/ledger/accounts?limit=2")
        .await
        .json();
    assert_eq!(first["has_more"], true);
    let after = first["data"][1]["code"].as_str().unwrap();
    let next = app
        .get_as(
            &platform.api_key,
            &format!("/api/ledger/accounts?limit=2&starting_after={after}"),
        )
        .await
        .json();
    assert_eq!(next["data"][0]["code"], accounts.json()["data"][2]["code"]);

    let listed = app
        .get_as(
            &platform.api_key,
            &format!("/api/ledger/transactions?ride_id={ride}"),
        )
        .await;
    listed.assert_status(200);
    let listed = listed.json();
    let data = listed["data"].as_array().unwrap();
    // Newest first: the fee, then the capture.
    assert_eq!(data.len(), 2);
    assert_eq!(data[0]["kind"], "fee");
    assert_eq!(data[0]["ride_id"], ride);
    assert_eq!(data[0]["reverses"], Value::Null);
    assert!(data[0]["source"].as_str().unwrap().ends_with(":fee"));
    assert_eq!(
        data[0]["entries"],
        json!([
            {"account": "gateway:usd", "currency": "usd", "amount_cents": -fee},
            {"account": "platform:fees:usd", "currency": "usd", "amount_cents": fee},
        ])
    );
    assert_eq!(data[1]["kind"], "capture");
    let id = data[1]["id"].as_str().unwrap();
    assert!(crate::common::ids::is_public_id("ltx_", id), "{id}");
    let fees = app
        .get_as(
            &platform.api_key,
            "/api/ledger/transactions?account=platform:fees:usd",
        )
        .await
        .json();
    assert_eq!(fees["data"].as_array().unwrap().len(), 1);
    let older = app
        .get_as(
            &platform.api_key,
            &format!(
                "/api/ledger/transactions?starting_after={}",
                data[0]["id"].as_str().unwrap()
            ),
        )
        .await
        .json();
    assert_eq!(older["data"][0]["id"], data[1]["id"]);

    for bad in [
        "/api/ledger/transactions?account=nowhere:usd",
        "/api/ledger/transactions?ride_id=42",
        "/api/ledger/accounts?limit=0",
    ] {
        app.get_as(&platform.api_key, bad)
            .await
            .assert_problem(400, "invalid-request");
    }
    for path in ["/api/ledger/accounts", "/api/ledger/transactions"] {
        app.get(path).await.assert_problem(403, "forbidden");
    }
}
