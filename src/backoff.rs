//! Exponential backoff for the background workers.

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after the first failure; it doubles with each further one.
    pub base: Duration,
    pub max: Duration,
}

impl Backoff {
    /// The wait after `failures` failures in a row.
    pub fn after(&self, failures: i32) -> Duration {
        let doublings = (failures - 1).clamp(0, 30) as u32;
        self.base.saturating_mul(1 << doublings).min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap() {
        let backoff = Backoff {
            base: Duration::from_secs(2),
            max: Duration::from_secs(60),
        };
        let waits: Vec<u64> = (1..=7).map(|n| backoff.after(n).as_secs()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(backoff.after(i32::MAX).as_secs(), 60);
    }
}
