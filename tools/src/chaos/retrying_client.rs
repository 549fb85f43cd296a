//! A client as real ones behave: a fresh key per ride, and on a timeout, a lost
//! connection, a 409, a 429 or a transient 5xx, the same request again with the same
//! key, with capped exponential backoff and jitter, a bounded number of times.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rand::Rng;

use super::fleet::Fleet;
use super::history::{Counters, Expected, KeyHistory};
use super::options::Options;
use crate::client::{ride_body, Answer, RideClient};

/// Enough to outlast a lease left by a killed instance (2 s) several times.
const MAX_ATTEMPTS: u32 = 40;
const BACKOFF_BASE: Duration = Duration::from_millis(25);
const BACKOFF_CAP: Duration = Duration::from_millis(800);

/// Runs one virtual client until the campaign's time or request budget is
/// spent, and returns the history of its keys.
pub async fn run_client(
    fleet: &Fleet,
    counters: &Counters,
    options: &Options,
    api_key: &str,
    deadline: Instant,
) -> anyhow::Result<Vec<KeyHistory>> {
    let client = RideClient::new(api_key, options.request_timeout)?;
    let mut histories = Vec::new();
    while Instant::now() < deadline && counters.requests() < options.max_requests {
        let (expected, amount_cents, attempts) = {
            let mut rng = rand::thread_rng();
            let expected = if rng.gen_bool(options.decline_share) {
                Expected::Declined
            } else {
                Expected::Captured
            };
            let attempts = if rng.gen_bool(options.abandon_share) {
                1
            } else {
                MAX_ATTEMPTS
            };
            (expected, rng.gen_range(50..=100_000), attempts)
        };
        let key = format!("chaos-{}", uuid::Uuid::new_v4().simple());
        let body = ride_body(amount_cents, expected.payment_method());
        let first_final = send_until_final(&client, fleet, counters, &key, &body, attempts).await;
        match &first_final {
            None if attempts == 1 => counters.outcomes.add("walked away after a failure"),
            None => counters.outcomes.add("gave up after every attempt"),
            Some(answer) if answer.replayed => counters
                .outcomes
                .add(format!("{} replayed on a retry", answer.status)),
            Some(answer) => counters.outcomes.add(format!("{}", answer.status)),
        }
        let mut replay_mismatch = None;
        if let Some(first) = &first_final {
            if rand::thread_rng().gen_bool(options.replay_share) {
                match send_until_final(&client, fleet, counters, &key, &body, MAX_ATTEMPTS).await {
                    Some(again)
                        if again.replayed
                            && again.status == first.status
                            && again.body == first.body =>
                    {
                        counters.outcomes.add("identical replay");
                    }
                    Some(again) => {
                        replay_mismatch = Some(format!(
                            "status {} replayed={} body {}",
                            again.status,
                            again.replayed,
                            String::from_utf8_lossy(&again.body)
                        ));
                    }
                    None => counters.outcomes.add("replay gave up"),
                }
            }
        }
        histories.push(KeyHistory {
            key,
            amount_cents,
            expected,
            first_final,
            replay_mismatch,
        });
    }
    Ok(histories)
}

/// The first final answer for the key, or None once the attempts run out.
async fn send_until_final(
    client: &RideClient,
    fleet: &Fleet,
    counters: &Counters,
    key: &str,
    body: &bytes::Bytes,
    max_attempts: u32,
) -> Option<Answer> {
    for attempt in 0..max_attempts {
        if attempt > 0 {
            tokio::time::sleep(backoff(attempt)).await;
        }
        let Some(address) = fleet.pick() else {
            counters.faults.add("no instance up");
            continue;
        };
        counters.requests.fetch_add(1, Ordering::Relaxed);
        if attempt > 0 {
            counters.retries.fetch_add(1, Ordering::Relaxed);
        }
        match client.post_ride(&address, key, body.clone()).await {
            Err(err) if err.is_timeout() => counters.faults.add("client timeout"),
            Err(_) => counters.faults.add("connection refused or reset"),
            Ok(answer) if is_transient(answer.status) => counters.faults.add(format!(
                "{} {}",
                answer.status,
                answer.problem_slug().unwrap_or_default()
            )),
            Ok(answer) => return Some(answer),
        }
    }
    None
}

/// 409, 429 and every 5xx but 502: a 502 `payment-gateway-rejected` is a
/// stored, final answer that a retry only replays.
fn is_transient(status: u16) -> bool {
    matches!(status, 409 | 429) || (status >= 500 && status != 502)
}

fn backoff(attempt: u32) -> Duration {
    let exponential = BACKOFF_BASE
        .saturating_mul(1 << attempt.min(10))
        .min(BACKOFF_CAP);
    exponential.mul_f64(rand::thread_rng().gen_range(0.5..1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_what_a_real_client_retries_and_not_stored_answers() {
        for status in [409, 429, 500, 503, 504] {
            assert!(is_transient(status), "{status}");
        }
        for status in [201, 400, 402, 422, 502] {
            assert!(!is_transient(status), "{status}");
        }
    }

    #[test]
    fn backoff_is_capped_and_jittered_below_the_cap() {
        for attempt in 1..MAX_ATTEMPTS {
            let pause = backoff(attempt);
            assert!(
                pause <= BACKOFF_CAP && pause >= BACKOFF_BASE / 2,
                "{pause:?}"
            );
        }
    }
}
