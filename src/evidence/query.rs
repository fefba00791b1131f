//! The questions every view asks of the evidence, answered in one place: the
//! verdict of an arm in a window ([`arm_verdict`], [`arm_judgement`],
//! [`find_arm`]), its counts as text ([`count_text`], [`cell_line`],
//! [`cell_detail`], [`cell_text`]), one word for an arm over its windows
//! ([`combined_verdict`]), and whether the results hold a spawn-window sweep
//! ([`has_spawn_window`], [`spawn_window_tables`]), and which results file a
//! view quotes for an OS ([`quoted_file`]).
//!
//! Views render these answers and never ask each other: the matrix, advice,
//! the README's sections and the CLI's `verdict` and `summary` print the same
//! cell the same way because they take it from here. Every answer is per
//! window: counts from different windows are never added together.

use crate::hazards::spawn::{TABLE_BY_FDS, TABLE_BY_RSS};
use crate::report::stats::Count;
use crate::report::verdict::{Judgement, Outcome, Verdict, Window, p_text};
use crate::report::{ArmReport, ProbeReport, ResultsFile, Table};

/// The cell of a race-window arm that a default run leaves out.
pub const NOT_IN_DEFAULT: &str = "not measured in a default run (`--thorough`)";

/// What `valid` means, in one sentence a reviewer can quote; README, MATRIX.md
/// and `fdwindow advise` all carry it.
pub const VALID_MEANS: &str = "`valid` means the fix showed the hazard in 0 trials (at least 7 in a \
deterministic window) while its control, in the same window of the same run, showed it often enough that a one-sided Fisher exact test puts \
the difference at p <= 0.001, and, where the fix's code differs from its control in more than the fix, \
its sham (the same code with the fix switched off) showed the hazard too.";

/// The derived verdict on one arm in one window of a probe report.
pub fn arm_verdict(report: &ProbeReport, arm: &ArmReport) -> Verdict {
    report.judgement(arm).verdict
}

/// The derived judgement (verdict, p, why) on one arm in one window.
pub fn arm_judgement(report: &ProbeReport, arm: &ArmReport) -> Judgement {
    report.judgement(arm)
}

/// The unit of an arm's trials: `spawns` in a race window, unless each trial
/// spawned the one child it checked (then trials are those spawns already).
pub fn unit(arm: &ArmReport) -> &'static str {
    if arm.window.is_race() { " spawns" } else { "" }
}

/// One cell as a line: `<verdict> <hits>/<trials> (<interval>)`, then
/// `spawns` in a race window, `p = …` for a mitigation, why it is undecided
/// and what would decide it, the argument of an `avoids` arm, and the
/// trials excluded as unconfirmed. Never a sum over windows.
pub fn cell_line(report: &ProbeReport, arm: &ArmReport) -> String {
    let j = report.judgement(arm);
    format!("{} {}", j.verdict.id(), cell_detail(report, arm))
}

/// [`cell_line`] without the verdict word.
pub fn cell_detail(report: &ProbeReport, arm: &ArmReport) -> String {
    let j = report.judgement(arm);
    let mut out = String::new();
    match &arm.outcome {
        Outcome::Observed { .. } => {
            let c = arm.outcome.count().expect("observed");
            out.push_str(&count_text(c));
            out.push_str(unit(arm));
        }
        Outcome::Unsupported { reason } => out.push_str(reason),
        Outcome::Broken { error } => out.push_str(error),
    }
    if let Some(p) = j.p.filter(|_| j.verdict != Verdict::Invalid) {
        out.push_str(&format!("; p = {}", p_text(p)));
        if let Some(against) = &arm.against {
            out.push_str(&format!(" vs {against}"));
        }
    }
    if let Some(why) = &j.why {
        out.push_str(&format!("; {why}"));
    }
    if let Some(more) = j.more_trials {
        out.push_str(&format!("; about {more} more trials each would decide"));
    }
    let broken = arm.outcome.broken_trials();
    if broken > 0 {
        out.push_str(&format!("; {broken} trials unconfirmed, excluded"));
    }
    if arm.emulated {
        out.push_str("; emulated: measures QEMU's TCG, used by no verdict rule or claim");
    }
    out
}

/// A rate as a short percentage: `84%`, `4.2%`, `0.32%`, rounded towards
/// `up` or down at the printed precision, so that an interval is never shown
/// narrower than it is (an upper bound of 0.9972% prints as `1.00%`, which is
/// fine, but 99.6% must not print as `100%` for a lower bound).
fn pct(x: f64, up: bool) -> String {
    let p = x * 100.0;
    let (digits, scale) = if p == 0.0 || p == 100.0 || p >= 10.0 {
        (0, 1.0)
    } else if p >= 1.0 {
        (1, 10.0)
    } else {
        (2, 100.0)
    };
    let rounded = if up {
        (p * scale).ceil() / scale
    } else {
        (p * scale).floor() / scale
    };
    format!("{rounded:.digits$}%")
}

/// `hits/trials (low–high)`, the interval being the 95% Wilson interval.
pub fn count_text(c: Count) -> String {
    let i = c.wilson();
    format!(
        "{}/{} ({}–{})",
        c.hits,
        c.trials,
        pct(i.low, false),
        pct(i.high, true)
    )
}

