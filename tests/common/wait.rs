//! Waiting for an event rather than sleeping.
use std::time::{Duration, Instant};

/// Polls `done` until it holds, for at most `limit`.
pub async fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    done()
}
