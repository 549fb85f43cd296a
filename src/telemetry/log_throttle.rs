//! At most one log line per interval for messages that anyone can trigger,
//! so a flood of requests cannot become a flood of log lines.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

pub struct LogThrottle {
    interval: Duration,
    /// Milliseconds since [`EPOCH`] of the last line allowed, plus one (0:
    /// never).
    last: AtomicU64,
}

/// A process-wide start for the throttles' clocks.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

impl LogThrottle {
    pub const fn per(interval: Duration) -> LogThrottle {
        LogThrottle {
            interval,
            last: AtomicU64::new(0),
        }
    }

    /// True for the first call, and then once the interval has passed since
    /// the last true; safe to call from every thread at once.
    pub fn allows(&self) -> bool {
        let now = EPOCH.elapsed().as_millis() as u64 + 1;
        let last = self.last.load(Ordering::Relaxed);
        let due = last == 0 || now.saturating_sub(last) >= self.interval.as_millis() as u64;
        due && self
            .last
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_however_often_it_is_asked() {
        let throttle = LogThrottle::per(Duration::from_millis(200));
        let allowed = (0..10_000).filter(|_| throttle.allows()).count();
        assert_eq!(allowed, 1);
        std::thread::sleep(Duration::from_millis(250));
        assert!(throttle.allows());
        assert!(!throttle.allows());
    }
}
