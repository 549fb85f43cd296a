//! A client as real ones behave: a fresh key per request, and on a timeout,
//! a lost connection, a 409, a 429 or a transient 5xx, the same request again
//! with the same key, with capped exponential backoff and jitter, a bounded
//! number of times.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rand::Rng;

use super::fleet::Fleet;
use super::history::{Counters, KeyHistory, Request};
use super::options::Options;
use crate::client::{Answer, RideClient};

/// Enough to outlast a lease left by a killed instance (2 s) several times.
const MAX_ATTEMPTS: u32 = 40;
const BACKOFF_BASE: Duration = Duration::from_millis(25);
const BACKOFF_CAP: Duration = Duration::from_millis(800);

/// What a client sends its keys with.
pub struct Sender<'a> {
    client: RideClient,
    fleet: &'a Fleet,
    counters: &'a Counters,
    pub options: &'a Options,
    deadline: Instant,
}

impl<'a> Sender<'a> {
    pub fn new(
        fleet: &'a Fleet,
        counters: &'a Counters,
        options: &'a Options,
        api_key: &str,
        deadline: Instant,
    ) -> anyhow::Result<Sender<'a>> {
        Ok(Sender {
            client: RideClient::new(api_key, options.request_timeout)?,
            fleet,
            counters,
            options,
            deadline,
        })
    }

    /// The HTTP client, with the key it sends.
    pub fn client(&self) -> &RideClient {
        &self.client
    }

    /// `GET` of `path` on a live instance, once: None without an answer.
    pub async fn get(&self, path: &str) -> Option<Answer> {
        let address = self.fleet.pick()?;
        self.client.get(&address, path).await.ok()
    }

    /// Whether the campaign's time and request budget leave room for a new key.
    pub fn may_start_key(&self) -> bool {
        Instant::now() < self.deadline && self.counters.requests() < self.options.max_requests
    }

    /// `request` under a fresh key, retried until a final answer (or, for
    /// the share of clients that walk away, not retried), then maybe sent
    /// once more to check the replay.
    pub async fn send(&self, request: Request) -> KeyHistory {
        let counters = self.counters;
        let attempts = if rand::thread_rng().gen_bool(self.options.abandon_share) {
            1
        } else {
            MAX_ATTEMPTS
        };
        let key = format!("chaos-{}", uuid::Uuid::new_v4().simple());
        let (path, body) = (request.path(), request.body());
        let first_final = self.send_until_final(&key, &path, &body, attempts).await;
        let name = request.name();
        match &first_final {
            None if attempts == 1 => counters
                .outcomes
                .add(format!("{name} walked away after a failure")),
            None => counters
                .outcomes
                .add(format!("{name} gave up after every attempt")),
            Some(answer) if answer.replayed => counters
                .outcomes
                .add(format!("{name} {} replayed on a retry", answer.status)),
            Some(answer) => counters.outcomes.add(format!("{name} {}", answer.status)),
        }
        let mut replay_mismatch = None;
        // A 422 may be a refusal that wrote nothing (the key not consumed),
        // which a replay would only ask again.
        let replayable = first_final.as_ref().filter(|first| first.status != 422);
        if let Some(first) = replayable {
            if rand::thread_rng().gen_bool(self.options.replay_share) {
                match self
                    .send_until_final(&key, &path, &body, MAX_ATTEMPTS)
                    .await
                {
                    Some(again)
                        if again.replayed
                            && again.status == first.status
                            && again.body == first.body =>
                    {
                        counters.outcomes.add(format!("{name} identical replay"));
                    }
                    Some(again) => {
                        replay_mismatch = Some(format!(
                            "status {} replayed={} body {}",
                            again.status,
                            again.replayed,
                            String::from_utf8_lossy(&again.body)
                        ));
                    }
                    None => counters.outcomes.add(format!("{name} replay gave up")),
                }
            }
        }
        KeyHistory {
            key,
            request,
            first_final,
            replay_mismatch,
        }
    }

    /// The first final answer for the key, or None once the attempts run out.
    async fn send_until_final(
        &self,
        key: &str,
        path: &str,
        body: &bytes::Bytes,
        max_attempts: u32,
    ) -> Option<Answer> {
        let counters = self.counters;
        for attempt in 0..max_attempts {
            if attempt > 0 {
                tokio::time::sleep(backoff(attempt)).await;
            }
            let Some(address) = self.fleet.pick() else {
                counters.faults.add("no instance up");
                continue;
            };
            counters.requests.fetch_add(1, Ordering::Relaxed);
            if attempt > 0 {
                counters.retries.fetch_add(1, Ordering::Relaxed);
            }
            match self.client.post(&address, path, key, body.clone()).await {
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
