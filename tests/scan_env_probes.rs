//! Runs `holder-scan` and `env-race` with few trials.
//!
//! `holder-scan` holds its fork deterministically, so its verdicts are
//! asserted on Linux. `env-race` is a race inside each child: only what cannot
//! depend on luck is asserted there (the fixes never tear, every trial's end
//! is accounted for, the libc is recorded).

mod common;

use common::{arm, run_probe};
use fdwindow::report::verdict::{Outcome, Verdict, Window};
use fdwindow::views::matrix::arm_verdict;

fn tally<'a>(outcome: &'a Outcome, quantity: &str) -> Vec<(&'a str, u64)> {
    match outcome {
        Outcome::Observed { tallies, .. } => tallies
            .get(quantity)
            .map(|m| m.iter().map(|(k, v)| (k.as_str(), *v)).collect())
            .unwrap_or_default(),
        other => panic!("{quantity}: {other:?}"),
    }
}

#[cfg(any(target_os = "linux", target_os = "macos"))]
#[test]
fn holder_scan_sees_the_fork_and_the_fixes_do_not() {
    let r = run_probe("holder-scan", &["--trials", "3"]);
    r.validate().unwrap();
    let w = Window::ForkWindow;
    let v = |id: &str| arm_verdict(&r, arm(&r, id, w));
    for prefix in ["", "file-"] {
        let id = |a: &str| format!("{prefix}{a}");
        assert_eq!(v(&id("scan-during-window")), Verdict::Present, "{prefix}");
        assert_eq!(v(&id("exe-filter")), Verdict::Invalid, "{prefix}");
        // Isolation cannot fail by construction: `avoids`, with its argument.
        assert_eq!(v(&id("run-isolated")), Verdict::Avoids, "{prefix}");
        assert!(arm(&r, &id("run-isolated"), w).avoids.is_some(), "{prefix}");
        // Waiting for the exec only waits the window out, which trials can
        // test: an ordinary mitigation, judged against its control (3 trials
        // cannot reach p <= 0.001, so never `valid` here, never `avoids`).
        let after = arm(&r, &id("scan-after-exec"), w);
        assert!(after.avoids.is_none(), "{prefix}");
        assert_eq!(after.outcome.count().map(|c| c.hits), Some(0), "{prefix}");
        assert_eq!(v(&id("scan-after-exec")), Verdict::Inconclusive, "{prefix}");
    }
    // Holders seen per trial: the listener's owner plus the parked fork; the
    // fixes see the owner alone. A closed file: the fork alone, then nobody.
    let control = &arm(&r, "scan-during-window", w).outcome;
    assert_eq!(tally(control, "holders"), [("2", 3)]);
    assert_eq!(tally(control, "kinds"), [("pre-exec-fork+scanner", 3)]);
    let file_control = &arm(&r, "file-scan-during-window", w).outcome;
    assert_eq!(tally(file_control, "holders"), [("1", 3)]);
    assert_eq!(tally(file_control, "kinds"), [("pre-exec-fork", 3)]);
    assert_eq!(
        tally(&arm(&r, "file-exe-filter", w).outcome, "holders"),
        [("1", 3)]
    );
    for (fix, left) in [
        ("run-isolated", "1"),
        ("scan-after-exec", "1"),
        ("file-run-isolated", "0"),
        ("file-scan-after-exec", "0"),
    ] {
        assert_eq!(
            tally(&arm(&r, fix, w).outcome, "holders"),
            [(left, 3)],
            "{fix}"
        );
    }
}

/// Elsewhere the scan is not written: unsupported, never broken.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
#[test]
fn holder_scan_is_unsupported_off_linux() {
    let r = run_probe("holder-scan", &["--trials", "3"]);
    for a in &r.arms {
        assert!(
            matches!(a.outcome, Outcome::Unsupported { .. }),
            "{}: {:?}",
            a.arm,
            a.outcome
        );
    }
}

#[test]
fn env_race_fixes_never_tear_and_every_child_is_accounted_for() {
    let r = run_probe("env-race", &["--trials", "3"]);
    r.validate().unwrap();
    assert!(!r.platform.libc.is_empty());
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    assert!(!r.platform.libc_version.is_empty(), "{:?}", r.platform);
    for id in [
        "setenv-vs-libc-getenv",
        "std-env-only",
        "std-env-only-sham",
        "one-env-guard",
        "one-env-guard-sham",
        "pass-explicitly",
    ] {
        let a = arm(&r, id, Window::InProcess);
        assert_eq!(a.avoids.is_some(), id == "pass-explicitly", "{id}");
        let ends = tally(&a.outcome, "child");
        assert_eq!(
            ends.iter().map(|(_, n)| n).sum::<u64>(),
            3,
            "{id}: {ends:?}"
        );
        // The control and the shams race on purpose; the fixes never tear.
        if id != "setenv-vs-libc-getenv" && !id.ends_with("-sham") {
            assert_eq!(ends, [("clean", 3)], "{id}");
            assert_ne!(arm_verdict(&r, a), Verdict::Invalid, "{id}");
        }
    }
}
