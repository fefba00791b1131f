//! The audit's benchmarks: the labelled one (`make bench-audit`), the
//! workspace one (`make bench-workspace`) and the hold comparison.

use std::fmt::Write as _;

use super::inputs::{Inputs, no_data};

/// The labelled flake benchmark: each arm's share of the exposed tests found
/// under one budget per binary, its false flags, and the audit's diagnosis
/// as true cause × named hazard.
pub(super) fn audit_bench(inputs: &Inputs) -> String {
    let Some(b) = inputs
        .audit_bench
        .iter()
        .max_by(|a, b| a.measured_at.cmp(&b.measured_at))
    else {
        return no_data("audit benchmark (`make bench-audit`)");
    };
    let d = &b.doc;
    let text = seconds_text;
    let mut out = format!(
        "On `{}`, measured {} by `{}` ({}). Per test binary, every arm had the same \
wall-clock budget: the audit's own time on that binary unless the command gives `--budget`. \
An arm finds a test when {}. `fdwindow stress` also runs the binary alone, so its row is counted \
a second way too: only tests that never failed alone.\n\n| arm | exposed tests found | time to find 85% | false flags \
| found, never failing alone | false flags, never failing alone |\n|---|---|---|---|---|---|\n",
        b.platform,
        b.measured_at,
        b.command,
        text(&d["fdwindow_version"]),
        d["found_rule"]
            .as_object()
            .map(|m| m
                .iter()
                .map(|(arm, rule)| format!("{arm}: {}", text(rule)))
                .collect::<Vec<_>>()
                .join("; "))
            .unwrap_or_default()
    );
    if let Some(summary) = d["summary"].as_object() {
        for (arm, s) in summary {
            if s.is_null() {
                continue;
            }
            let _ = writeln!(
                out,
                "| {arm} | {} | {} | {} | {} | {} |",
                text(&s["exposed_found"]),
                text(&s["time_to_85pct_s"]),
                text(&s["false_flags"]),
                text(&s["exposed_found_never_alone"]),
                text(&s["false_flags_never_alone"])
            );
        }
        out.push_str(&audit_bench_binaries(d));
        let _ = writeln!(out, "{}", audit_bases(d));
        audit_bench_sites(summary, &mut out);
        if let Some(means) = summary
            .values()
            .find_map(|s| s["time_to_85pct_means"].as_str())
        {
            let _ = writeln!(out, "\nTime to find 85%: {means}.");
        }
    }
    audit_bench_confusion(d, &mut out);
    let hold = d["binaries"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| &b["arms"]["hold"])
        .find(|h| h.is_object())
        .unwrap_or(&serde_json::Value::Null);
    audit_bench_hold(&d["hold_summary"], hold, &mut out);
    audit_bench_controlled(&d["controlled"], &mut out);
    out
}

