//! Runs the clock probes with few trials and checks what cannot depend on luck.
//!
//! `clock-collision` is statistical everywhere: three rounds of the
//! microsecond simulation may all miss, so only the fixes are held to zero
//! hits, and the verdict rules to their control.

mod common;

use common::run_probe;
use fdwindow::report::ProbeReport;
use fdwindow::report::verdict::{Outcome, Role, Verdict, Window};
use fdwindow::views::matrix::arm_verdict;

/// The clock-collision arms all run in-process.
fn arm<'a>(r: &'a ProbeReport, id: &str) -> &'a fdwindow::report::ArmReport {
    common::arm(r, id, Window::InProcess)
}

#[test]
fn clock_collision_fixes_never_collide_and_are_judged_against_the_simulation() {
    let r = run_probe("clock-collision", &["--trials", "3"]);
    r.validate().unwrap();
    for id in [
        "pid-realtime-nanos",
        "us-truncated",
        "process-sequence",
        "tempfile",
    ] {
        let a = arm(&r, id);
        let Outcome::Observed {
            trials, tallies, ..
        } = &a.outcome
        else {
            panic!("{id}: {:?}", a.outcome)
        };
        assert_eq!(*trials, 3, "{id}");
        // Every round ran 8 threads, and says so.
        assert_eq!(tallies["threads"]["8"], 3, "{id}");
    }
    assert!(arm(&r, "us-truncated").about.contains("SIMULATION"));
    for fix in ["process-sequence", "tempfile"] {
        let a = arm(&r, fix);
        assert_eq!(a.role, Role::Mitigation);
        assert_eq!(a.outcome.count().map(|c| c.hits), Some(0), "{fix}");
        assert_eq!(
            r.control_of(a).map(|c| c.arm.as_str()),
            Some("us-truncated")
        );
        // Both remove the colliding step: `avoids`, with the argument.
        assert_eq!(arm_verdict(&r, a), Verdict::Avoids, "{fix}");
        assert!(a.avoids.as_deref().is_some_and(|x| !x.is_empty()));
    }
}

#[test]
fn clock_resolution_reports_every_clock() {
    let r = run_probe("clock-resolution", &["--trials", "5"]);
    r.validate().unwrap();
    assert!(r.arms.is_empty());
    let t = &r.tables[0];
    assert_eq!(t.id, "clocks");
    assert!(t.problem.is_none());
    let keys: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
    for clock in ["CLOCK_REALTIME", "CLOCK_MONOTONIC", "SystemTime", "Instant"] {
        assert!(keys.contains(&clock), "{keys:?}");
    }
    #[cfg(target_os = "linux")]
    for clock in [
        "CLOCK_MONOTONIC_RAW",
        "CLOCK_REALTIME_COARSE",
        "CLOCK_MONOTONIC_COARSE",
    ] {
        assert!(keys.contains(&clock), "{keys:?}");
    }
    // 5 rounds across threads, 250 pairs in one thread, for every measured row.
    let realtime = &t.rows[0];
    assert!(realtime[4].ends_with("/250)"), "{realtime:?}");
    assert!(realtime[5].ends_with("/5)"), "{realtime:?}");
}
