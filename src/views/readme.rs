//! The README's generated sections: every measured figure in the README sits
//! between `<!-- fdwindow:begin NAME -->` and `<!-- fdwindow:end NAME -->`,
//! and `fdwindow matrix` rewrites what lies between from the results folder
//! (`fdwindow matrix --check` fails when a section differs). Prose outside
//! the sections states no measured number.
//!
//! Adding a section: write a `fn(&Inputs) -> String` and list it in
//! [`SECTIONS`] under its name, then put the two marker lines in README.md.

use std::fmt::Write as _;
use std::path::Path;

use crate::evidence::costs::CostsFile;
use crate::evidence::pressure_file::PressureFile;
use crate::evidence::query::{cell_line, cell_text, count_text, find_arm};
use crate::evidence::results::BadResults;
use crate::report::stats::Count;
use crate::report::verdict::Window;
use crate::report::{ResultsFile, Table};

/// Everything a section is rendered from.
pub struct Inputs {
    /// Every results file, sorted by platform id.
    pub files: Vec<ResultsFile>,
    /// Every costs file.
    pub costs: Vec<CostsFile>,
    /// Every pressure file.
    pub pressure: Vec<PressureFile>,
    /// Every timing file (`make timing`).
    pub timing: Vec<crate::evidence::timing::TimingFile>,
    /// Every audit benchmark file (`make bench-audit`).
    pub audit_bench: Vec<crate::evidence::audit_bench::AuditBench>,
    /// Every workspace benchmark document (`make bench-workspace`,
    /// `audits/workspace-bench-<platform>.json`).
    pub workspace_bench: Vec<serde_json::Value>,
    /// Every hold comparison document (`benches/flakes/hold_compare.py`,
    /// `audits/hold-compare-<platform>.json`).
    pub hold_compare: Vec<serde_json::Value>,
    /// MATRIX.md as rendered now from the same folder, whose
    /// `flock-survival` table the README quotes. The caller renders it (the
    /// runner's `render_outputs`): no view calls another.
    pub matrix: String,
}

impl Inputs {
    /// Loads the results, costs and pressure files of `dir`; `matrix` is
    /// MATRIX.md rendered from them.
    pub fn load(dir: &Path, matrix: String) -> Result<Inputs, BadResults> {
        Ok(Inputs {
            files: crate::evidence::results::load_dir(dir)?,
            costs: crate::evidence::costs::load_dir(dir)?,
            pressure: crate::evidence::pressure_file::load_dir(dir)?,
            timing: crate::evidence::timing::load_dir(dir).map_err(|problem| BadResults {
                path: dir.to_owned(),
                problem,
            })?,
            audit_bench: crate::evidence::audit_bench::load_dir(dir)?,
            workspace_bench: crate::evidence::audit_bench::load_workspace_dir(&dir.join("audits"))?,
            hold_compare: crate::evidence::audit_bench::load_hold_compare_dir(&dir.join("audits"))?,
            matrix,
        })
    }

    /// The Linux results file the README quotes
    /// ([`quoted_file`](crate::evidence::query::quoted_file)); each section that
    /// quotes it names its platform.
    fn linux(&self) -> Option<&ResultsFile> {
        crate::evidence::query::quoted_file(&self.files, "linux")
    }
}

/// One generated section: its name in the markers, and its renderer.
pub struct Section {
    /// The `NAME` in `<!-- fdwindow:begin NAME -->`.
    pub name: &'static str,
    /// Renders the section's lines (without the markers).
    pub render: fn(&Inputs) -> String,
}

