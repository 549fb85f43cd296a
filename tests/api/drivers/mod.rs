//! Drivers: registered by the platform, onboarded through their token's
//! pages, their status learnt from the gateway.

mod assignment;
mod connect_events;
mod onboarding;
mod registration;
mod reversals;
mod strays;
mod transfers;

use std::time::Duration;

use serde_json::json;

use crate::common::app::{TestApp, TestUser};
use crate::common::ids::Id;
use crate::common::wait::eventually;

/// A driver registered under `key`: their id and the answer's
/// `onboarding_url`.
pub async fn registered(app: &TestApp, platform: &TestUser, key: &str) -> (Id, String) {
    let body = json!({"email": format!("{key}@example.com"), "country": "US"});
    let answer = app.post_driver(platform, key, &body).await;
    answer.assert_status(201);
    let json = answer.json();
    (
        Id::of(&json["id"]),
        json["onboarding_url"].as_str().unwrap().to_owned(),
    )
}

pub fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A driver registered under `key` whose account the gateway made active,
/// as ridepay learns it when they come back to their return page.
pub async fn active_driver(app: &TestApp, platform: &TestUser, key: &str) -> Id {
    let (driver, start) = registered(app, platform, key).await;
    let account = account_of(app, &platform.api_key, driver).await;
    ridepay_doubles::accounts::activate(&mut app.db(), &account).unwrap();
    let back = no_redirects()
        .get(start.replace("/start", "/return"))
        .send()
        .await
        .unwrap();
    assert!(back
        .text()
        .await
        .unwrap()
        .contains("data-status=\"active\""));
    driver
}

/// The driver's connected account, as the platform reads it.
pub async fn account_of(app: &TestApp, platform_key: &str, driver: Id) -> String {
    let driver = app
        .get_as(platform_key, &format!("/api/drivers/{driver}"))
        .await;
    driver.json()["account_id"].as_str().unwrap().to_owned()
}

/// Whether ridepay comes to hold `status` for the driver of `account`
/// (learnt from the gateway's Connect event) within ten seconds.
pub async fn follows(app: &TestApp, account: &str, status: &str) -> bool {
    eventually(Duration::from_secs(10), || {
        app.count(&format!(
            "drivers WHERE account_id = '{account}' AND status = '{status}'"
        )) == 1
    })
    .await
}
