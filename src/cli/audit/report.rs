//! The audit's report: markdown for people, JSON for tools, JUnit for CI
//! (one testcase per exposed test).

use std::fmt::Write as _;

use fdwindow::cotenant::detect::{self, Pairs, SIGN_FAILURES, Tally};
use fdwindow::report::ResultsFile;
use fdwindow::report::stats::Count;

use fdwindow::report::stats::fisher_less;

use super::diagnose::{Cause, DECIDE_RUNS, Diagnosis, WINDOW_P, ids};
use super::{Audit, Basis, Word};

/// The sign rule as the report states it; the one [`detect::Pairs::decided`] applies.
fn rule() -> String {
    format!(
        "exposed by the sign rule: {SIGN_FAILURES} failures under pressure before any alone, in \
         interleaved `--exact` reruns (sign test p <= 2^-{SIGN_FAILURES} = {:.1e} per unaffected \
         test, at every look)",
        detect::false_rate()
    )
}

/// The held-copy rule as the report states it; the one [`Audit::basis`]
/// and [`Diagnosis::decisive`] apply.
fn held_copy_rule() -> String {
    format!(
        "exposed by a held copy: failed under pressure, ran alone in its `--exact` reruns and never \
         failed there, and \
         a held copy of a class of descriptor it closes broke it against that class's sham (the \
         same forks, no copy) at one-sided Fisher p <= {WINDOW_P} with at least {DECIDE_RUNS} \
         runs of each ({DECIDE_RUNS}/{DECIDE_RUNS} against 0/{DECIDE_RUNS} gives {:.1e}); this \
         names a descriptor that breaks it, not how often realistic pressure does",
        fisher_less(
            Count::new(0, DECIDE_RUNS),
            Count::new(DECIDE_RUNS, DECIDE_RUNS)
        )
    )
}

/// For an exposed test, the rule that decided it and that rule's p:
/// `(held copy, p 2.9e-4)`.
fn exposure(a: &Audit, t: usize) -> Option<String> {
    let (rule, p) = match a.basis(t)? {
        Basis::SignRule => (
            "sign rule",
            a.detection.pairs.get(&t).copied().unwrap_or_default().p(),
        ),
        Basis::HeldCopy => (
            "held copy",
            a.diagnoses
                .get(&t)
                .and_then(Diagnosis::window_p)
                .unwrap_or(f64::NAN),
        ),
    };
    Some(format!("({rule}, p {p:.1e})"))
}

/// One line of advice per hazard: the fixes these results call valid, or
/// where to look when there are none.
fn advice(files: &[ResultsFile], hazard: &str) -> String {
    let os = fdwindow::platform::Platform::detect().os;
    match fdwindow::advise::advise(files, &[], hazard, &os) {
        Some(a) if !a.valid.is_empty() => {
            let fixes: Vec<String> = a
                .valid
                .iter()
                .map(|v| format!("{} ({})", v.arm, v.about))
                .collect();
            format!("valid fixes on {os}: {}", fixes.join("; "))
        }
        Some(a) if !a.about.is_empty() => format!(
            "{} No fix measured valid on {os} yet: `fdwindow advise {hazard}`.",
            a.about
        ),
        _ => format!("see `fdwindow advise {hazard}` (no results for it here)"),
    }
}

fn tally_json(t: Tally) -> serde_json::Value {
    let ci = Count::new(t.bad(), t.runs).wilson();
    serde_json::json!({
        "failures": t.failures,
        "runs": t.runs,
        "timeouts": t.timeouts,
        "wilson95": [ci.low, ci.high],
    })
}

fn tally_text(t: Tally) -> String {
    if t.runs == 0 {
        return "–".into();
    }
    let timeouts = if t.timeouts > 0 {
        format!(", {} timed out", t.timeouts)
    } else {
        String::new()
    };
    format!("{}/{}{timeouts}", t.bad(), t.runs)
}