/// Every section the README may hold.
pub const SECTIONS: &[Section] = &[
    Section {
        name: "platform",
        render: platform,
    },
    Section {
        name: "verdict-example",
        render: verdict_example,
    },
    Section {
        name: "showed",
        render: showed,
    },
    Section {
        name: "spawn-window",
        render: spawn_window,
    },
    Section {
        name: "excerpt",
        render: excerpt,
    },
    Section {
        name: "pressure-stress",
        render: pressure_stress,
    },
    Section {
        name: "pressure-rate",
        render: pressure_rate,
    },
    Section {
        name: "timing",
        render: timing,
    },
    Section {
        name: "audit-bench",
        render: audit_bench,
    },
    Section {
        name: "workspace-bench",
        render: workspace_bench,
    },
    Section {
        name: "hold-compare",
        render: hold_compare,
    },
];

/// The labelled flake benchmark: each arm's share of the exposed tests found
/// under one budget per binary, its false flags, and the audit's diagnosis
/// as true cause × named hazard.
fn audit_bench(inputs: &Inputs) -> String {
    let Some(b) = inputs
        .audit_bench
        .iter()
        .max_by(|a, b| a.measured_at.cmp(&b.measured_at))
    else {
        return no_data("audit benchmark (`make bench-audit`)");
    };
    let d = &b.doc;
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "–".into(),
        serde_json::Value::Number(n) => n
            .as_f64()
            .map_or_else(|| n.to_string(), |x| format!("{x:.1} s")),
        other => other.to_string(),
    };
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
        if let Some(means) = summary
            .values()
            .find_map(|s| s["time_to_85pct_means"].as_str())
        {
            let _ = writeln!(out, "\nTime to find 85%: {means}.");
        }
    }
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
    let hold = d["binaries"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| &b["arms"]["hold"])
        .find(|h| h.is_object())
        .unwrap_or(&serde_json::Value::Null);
    audit_bench_hold(&d["hold_summary"], hold, &mut out);
    let count =
        |v: &serde_json::Value| v.as_u64().map_or_else(|| "–".to_owned(), |n| n.to_string());
    let c = &d["controlled"];
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
    out
}

/// Per binary: the audit's own time, which was every arm's budget there, and
/// how many of the binary's exposed tests each arm found in it (the audit:
/// verdict exposed; the others: a failure in the arm's runs, for stress a
/// pressured one).
fn audit_bench_binaries(d: &serde_json::Value) -> String {
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
fn workspace_bench(inputs: &Inputs) -> String {
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
fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "–".into(),
        other => other.to_string(),
    }
}

/// The hold comparison (`benches/flakes/hold_compare.py`): each labelled
/// binary's closes held by passed copies and by forks, each with its sham,
/// and the probes' own fork windows held both ways.
fn hold_compare(inputs: &Inputs) -> String {
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
fn audit_bases(d: &serde_json::Value) -> String {
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
fn audit_bench_hold(h: &serde_json::Value, arm: &serde_json::Value, out: &mut String) {
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

/// Where a default run spends its time, per measured platform.
fn timing(inputs: &Inputs) -> String {
    if inputs.timing.is_empty() {
        return "*(not yet measured: `make timing`)*\n".into();
    }
    inputs
        .timing
        .iter()
        .map(crate::evidence::timing::TimingFile::render)
        .collect::<Vec<_>>()
        .join("\n")
}

const BEGIN: &str = "<!-- fdwindow:begin ";
const END: &str = "<!-- fdwindow:end ";

/// Whether `text` holds any generated section.
pub fn has_sections(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with(BEGIN))
}

/// `text` with every section's body rendered anew. Fails on an unknown
/// name, a section without its end, or an end without its beginning.
pub fn rewrite(text: &str, inputs: &Inputs) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut open: Option<&str> = None;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim();
        if let Some(name) = marker(trimmed, BEGIN) {
            if let Some(outer) = open {
                return Err(format!(
                    "line {}: section {name} begins inside section {outer}",
                    n + 1
                ));
            }
            let section = SECTIONS.iter().find(|s| s.name == name).ok_or_else(|| {
                let names: Vec<&str> = SECTIONS.iter().map(|s| s.name).collect();
                format!(
                    "line {}: unknown section {name:?}; sections: {}",
                    n + 1,
                    names.join(", ")
                )
            })?;
            out.push_str(line);
            let body = (section.render)(inputs);
            out.push_str(&body);
            if !body.is_empty() && !body.ends_with('\n') {
                out.push('\n');
            }
            open = Some(section.name);
        } else if let Some(name) = marker(trimmed, END) {
            if open != Some(name) {
                return Err(format!(
                    "line {}: end of section {name} without its beginning",
                    n + 1
                ));
            }
            open = None;
            out.push_str(line);
        } else if open.is_none() {
            out.push_str(line);
        }
    }
    match open {
        Some(name) => Err(format!("section {name} has no end marker")),
        None => Ok(out),
    }
}

