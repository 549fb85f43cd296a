//! Latency percentiles from every sample of a run (no sampling, no histogram
//! buckets: runs are short enough to keep them all).

use std::time::Duration;

#[derive(Debug, Clone, Copy, Default)]
pub struct Percentiles {
    pub count: usize,
    pub p50: Duration,
    pub p99: Duration,
    pub p999: Duration,
}

impl Percentiles {
    pub fn of(samples: &mut [Duration]) -> Percentiles {
        if samples.is_empty() {
            return Percentiles::default();
        }
        samples.sort_unstable();
        let at = |q: f64| {
            samples[((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1]
        };
        Percentiles {
            count: samples.len(),
            p50: at(0.50),
            p99: at(0.99),
            p999: at(0.999),
        }
    }
}

/// Milliseconds with two decimals, for tables.
pub fn ms(duration: Duration) -> String {
    format!("{:.2}", duration.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank_over_every_sample() {
        let mut samples: Vec<Duration> = (1..=1000).rev().map(Duration::from_millis).collect();
        let p = Percentiles::of(&mut samples);
        assert_eq!(p.count, 1000);
        assert_eq!(p.p50, Duration::from_millis(500));
        assert_eq!(p.p99, Duration::from_millis(990));
        assert_eq!(p.p999, Duration::from_millis(999));
    }

    #[test]
    fn no_samples_give_zeros() {
        assert_eq!(Percentiles::of(&mut []).count, 0);
    }
}
