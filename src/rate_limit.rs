//! Rate limiting per API key (GCRA, from the `governor` crate), checked before
//! the key is even looked up, so a flood costs no database work.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

/// Keys are SHA-256 digests of the presented API key, so no key is kept in
/// memory in the clear.
pub struct RateLimiter {
    limiter: Option<DefaultKeyedRateLimiter<Vec<u8>>>,
    checks: AtomicU64,
}

/// How often the limiter forgets keys that have been quiet long enough to be
/// full again, so random keys cannot grow it without bound.
const FORGET_EVERY: u64 = 10_000;

impl RateLimiter {
    /// `per_second` of 0 switches limiting off.
    pub fn new(per_second: u32, burst: u32) -> RateLimiter {
        let limiter = NonZeroU32::new(per_second).map(|rate| {
            let burst = NonZeroU32::new(burst.max(per_second)).unwrap_or(rate);
            DefaultKeyedRateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        RateLimiter {
            limiter,
            checks: AtomicU64::new(0),
        }
    }

    /// Ok, or how long the caller must wait.
    pub fn check(&self, key_digest: &[u8]) -> Result<(), Duration> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        if self.checks.fetch_add(1, Ordering::Relaxed) % FORGET_EVERY == FORGET_EVERY - 1 {
            limiter.retain_recent();
        }
        limiter
            .check_key(&key_digest.to_vec())
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_over_its_burst_waits_and_others_do_not() {
        let limiter = RateLimiter::new(1, 3);
        for _ in 0..3 {
            assert!(limiter.check(b"flood").is_ok());
        }
        let wait = limiter.check(b"flood").unwrap_err();
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(1));
        assert!(limiter.check(b"calm").is_ok());
    }

    #[test]
    fn zero_switches_it_off() {
        let limiter = RateLimiter::new(0, 0);
        assert!((0..1000).all(|_| limiter.check(b"any").is_ok()));
    }
}
