//! Trial counting: hit rates with 95% Wilson score intervals, the number of
//! trials that makes zero hits decisive, and the one-sided Fisher exact test
//! that decides whether a mitigation's rate is below its control's.
//!
//! The Wilson interval is used rather than the normal approximation because the
//! rates this project meets sit at the edges (0 of n, n of n), where the normal
//! interval collapses to a width of zero.
//!
//! # References
//! - E. B. Wilson, "Probable inference, the law of succession, and statistical
//!   inference", JASA 22 (1927).
//! - <https://en.wikipedia.org/wiki/Binomial_proportion_confidence_interval#Wilson_score_interval>
//! - R. A. Fisher, *Statistical Methods for Research Workers* (1925), §21.02;
//!   <https://en.wikipedia.org/wiki/Fisher%27s_exact_test>
//! - C. Lanczos, "A precision approximation of the gamma function", SIAM J.
//!   Numer. Anal. B 1 (1964); coefficients g = 7, n = 9 as in Numerical Recipes.

use crate::error::{Result, usage};
use serde::{Deserialize, Serialize};

/// The two-sided 95% normal quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

/// The rate under which zero hits count as "the hazard did not show".
pub const ABSENCE_THRESHOLD: f64 = 0.01;

/// The most trials (or hits) one arm may report: counts above it are refused
/// on load, so no sum of two counts can overflow a `u64`.
pub const MAX_TRIALS: u64 = 1_000_000_000;

/// `hits` out of `trials`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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

    /// A count, if `hits <= trials <= MAX_TRIALS`; else why not.
    pub fn checked(hits: u64, trials: u64) -> Result<Count> {
        if trials > MAX_TRIALS {
            Err(usage!("{trials} trials is over the limit of {MAX_TRIALS}"))
        } else if hits > trials {
            Err(usage!("{hits} hits in {trials} trials"))
        } else {
            Ok(Count { trials, hits })
        }
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

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, n = 9; relative error about 1e-15).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1-x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// `ln C(n, k)`.
fn ln_choose(n: u64, k: u64) -> f64 {
    ln_gamma(n as f64 + 1.0) - ln_gamma(k as f64 + 1.0) - ln_gamma((n - k) as f64 + 1.0)
}

