//! A ridepay client that retries the right way, walking one ride through its
//! life: request it (the fare held), tip it, complete it, refund part of it;
//! then a declined card. Every write is one operation with one
//! `Idempotency-Key`, made fresh for it and sent unchanged on each of its
//! retries, so a retry finishes or replays the first attempt and never pays
//! twice.
//!
//! ```sh
//! cargo run --example retrying_client -- --base-url http://127.0.0.1:8080 --api-key ridepay_sk_...
//! ```
//!
//! It exits non-zero unless the ride ends captured and part refunded and the
//! decline is answered 402. `examples/README.md` has the rules as a table.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use rand::Rng;
use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};

/// Attempts per operation, the first one included: enough to ride out a run
/// of gateway failures, few enough that a broken server is reported soon.
const MAX_ATTEMPTS: u32 = 12;
/// The backoff doubles from this at each retry...
const BACKOFF_BASE: Duration = Duration::from_millis(200);
/// ...up to this.
const BACKOFF_CAP: Duration = Duration::from_secs(5);
/// A longer Retry-After is not waited out in full: the attempts are bounded.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(30);
/// Past this an attempt counts as lost, and is retried with the same key.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Parser)]
struct Args {
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    base_url: String,
    /// Default: the demo user's key, kept by `cargo run` in .ridepay/demo-api-key.
    #[arg(long)]
    api_key: Option<String>,
}

/// An operation's final answer.
struct Answer {
    status: StatusCode,
    body: Value,
}

/// Whether an answer is worth sending the same request again for. Only
/// answers that say "not done yet" are: everything else is final, and most
/// of it stored under the key, so a retry would only replay it.
fn is_retried(status: StatusCode) -> bool {
    match status.as_u16() {
        // Our own earlier attempt (one that timed out, say) is still running.
        409 => true,
        // Too many requests: wait as told.
        429 => true,
        // The gateway was unavailable or its outcome unknown: the key was
        // released at its last recovery point, and a retry resumes from there.
        503 => true,
        // 2xx, 400, 402 (a stored decline), 404, 422 (the key reused, or a
        // refusal), 502 (the gateway rejected it for good, stored), 500 (left
        // for an operator): the same request can only get the same answer.
        _ => false,
    }
}

/// Capped exponential backoff with full jitter (a random wait between zero
/// and the cap of this retry), so that clients that failed together do not
/// come back together. A Retry-After the server sent is the least we wait.
fn delay(retry: u32, retry_after: Option<Duration>) -> Duration {
    let ceiling = BACKOFF_BASE
        .saturating_mul(1 << retry.min(16))
        .min(BACKOFF_CAP);
    let jittered = ceiling.mul_f64(rand::thread_rng().gen_range(0.0..1.0));
    retry_after.map_or(jittered, |after| after.min(RETRY_AFTER_CAP).max(jittered))
}

/// `Retry-After` in seconds, the form ridepay sends (an HTTP date is ignored:
/// the backoff applies).
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response.headers().get("retry-after")?.to_str().ok()?;
    value.trim().parse().ok().map(Duration::from_secs)
}

struct Api {
    client: Client,
    base_url: String,
    api_key: String,
}

impl Api {
    async fn post(&self, path: &str, body: Value) -> anyhow::Result<Answer> {
        self.send(Method::POST, path, Some(body)).await
    }

    async fn get(&self, path: &str) -> anyhow::Result<Answer> {
        self.send(Method::GET, path, None).await
    }

    /// One operation: attempts until a final answer, or an error once
    /// MAX_ATTEMPTS have not brought one.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Answer> {
        // Made once per operation, before the first attempt: a new key on a
        // retry would be a new request, and could pay a second time.
        let key = uuid::Uuid::new_v4().to_string();
        let url = format!("{}{path}", self.base_url.trim_end_matches('/'));
        for attempt in 1..=MAX_ATTEMPTS {
            let mut request = self
                .client
                .request(method.clone(), &url)
                .bearer_auth(&self.api_key);
            if let Some(body) = &body {
                request = request.header("Idempotency-Key", &key).json(body);
            }
            let (why, retry_after) = match request.send().await {
                Ok(response) => {
                    let (status, after) = (response.status(), retry_after(&response));
                    match response.bytes().await {
                        Ok(bytes) => {
                            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                            if !is_retried(status) {
                                return Ok(Answer { status, body });
                            }
                            (format!("{} {}", status.as_u16(), problem(&body)), after)
                        }
                        // The body cut off: that attempt is lost as well.
                        Err(err) => (format!("{}, body lost: {err}", status.as_u16()), None),
                    }
                }
                // A timeout or a lost connection: the server may have done
                // the request or not; the same key makes sending it again safe.
                Err(err) if err.is_timeout() => ("timed out".to_owned(), None),
                Err(err) => {
                    // reqwest's own message says little; its innermost cause says what.
                    let err = anyhow::Error::from(err);
                    (format!("transport error: {}", err.root_cause()), None)
                }
            };
            if attempt < MAX_ATTEMPTS {
                let wait = delay(attempt, retry_after);
                println!("  attempt {attempt}: {why}; retrying in {wait:.1?} (key {key})");
                tokio::time::sleep(wait).await;
            }
        }
        anyhow::bail!("{method} {path}: no final answer in {MAX_ATTEMPTS} attempts")
    }
}

