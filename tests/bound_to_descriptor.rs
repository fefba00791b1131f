//! A deterministic verdict is bound to the trial's own descriptor: a fix
//! whose trials never open their window, or whose window's child holds no
//! copy of the descriptor the hazard is about, reads `broken` or `invalid`,
//! never `valid` (issue 28). The probe is `ofd-lock-survival`'s, built here
//! with mutated fixes beside its real control and fix.

use std::os::fd::AsRawFd;
use std::time::Duration;

use fdwindow::harness::{
    ARM, Arm, Context, Fault, NEVER_OPENED, NO_COPY, Probe, Settings, Trial, run,
};
use fdwindow::report::tallies::{COPY_HELD, COPY_NONE, COPY_TALLY};
use fdwindow::report::verdict::Role::{Control, Mitigation};
use fdwindow::report::verdict::Verdict;
use fdwindow::report::verdict::Window::{ForkWindow, Inherited};
use fdwindow::report::{ArmReport, ProbeReport};
use fdwindow_fix::base::locks::{
    RecordLock, open_rw, record_lock, record_lock_is_held, set_cloexec,
};

const HELD: &[fdwindow::report::verdict::Window] = &[ForkWindow, Inherited];

/// How the trial's lock is let go.
#[derive(Clone, Copy, PartialEq)]
enum Release {
    /// The control: close it inside the window.
    Close,
    /// The real fix: unlock, then close, inside the window.
    UnlockThenClose,
    /// The mutation of the issue: the control's code with no window at all.
    CloseWithoutWindow,
    /// A fix that is not the one declared: the descriptor made close-on-exec,
    /// so an exec'd child holds no copy, then closed inside the window.
    CloexecThenClose,
}

fn trial(t: &mut Trial<'_>, how: Release) -> Result<bool, Fault> {
    let path = t.fresh_path("ofd");
    let file = open_rw(&path).ctx("open the lock file")?;
    set_cloexec(&file, how == Release::CloexecThenClose).ctx("set close-on-exec")?;
    record_lock(&file, RecordLock::Ofd, libc::F_WRLCK as _).ctx_feature("fcntl(F_OFD_SETLK)")?;
    if how == Release::CloseWithoutWindow {
        drop(file);
        return record_lock_is_held(&path).ctx("fcntl(F_OFD_GETLK)");
    }
    t.during_window(file.as_raw_fd(), || {
        if how == Release::UnlockThenClose {
            record_lock(&file, RecordLock::Ofd, libc::F_UNLCK as _).ctx("fcntl(F_UNLCK)")?;
        }
        drop(file);
        record_lock_is_held(&path).ctx("fcntl(F_OFD_GETLK)")
    })
}

static PROBE: Probe = Probe {
    hazard: "ofd-lock-survival",
    about: "ofd-lock-survival's control and fix, and two fixes that must not read valid.",
    trials: 7,
    race: Duration::from_millis(1),
    arms: &[
        Arm {
            id: "close",
            role: Control,
            about: "F_OFD_SETLK, then close.",
            windows: HELD,
            trial: |t| trial(t, Release::Close),
            ..ARM
        },
        Arm {
            id: "unlock-then-close",
            role: Mitigation,
            about: "F_UNLCK before closing.",
            windows: HELD,
            trial: |t| trial(t, Release::UnlockThenClose),
            ..ARM
        },
        Arm {
            id: "no-window",
            role: Mitigation,
            about: "The control's code, no window opened.",
            windows: HELD,
            trial: |t| trial(t, Release::CloseWithoutWindow),
            ..ARM
        },
        Arm {
            id: "undeclared-cloexec",
            role: Mitigation,
            about: "Close-on-exec, then close: no copy, and none declared.",
            windows: HELD,
            trial: |t| trial(t, Release::CloexecThenClose),
            ..ARM
        },
        Arm {
            id: "declared-cloexec",
            role: Mitigation,
            about: "Close-on-exec, then close: the exec'd child's missing copy is the fix's point.",
            windows: HELD,
            trial: |t| trial(t, Release::CloexecThenClose),
            no_copy: &[Inherited],
            ..ARM
        },
    ],
    observe: None,
};

