//! The platforms measured, the verdicts quoted, the spawn window and the
//! run's timing.

use std::fmt::Write as _;

use crate::evidence::query::{cell_line, cell_text, find_arm};
use crate::report::verdict::Window;
use crate::report::{ResultsFile, Table};

use super::inputs::{Inputs, no_data};

/// Where a default run spends its time, per measured platform.
pub(super) fn timing(inputs: &Inputs) -> String {
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

/// Every measured platform: kernel, libc, cpus, virtualization, and how long
/// its probes took in all.
pub(super) fn platform(inputs: &Inputs) -> String {
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
pub(super) fn verdict_line(
    f: &ResultsFile,
    hazard: &str,
    arm: &str,
    window: Window,
) -> Option<String> {
    let report = f.probes.get(hazard)?;
    let a = find_arm(report, arm, window)?;
    Some(format!("{} {}", window.id(), cell_line(report, a)))
}

pub(super) fn verdict_example(inputs: &Inputs) -> String {
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
pub(super) fn showed(inputs: &Inputs) -> String {
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

pub(super) fn table_markdown(t: &Table) -> String {
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
pub(super) fn spawn_window(inputs: &Inputs) -> String {
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
pub(super) fn excerpt(inputs: &Inputs) -> String {
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
