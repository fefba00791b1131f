//! The one-sided Fisher exact test, for "does this test fail more under
//! pressure than alone".
//!
//! Written here because the audit needed it before `fdwindow::stats` had
//! one; when stats grows its own, this folds into it.
//!
//! # References
//! - R. A. Fisher, "On the interpretation of χ² from contingency tables, and
//!   the calculation of P", JRSS 85 (1922).
//! - <https://en.wikipedia.org/wiki/Fisher%27s_exact_test>

/// `ln(n!)`: summed exactly up to 256, Stirling's series beyond (error under
/// 1e-12 there).
fn ln_factorial(n: u64) -> f64 {
    if n < 256 {
        return (2..=n).map(|i| (i as f64).ln()).sum();
    }
    let x = n as f64 + 1.0;
    // ln Γ(x) = (x-½)ln x − x + ½ln 2π + 1/(12x) − 1/(360x³) + 1/(1260x⁵)
    (x - 0.5) * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI).ln() + 1.0 / (12.0 * x)
        - 1.0 / (360.0 * x.powi(3))
        + 1.0 / (1260.0 * x.powi(5))
}

fn ln_choose(n: u64, k: u64) -> f64 {
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

/// The one-sided p-value that arm A's rate exceeds arm B's: the probability,
/// with the margins fixed, of A having `a_hits` or more of all the hits.
/// 1 when A has no trials or no hits.
pub fn greater(a_hits: u64, a_trials: u64, b_hits: u64, b_trials: u64) -> f64 {
    assert!(
        a_hits <= a_trials && b_hits <= b_trials,
        "hits exceed trials"
    );
    if a_hits == 0 || a_trials == 0 {
        return 1.0;
    }
    let n = a_trials + b_trials;
    let hits = a_hits + b_hits;
    let denom = ln_choose(n, a_trials);
    let top = hits.min(a_trials);
    let p: f64 = (a_hits..=top)
        .filter(|&x| hits - x <= b_trials)
        .map(|x| (ln_choose(hits, x) + ln_choose(n - hits, a_trials - x) - denom).exp())
        .sum();
    p.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // 10/10 vs 0/10: 1 / C(20,10) = 1/184756.
        assert!((greater(10, 10, 0, 10) - 1.0 / 184_756.0).abs() < 1e-12);
        // 3/3 vs 0/3: 1/C(6,3) = 0.05.
        assert!((greater(3, 3, 0, 3) - 0.05).abs() < 1e-12);
        // Lady tasting tea: 4 of 4 right among 8 cups, 1/70.
        assert!((greater(4, 4, 0, 4) - 1.0 / 70.0).abs() < 1e-12);
        // 8/10 vs 0/10: (C(10,8) + ... ) / C(20,8) computed by hand.
        let p = greater(8, 10, 0, 10);
        assert!((p - 45.0 / 125_970.0).abs() < 1e-12, "{p}");
        assert_eq!(greater(0, 10, 5, 10), 1.0);
        // Equal rates: far from significant.
        assert!(greater(5, 10, 5, 10) > 0.5);
    }

    #[test]
    fn stirling_meets_the_exact_sum() {
        let exact: f64 = (2..=300u64).map(|i| (i as f64).ln()).sum();
        assert!((ln_factorial(300) - exact).abs() < 1e-9);
        let exact: f64 = (2..=256u64).map(|i| (i as f64).ln()).sum();
        assert!((ln_factorial(256) - exact).abs() < 1e-9);
    }

    #[test]
    fn large_counts_stay_in_range() {
        let p = greater(20, 1000, 0, 1000);
        assert!(p > 0.0 && p < 1e-5, "{p}");
        let p = greater(5, 1000, 0, 1000);
        assert!(p > 0.02 && p < 0.04, "{p}");
    }
}