fn pairs_json(p: &Pairs) -> serde_json::Value {
    serde_json::json!({
        "alone": tally_json(p.alone),
        "pressure": tally_json(p.pressure),
        "p": p.p(),
        "spawns": p.spawns,
        "unpressured": p.unpressured,
        "confirmed_rate90": detect::confirmed_rate90(p.pressure.runs),
    })
}

fn diagnosis_json(d: &Diagnosis) -> serde_json::Value {
    serde_json::json!({
        "cause": match &d.cause {
            Cause::Held(c) => format!("held {}", ids(c)),
            Cause::Load => "load".into(),
            Cause::Unexplained => "unexplained".into(),
        },
        "summary": d.summary(),
        "decisive": d.decisive(),
        "window_p": d.window_p(),
        "cut_short": d.cut_short.iter().map(|c| c.id()).collect::<Vec<_>>(),
        "seconds": d.seconds,
        "holds": d.classes.iter().map(|c| serde_json::json!({
            "class": c.class.id(),
            "failures": c.tally.bad(),
            "runs": c.tally.runs,
            "held": c.held,
            "skipped": c.skipped,
            "what": c.what,
            "first_failure": c.first_failure,
        })).collect::<Vec<_>>(),
        "load": d.load.map(|[control, sham]| serde_json::json!({
            "pressure": tally_json(control),
            "sham": tally_json(sham),
        })),
    })
}

/// The hazard and candidates of a test.
fn hazard(a: &Audit, t: usize) -> (Option<&'static str>, Vec<&'static str>) {
    match a.diagnoses.get(&t) {
        Some(d) => (d.hazard, d.candidates.clone()),
        None => (None, Vec::new()),
    }
}

/// The JSON report.
pub fn json(a: &Audit, files: &[ResultsFile]) -> String {
    let tests: Vec<serde_json::Value> = a
        .tests
        .iter()
        .enumerate()
        .map(|(t, case)| {
            let (hz, candidates) = hazard(a, t);
            let advice: serde_json::Map<String, serde_json::Value> = hz
                .iter()
                .map(|h| ((*h).to_owned(), advice(files, h).into()))
                .collect();
            serde_json::json!({
                "binary": a.binaries[case.binary],
                "name": case.name,
                "verdict": a.verdict(t).id(),
                "basis": a.basis(t).map(Basis::id),
                "hazard": hz,
                "candidates": candidates,
                "screen": tally_json(a.detection.screen[t]),
                "screen_unattributed": case.unattributed,
                "reruns": a.detection.pairs.get(&t).map(pairs_json),
                "diagnosis": a.diagnoses.get(&t).map(diagnosis_json),
                "advice": advice,
                "message": case.message,
            })
        })
        .collect();
    let summary = serde_json::json!({
        "command": a.command,
        "platform": fdwindow::platform::Platform::detect(),
        "fdwindow_version": env!("CARGO_PKG_VERSION"),
        "pressure": a.spec.to_string(),
        "rule": {
            "sign_failures": SIGN_FAILURES,
            "false_rate": detect::false_rate(),
            "text": rule(),
            "held_copy": {
                "runs": DECIDE_RUNS,
                "p_max": WINDOW_P,
                "text": held_copy_rule(),
            },
        },
        "budget_seconds": a.budget.as_secs_f64(),
        "seconds": {
            "screen": a.detection.seconds[0],
            "reruns": a.detection.seconds[1],
            "diagnosis": a.diagnosis_seconds,
            "total": a.seconds(),
        },
        "screen_runs": a.binaries.iter().zip(&a.detection.screen_runs).map(|(b, n)| serde_json::json!({
            "binary": b,
            "pressured_runs": n,
            "seen_rate90": detect::seen_rate90(*n),
        })).collect::<Vec<_>>(),
        "pressured_runs": a.pressured.0,
        "pressure_started_runs": a.pressured.1,
        "warnings": a.warnings,
        "interrupted": a.interrupted,
        "exposed": a.exposed(),
        "tests": tests,
    });
    serde_json::to_string_pretty(&summary).expect("plain JSON") + "\n"
}

