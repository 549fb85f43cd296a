//! Clients as ride apps write them: each sends its rides one after another
//! and retries a ride, under the same `Idempotency-Key`, until it gets a
//! final answer, backing off on a 503, a 409 or a broken connection.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::future::join_all;

/// What one key's request came to.
#[derive(Debug)]
pub struct Answered {
    pub key: String,
    pub amount_cents: i64,
    /// Every answer's status, in order (0: the connection broke).
    pub statuses: Vec<u16>,
    /// The final answer's body.
    pub body: Vec<u8>,
}

impl Answered {
    pub fn status(&self) -> u16 {
        *self.statuses.last().unwrap()
    }

    /// Every attempt answered, and never with a 500 (a 503 or a 409 while
    /// the database changes hands), and the last a 201.
    pub fn assert_paid(&self) {
        assert!(
            self.statuses
                .iter()
                .all(|status| [201, 409, 503].contains(status)),
            "{}: {:?} (0: no answer)",
            self.key,
            self.statuses
        );
        assert_eq!(self.status(), 201, "{}: {:?}", self.key, self.statuses);
    }
}

/// The ride of key `key`: its own amount, so a mix-up would show.
pub fn ride(amount_cents: i64) -> String {
    format!(
        r#"{{"origin_lat": 37.77, "origin_lon": -122.42, "target_lat": 37.80, "target_lon": -122.27, "amount_cents": {amount_cents}, "currency": "usd", "payment_method": "pm_card_visa", "capture_method": "automatic"}}"#
    )
}

/// A ride POSTed under `key`: the answer's status (0: the connection
/// broke), body and `Idempotent-Replayed` header.
pub async fn post(
    client: &reqwest::Client,
    address: &str,
    api_key: &str,
    key: &str,
    body: &str,
) -> (u16, Vec<u8>, Option<String>) {
    post_to(client, &format!("{address}/api/rides"), api_key, key, body).await
}

async fn post_to(
    client: &reqwest::Client,
    url: &str,
    api_key: &str,
    key: &str,
    body: &str,
) -> (u16, Vec<u8>, Option<String>) {
    let sent = crate::common::client::send_idempotent(client, url, api_key, key, body).await;
    match sent {
        Ok(response) => {
            let status = response.status().as_u16();
            let replayed = response
                .headers()
                .get("idempotent-replayed")
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let body = response
                .bytes()
                .await
                .map(|b| b.to_vec())
                .unwrap_or_default();
            (status, body, replayed)
        }
        Err(_) => (0, Vec::new(), None),
    }
}

/// Sends the ride of `amount_cents` under `key` until it gets a final
/// answer (`until_final_at`).
pub async fn until_final(
    client: &reqwest::Client,
    address: &str,
    api_key: &str,
    key: &str,
    amount_cents: i64,
    patience: Duration,
) -> Answered {
    let url = format!("{address}/api/rides");
    let (statuses, body) =
        until_final_at(client, &url, api_key, key, &ride(amount_cents), patience).await;
    Answered {
        key: key.to_owned(),
        amount_cents,
        statuses,
        body,
    }
}

/// Sends `body` to `url` under `key` until it gets a final answer, backing
/// off on a 503, a 409 or a broken connection, for at most `patience`:
/// every answer's status, in order (0: the connection broke), and the last
/// one's body.
pub async fn until_final_at(
    client: &reqwest::Client,
    url: &str,
    api_key: &str,
    key: &str,
    body: &str,
    patience: Duration,
) -> (Vec<u16>, Vec<u8>) {
    let deadline = Instant::now() + patience;
    let mut statuses = Vec::new();
    let mut backoff = Duration::from_millis(100);
    loop {
        let (status, answer, _) = post_to(client, url, api_key, key, body).await;
        statuses.push(status);
        if !matches!(status, 0 | 409 | 503) || Instant::now() >= deadline {
            return (statuses, answer);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}

/// Runs `clients` clients of `rides_each` rides each against `address`;
/// `acknowledged` counts the rides answered 201 so far. Each key is retried
/// for at most `patience`.
pub async fn run(
    address: &str,
    api_key: &str,
    clients: usize,
    rides_each: usize,
    acknowledged: &AtomicUsize,
    patience: Duration,
) -> Vec<Answered> {
    let client = reqwest::Client::new();
    let client = &client;
    let runs = (0..clients).map(|c| async move {
        let mut answered = Vec::new();
        for r in 0..rides_each {
            let key = format!("ha-{c}-{r}");
            let amount_cents = 1000 + (c * rides_each + r) as i64;
            let answer = until_final(client, address, api_key, &key, amount_cents, patience).await;
            if answer.status() == 201 {
                acknowledged.fetch_add(1, Ordering::SeqCst);
            }
            answered.push(answer);
        }
        answered
    });
    join_all(runs).await.into_iter().flatten().collect()
}
