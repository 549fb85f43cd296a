//! A client's requests as every test binary sends them.

use std::time::Duration;

use reqwest::{Client, Response};

/// An idempotent JSON POST as a client sends one: `api_key`, `key`, `body`.
pub async fn send_idempotent(
    client: &Client,
    url: &str,
    api_key: &str,
    key: &str,
    body: &str,
) -> Result<Response, reqwest::Error> {
    client
        .post(url)
        .bearer_auth(api_key)
        .header("Idempotency-Key", key)
        .header("Content-Type", "application/json")
        .body(body.to_owned())
        .timeout(Duration::from_secs(30))
        .send()
        .await
}