/// The trip of the README's session, paid by `payment_method`, its fare held.
fn ride_request(payment_method: &str) -> Value {
    json!({
        "origin_lat": 37.77, "origin_lon": -122.42,
        "target_lat": 37.80, "target_lon": -122.27,
        "amount_cents": 2000, "capture_method": "manual",
        "payment_method": payment_method,
    })
}

/// The last part of a problem's `type` (`card-declined`), or "".
fn problem(body: &Value) -> &str {
    let kind = body["type"].as_str().unwrap_or_default();
    kind.rsplit('/').next().unwrap_or_default()
}

/// Prints a step's final answer: its status, and the ride's (or the
/// refund's) status or the problem's type.
fn report(step: &str, answer: &Answer) {
    let about = match answer.body["status"].as_str() {
        Some(status) => format!("status {status}"),
        None => problem(&answer.body).to_owned(),
    };
    println!("{step}: {} {about}", answer.status.as_u16());
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    let api_key = match args.api_key {
        Some(key) => key,
        None => std::fs::read_to_string(".ridepay/demo-api-key")
            .context("no --api-key, and no .ridepay/demo-api-key (run `cargo run` first)")?
            .trim()
            .to_owned(),
    };
    let api = Api {
        client: Client::builder().timeout(REQUEST_TIMEOUT).build()?,
        base_url: args.base_url,
        api_key,
    };
    let mut failures = Vec::new();
    let mut expect = |ok: bool, what: &str| {
        if !ok {
            failures.push(what.to_owned());
        }
    };

    let ride = api.post("/api/rides", ride_request("pm_card_visa")).await?;
    report("request a ride ($20.00 held)", &ride);
    // An opaque string (`ride_...`): put in paths as it came.
    let id = ride.body["id"]
        .as_str()
        .context("the ride's answer has no id")?
        .to_owned();
    expect(ride.status == StatusCode::CREATED, "the ride is created");

    // Captured with the fare when the ride is completed.
    let tip = json!({"amount_cents": 300});
    let tipped = api.post(&format!("/api/rides/{id}/tip"), tip).await?;
    report("tip $3.00", &tipped);
    expect(tipped.status == StatusCode::OK, "the tip is added");

    let complete = json!({"final_amount_cents": 1800});
    let done = api
        .post(&format!("/api/rides/{id}/complete"), complete)
        .await?;
    report("complete it ($18.00, and the tip)", &done);
    expect(done.status == StatusCode::OK, "the ride is completed");

    let refund = json!({"amount_cents": 500});
    let refund = api
        .post(&format!("/api/rides/{id}/refunds"), refund)
        .await?;
    report("refund $5.00 of it", &refund);
    expect(refund.status == StatusCode::CREATED, "the refund is made");

    // Where the ride stands now: one ride, whatever the retries were.
    let ride = api.get(&format!("/api/rides/{id}")).await?;
    let ride = &ride.body;
    println!(
        "{id}: status {}, {} cents captured ({} of them the tip), {} refunded",
        ride["status"].as_str().unwrap_or_default(),
        ride["amount_captured_cents"],
        ride["tip_cents"],
        ride["amount_refunded_cents"]
    );
    expect(ride["status"] == "captured", "the ride ends captured");
    expect(
        ride["amount_captured_cents"] == 2100,
        "$21.00 captured, fare and tip",
    );
    expect(ride["amount_refunded_cents"] == 500, "$5.00 of it refunded");

    // A decline is a stored, final 402: retrying it (even with a new key)
    // would not make the card pay.
    let declined = api
        .post("/api/rides", ride_request("pm_card_visa_chargeDeclined"))
        .await?;
    report("a declined card", &declined);
    expect(
        declined.status == StatusCode::PAYMENT_REQUIRED,
        "the decline is a 402",
    );

    if failures.is_empty() {
        println!("ok: the ride captured and part refunded, the decline answered 402");
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("FAILED: {}", failures.join("; "));
    Ok(ExitCode::FAILURE)
}
