//! Checks whether closing any descriptor of a file drops the process's POSIX
//! record lock on it, though the descriptor that took the lock is still open.
//!
//! Method: each trial locks a fresh file through one descriptor, confirms the
//! lock is visible, then opens and closes a second descriptor of the same file
//! (as a library or another thread reading the file would) and asks again. A
//! lock no longer visible is a hit. POSIX locks are observed from a forked
//! child with `F_GETLK` (the owner cannot see its own locks, and a probe
//! descriptor of its own would drop them); flock and OFD locks through a new
//! open file description.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Duration;

use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Trial};
use fdwindow::report::verdict::Kind;
use fdwindow::report::verdict::Role::{Control, Mitigation};
use fdwindow::report::verdict::Window::InProcess;
use fdwindow_fix::base::locks::{
    RecordLock, flock, flock_is_held, open_rw, posix_lock_seen_from_child, record_lock,
    record_lock_is_held,
};

pub static PROBE: Probe = Probe {
    hazard: "posix-lock-drop",
    about: "Checks whether closing another descriptor of a file drops the process's fcntl lock on it.",
    trials: 10,
    race: Duration::from_millis(250),
    arms: &[
        Arm {
            id: "close-other-fd",
            role: Control,
            about: "fcntl(F_SETLK, F_WRLCK) through one descriptor; open and close a second one.",
            windows: &[InProcess],
            trial: |t| trial(t, Lock::Posix),
            kind: Some(Kind::Deterministic),
            ..ARM
        },
        Arm {
            id: "flock",
            role: Mitigation,
            about: "flock(LOCK_EX) instead; open and close a second descriptor.",
            windows: &[InProcess],
            trial: |t| trial(t, Lock::Flock),
            kind: Some(Kind::Deterministic),
            ..ARM
        },
        Arm {
            id: "ofd-lock",
            role: Mitigation,
            about: "fcntl(F_OFD_SETLK, F_WRLCK) instead; open and close a second descriptor.",
            windows: &[InProcess],
            trial: |t| trial(t, Lock::Ofd),
            kind: Some(Kind::Deterministic),
            ..ARM
        },
    ],
    observe: None,
};

/// Runs this probe with `args` (those after `fdwindow probe posix-lock-drop`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE, args)
}

#[derive(Clone, Copy)]
enum Lock {
    Posix,
    Flock,
    Ofd,
}

fn take(file: &File, lock: Lock) -> Result<(), Fault> {
    match lock {
        Lock::Posix => {
            record_lock(file, RecordLock::Posix, libc::F_WRLCK as _).ctx("fcntl(F_SETLK)")
        }
        Lock::Flock => flock(file, libc::LOCK_EX).ctx("flock(LOCK_EX)"),
        Lock::Ofd => {
            record_lock(file, RecordLock::Ofd, libc::F_WRLCK as _).ctx_feature("fcntl(F_OFD_SETLK)")
        }
    }
}

fn is_held(file: &File, path: &Path, lock: Lock) -> Result<bool, Fault> {
    match lock {
        Lock::Posix => posix_lock_seen_from_child(file).ctx("F_GETLK from a child"),
        Lock::Flock => flock_is_held(path).ctx("flock(LOCK_NB) through a new open"),
        Lock::Ofd => record_lock_is_held(path).ctx_feature("fcntl(F_OFD_GETLK)"),
    }
}

fn trial(t: &mut Trial<'_>, lock: Lock) -> Result<bool, Fault> {
    let path = t.fresh_path("lock");
    let owner = open_rw(&path).ctx("open the lock file")?;
    take(&owner, lock)?;
    if !is_held(&owner, &path, lock)? {
        return Err(Fault::Broken("the lock just taken is not visible".into()));
    }
    t.during_window(owner.as_raw_fd(), || {
        drop(open_rw(&path).ctx("open a second descriptor")?);
        Ok(!is_held(&owner, &path, lock)?)
    })
}
