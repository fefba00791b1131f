//! Helpers shared by the integration tests: running the built binaries.

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fdwindow::report::ProbeReport;
use fdwindow::scratch::Scratch;

/// The `fdwindow` binary cargo built for this test run.
pub fn fdwindow() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fdwindow"))
}

/// The folder holding the probe binaries (beside `fdwindow`).
pub fn probes_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_fdwindow"))
        .parent()
        .unwrap()
        .to_owned()
}

/// Runs a probe binary with `args` and parses its report.
pub fn run_probe(hazard: &str, args: &[&str]) -> ProbeReport {
    let out = Command::new(probes_dir().join(format!("probe-{hazard}")))
        .args(args)
        .output()
        .unwrap();
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

/// stderr as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