/// The name in `<!-- fdwindow:begin NAME -->` (or `end`), if `line` is one.
fn marker<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    line.strip_prefix(prefix)?
        .strip_suffix("-->")
        .map(str::trim)
}

fn no_data(what: &str) -> String {
    format!("*(no {what} in the results folder yet)*\n")
}

/// Every measured platform: kernel, libc, cpus, virtualization, and how long
/// its probes took in all.
fn platform(inputs: &Inputs) -> String {
    if inputs.files.is_empty() {
        return no_data("results");
    }
    let mut out = String::from(
        "| platform | kernel | libc | cpus | virtualization | probes | their run time |\n|---|---|---|---|---|---|---|\n",
    );
    for f in &inputs.files {
        let p = &f.platform;
        let ms: u64 = f.probes.values().map(|r| r.elapsed_ms).sum();
        let _ = writeln!(
            out,
            "| `{}` | {} | {} {} | {} | {} | {} | {:.1} s |",
            p.id,
            p.kernel_release,
            p.libc,
            p.libc_version,
            p.cpus,
            p.virtualization.id(),
            f.probes.len(),
            ms as f64 / 1000.0
        );
    }
    out
}

/// The line `fdwindow verdict` prints for one arm in one window.
fn verdict_line(f: &ResultsFile, hazard: &str, arm: &str, window: Window) -> Option<String> {
    let report = f.probes.get(hazard)?;
    let a = find_arm(report, arm, window)?;
    Some(format!("{} {}", window.id(), cell_line(report, a)))
}

fn verdict_example(inputs: &Inputs) -> String {
    let Some(f) = inputs.linux() else {
        return no_data("Linux results");
    };
    let mut out = String::from("```sh\n");
    for (hazard, arm, window) in [
        ("flock-survival", "unlock-then-close", Window::ForkWindow),
        ("flock-survival", "cloexec", Window::PosixSpawn),
    ] {
        if let Some(line) = verdict_line(f, hazard, arm, window) {
            let _ = writeln!(
                out,
                "$ fdwindow verdict {hazard} {arm} --window {} --platform {}\n{line}",
                window.id(),
                f.platform.id
            );
        }
    }
    out.push_str("```\n");
    out
}

/// The cells behind the README's summary of the Linux machine: every window
/// each listed arm ran in.
fn showed(inputs: &Inputs) -> String {
    let Some(f) = inputs.linux() else {
        return no_data("Linux results");
    };
    const ARMS: &[(&str, &[&str])] = &[
        (
            "flock-survival",
            &["close", "unlock-then-close", "std-unlock", "cloexec"],
        ),
        ("ofd-lock-survival", &["close", "unlock-then-close"]),
        (
            "listener-survival",
            &[
                "close",
                "shutdown-rd",
                "shutdown-rdwr",
                "bound-unlistened",
                "shutdown-wr",
                "drain-then-close",
            ],
        ),
        (
            "env-race",
            &[
                "setenv-vs-libc-getenv",
                "std-env-only",
                "std-env-only-sham",
                "one-env-guard",
            ],
        ),
        (
            "etxtbsy",
            &[
                "write-then-exec",
                "spawn-lock",
                "spawn-lock-sham",
                "retry-on-etxtbsy",
                "retry-on-etxtbsy-short-stall",
                "retry-on-etxtbsy-short-stall-sham",
                "retry-on-etxtbsy-long-stall",
            ],
        ),
    ];
    let mut out = format!(
        "On `{}`:\n\n| hazard | arm | window | measured |\n|---|---|---|---|\n",
        f.platform.id
    );
    for (hazard, arms) in ARMS {
        let Some(report) = f.probes.get(*hazard) else {
            continue;
        };
        for arm in *arms {
            for a in report.arms.iter().filter(|a| a.arm == *arm) {
                let _ = writeln!(
                    out,
                    "| `{hazard}` | `{arm}` | {} | {} |",
                    a.window.id(),
                    cell_text(report, a)
                );
            }
        }
    }
    out
}

