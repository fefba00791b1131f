//! One arm's tally, the verdict of the two arms, and its line.

use std::time::Duration;

use fdwindow::report::stats::{Count, fisher_less};

use super::args::*;
use super::run::*;

#[derive(Default)]
pub(super) struct Arm {
    /// Runs, and runs that failed or timed out.
    pub(super) count: Count,
    /// Runs killed at `--timeout` (also in `count.hits`).
    pub(super) timeouts: u64,
    /// Summed run time of this arm.
    pub(super) time: Duration,
    /// Summed run time at each failure.
    pub(super) failures_at: Vec<Duration>,
    pub(super) first_failure_run: Option<u64>,
}

impl Arm {
    pub(super) fn record(&mut self, ended: Ended, took: Duration) {
        let failed = ended != Ended::Passed;
        if ended == Ended::TimedOut {
            self.timeouts += 1;
        }
        self.count.trials += 1;
        self.time += took;
        if failed {
            self.count.hits += 1;
            self.failures_at.push(self.time);
            self.first_failure_run.get_or_insert(self.count.trials);
        }
    }

    /// The median time from one failure (or the start) to the next.
    pub(super) fn median_gap(&self) -> Option<Duration> {
        let mut gaps: Vec<Duration> = self
            .failures_at
            .iter()
            .scan(Duration::ZERO, |prev, &at| {
                let gap = at - *prev;
                *prev = at;
                Some(gap)
            })
            .collect();
        gaps.sort();
        let n = gaps.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(gaps[n / 2]),
            _ => Some((gaps[n / 2 - 1] + gaps[n / 2]) / 2),
        }
    }

    pub(super) fn json(&self, id: &str) -> serde_json::Value {
        let ci = self.count.wilson();
        serde_json::json!({
            "arm": id,
            "runs": self.count.trials,
            "failures": self.count.hits - self.timeouts,
            "timeouts": self.timeouts,
            "rate": self.count.rate(),
            "wilson95": [ci.low, ci.high],
            "run_time_s": self.time.as_secs_f64(),
            "first_failure_run": self.first_failure_run,
            "first_failure_after_s": self.failures_at.first().map(Duration::as_secs_f64),
            "median_time_to_failure_s": self.median_gap().map(|d| d.as_secs_f64()),
        })
    }

    pub(super) fn line(&self, id: &str) -> String {
        let ci = self.count.wilson();
        let first = match self.failures_at.first() {
            Some(t) => format!(
                "first failure after {:.2} s (run {}), median {:.2} s",
                t.as_secs_f64(),
                self.first_failure_run.unwrap_or(0),
                self.median_gap().unwrap_or_default().as_secs_f64()
            ),
            None => "no failure".into(),
        };
        let timeouts = match self.timeouts {
            0 => String::new(),
            n => format!(" ({n} timed out)"),
        };
        format!(
            "{id:<9} {}/{} failed{timeouts} (95% CI {:.1}%–{:.1}%), {first}",
            self.count.hits,
            self.count.trials,
            ci.low * 100.0,
            ci.high * 100.0
        )
    }
}

/// The share of the pressured runs' time under which the summary warns that
/// the pressure barely overlapped the command.
pub(super) const OVERLAP_SHARE: f64 = 0.5;

/// The share of the pressured runs' time under which the pressure never
/// overlapped the command: the summary prints the share in whole percent,
/// and this is where it reads 0%. A pressured process that execs at once
/// (rustup's `cargo` proxy, `sh -c 'exec …'`) loses its threads with its old
/// image and reports a few microseconds.
pub(super) const NO_OVERLAP_SHARE: f64 = 0.005;

/// The error for pressure that never overlapped the command, one line.
pub(super) const NEVER_OVERLAPPED: &str = "pressure never overlapped the command (0% of the pressured runs' \
     time: the pressured process exec'd or ended as pressure started); use --match GLOB to \
     pressure the process that runs the tests";

/// What the comparison of the two arms says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The one-sided Fisher p that the alone arm fails less often than the
    /// pressure arm is at most [`EXPOSED_P`].
    Exposed,
    /// No pressured process reported back: the pressure arm compares nothing.
    Unpressured,
    /// Neither: too few failures under pressure to tell, or as many alone.
    Inconclusive,
}

impl Verdict {
    /// The word the summary and the stderr line use.
    pub(super) fn id(self) -> &'static str {
        match self {
            Verdict::Exposed => "exposed",
            Verdict::Unpressured => "unpressured",
            Verdict::Inconclusive => "inconclusive",
        }
    }

    /// The verdict on the two arms' counts; `reached` is whether any
    /// pressured process reported back.
    pub(super) fn of(alone: Count, pressured: Count, reached: bool) -> (Verdict, f64) {
        let p = fisher_less(alone, pressured);
        let verdict = if !reached && pressured.trials > 0 {
            Verdict::Unpressured
        } else if p <= EXPOSED_P {
            Verdict::Exposed
        } else {
            Verdict::Inconclusive
        };
        (verdict, p)
    }
}

/// A p for the stderr line: two decimals, or two digits in scientific
/// notation under 0.01.
pub(super) fn p_text(p: f64) -> String {
    if p >= 0.01 {
        format!("{p:.2}")
    } else {
        format!("{p:.1e}")
    }
}

/// The stderr line that states the verdict.
pub(super) fn verdict_line(verdict: Verdict, p: f64, alone: Count, pressured: Count) -> String {
    let counts = format!(
        "pressure {}/{} vs alone {}/{}",
        pressured.hits, pressured.trials, alone.hits, alone.trials
    );
    match verdict {
        Verdict::Unpressured => {
            format!("verdict: unpressured ({counts}, but no pressured process reported back)")
        }
        Verdict::Exposed | Verdict::Inconclusive => format!(
            "verdict: {} ({counts}, one-sided Fisher p = {} {} {EXPOSED_P})",
            verdict.id(),
            p_text(p),
            if p <= EXPOSED_P { "<=" } else { ">" }
        ),
    }
}