/// The call sites the audit named: how many at their labelled line.
fn audit_bench_sites(summary: &serde_json::Map<String, serde_json::Value>, out: &mut String) {
    let text = seconds_text;
    if let Some(named) = summary.get("audit").and_then(|a| a["sites_named"].as_str()) {
        let wrong: Vec<String> = summary["audit"]["sites_not_named"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| {
                format!(
                    "{} (named {}, labelled {})",
                    text(&w["test"]),
                    text(&w["named"]),
                    text(&w["labelled"])
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "\nCall sites: {named} of the exposed tests the audit found were named at their \
labelled line (the line whose drop a child's copy keeps alive){}.",
            if wrong.is_empty() {
                String::new()
            } else {
                format!("; not: {}", wrong.join(", "))
            }
        );
    }
}

/// The audit's word for each test against its true cause.
fn audit_bench_confusion(d: &serde_json::Value, out: &mut String) {
    if let Some(rows) = d["audit_confusion"].as_object() {
        let mut cols: Vec<&str> = Vec::new();
        for row in rows.values().filter_map(|r| r.as_object()) {
            for c in row.keys() {
                if !cols.contains(&c.as_str()) {
                    cols.push(c);
                }
            }
        }
        let _ = write!(
            out,
            "\nThe audit's word for each test (rows: the true cause; columns: the hazard it \
named for an exposed test, else its verdict):\n\n| true cause | {} |\n|---|{}\n",
            cols.join(" | "),
            "---|".repeat(cols.len())
        );
        for (cause, row) in rows {
            let cells: Vec<String> = cols
                .iter()
                .map(|c| row[*c].as_u64().map_or(String::new(), |n| n.to_string()))
                .collect();
            let _ = writeln!(out, "| {cause} | {} |", cells.join(" | "));
        }
    }
}

/// Detection on real processes: the controlled suite's audits.
fn audit_bench_controlled(c: &serde_json::Value, out: &mut String) {
    let text = seconds_text;
    let count =
        |v: &serde_json::Value| v.as_u64().map_or_else(|| "–".to_owned(), |n| n.to_string());
    if c.is_object() {
        // What the screens saw of the controlled test: a fixture that never
        // fails under pressure shows here, not as a weak detector.
        let (mut failed, mut runs) = (0, 0);
        let mut verdicts = std::collections::BTreeMap::<&str, u64>::new();
        for a in c["runs"].as_array().into_iter().flatten() {
            let test = &a["tests"][c["test"].as_str().unwrap_or("")];
            failed += test["screen"]["failures"].as_u64().unwrap_or(0);
            runs += test["screen"]["runs"].as_u64().unwrap_or(0);
            *verdicts
                .entry(test["verdict"].as_str().unwrap_or("no report"))
                .or_default() += 1;
        }
        let verdicts: Vec<String> = verdicts.iter().map(|(v, n)| format!("{n} {v}")).collect();
        // The audits' arguments (`--rates`: its test breaks under pressure
        // with no descriptor held, which only the pressured screen sees).
        let args: Vec<&str> = c["audit_args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str())
            .collect();
        let how = if args.is_empty() {
            "default audits".to_owned()
        } else {
            format!("audits (`fdwindow audit {}`)", args.join(" "))
        };
        let _ = writeln!(
            out,
            "\nDetection on real processes: of {} {how} of `{}` ({}), {} flagged `{}` \
({}; its verdicts: {}); its screens saw it fail in {failed} of {runs} pressured runs; its tests \
with nothing to break were flagged {} times in {}.",
            count(&c["audits"]),
            text(&c["binary"]),
            text(&c["pattern"]),
            count(&c["flagged"]),
            text(&c["test"]),
            text(&c["flagged_means"]),
            verdicts.join(", "),
            count(&c["others_flagged"]),
            count(&c["others_tested"])
        );
    }
}

/// A JSON value as a cell of the benchmark's tables: a number as seconds.
fn seconds_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Number(n) => n
            .as_f64()
            .map_or_else(|| n.to_string(), |x| format!("{x:.1} s")),
        other => json_text(other),
    }
}

/// Per binary: the audit's own time, which was every arm's budget there, and
/// how many of the binary's exposed tests each arm found in it (the audit:
/// verdict exposed; the others: a failure in the arm's runs, for stress a
/// pressured one).
pub(super) fn audit_bench_binaries(d: &serde_json::Value) -> String {
    const ARMS: [&str; 4] = ["audit", "reruns", "shaker", "stress"];
    let mut out = format!(
        "\nPer binary, every arm in the audit's time:\n\n| binary | the audit's time | {} |\n|---|---|{}\n",
        ARMS.join(" | "),
        "---|".repeat(ARMS.len())
    );
    for b in d["binaries"].as_array().into_iter().flatten() {
        let exposed: Vec<&str> = b["tests"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| {
                t["cause"]
                    .as_str()
                    .is_some_and(|c| !c.starts_with("not-exposed"))
            })
            .filter_map(|t| t["name"].as_str())
            .collect();
        let found = |arm: &str| {
            let a = &b["arms"][arm];
            if !a.is_object() || a.get("error").is_some() {
                return "–".to_owned();
            }
            let n = exposed
                .iter()
                .filter(|name| {
                    let e = &a["tests"][**name];
                    if arm == "audit" {
                        e["verdict"] == "exposed"
                    } else {
                        e["failures"].as_u64().is_some_and(|f| f > 0)
                    }
                })
                .count();
            format!("{n}/{}", exposed.len())
        };
        let time = b["arms"]["audit"]["seconds_total"]
            .as_f64()
            .map_or_else(|| "–".to_owned(), |s| format!("{s:.1} s"));
        let cells: Vec<String> = ARMS.iter().map(|a| found(a)).collect();
        let _ = writeln!(
            out,
            "| {} | {time} | {} |",
            b["binary"].as_str().unwrap_or("–"),
            cells.join(" | ")
        );
    }
    out
}

/// The workspace benchmark (`make bench-workspace`): the newest run's
/// audits of the whole workspace, one row per way of running it.
pub(super) fn workspace_bench(inputs: &Inputs) -> String {
    let Some(d) = inputs
        .workspace_bench
        .iter()
        .max_by(|a, b| a["measured_at"].as_str().cmp(&b["measured_at"].as_str()))
    else {
        return no_data("workspace benchmark (`make bench-workspace`)");
    };
    let text = json_text;
    let mut out = format!(
        "On `{}`, measured {} by `{}` ({}); found means {}.\n\n\
| command | binaries | tests | not screened with every close held | exposed found | false flags | \
the audit's time |\n|---|---|---|---|---|---|---|\n",
        text(&d["platform"]),
        text(&d["measured_at"]),
        text(&d["command"]),
        text(&d["fdwindow_version"]),
        text(&d["found_rule"]),
    );
    for r in d["runs"].as_array().into_iter().flatten() {
        let command: Vec<String> = r["command"]
            .as_array()
            .into_iter()
            .flatten()
            .map(text)
            .collect();
        if r.get("error").is_some() {
            let _ = writeln!(
                out,
                "| `{}` | {} | | | | | |",
                command.join(" "),
                text(&r["error"])
            );
            continue;
        }
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {}/{} | {} | {} |",
            command.join(" "),
            text(&r["binaries"]),
            text(&r["tests"]),
            text(&r["held_screened_false"]),
            text(&r["exposed_found"]),
            text(&r["exposed_labelled"]),
            text(&r["false_flags"]),
            r["seconds"]["total"]
                .as_f64()
                .map_or_else(|| "–".to_owned(), |s| format!("{s:.1} s"))
        );
    }
    out
}