fn table_markdown(t: &Table) -> String {
    if let Some(problem) = &t.problem {
        return format!("*{problem}*\n");
    }
    let mut out = format!("| {} |\n|", t.columns.join(" | "));
    out.push_str(&"---|".repeat(t.columns.len()));
    out.push('\n');
    for r in &t.rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out
}

/// The spawn-window probe's slopes: how the window grows with the parent's
/// memory on each path.
fn spawn_window(inputs: &Inputs) -> String {
    let Some(f) = inputs.linux() else {
        return no_data("Linux results");
    };
    let Some(t) = f
        .probes
        .get("spawn-window")
        .and_then(|r| r.tables.iter().find(|t| t.id == "slopes"))
    else {
        return no_data("spawn-window slopes");
    };
    format!(
        "On `{}`. {}\n\n{}",
        f.platform.id,
        t.about.trim(),
        table_markdown(t)
    )
}

/// The `flock-survival` table of MATRIX.md, as rendered now.
fn excerpt(inputs: &Inputs) -> String {
    let matrix = &inputs.matrix;
    let Some(start) = matrix.find("\n## `flock-survival`\n") else {
        return no_data("flock-survival results");
    };
    let table: String = matrix[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .map(|l| format!("{l}\n"))
        .collect();
    table
}

/// The pressure file the README shows: the Linux one measured last.
fn pressure_file(inputs: &Inputs) -> Option<&PressureFile> {
    inputs
        .pressure
        .iter()
        .filter(|p| p.platform.os == "linux")
        .max_by(|a, b| a.measured_at.cmp(&b.measured_at))
}

fn pressure_stress(inputs: &Inputs) -> String {
    let Some(p) = pressure_file(inputs) else {
        return no_data("pressure measurements (`make pressure`)");
    };
    let mut cases: Vec<&str> = Vec::new();
    let mut settings: Vec<&str> = Vec::new();
    for c in &p.stress {
        if !cases.contains(&c.case.as_str()) {
            cases.push(&c.case);
        }
        if !settings.contains(&c.pressure.as_str()) {
            settings.push(&c.pressure);
        }
    }
    let alone: Vec<String> = cases
        .iter()
        .map(|case| {
            let (fails, runs) = p
                .stress
                .iter()
                .filter(|c| c.case == *case)
                .fold((0, 0), |(f, r), c| (f + c.alone_failures, r + c.runs));
            format!("{case} {fails}/{runs}")
        })
        .collect();
    let mut out = format!(
        "On `{}`, measured {} by `{}`; every run alone, summed over the settings: {}. \
Each cell: failures under pressure / runs (95% Wilson interval) [median pressured run time between failures].\n\n| pressure |",
        p.platform.id,
        p.measured_at,
        p.command,
        alone.join(", ")
    );
    for case in &cases {
        let _ = write!(out, " {case} |");
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(cases.len()));
    out.push('\n');
    for s in &settings {
        let _ = write!(out, "| `{s}` |");
        for case in &cases {
            let cell = p
                .stress
                .iter()
                .find(|c| c.pressure == *s && c.case == *case)
                .map_or_else(
                    || "—".to_owned(),
                    |c| {
                        let gap = c
                            .median_time_to_failure_s
                            .map_or(String::new(), |t| format!(" [{:.0} ms]", t * 1000.0));
                        format!(
                            "{}{gap}",
                            count_text(Count::new(c.pressure_failures, c.runs))
                        )
                    },
                );
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    out
}

fn pressure_rate(inputs: &Inputs) -> String {
    let Some(p) = pressure_file(inputs).filter(|p| !p.rate.is_empty()) else {
        return no_data("spawn-rate measurements (`make pressure`)");
    };
    let mut out = format!(
        "On `{}`, measured {}:\n\n| loop | path | threads | spawns/s | spawns per CPU-second |\n|---|---|---|---|---|\n",
        p.platform.id, p.measured_at
    );
    for r in &p.rate {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.0} | {:.0} |",
            r.looped, r.path, r.threads, r.spawns_per_s, r.spawns_per_cpu_s
        );
    }
    // The co-tenant's share of a plain loop's children per CPU-second, per
    // path and thread count.
    let shares: Vec<f64> = p
        .rate
        .iter()
        .filter(|r| r.looped == "pressure")
        .filter_map(|r| {
            let plain = p
                .rate
                .iter()
                .find(|q| q.looped == "plain" && q.path == r.path && q.threads == r.threads)?;
            (plain.spawns_per_cpu_s > 0.0).then(|| r.spawns_per_cpu_s / plain.spawns_per_cpu_s)
        })
        .collect();
    if let (Some(lo), Some(hi)) = (
        shares.iter().copied().reduce(f64::min),
        shares.iter().copied().reduce(f64::max),
    ) {
        let _ = writeln!(
            out,
            "\nThe co-tenant got {:.0}–{:.0}% of a plain loop's children per CPU-second here.",
            lo * 100.0,
            hi * 100.0
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty() -> Inputs {
        Inputs {
            files: Vec::new(),
            costs: Vec::new(),
            pressure: Vec::new(),
            timing: Vec::new(),
            audit_bench: Vec::new(),
            workspace_bench: Vec::new(),
            hold_compare: Vec::new(),
            matrix: String::new(),
        }
    }

    #[test]
    fn rewrites_only_inside_sections() {
        let text = "intro 1\n<!-- fdwindow:begin platform -->\nstale 42\n<!-- fdwindow:end platform -->\noutro\n";
        let out = rewrite(text, &empty()).unwrap();
        assert_eq!(
            out,
            "intro 1\n<!-- fdwindow:begin platform -->\n*(no results in the results folder yet)*\n<!-- fdwindow:end platform -->\noutro\n"
        );
        // Rewriting is idempotent, and untouched text stays as it was.
        assert_eq!(rewrite(&out, &empty()).unwrap(), out);
        assert_eq!(rewrite("plain\n", &empty()).unwrap(), "plain\n");
    }

    #[test]
    fn refuses_broken_markers() {
        let err = |t: &str| rewrite(t, &empty()).unwrap_err();
        assert!(
            err("<!-- fdwindow:begin nope -->\n<!-- fdwindow:end nope -->\n")
                .contains("unknown section")
        );
        assert!(err("<!-- fdwindow:begin platform -->\n").contains("no end marker"));
        assert!(err("<!-- fdwindow:end platform -->\n").contains("without its beginning"));
        assert!(
            err("<!-- fdwindow:begin platform -->\n<!-- fdwindow:begin excerpt -->\n")
                .contains("inside section")
        );
    }

    /// The audit's call-site accuracy, and each test it missed, reach the
    /// benchmark's section.
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

    #[test]
    fn section_names_are_unique() {
        for (i, s) in SECTIONS.iter().enumerate() {
            assert!(
                SECTIONS[i + 1..].iter().all(|t| t.name != s.name),
                "{}",
                s.name
            );
        }
    }
}