/// A measured cell: the verdict, then the counts (spawns in a race window)
/// and p against the control, or the reason.
pub fn cell_text(report: &ProbeReport, arm: &ArmReport) -> String {
    let j = report.judgement(arm);
    match &arm.outcome {
        Outcome::Observed { .. } => {
            let c = arm.outcome.count().expect("observed");
            let mut text = format!("**{}** {}{}", j.verdict.id(), count_text(c), unit(arm));
            if let Some(p) = j.p.filter(|_| j.verdict != Verdict::Invalid) {
                text.push_str(&format!(", p = {}", p_text(p)));
            }
            match j.verdict {
                Verdict::Avoids => text.push_str(" (argument below)"),
                Verdict::Inconclusive | Verdict::Broken => {
                    if let Some(why) = &j.why {
                        text.push_str(&format!(" ({})", escape_cell(why)));
                    }
                }
                _ => {}
            }
            let broken = arm.outcome.broken_trials();
            if broken > 0 {
                text.push_str(&format!(", {broken} unconfirmed"));
            }
            text
        }
        Outcome::Unsupported { reason } => format!("**unsupported**: {}", escape_cell(reason)),
        Outcome::Broken { error } => format!("**broken**: {}", escape_cell(error)),
    }
}

/// `text` fit for one cell of a Markdown table: no `|`, no line break.
pub fn escape_cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The report of `arm` in `window` within one probe's report.
pub fn find_arm<'a>(report: &'a ProbeReport, arm: &str, window: Window) -> Option<&'a ArmReport> {
    report
        .arms
        .iter()
        .find(|a| a.arm == arm && a.window == window)
}

/// The one word for an arm over its windows, without adding counts: `invalid`
/// if any window is; the shared word if all agree (`valid` where every window
/// is `valid` or `avoids`); else `inconclusive`.
pub fn combined_verdict(verdicts: &[Verdict]) -> Verdict {
    if verdicts.contains(&Verdict::Invalid) {
        return Verdict::Invalid;
    }
    if verdicts.contains(&Verdict::Present) {
        return Verdict::Present;
    }
    match verdicts {
        [] => Verdict::Inconclusive,
        [first, rest @ ..] if rest.iter().all(|v| v == first) => *first,
        _ if verdicts
            .iter()
            .all(|v| matches!(v, Verdict::Valid | Verdict::Avoids)) =>
        {
            Verdict::Valid
        }
        _ => Verdict::Inconclusive,
    }
}

/// The hazard id of the spawn-window observation, whose sweep the chart draws.
pub const SPAWN_WINDOW: &str = "spawn-window";

/// Whether any results file has a spawn-window sweep to draw.
pub fn has_spawn_window(files: &[ResultsFile]) -> bool {
    files.iter().any(|f| !spawn_window_tables(f).is_empty())
}

/// One platform's spawn-window sweep tables (by RSS, by descriptor count)
/// that measured the kernel: none from a run under TCG, whose durations
/// time QEMU, not the kernel.
pub fn spawn_window_tables(f: &ResultsFile) -> Vec<&Table> {
    if f.platform.emulated() {
        return Vec::new();
    }
    f.probes.get(SPAWN_WINDOW).map_or_else(Vec::new, |r| {
        r.tables
            .iter()
            .filter(|t| (t.id == TABLE_BY_RSS || t.id == TABLE_BY_FDS) && t.problem.is_none())
            .collect()
    })
}

/// The results file a view or test quotes for `os` ("this Linux machine" in
/// the README): one measured on a real machine (a TCG guest's race cells time
/// QEMU, and no claim uses them), the one that measured the most cells (a
/// thorough run measures more than a default one), then the one measured
/// last, then the smallest id. The choice depends only on the files, never
/// on the machine that renders them or on how their names sort, so a default
/// run of a new host build beside the committed thorough run changes nothing.
/// A view that quotes it names its platform.
pub fn quoted_file<'a>(files: &'a [ResultsFile], os: &str) -> Option<&'a ResultsFile> {
    let cells = |f: &ResultsFile| f.probes.values().map(|r| r.arms.len()).sum::<usize>();
    let last = |f: &ResultsFile| f.probes.values().map(|r| r.started_at.clone()).max();
    files
        .iter()
        .filter(|f| f.platform.os == os && !f.platform.emulated())
        .max_by(|a, b| {
            (cells(a), last(a))
                .cmp(&(cells(b), last(b)))
                .then(b.platform.id.cmp(&a.platform.id))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages() {
        assert_eq!(pct(0.0, false), "0%");
        assert_eq!(pct(0.8389, false), "83%");
        assert_eq!(pct(0.8389, true), "84%");
        assert_eq!(pct(0.042, true), "4.2%");
        assert_eq!(pct(0.0032, false), "0.32%");
        // An upper bound under 1% never prints as under it when it is not.
        assert_eq!(pct(0.009972, true), "1.00%");
        assert_eq!(pct(0.996, false), "99%");
        assert_eq!(count_text(Count::new(20, 20)), "20/20 (83%–100%)");
    }

    #[test]
    fn one_word_over_windows_never_hides_an_invalid_window() {
        use Verdict::*;
        assert_eq!(combined_verdict(&[Valid, Invalid, Valid]), Invalid);
        assert_eq!(combined_verdict(&[Valid, Avoids]), Valid);
        assert_eq!(combined_verdict(&[Valid, Inconclusive]), Inconclusive);
        assert_eq!(combined_verdict(&[NotNeeded, NotNeeded]), NotNeeded);
        assert_eq!(combined_verdict(&[]), Inconclusive);
    }
}
