//! Trial counting: hit rates with 95% Wilson score intervals, and the number of
//! trials that makes zero hits decisive.
//!
//! The Wilson interval is used rather than the normal approximation because the
//! rates this project meets sit at the edges (0 of n, n of n), where the normal
//! interval collapses to a width of zero.
//!
//! # References
//! - E. B. Wilson, "Probable inference, the law of succession, and statistical
//!   inference", JASA 22 (1927).
//! - <https://en.wikipedia.org/wiki/Binomial_proportion_confidence_interval#Wilson_score_interval>

use serde::{Deserialize, Serialize};

/// The two-sided 95% normal quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

/// The rate under which zero hits count as "the hazard did not show".
pub const ABSENCE_THRESHOLD: f64 = 0.01;

/// `hits` out of `trials`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Count {
    /// Trials run.
    pub trials: u64,
    /// Trials in which the hazard showed.
    pub hits: u64,
}

/// A closed interval of rates in `[0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

impl Count {
    /// A count; `hits` may not exceed `trials`.
    pub fn new(hits: u64, trials: u64) -> Count {
        assert!(hits <= trials, "{hits} hits in {trials} trials");
        Count { trials, hits }
    }

    /// The observed rate, or `None` before any trial.
    pub fn rate(self) -> Option<f64> {
        (self.trials > 0).then(|| self.hits as f64 / self.trials as f64)
    }

    /// The 95% Wilson score interval of the rate; `[0, 1]` before any trial.
    pub fn wilson(self) -> Interval {
        if self.trials == 0 {
            return Interval {
                low: 0.0,
                high: 1.0,
            };
        }
        let n = self.trials as f64;
        let p = self.hits as f64 / n;
        let z2 = Z95 * Z95;
        let denom = 1.0 + z2 / n;
        let centre = (p + z2 / (2.0 * n)) / denom;
        let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
        // At the edges the bound is exact; rounding must not move it off 0 or 1.
        Interval {
            low: if self.hits == 0 {
                0.0
            } else {
                (centre - half).max(0.0)
            },
            high: if self.hits == self.trials {
                1.0
            } else {
                (centre + half).min(1.0)
            },
        }
    }
}

/// The smallest number of trials whose 0-hit Wilson upper bound is under `threshold`.
///
/// For zero hits the upper bound is `z² / (n + z²)`, so the bound is under `t`
/// exactly when `n > z²(1 - t) / t`. With `t = 1%` that is 381 trials.
pub fn decisive_trials(threshold: f64) -> u64 {
    assert!(threshold > 0.0 && threshold <= 1.0, "threshold {threshold}");
    let z2 = Z95 * Z95;
    (z2 * (1.0 - threshold) / threshold).floor() as u64 + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        // 0/10: upper bound z²/(10+z²) = 0.2775.
        let i = Count::new(0, 10).wilson();
        assert_eq!(i.low, 0.0);
        assert!((i.high - 0.2775).abs() < 1e-4, "{i:?}");
        // 5/10: symmetric about one half, 0.2366..0.7634.
        let i = Count::new(5, 10).wilson();
        assert!(
            (i.low - 0.2366).abs() < 1e-4 && (i.high - 0.7634).abs() < 1e-4,
            "{i:?}"
        );
        // 10/10 mirrors 0/10.
        let i = Count::new(10, 10).wilson();
        assert!((i.low - 0.7225).abs() < 1e-4 && i.high == 1.0, "{i:?}");
    }

    #[test]
    fn decisive_counts() {
        assert_eq!(decisive_trials(ABSENCE_THRESHOLD), 381);
        assert_eq!(decisive_trials(1.0), 1);
        assert!(Count::new(0, 381).wilson().high < 0.01);
        assert!(Count::new(0, 380).wilson().high >= 0.01);
    }

    proptest! {
        #[test]
        fn interval_contains_the_rate(trials in 1u64..100_000, frac in 0.0f64..=1.0) {
            let hits = (trials as f64 * frac) as u64;
            let c = Count::new(hits, trials);
            let (p, i) = (c.rate().unwrap(), c.wilson());
            prop_assert!(0.0 <= i.low && i.low <= p + 1e-12 && p <= i.high + 1e-12 && i.high <= 1.0);
        }

        #[test]
        fn decisive_is_the_least_such_count(t in 0.001f64..=1.0) {
            let n = decisive_trials(t);
            prop_assert!(Count::new(0, n).wilson().high < t);
            if n > 1 {
                prop_assert!(Count::new(0, n - 1).wilson().high >= t);
            }
        }
    }
}
