//! Drivers: registered by the platform, onboarded through their token's
//! pages, their status learnt from the gateway.

mod connect_events;
mod onboarding;
mod registration;

use serde_json::json;

use crate::common::app::{TestApp, TestUser};
use crate::common::ids::Id;

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
