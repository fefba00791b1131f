//! Helpers shared by the integration tests: running the built binaries.

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::path::Path;
use std::process::{Command, Output};

use fdwindow::report::verdict::{Verdict, Window};
use fdwindow::report::{ArmReport, ProbeReport, ResultsFile};
use fdwindow_fix::base::scratch::Scratch;

/// The `fdwindow` binary cargo built for this test run.
pub fn fdwindow() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fdwindow"))
}

/// `fdwindow probe HAZARD`: one probe, run as the runner runs it.
pub fn probe(hazard: &str) -> Command {
    let mut cmd = fdwindow();
    cmd.args(["probe", hazard]);
    cmd
}

/// Runs a probe with `args` and parses its report.
pub fn run_probe(hazard: &str, args: &[&str]) -> ProbeReport {
    let out = probe(hazard).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{hazard}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A scratch folder for one test, removed when dropped.
pub fn scratch(label: &str) -> Scratch {
    Scratch::new(label).unwrap()
}

/// Asserts that a run's private temporary folder (its TMPDIR) is empty:
/// the run removed its scratch on its way out.
pub fn assert_no_scratch_left(tmp: &Path) {
    assert_eq!(
        std::fs::read_dir(tmp).unwrap().count(),
        0,
        "scratch left behind"
    );
}

/// The write end of a pipe whose read end is already closed: a write to it
/// fails with EPIPE (or raises SIGPIPE), as after `| head` has exited.
pub fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer
}

/// The Linux results file the views quote ([`fdwindow::evidence::query::quoted_file`]):
/// the template tests modify. A clone may hold a fresh run beside the
/// committed files (a new host build whose id sorts first, a default run
/// with fewer cells), and the rule picks the same file whatever it holds.
pub fn quoted_linux(files: &mut [ResultsFile]) -> &mut ResultsFile {
    let id = fdwindow::evidence::query::quoted_file(files, "linux")
        .expect("a Linux results file measured on a real machine")
        .platform
        .id
        .clone();
    files.iter_mut().find(|f| f.platform.id == id).unwrap()
}

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The injector built into fdwindow, written to a private file that is
/// removed when the guard drops: hold it while any preloaded process starts.
pub fn injector() -> fdwindow::cotenant::preload::Written {
    fdwindow::cotenant::preload::Library::INJECT
        .write()
        .expect("the injector is built into fdwindow on this OS")
}

/// The arm `id` in `window` of a report; panics, naming both, when it did not run.
pub fn arm<'a>(report: &'a ProbeReport, id: &str, window: Window) -> &'a ArmReport {
    report
        .arms
        .iter()
        .find(|a| a.arm == id && a.window == window)
        .unwrap_or_else(|| panic!("{} has no {id} in {}", report.hazard, window.id()))
}

/// The derived verdict on arm `id` in `window`.
pub fn verdict(report: &ProbeReport, id: &str, window: Window) -> Verdict {
    fdwindow::views::matrix::arm_verdict(report, arm(report, id, window))
}

/// `cargo test --example audit-fixture` built into this test run's own
/// target folder and profile, then `extra` (a filter, `--`…).
pub fn fixture_command(extra: &[&str]) -> Vec<String> {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_fdwindow"));
    let profile_dir = exe.parent().unwrap();
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd: Vec<String> = [&cargo, "test", "--quiet", "--example", "audit-fixture"]
        .map(String::from)
        .into();
    cmd.extend(["--profile", profile, "--target-dir"].map(String::from));
    cmd.push(profile_dir.parent().unwrap().display().to_string());
    cmd.extend(extra.iter().map(|s| s.to_string()));
    cmd
}

/// Removes from `cmd` the environment cargo or nextest gave this test
/// process (`CARGO_PKG_*`, `CARGO_MANIFEST_DIR`, `OUT_DIR`, `NEXTEST*`…), so
/// that a command it runs must get its own, as a user's shell would start
/// it. `CARGO` stays: it names the cargo to run.
pub fn without_cargo_env(cmd: &mut Command) -> &mut Command {
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if (key.starts_with("CARGO_") || key == "OUT_DIR" || key.starts_with("NEXTEST"))
            && key != "CARGO_HOME"
            && key != "CARGO_TARGET_DIR"
        {
            cmd.env_remove(key.as_ref());
        }
    }
    cmd
}

/// Copies the committed results files (`results/*.json`) into `dir`, created
/// if missing: a test's own folder of the committed measurements.
pub fn copy_committed_results(dir: &Path) {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    std::fs::create_dir_all(dir).unwrap();
    for e in std::fs::read_dir(committed).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// Pids of the processes whose command line mentions `needle`, this one
/// aside: what a test's marker finds after a command should have ended.
#[cfg(target_os = "linux")]
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(needle) && pid != std::process::id() {
            pids.push(pid);
        }
    }
    pids
}
