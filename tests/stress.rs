//! `fdwindow stress` and the preload injector: trivial commands give 0/N and
//! N/N, `--match` keeps pressure out of processes it does not name, and the
//! injector reaches the processes it should.

mod common;

use common::{fdwindow, stderr};

// The preloaded hosts are /usr/bin/true and /bin/false: on macOS, System
// Integrity Protection strips DYLD_INSERT_LIBRARIES from binaries under /usr/bin
// and /bin, so there these tests would need a host built for the purpose.
#[cfg(target_os = "linux")]
fn stress(args: &[&str]) -> serde_json::Value {
    stress_exiting(args, 0)
}

/// Runs `fdwindow stress` expecting exit status `code`; its JSON summary.
#[cfg(target_os = "linux")]
fn stress_exiting(args: &[&str], code: i32) -> serde_json::Value {
    // The injector built into fdwindow: no --injector, no other build step.
    let out = fdwindow().arg("stress").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)))
}

#[cfg(target_os = "linux")]
fn failures(summary: &serde_json::Value) -> Vec<(String, u64, u64)> {
    summary["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["arm"].as_str().unwrap().to_owned(),
                a["failures"].as_u64().unwrap(),
                a["runs"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn true_never_fails_and_false_always_fails_under_pressure() {
    let pressure = "threads=2,hold=1ms,path=mix";
    let ok = stress(&["--runs", "3", "--pressure", pressure, "--", "/usr/bin/true"]);
    assert_eq!(
        failures(&ok),
        [("alone".into(), 0, 3), ("pressure".into(), 0, 3)]
    );
    // Every pressured run loaded the injector and reported at exit.
    assert_eq!(ok["pressured_processes"], 3);
    assert_eq!(ok["arms"][0]["wilson95"][0], 0.0);
    assert!(ok["arms"][1]["first_failure_run"].is_null());

    let bad = stress(&["--runs", "3", "--pressure", pressure, "--", "/bin/false"]);
    assert_eq!(
        failures(&bad),
        [("alone".into(), 3, 3), ("pressure".into(), 3, 3)]
    );
    assert_eq!(bad["arms"][1]["first_failure_run"], 1);
    assert_eq!(bad["arms"][1]["wilson95"][1], 1.0);
}

#[cfg(target_os = "linux")]
#[test]
fn match_keeps_pressure_out_of_other_executables() {
    // Nothing matched: the summary still comes, but the run fails, since its
    // "pressure" arm was never under pressure.
    let none = stress_exiting(
        &[
            "--runs",
            "2",
            "--match",
            "no-such-exe-*",
            "--",
            "/usr/bin/true",
        ],
        1,
    );
    assert_eq!(none["pressured_processes"], 0);
    let named = stress(&["--runs", "2", "--match", "tru*", "--", "/usr/bin/true"]);
    assert_eq!(named["pressured_processes"], 2);
}

#[test]
fn bad_pressure_specs_are_usage_errors() {
    let out = fdwindow()
        .args(["stress", "--pressure", "threads=0", "--", "/usr/bin/true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("threads=0"), "{}", stderr(&out));
}