/// The markdown report: coverage, every test that failed anywhere, then each
/// exposed or undecided test's diagnosis and advice.
pub fn markdown(a: &Audit, files: &[ResultsFile]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# fdwindow audit\n\n`{}`: {} tests in {} binaries, pressure `{}`, budget {:.0} s; \
         {} exposed. Took {:.1} s (screen {:.1} s, reruns {:.1} s, diagnosis {:.1} s).\n\n\
         Rules: {}; or {}.\n",
        a.command.join(" "),
        a.tests.len(),
        a.binaries.len(),
        a.spec,
        a.budget.as_secs_f64(),
        a.exposed(),
        a.seconds(),
        a.detection.seconds[0],
        a.detection.seconds[1],
        a.diagnosis_seconds,
        rule(),
        held_copy_rule()
    );
    let least = a.detection.screen_runs.iter().copied().min().unwrap_or(0);
    let _ = writeln!(
        out,
        "Coverage: the screen ran each binary at least {least} times under pressure, so a test \
         failing at least {:.1}% of pressured runs had a 90% chance to be seen; rarer ones may \
         have been missed (a longer screen, `--budget` or `--runs`, sees rarer ones).\n",
        100.0 * detect::seen_rate90(least)
    );
    // Over the suspects left undecided: those decided early (fails-alone
    // after a few pairs) say nothing of what the reruns could confirm.
    let undecided = a
        .detection
        .pairs
        .iter()
        .filter(|(t, _)| a.detection.verdict(**t) == detect::Verdict::Undecided);
    if let Some(fewest) = undecided.map(|(_, p)| p.pressure.runs).min() {
        let _ = writeln!(
            out,
            "Confirmation: of the suspects the sign rule left undecided, the one with the fewest \
             reruns had {fewest} pairs, enough for the sign rule to confirm, with 90% probability, \
             a test failing at least {:.1}% of pressured `--exact` runs; a rarer one stays \
             undecided unless a held copy decides it.\n",
            100.0 * detect::confirmed_rate90(fewest)
        );
    }
    for w in &a.warnings {
        let _ = writeln!(out, "> warning: {w}\n");
    }
    let failing: Vec<usize> = (0..a.tests.len())
        .filter(|&t| a.verdict(t) != Word::NotExposed)
        .collect();
    if failing.is_empty() {
        let _ = writeln!(out, "No test failed in the screen.");
        return out;
    }
    let _ = writeln!(
        out,
        "| binary | test | screen (pressure) | --exact alone | --exact pressure | spawns | sign p | verdict | cause |\n|---|---|---|---|---|---|---|---|---|"
    );
    for &t in &failing {
        let case = &a.tests[t];
        let pairs = a.detection.pairs.get(&t).copied().unwrap_or_default();
        let mut cause = a
            .diagnoses
            .get(&t)
            .map(Diagnosis::summary)
            .unwrap_or_default();
        if a.verdict(t) == Word::Undecided {
            let why = format!(
                "{} of {SIGN_FAILURES} pressured failures in {} pairs (a rate of {:.1}% would \
                 reach {SIGN_FAILURES} there with 90% probability)",
                pairs.pressure.bad(),
                pairs.pressure.runs,
                100.0 * detect::confirmed_rate90(pairs.pressure.runs)
            );
            cause = if cause.is_empty() {
                why
            } else {
                format!("{why}; {cause}")
            };
        }
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} | {} | {} | {:.1e} | {} | {cause} |",
            a.binaries[case.binary],
            case.name,
            tally_text(a.detection.screen[t]),
            tally_text(pairs.alone),
            tally_text(pairs.pressure),
            pairs.spawns,
            pairs.p(),
            match exposure(a, t) {
                Some(why) => format!("**exposed** {why}"),
                None => a.verdict(t).id().into(),
            },
        );
    }
    let _ = writeln!(
        out,
        "\n{} other tests never failed.\n",
        a.tests.len() - failing.len()
    );
    for &t in &failing {
        let Some(d) = a.diagnoses.get(&t) else {
            continue;
        };
        let case = &a.tests[t];
        let _ = writeln!(
            out,
            "## `{}` ({}): {}\n",
            case.name,
            a.binaries[case.binary],
            a.verdict(t).id()
        );
        if let Some(m) = &case.message {
            let _ = writeln!(out, "First failure: {m}\n");
        }
        let pairs = a.detection.pairs.get(&t).copied().unwrap_or_default();
        let _ = writeln!(
            out,
            "Under realistic pressure: {} of {} `--exact` runs failed (alone {} of {}).",
            pairs.pressure.bad(),
            pairs.pressure.runs,
            pairs.alone.bad(),
            pairs.alone.runs
        );
        let _ = writeln!(out, "Diagnosis: {}.\n", d.summary());
        for c in &d.classes {
            if c.tally.bad() == 0 && c.held == 0 {
                continue;
            }
            let _ = writeln!(
                out,
                "- a held copy of each closed `{}` ({} held{}): failed {}{}{}",
                c.class.id(),
                c.held,
                if c.skipped > 0 {
                    format!(", {} let through by the bounds", c.skipped)
                } else {
                    String::new()
                },
                tally_text(c.tally),
                c.first_failure
                    .map(|r| format!(", first at run {r}"))
                    .unwrap_or_default(),
                if c.what.is_empty() {
                    String::new()
                } else {
                    format!("; held: {}", c.what.join(", "))
                }
            );
        }
        if let Some([control, sham]) = d.load {
            let _ = writeln!(
                out,
                "- fork pressure: failed {}; the same with its children holding nothing: {}",
                tally_text(control),
                tally_text(sham)
            );
        }
        out.push('\n');
        for h in d
            .hazard
            .iter()
            .chain(d.candidates.iter().filter(|c| Some(**c) != d.hazard))
        {
            let _ = writeln!(out, "- `{h}`: {}", advice(files, h));
        }
        out.push('\n');
    }
    out
}

