//! The audit's report: markdown for people, JSON for tools, JUnit for CI
//! (one testcase per exposed test).

use std::fmt::Write as _;

use fdwindow::pressure::DropClass;
use fdwindow::report::ResultsFile;
use fdwindow::stats::Count;

use super::{ALPHA, Audit, Record, Tally, hazards_of};

/// The hazards for a diagnosis's classes, deduplicated, in order.
fn hazards(r: &Record) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for c in r.diagnosis.iter().flat_map(|d| &d.classes) {
        for h in hazards_of(*c) {
            if !out.contains(h) {
                out.push(h);
            }
        }
    }
    out
}

/// One line of advice per hazard: the fixes this machine's results call
/// valid, or where to look when there are none.
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

fn held(r: &Record) -> Option<&str> {
    r.diagnosis.as_ref().map(|d| d.held.as_str())
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
    let ci = Count::new(t.bad(), t.runs).wilson();
    let timeouts = if t.timeouts > 0 {
        format!(", {} timed out", t.timeouts)
    } else {
        String::new()
    };
    format!(
        "{}/{}{timeouts} ({:.0}–{:.0}%)",
        t.bad(),
        t.runs,
        ci.low * 100.0,
        ci.high * 100.0
    )
}

/// The JSON report.
pub fn json(a: &Audit, files: &[ResultsFile]) -> String {
    let tests: Vec<serde_json::Value> = a
        .records
        .iter()
        .map(|((bin, name), r)| {
            let hz = hazards(r);
            let advice: serde_json::Map<String, serde_json::Value> = hz
                .iter()
                .map(|h| ((*h).to_owned(), advice(files, h).into()))
                .collect();
            serde_json::json!({
                "binary": a.binaries[*bin],
                "name": name,
                "alone": tally_json(r.suite[0]),
                "pressure": tally_json(r.suite[1]),
                "exact": (r.exact[0].runs + r.exact[1].runs > 0).then(|| serde_json::json!({
                    "alone": tally_json(r.exact[0]),
                    "pressure": tally_json(r.exact[1]),
                    "p": r.p_exact(),
                    "seconds": r.rerun_seconds,
                })),
                "p": r.p(),
                "exposed": r.exposed(),
                "held": held(r),
                "hazards": hz,
                "advice": advice,
                "message": r.message,
                "diagnosis": r.diagnosis.as_ref().map(|d| serde_json::json!({
                    "rounds": d.rounds,
                    "seconds": d.seconds,
                    "variants": d.variants.iter().map(|(v, t)| serde_json::json!({
                        "drop": v.map_or("none", DropClass::id),
                        "failures": t.failures,
                        "runs": t.runs,
                        "timeouts": t.timeouts,
                    })).collect::<Vec<_>>(),
                })),
            })
        })
        .collect();
    let summary = serde_json::json!({
        "command": a.command,
        "platform": fdwindow::platform::Platform::detect(),
        "fdwindow_version": env!("CARGO_PKG_VERSION"),
        "pressure": a.spec.to_string(),
        "alpha": ALPHA,
        "runs_per_arm": a.rounds,
        "seconds": {
            "suite": a.phases[0],
            "reruns": a.phases[1],
            "diagnosis": a.phases[2],
            "total": a.phases.iter().sum::<f64>(),
        },
        "pressured_runs": a.pressured.0,
        "pressure_started_runs": a.pressured.1,
        "warnings": a.warnings,
        "interrupted": a.interrupted,
        "exposed": a.records.values().filter(|r| r.exposed()).count(),
        "tests": tests,
    });
    serde_json::to_string_pretty(&summary).expect("plain JSON") + "\n"
}

