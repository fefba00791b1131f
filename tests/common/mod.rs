//! Helpers shared by the integration tests: running the built binaries.

#![allow(dead_code, reason = "each test file uses a different subset")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fdwindow::report::{ArmReport, ProbeReport};
use fdwindow::scratch::Scratch;
use fdwindow::verdict::{Verdict, Window};

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

/// The preload injector beside `fdwindow`, built (or brought up to date)
/// once per test process: `cargo test` and `cargo nextest run` build only what
/// test targets depend on, never a cdylib, so this runs `cargo build -p
/// fdwindow-inject` into the same target folder and profile. Cargo's lock
/// serialises concurrent callers, and it has released it before tests run.
pub fn injector() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let (_, name) = fdwindow::pressure::preload().expect("a preload mechanism on this OS");
            let exe = Path::new(env!("CARGO_BIN_EXE_fdwindow"));
            let profile_dir = exe.parent().unwrap();
            // target/debug is the `dev` profile; every other profile has its own folder.
            let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
                Some("debug") | None => "dev",
                Some(other) => other,
            };
            let status = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()))
                .args([
                    "build",
                    "--quiet",
                    "-p",
                    "fdwindow-inject",
                    "--profile",
                    profile,
                ])
                .arg("--target-dir")
                .arg(profile_dir.parent().unwrap())
                .status()
                .unwrap();
            assert!(status.success(), "cargo build -p fdwindow-inject: {status}");
            let path = exe.with_file_name(name);
            assert!(path.exists(), "{} is missing", path.display());
            path
        })
        .clone()
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
    fdwindow::matrix::arm_verdict(report, arm(report, id, window))
}