fn xml(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".into(),
            '<' => "&lt;".into(),
            '>' => "&gt;".into(),
            '"' => "&quot;".into(),
            '\'' => "&apos;".into(),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => " ".into(),
            c => c.to_string(),
        })
        .collect()
}

/// JUnit XML: one failing testcase per exposed test.
pub fn junit(a: &Audit, files: &[ResultsFile]) -> String {
    let exposed: Vec<usize> = (0..a.tests.len())
        .filter(|&t| a.verdict(t) == Word::Exposed)
        .collect();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"fdwindow audit\" tests=\"{n}\" failures=\"{n}\">\n  <testsuite name=\"fdwindow audit\" tests=\"{n}\" failures=\"{n}\" time=\"{:.3}\">",
        a.seconds(),
        n = exposed.len()
    );
    for t in exposed {
        let case = &a.tests[t];
        let pairs = a.detection.pairs.get(&t).copied().unwrap_or_default();
        let d = a.diagnoses.get(&t);
        let summary = format!(
            "exposed {}: --exact alone {}, pressure {}; {}",
            exposure(a, t).unwrap_or_default(),
            tally_text(pairs.alone),
            tally_text(pairs.pressure),
            d.map_or_else(|| "not diagnosed".into(), Diagnosis::summary)
        );
        let mut body = summary.clone();
        if let Some(m) = &case.message {
            let _ = write!(body, "\nfirst failure: {m}");
        }
        for h in d.iter().flat_map(|d| &d.candidates) {
            let _ = write!(body, "\n{h}: {}", advice(files, h));
        }
        let _ = writeln!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\">\n      <failure message=\"{}\" type=\"exposed\">{}</failure>\n    </testcase>",
            xml(&a.binaries[case.binary]),
            xml(&case.name),
            xml(&summary),
            xml(&body)
        );
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}
