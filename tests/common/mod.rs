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

/// The preload injector beside `fdwindow`, built on first use: `cargo test`
/// and `cargo nextest run` build only test targets' dependencies, never a
/// cdylib, so this runs `cargo build -p fdwindow-inject` into the same target
/// folder and profile (cargo's own lock serialises concurrent callers).
pub fn injector() -> PathBuf {
    let (_, name) = fdwindow::pressure::preload().expect("a preload mechanism on this OS");
    let exe = Path::new(env!("CARGO_BIN_EXE_fdwindow"));
    let path = exe.with_file_name(name);
    if !path.exists() {
        let profile_dir = exe.parent().unwrap();
        let mut build = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()));
        build
            .args(["build", "--quiet", "-p", "fdwindow-inject", "--target-dir"])
            .arg(profile_dir.parent().unwrap());
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let status = build.status().unwrap();
        assert!(status.success(), "cargo build -p fdwindow-inject: {status}");
    }
    assert!(path.exists(), "{} is missing", path.display());
    path
}
