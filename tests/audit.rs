//! `fdwindow audit` on the fixture suite (tests/fixtures/audit_suite.rs):
//! exactly the exposed tests are flagged, each with the class its diagnosis
//! found and a hazard set holding the right hazard; the cost test comes out
//! as load; the unaffected tests are never flagged.

mod common;

use common::{fdwindow, stderr};

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["audit", "--pressure", "threads=0", "--", "/usr/bin/true"][..],
        &["audit", "--pressure", "drop=file", "--", "/usr/bin/true"],
        &["audit", "--format", "xml", "--", "/usr/bin/true"],
        &["audit", "--hold", "0s", "--", "/usr/bin/true"],
        &["audit", "--hold", "10m", "--", "/usr/bin/true"],
        &["audit", "--budget", "0s", "--", "/usr/bin/true"],
    ] {
        let out = fdwindow().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).lines().count() <= 4,
            "not a short error: {}",
            stderr(&out)
        );
    }
}

// The injector is preloaded by LD_PRELOAD (Linux); the fixture's cost test
// reads RUSAGE_THREAD, which is Linux's.
#[cfg(target_os = "linux")]
#[test]
fn audit_flags_exactly_the_exposed_fixture_tests() {
    use std::path::Path;
    let exe = Path::new(env!("CARGO_BIN_EXE_fdwindow"));
    let profile_dir = exe.parent().unwrap();
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = fdwindow()
        // Ten screen runs; the exposed tests fail most pressured runs, so the
        // rule decides them in about ten pairs. The budget is room for a
        // loaded machine: the rule, not the budget, decides here.
        .args([
            "audit", "--runs", "10", "--budget", "900s", "--format", "json", "--",
        ])
        .args([&cargo, "test", "--quiet", "--example", "audit-fixture"])
        .args(["--profile", profile, "--target-dir"])
        .arg(profile_dir.parent().unwrap())
        .output()
        .unwrap();
    // Exit 1: some test is exposed.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    let tests = report["tests"].as_array().unwrap();
    let find = |name: &str| {
        tests
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {report}"))
    };
    let exposed: Vec<&str> = tests
        .iter()
        .filter(|t| t["verdict"] == "exposed")
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        exposed,
        [
            "abstract_name_rebinds",
            "bound_port_rebinds",
            "dropped_listener_refuses",
            "lock_released_by_close",
            "picked_port_binds"
        ],
        "{}",
        stderr(&out)
    );
    let threshold = report["rule"]["false_rate"].as_f64().unwrap();
    assert!(threshold <= 0.001, "{report}");
    for (name, class, hazard) in [
        ("lock_released_by_close", "file", "flock-survival"),
        ("dropped_listener_refuses", "listener", "listener-survival"),
        ("picked_port_binds", "listener", "port-pick"),
        ("bound_port_rebinds", "bound", "port-pick"),
        ("abstract_name_rebinds", "bound", "unix-listener-survival"),
    ] {
        let t = find(name);
        assert_eq!(t["hazard"], hazard, "{name}: {t}");
        assert_eq!(
            t["diagnosis"]["cause"],
            format!("held {class}"),
            "{name}: {t}"
        );
        // The deterministic mode made it fail on its first run.
        let holds = t["diagnosis"]["holds"].as_array().unwrap();
        let held = holds.iter().find(|h| h["class"] == class).unwrap();
        assert_eq!(held["first_failure"], 1, "{name}: {t}");
        assert!(
            t["reruns"]["p"].as_f64().unwrap() <= threshold,
            "{name}: {t}"
        );
        assert_eq!(t["reruns"]["alone"]["failures"], 0, "{name}: {t}");
        assert!(t["reruns"]["spawns"].as_u64().unwrap() > 0, "{name}: {t}");
        assert!(t["message"].as_str().is_some_and(|m| !m.is_empty()), "{t}");
    }
    // Fork pressure breaks the cost test whatever its children hold: load,
    // with no hazard named.
    let load = find("warm_rewrite_is_fault_free");
    assert_eq!(load["verdict"], "load", "{load}");
    assert!(load["hazard"].is_null(), "{load}");
    assert_eq!(load["candidates"].as_array().unwrap().len(), 0, "{load}");
    for name in [
        "arithmetic_holds",
        "text_formats",
        "lock_released_by_unlock",
        "server_binds_port_zero",
        "file_round_trip",
        "sorting_is_stable",
    ] {
        let t = find(name);
        assert_eq!(t["verdict"], "not-exposed", "{name}: {t}");
        assert!(t["hazard"].is_null(), "{name}: {t}");
        assert_eq!(t["screen"]["runs"], 10, "{name}: {t}");
    }
    // Every pressured run loaded the injector.
    assert_eq!(report["pressured_runs"], report["pressure_started_runs"]);
    assert!(report["pressured_runs"].as_u64().unwrap() >= 10);
}

/// A report that cannot be written (stdout is `/dev/full`) is a one-line
/// error and exit 1, and the injector's private file and the report folder
/// are gone: the write comes after they are removed (it may end the process).
#[cfg(target_os = "linux")]
#[test]
fn a_failed_report_write_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let out = fdwindow()
        .env("TMPDIR", tmp.path())
        .args(["audit", "--runs", "1", "--", "/bin/echo", "test a ... ok"])
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("error: write to stdout"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A shell stand-in for a libtest binary with one passing test `a`.
#[cfg(target_os = "linux")]
const LIBTEST_STAND_IN: &str =
    r#"case "$*" in *--list*) echo "a: test";; *) echo "test a ... ok";; esac"#;

/// Progress goes to stderr; a closed stderr (`2>&1 | head -2` after `head`
/// exits) loses the progress, never the report or the exit status.
#[cfg(target_os = "linux")]
#[test]
fn a_closed_stderr_loses_only_the_progress() {
    let out = fdwindow()
        .args(["audit", "--runs", "3", "--format", "json", "--"])
        // A libtest stand-in: one test, `a`, that passes.
        .args(["/bin/sh", "-c", LIBTEST_STAND_IN, "sh"])
        .stderr(common::closed_pipe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["tests"][0]["name"], "a", "{report}");
    assert_eq!(report["tests"][0]["screen"]["runs"], 3, "{report}");
}