/// The one-sided Fisher exact p that `a`'s rate is below `b`'s: given the
/// margins of the 2×2 table, the probability of `a.hits` or fewer of all the
/// hits falling in `a`'s trials (a hypergeometric lower tail).
///
/// 0/7 against 7/7 gives 1/C(14,7) = 2.9e-4; 0/6 against 6/6 gives 1.1e-3.
pub fn fisher_less(a: Count, b: Count) -> f64 {
    let n = a.trials + b.trials;
    let k = a.hits + b.hits;
    if n == 0 || k == 0 {
        return 1.0;
    }
    // X = hits among a's trials: from max(0, k - b.trials) to min(k, a.trials).
    let low = k.saturating_sub(b.trials);
    if a.hits < low {
        return 0.0;
    }
    let high = k.min(a.trials);
    if a.hits >= high {
        return 1.0;
    }
    let ln_total = ln_choose(n, a.trials);
    let term = |x: u64| {
        (ln_choose(k, x) + ln_choose(n - k, a.trials - x) - ln_total)
            .exp()
            .min(1.0)
    };
    let (kf, af, nf) = (k as f64, a.trials as f64, n as f64);
    // P(x + 1) / P(x), for low <= x < high.
    let up = |x: f64| (kf - x) * (af - x) / ((x + 1.0) * (nf - kf - af + x + 1.0));
    // The terms rise to the mode and fall after it (the distribution is
    // log-concave), so each tail is summed from its end nearest the mode
    // outwards, where the terms only shrink: starting at the far end instead
    // loses everything when its first term underflows (0/1e5 hits of 2000).
    // The sum stops once the rest, bounded by a geometric series at the
    // current ratio, cannot move it; at most a few standard deviations.
    let mode = ((a.trials + 1) as f64 * (k + 1) as f64 / (n + 2) as f64) as u64;
    let tail = |from: u64, step: &dyn Fn(u64) -> Option<(u64, f64)>| {
        let mut t = term(from);
        let mut sum = t;
        let mut x = from;
        while let Some((next, ratio)) = step(x) {
            t *= ratio;
            sum += t;
            x = next;
            if t == 0.0 || (ratio < 1.0 && t * ratio / (1.0 - ratio) <= sum * 1e-17) {
                break;
            }
        }
        sum
    };
    let p = if a.hits < mode {
        // The lower tail itself, from a.hits down to low.
        tail(a.hits, &|x| {
            (x > low).then(|| (x - 1, 1.0 / up((x - 1) as f64)))
        })
    } else {
        // One minus the upper tail, from a.hits + 1 up to high.
        1.0 - tail(a.hits + 1, &|x| (x < high).then(|| (x + 1, up(x as f64))))
    };
    p.clamp(0.0, 1.0)
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

    #[test]
    fn fisher_known_values() {
        let p =
            |a: (u64, u64), b: (u64, u64)| fisher_less(Count::new(a.0, a.1), Count::new(b.0, b.1));
        assert!((p((0, 7), (7, 7)) - 1.0 / 3432.0).abs() < 1e-12);
        assert!((p((0, 6), (6, 6)) - 1.0 / 924.0).abs() < 1e-12);
        assert!((p((0, 10), (10, 10)) - 1.0 / 184_756.0).abs() < 1e-14);
        assert!((p((0, 1), (1, 1)) - 0.5).abs() < 1e-12);
        // 0/381 against 2/381: C(381,2)/C(762,2).
        let expect = (381.0 * 380.0) / (762.0 * 761.0);
        assert!((p((0, 381), (2, 381)) - expect).abs() < 1e-9);
        // 0/12 against 4/12: C(12,4)/C(24,4) = 495/10626.
        assert!((p((0, 12), (4, 12)) - 495.0 / 10626.0).abs() < 1e-9);
        // A lower tail that covers everything is 1; no hits at all says nothing.
        assert!((p((3, 3), (0, 3)) - 1.0).abs() < 1e-12);
        assert_eq!(p((0, 5), (0, 5)), 1.0);
        // Huge counts stay finite.
        let big = p((0, MAX_TRIALS), (1000, MAX_TRIALS));
        assert!(big > 0.0 && big < 1e-250, "{big}");
        assert!(Count::checked(1, 0).is_err());
        assert!(Count::checked(0, MAX_TRIALS + 1).is_err());
    }

    proptest! {
        #[test]
        fn fisher_is_a_probability_and_monotone(h in 0u64..40, n in 1u64..40, m in 1u64..40, c in 0u64..40) {
            let (h, c) = (h.min(n), c.min(m));
            let p = fisher_less(Count::new(h, n), Count::new(c, m));
            prop_assert!((0.0..=1.0).contains(&p));
            if h < n {
                // One more hit in the mitigation never makes it look better.
                let q = fisher_less(Count::new(h + 1, n), Count::new(c, m));
                prop_assert!(q + 1e-12 >= p, "{} < {}", q, p);
            }
        }

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

#[cfg(test)]
mod large_count_tests {
    use super::*;

    #[test]
    fn fisher_lower_tail_survives_an_underflowing_first_term() {
        // Equal rates with thousands of hits: the tail's first term (x = 0)
        // is below f64's range, yet the tail is about one half.
        let p = fisher_less(Count::new(1000, 100_000), Count::new(1000, 100_000));
        assert!((p - 0.508_964).abs() < 1e-4, "{p}");
        // A mitigation far worse than its control: p is near 1, not 0.
        let worse = fisher_less(Count::new(5_000, 100_000), Count::new(1_000, 100_000));
        assert!(worse > 0.999, "{worse}");
        // Far better: tiny but a probability (1.79e-125).
        let better = fisher_less(Count::new(50, 1000), Count::new(500, 1000));
        assert!((better / 1.793_568_9e-125 - 1.0).abs() < 1e-4, "{better}");
    }

    #[test]
    fn fisher_matches_the_plain_sum_on_small_tables() {
        let choose =
            |n: u64, k: u64| (0..k).fold(1.0f64, |c, i| c * (n - i) as f64 / (i + 1) as f64);
        for (at, bt) in [(1u64, 1u64), (6, 6), (7, 7), (10, 12), (20, 9)] {
            for ah in 0..=at {
                for bh in 0..=bt {
                    let (n, k) = (at + bt, ah + bh);
                    let exact = (0..=ah.min(k))
                        .filter(|&x| k - x <= bt)
                        .map(|x| choose(k, x) * choose(n - k, at - x) / choose(n, at))
                        .sum::<f64>()
                        .min(1.0);
                    let p = fisher_less(Count::new(ah, at), Count::new(bh, bt));
                    assert!(
                        (p - exact).abs() < 1e-9,
                        "{ah}/{at} vs {bh}/{bt}: {p} != {exact}"
                    );
                }
            }
        }
    }
}