/// The markdown report: every test that failed anywhere, then the advice.
pub fn markdown(a: &Audit, files: &[ResultsFile]) -> String {
    let mut out = String::new();
    let exposed = a.records.values().filter(|r| r.exposed()).count();
    let _ = writeln!(
        out,
        "# fdwindow audit\n\n`{}`: {} tests in {} binaries, {} runs per arm, pressure `{}`; \
         {exposed} exposed (one-sided Fisher p <= {ALPHA}). Took {:.1} s (suite {:.1} s, \
         reruns {:.1} s, diagnosis {:.1} s).\n",
        a.command.join(" "),
        a.records.len(),
        a.binaries.len(),
        a.rounds,
        a.spec,
        a.phases.iter().sum::<f64>(),
        a.phases[0],
        a.phases[1],
        a.phases[2]
    );
    for w in &a.warnings {
        let _ = writeln!(out, "> warning: {w}\n");
    }
    let failing: Vec<_> = a
        .records
        .iter()
        .filter(|(_, r)| r.suite.iter().chain(&r.exact).any(|t| t.bad() > 0))
        .collect();
    if failing.is_empty() {
        let _ = writeln!(out, "No test failed in any run.");
        return out;
    }
    let _ = writeln!(
        out,
        "| binary | test | alone | pressure | --exact alone | --exact pressure | p | exposed | held | hazards |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for ((bin, name), r) in &failing {
        let _ = writeln!(
            out,
            "| {} | `{name}` | {} | {} | {} | {} | {:.1e} | {} | {} | {} |",
            a.binaries[*bin],
            tally_text(r.suite[0]),
            tally_text(r.suite[1]),
            tally_text(r.exact[0]),
            tally_text(r.exact[1]),
            r.p(),
            if r.exposed() { "**yes**" } else { "no" },
            held(r).unwrap_or(""),
            hazards(r).join(", ")
        );
    }
    let _ = writeln!(
        out,
        "\n{} other tests never failed.\n",
        a.records.len() - failing.len()
    );
    for ((bin, name), r) in failing.iter().filter(|(_, r)| r.exposed()) {
        let _ = writeln!(out, "## `{name}` ({})\n", a.binaries[*bin]);
        if let Some(m) = &r.message {
            let _ = writeln!(out, "First failure: {m}\n");
        }
        match held(r) {
            Some("load") => {
                let _ = writeln!(
                    out,
                    "Failures persisted with every descriptor dropped in the pressure's children: \
                     the cause is load (CPU, memory, fork cost), not a held descriptor; or the \
                     test checks within a child's first moments, before any drop can act.\n"
                );
            }
            Some("several classes") => {
                let _ = writeln!(
                    out,
                    "Dropping every descriptor cleared the failures, but no single class did: \
                     several classes are held.\n"
                );
            }
            Some(h) if !hazards(r).is_empty() => {
                let _ = writeln!(out, "Held: {h}. Hazards it can be:\n");
                for hz in hazards(r) {
                    let _ = writeln!(out, "- `{hz}`: {}", advice(files, hz));
                }
                out.push('\n');
            }
            Some(h) => {
                let _ = writeln!(out, "Diagnosis: {h}.\n");
            }
            None => {}
        }
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
    let exposed: Vec<_> = a.records.iter().filter(|(_, r)| r.exposed()).collect();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"fdwindow audit\" tests=\"{n}\" failures=\"{n}\">\n  <testsuite name=\"fdwindow audit\" tests=\"{n}\" failures=\"{n}\" time=\"{:.3}\">",
        a.phases.iter().sum::<f64>(),
        n = exposed.len()
    );
    for ((bin, name), r) in exposed {
        let hz = hazards(r);
        let summary = format!(
            "fails under fork pressure: alone {}, pressure {}, p {:.1e}; held: {}",
            tally_text(r.suite[0]),
            tally_text(r.suite[1]),
            r.p(),
            held(r).unwrap_or("not diagnosed")
        );
        let mut body = summary.clone();
        if let Some(m) = &r.message {
            let _ = write!(body, "\nfirst failure: {m}");
        }
        for h in &hz {
            let _ = write!(body, "\n{h}: {}", advice(files, h));
        }
        let _ = writeln!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\">\n      <failure message=\"{}\" type=\"exposed\">{}</failure>\n    </testcase>",
            xml(&a.binaries[*bin]),
            xml(name),
            xml(&summary),
            xml(&body)
        );
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}