fn report() -> ProbeReport {
    fdwindow::harness::check(&PROBE).expect("the declaration is well formed");
    let settings = Settings {
        trials: 7,
        race: Duration::from_millis(1),
        thorough: false,
        deadline: None,
        hold_by: fdwindow_fix::pressure::HoldBy::Fork,
    };
    run(&PROBE, settings, &[]).expect("the probe runs")
}

fn cell<'a>(r: &'a ProbeReport, arm: &str, w: fdwindow::report::verdict::Window) -> &'a ArmReport {
    r.find(arm, w)
        .unwrap_or_else(|| panic!("{arm} in {}", w.id()))
}

fn tally(c: &ArmReport, quantity: &str, value: &str) -> u64 {
    match &c.outcome {
        fdwindow::report::verdict::Outcome::Observed { tallies, .. } => tallies
            .get(quantity)
            .and_then(|t| t.get(value))
            .copied()
            .unwrap_or(0),
        other => panic!("{other:?}"),
    }
}

fn last_unconfirmed(c: &ArmReport) -> String {
    match &c.outcome {
        fdwindow::report::verdict::Outcome::Observed { tallies, .. } => {
            format!("{:?}", tallies.get("last-unconfirmed"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn only_a_fix_whose_child_held_its_descriptor_reads_valid() {
    let r = report();
    for w in HELD {
        let control = cell(&r, "close", *w);
        assert_eq!(
            r.judgement(control).verdict,
            Verdict::Present,
            "{control:?}"
        );
        assert!(tally(control, COPY_TALLY, COPY_HELD) >= 7, "{control:?}");

        let fix = cell(&r, "unlock-then-close", *w);
        assert_eq!(r.judgement(fix).verdict, Verdict::Valid, "{fix:?}");
        assert!(tally(fix, COPY_TALLY, COPY_HELD) >= 7, "{fix:?}");

        // The mutation: no window, so the control's code reads 0 hits.
        let mutation = cell(&r, "no-window", *w);
        assert_eq!(
            r.judgement(mutation).verdict,
            Verdict::Broken,
            "{mutation:?}"
        );
        assert!(
            last_unconfirmed(mutation).contains(NEVER_OPENED),
            "{mutation:?}"
        );
    }

    // Before exec the child holds even a close-on-exec copy: the lock
    // survives, so the undeclared fix is invalid there ...
    let forked = cell(&r, "undeclared-cloexec", ForkWindow);
    assert_eq!(r.judgement(forked).verdict, Verdict::Invalid, "{forked:?}");
    // ... and after exec its child holds none, which it did not declare.
    let execd = cell(&r, "undeclared-cloexec", Inherited);
    assert_eq!(r.judgement(execd).verdict, Verdict::Broken, "{execd:?}");
    assert!(tally(execd, COPY_TALLY, COPY_NONE) >= 1, "{execd:?}");
    assert!(last_unconfirmed(execd).contains(NO_COPY), "{execd:?}");

    // The same code, declaring that the missing copy is its point, is valid
    // after exec: its control in that window showed the copy.
    let declared = cell(&r, "declared-cloexec", Inherited);
    assert_eq!(
        r.judgement(declared).verdict,
        Verdict::Valid,
        "{declared:?}"
    );
    assert!(tally(declared, COPY_TALLY, COPY_NONE) >= 7, "{declared:?}");
}

#[test]
fn no_copy_is_declared_only_by_a_fix_in_a_window_it_runs_in() {
    static CONTROL_WITHOUT_COPY: &[Arm] = &[Arm {
        id: "close",
        role: Control,
        windows: HELD,
        trial: |t| trial(t, Release::Close),
        no_copy: &[Inherited],
        ..ARM
    }];
    static ELSEWHERE: &[Arm] = &[
        Arm {
            id: "close",
            role: Control,
            windows: &[Inherited],
            trial: |t| trial(t, Release::Close),
            ..ARM
        },
        Arm {
            id: "fix",
            role: Mitigation,
            windows: &[Inherited],
            trial: |t| trial(t, Release::CloexecThenClose),
            no_copy: &[ForkWindow],
            ..ARM
        },
    ];
    for (arms, says) in [
        (
            CONTROL_WITHOUT_COPY,
            "only a mitigation may declare no_copy",
        ),
        (ELSEWHERE, "declares no_copy in fork-window"),
    ] {
        let probe = Probe { arms, ..PROBE };
        let err = fdwindow::harness::check(&probe).unwrap_err();
        assert!(err.to_string().contains(says), "{err}");
    }
}
