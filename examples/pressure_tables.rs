//! Regenerates `results/pressure-<platform>.json`, the data behind the
//! README's fork-pressure tables: each case under `fdwindow stress` at each
//! pressure setting, then `pressure_rate`'s comparison with a plain loop.
//! Run it through `make pressure` (which builds what it runs, then
//! regenerates the README's sections):
//!
//! ```text
//! target/release/examples/pressure_tables [--runs N] [--results DIR]
//! ```
//!
//! It runs the binaries beside it: `../fdwindow` and its sibling examples.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use fdwindow::evidence::pressure_file::{PressureFile, RateRow, StressCell};
use fdwindow::report::platform::Platform;

/// The pressure settings, as the README's rows.
const SETTINGS: &[&str] = &[
    "threads=4,hold=1ms,path=mix",
    "threads=4,hold=1ms,path=fork",
    "threads=4,hold=0,path=fork",
    "threads=4,path=spawn",
    "threads=4,hold=100us,path=mix",
    "threads=8,hold=1ms,path=mix",
    "threads=4,hold=20ms,path=fork",
];

/// The cases, as the README's columns: (name, example, arguments).
const CASES: &[(&str, &str, &[&str])] = &[
    ("flock close-only", "flock_handoff", &[]),
    ("flock + unlock", "flock_handoff", &["--fix"]),
    ("listener close", "retired_listener", &[]),
    (
        "listener + shutdown(SHUT_RD)",
        "retired_listener",
        &["--fix"],
    ),
];

fn fail(msg: String) -> ExitCode {
    fdwindow::note!("error: {msg}");
    fdwindow::base::out::status(ExitCode::from(2))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    let runs: u64 = match value("--runs").map(|v| v.parse()) {
        None => 100,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => return fail("--runs takes a positive number".into()),
    };
    let results = value("--results").map_or_else(|| PathBuf::from("results"), PathBuf::from);
    let Some(here) = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_owned))
    else {
        return fail("cannot locate this binary".into());
    };
    let fdwindow = here.with_file_name("fdwindow");
    let measured_at = fdwindow::report::utc_now();
    let mut stress = Vec::new();
    for setting in SETTINGS {
        for (case, example, extra) in CASES {
            fdwindow::note!("pressure_tables: {setting} / {case} …");
            let out = Command::new(&fdwindow)
                .args([
                    "stress",
                    "--runs",
                    &runs.to_string(),
                    "--pressure",
                    setting,
                    "--",
                ])
                .arg(here.join(example))
                .args(*extra)
                .stdin(Stdio::null())
                .stderr(Stdio::inherit())
                .output();
            let out = match out {
                Ok(o) if o.status.success() => o,
                Ok(o) => return fail(format!("fdwindow stress exited with {}", o.status)),
                Err(e) => return fail(format!("run {}: {e}", fdwindow.display())),
            };
            let summary: serde_json::Value = match serde_json::from_slice(&out.stdout) {
                Ok(v) => v,
                Err(e) => return fail(format!("fdwindow stress printed no summary: {e}")),
            };
            let arm = |i: usize, key: &str| summary["arms"][i][key].clone();
            let count = |i: usize, key: &str| arm(i, key).as_u64().unwrap_or(0);
            stress.push(StressCell {
                pressure: setting.to_string(),
                case: case.to_string(),
                runs: count(0, "runs").min(count(1, "runs")),
                alone_failures: count(0, "failures"),
                pressure_failures: count(1, "failures"),
                median_time_to_failure_s: arm(1, "median_time_to_failure_s").as_f64(),
            });
        }
    }
    fdwindow::note!("pressure_tables: spawn rates …");
    let rate = match Command::new(here.join("pressure_rate"))
        .arg("1")
        .stderr(Stdio::inherit())
        .output()
    {
        Ok(o) if o.status.success() => parse_rate(&String::from_utf8_lossy(&o.stdout)),
        Ok(o) => return fail(format!("pressure_rate exited with {}", o.status)),
        Err(e) => return fail(format!("run pressure_rate: {e}")),
    };
    let file = PressureFile {
        schema: fdwindow::evidence::pressure_file::PRESSURE_SCHEMA,
        platform: Platform::detect(),
        measured_at,
        command: format!("make pressure PRESSURE_RUNS={runs}"),
        stress,
        rate,
    };
    // Through the writer: 141 after a closed stderr, 1 after a full one.
    fdwindow::base::out::status(
        match fdwindow::evidence::pressure_file::write(&results, &file) {
            Ok(path) => {
                fdwindow::note!("pressure_tables: wrote {}", path.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                fdwindow::note!("error: {e}");
                ExitCode::FAILURE
            }
        },
    )
}

/// The rows of `pressure_rate`'s Markdown table:
/// `| loop | path | threads | spawns/s | spawns per CPU-second |`.
fn parse_rate(text: &str) -> Vec<RateRow> {
    text.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l
                .trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            let [looped, path, threads, per_s, per_cpu] = cells[..] else {
                return None;
            };
            Some(RateRow {
                looped: looped.to_owned(),
                path: path.to_owned(),
                threads: threads.parse().ok()?,
                spawns_per_s: per_s.parse().ok()?,
                spawns_per_cpu_s: per_cpu.parse().ok()?,
            })
        })
        .collect()
}
