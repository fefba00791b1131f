//! Checks whether an open file description (OFD) lock released by closing its
//! descriptor stays held by a child's copy, as a flock does.
//!
//! Method: each trial takes a whole-file `F_OFD_SETLK` write lock on a fresh
//! file (descriptor without close-on-exec), opens the window, releases as the
//! arm does, and asks `F_OFD_GETLK` through a new open file description
//! whether a conflicting lock remains. A remaining lock is a hit. A kernel
//! without OFD locks answers `EINVAL`: the arm is then `unsupported`.

use std::os::fd::AsRawFd;
use std::time::Duration;

use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Trial};
use fdwindow::report::verdict::Role::{Control, Mitigation};
use fdwindow::report::verdict::Window::{ForkWindow, Inherited, PosixSpawn};
use fdwindow_fix::base::locks::{
    RecordLock, open_rw, record_lock, record_lock_is_held, set_cloexec,
};

const SPAWNS: &[fdwindow::report::verdict::Window] = &[ForkWindow, PosixSpawn, Inherited];

pub static PROBE: Probe = Probe {
    hazard: "ofd-lock-survival",
    about: "Checks whether an OFD lock released by closing its descriptor stays held by a child's copy.",
    trials: 10,
    race: Duration::from_millis(150),
    arms: &[
        Arm {
            id: "close",
            role: Control,
            about: "fcntl(F_OFD_SETLK, F_WRLCK), then close the descriptor.",
            windows: SPAWNS,
            trial: |t| trial(t, false),
            ..ARM
        },
        Arm {
            id: "unlock-then-close",
            role: Mitigation,
            about: "fcntl(F_OFD_SETLK, F_UNLCK) before closing.",
            windows: SPAWNS,
            trial: |t| trial(t, true),
            ..ARM
        },
    ],
    observe: None,
};

/// Runs this probe with `args` (those after `fdwindow probe ofd-lock-survival`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE, args)
}

fn trial(t: &mut Trial<'_>, unlock_first: bool) -> Result<bool, Fault> {
    let path = t.fresh_path("ofd");
    let file = open_rw(&path).ctx("open the lock file")?;
    set_cloexec(&file, false).ctx("clear close-on-exec")?;
    record_lock(&file, RecordLock::Ofd, libc::F_WRLCK as _).ctx_feature("fcntl(F_OFD_SETLK)")?;
    t.during_window(file.as_raw_fd(), || {
        if unlock_first {
            record_lock(&file, RecordLock::Ofd, libc::F_UNLCK as _)
                .ctx("fcntl(F_OFD_SETLK, F_UNLCK)")?;
        }
        drop(file);
        record_lock_is_held(&path).ctx_feature("fcntl(F_OFD_GETLK)")
    })
}