/// A JSON value as a README cell: a string as it is, null as a dash.
pub(super) fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "–".into(),
        other => other.to_string(),
    }
}

/// The hold comparison (`benches/flakes/hold_compare.py`): each labelled
/// binary's closes held by passed copies and by forks, each with its sham,
/// and the probes' own fork windows held both ways.
pub(super) fn hold_compare(inputs: &Inputs) -> String {
    let Some(d) = inputs
        .hold_compare
        .iter()
        .max_by(|a, b| a["measured_at"].as_str().cmp(&b["measured_at"].as_str()))
    else {
        return no_data("hold comparison (`benches/flakes/hold_compare.py`)");
    };
    let count = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let runs = count(&d["runs"]);
    let mut out = format!(
        "On `{}`, measured {} by `{}` ({}): each binary run {runs} times per way, every close \
held {}. Per way: exposed tests broken in every run / in some run; other tests broken (the \
benchmark's flakes of other causes, random seeds and shared state, fail with shams too); closes \
held and let through.\n\n| binary | exposed | passed | passed, sham | forked | forked, sham |\n\
|---|---|---|---|---|---|\n",
        json_text(&d["platform"]),
        json_text(&d["measured_at"]),
        json_text(&d["command"]),
        json_text(&d["fdwindow_version"]),
        json_text(&d["hold"]),
    );
    for (name, b) in d["binaries"].as_object().into_iter().flatten() {
        let exposed: Vec<&str> = b["exposed"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.as_str())
            .collect();
        let _ = write!(out, "| {name} | {} |", exposed.len());
        for arm in ["pass", "pass-sham", "fork", "fork-sham"] {
            let a = &b["arms"][arm];
            let failed = a["failures"].as_object();
            let fails = |t: &str| failed.and_then(|f| f.get(t)).map_or(0, count);
            let every = exposed.iter().filter(|t| fails(t) == runs).count();
            let some = exposed.iter().filter(|t| fails(t) > 0).count();
            let others = failed
                .into_iter()
                .flatten()
                .filter(|(t, n)| !exposed.contains(&t.as_str()) && count(n) > 0);
            let _ = write!(
                out,
                " {every} / {some}, {} others; {} held, {} let through |",
                others.count(),
                count(&a["held"]),
                count(&a["unheld"])
            );
        }
        out.push('\n');
    }
    let p = &d["probes"];
    let differ: Vec<String> = p["cells_differ"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| format!("`{}`", json_text(c)))
        .collect();
    let _ = writeln!(
        out,
        "\nThe probes' own fork windows (`fdwindow probe HAZARD --hold-by fork`, then `pass`): {} of \
{} cells say the same (every trial hit, or none){}.",
        count(&p["cells_same"]),
        count(&p["cells_same"]) + differ.len() as u64,
        if differ.is_empty() {
            String::new()
        } else {
            format!("; differ: {}", differ.join(", "))
        }
    );
    out
}

/// How many of the audit arm's exposed verdicts each rule decided. A file
/// written before the audit reported its `basis` holds the sign rule's p:
/// the sign rule exposes a test exactly when its reruns reach 2^-10.
pub(super) fn audit_bases(d: &serde_json::Value) -> String {
    let (mut sign, mut held) = (0, 0);
    for b in d["binaries"].as_array().into_iter().flatten() {
        for t in b["arms"]["audit"]["tests"]
            .as_object()
            .into_iter()
            .flat_map(|m| m.values())
        {
            if t["verdict"] != "exposed" {
                continue;
            }
            let by_sign = match t["basis"].as_str() {
                Some(basis) => basis == "sign-rule",
                None => t["reruns"]["p"]
                    .as_f64()
                    .is_some_and(|p| p <= crate::cotenant::detect::false_rate()),
            };
            if by_sign {
                sign += 1;
            } else {
                held += 1;
            }
        }
    }
    format!(
        "\nThe audit's exposed verdicts: {sign} by the sign rule, {held} by a held copy (the \
deterministic window decided where the reruns by themselves had too few pressured failures for the sign rule)."
    )
}

/// The deterministic close-hold mode: runs to each exposed test's first
/// failure under its own class, and the expected not exposed it calls
/// vulnerable.
pub(super) fn audit_bench_hold(h: &serde_json::Value, arm: &serde_json::Value, out: &mut String) {
    let Some(per_class) = h["per_class"].as_object() else {
        return;
    };
    let runs = arm["runs_per_class"]
        .as_u64()
        .map_or_else(|| "–".to_owned(), |n| n.to_string());
    let _ = write!(
        out,
        "\nThe deterministic mode alone (`{}`: each closed descriptor of the class held in a \
child; each test run with `--exact`, {runs} runs per class, and {runs} runs of the sham, whose \
children keep nothing, for each class that failed; vulnerable: {}):\n\n\
| class | exposed test | first failure under its class | vulnerable to |\n|---|---|---|---|\n",
        arm["spec"].as_str().unwrap_or("–"),
        arm["vulnerable_rule"].as_str().unwrap_or("–"),
    );
    for (class, tests) in per_class {
        for t in tests.as_array().into_iter().flatten() {
            let vulnerable: Vec<&str> = t["vulnerable_to"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str())
                .collect();
            let _ = writeln!(
                out,
                "| {class} | {} | {} | {} |",
                t["test"].as_str().unwrap_or("?"),
                t["first_failure_run"]
                    .as_u64()
                    .map_or_else(|| format!("none in {runs}"), |n| format!("run {n}")),
                if vulnerable.is_empty() {
                    "–".to_owned()
                } else {
                    vulnerable.join(", ")
                }
            );
        }
    }
    let called: Vec<String> = h["not_exposed_called_vulnerable"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| v["test"].as_str().unwrap_or("?").to_owned())
        .collect();
    let _ = writeln!(
        out,
        "\nExpected not exposed called vulnerable: {}. Slowest run: {}.",
        if called.is_empty() {
            "none".to_owned()
        } else {
            called.join(", ")
        },
        h["slowest_run_s"]
            .as_f64()
            .map_or_else(|| "–".to_owned(), |s| format!("{s:.2} s"))
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::readme::inputs::tests::empty;

    #[test]
    fn the_bench_section_counts_sites_at_their_labelled_line() {
        let mut inputs = empty();
        inputs.audit_bench.push(crate::evidence::audit_bench::AuditBench {
            platform: "linux-test".into(),
            measured_at: "2026-12-07T00:00:00Z".into(),
            command: "make bench-audit".into(),
            doc: serde_json::json!({"summary": {"audit": {
                "exposed_found": "2/2",
                "sites_named": "1/2",
                "sites_not_named": [{"test": "files::lock", "named": "a.rs:3", "labelled": "a.rs:7"}],
            }}}),
        });
        let out = audit_bench(&inputs);
        assert!(
            out.contains(
                "Call sites: 1/2 of the exposed tests the audit found were named at their labelled \
                 line (the line whose drop a child's copy keeps alive); not: files::lock (named \
                 a.rs:3, labelled a.rs:7)."
            ),
            "{out}"
        );
    }

    #[test]
    fn the_bench_section_gives_each_binary_its_arms_in_the_audits_time() {
        let mut inputs = empty();
        inputs
            .audit_bench
            .push(crate::evidence::audit_bench::AuditBench {
                platform: "linux-test".into(),
                measured_at: "2026-12-07T00:00:00Z".into(),
                command: "make bench-audit".into(),
                doc: serde_json::json!({
                    "summary": {"audit": {"exposed_found": "1/1"}},
                    "binaries": [{
                        "binary": "files",
                        "tests": [
                            {"name": "lock", "cause": "flock-survival"},
                            {"name": "names", "cause": "not-exposed:clock-collision"},
                        ],
                        "arms": {
                            "audit": {"seconds_total": 5.73,
                                      "tests": {"lock": {"verdict": "exposed"},
                                                "names": {"verdict": "exposed"}}},
                            "reruns": {"tests": {"lock": {"failures": 0}}},
                            "stress": {"tests": {"lock": {"failures": 2}}},
                            "shaker": {"error": "no stress-ng"},
                        },
                    }],
                }),
            });
        let out = audit_bench(&inputs);
        // The false flag on `names` counts nowhere here: only exposed tests.
        assert!(
            out.contains("| files | 5.7 s | 1/1 | 0/1 | – | 1/1 |"),
            "{out}"
        );
    }

    #[test]
    fn the_workspace_section_scores_each_command() {
        let mut inputs = empty();
        inputs.workspace_bench.push(serde_json::json!({
            "platform": "linux-test",
            "measured_at": "2026-12-07T00:00:00Z",
            "command": "python3 benches/workspace/run.py",
            "fdwindow_version": "fdwindow 0.1.0",
            "found_rule": "verdict exposed, with the labelled hazard and site",
            "runs": [
                {"command": ["cargo", "test", "--release"], "binaries": 9, "tests": 1279,
                 "held_screened_false": 0, "exposed_found": 7, "exposed_labelled": 8,
                 "false_flags": 1, "seconds": {"total": 14.12}},
                {"command": ["cargo", "nextest", "run"], "error": "timed out"},
            ],
        }));
        let out = workspace_bench(&inputs);
        assert!(
            out.contains("| `cargo test --release` | 9 | 1279 | 0 | 7/8 | 1 | 14.1 s |"),
            "{out}"
        );
        assert!(out.contains("| `cargo nextest run` | timed out |"), "{out}");
        assert_eq!(
            workspace_bench(&empty()),
            "*(no workspace benchmark (`make bench-workspace`) in the results folder yet)*\n"
        );
    }

    #[test]
    fn the_hold_section_counts_each_way_and_the_probes_cells() {
        let mut inputs = empty();
        inputs.hold_compare.push(serde_json::json!({
            "platform": "linux-test",
            "measured_at": "2026-12-07T00:00:00Z",
            "command": "python3 benches/flakes/hold_compare.py",
            "fdwindow_version": "fdwindow 0.1.0",
            "runs": 7,
            "hold": "100ms",
            "binaries": {"files": {
                "exposed": ["lock", "eof"],
                "arms": {
                    "pass": {"failures": {"lock": 7, "eof": 7}, "held": 500, "unheld": 0},
                    "pass-sham": {"failures": {}, "held": 500, "unheld": 0},
                    "fork": {"failures": {"lock": 7, "eof": 2, "busy": 1}, "held": 90,
                             "unheld": 410},
                    "fork-sham": {"failures": {"lock": 3}, "held": 90, "unheld": 410},
                },
            }},
            "probes": {"cells_same": 43, "cells_differ": ["holder-scan scan-after-exec"]},
        }));
        let out = hold_compare(&inputs);
        assert!(
            out.contains(
                "| files | 2 | 2 / 2, 0 others; 500 held, 0 let through | 0 / 0, 0 others; 500 \
held, 0 let through | 1 / 2, 1 others; 90 held, 410 let through | 0 / 1, 0 others; 90 held, 410 \
let through |"
            ),
            "{out}"
        );
        assert!(
            out.contains("43 of 44 cells say the same (every trial hit, or none); differ: `holder-scan scan-after-exec`."),
            "{out}"
        );
    }
}
