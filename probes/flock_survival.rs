//! Checks whether a flock "released" by closing its descriptor stays held by a
//! child's copy of that descriptor.
//!
//! Method: each trial locks a fresh file with `flock(LOCK_EX)`, opens the
//! window (a child parked between fork and exec, a posix_spawn race, or an
//! exec'd child that inherited the descriptor), releases the lock as the arm
//! does, and while the window is still open tries `LOCK_EX|LOCK_NB` through a
//! new open file description. `EWOULDBLOCK` there is a hit.
//!
//! Every arm but `cloexec` clears close-on-exec on the lock's descriptor, so
//! each mitigation differs from the control in exactly one respect.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Duration;

use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Trial};
use fdwindow::report::verdict::Role::{Control, Mitigation};
use fdwindow::report::verdict::Window::{ForkWindow, Inherited, PosixSpawn};
use fdwindow_fix::base::locks::{flock, flock_is_held, open_rw, set_cloexec};

const SPAWNS: &[fdwindow::report::verdict::Window] = &[ForkWindow, PosixSpawn, Inherited];

pub static PROBE: Probe = Probe {
    hazard: "flock-survival",
    about: "Checks whether a flock released by closing its descriptor stays held by a child's copy.",
    trials: 10,
    race: Duration::from_millis(150),
    arms: &[
        Arm {
            id: "close",
            role: Control,
            about: "flock(LOCK_EX), then close the descriptor (no close-on-exec).",
            windows: SPAWNS,
            trial: close,
            ..ARM
        },
        Arm {
            id: "unlock-then-close",
            role: Mitigation,
            about: "flock(LOCK_UN) before closing: releases the lock for every copy.",
            windows: SPAWNS,
            trial: unlock_then_close,
            ..ARM
        },
        Arm {
            id: "std-unlock",
            role: Mitigation,
            about: "std::fs::File::lock, then File::unlock before dropping.",
            windows: SPAWNS,
            trial: std_unlock,
            ..ARM
        },
        Arm {
            id: "fs2-unlock",
            role: Mitigation,
            about: "fs2's FileExt::lock_exclusive, then FileExt::unlock before dropping.",
            windows: SPAWNS,
            trial: fs2_unlock,
            ..ARM
        },
        Arm {
            id: "cloexec",
            role: Mitigation,
            about: "flock on an O_CLOEXEC descriptor, then close: no unlock.",
            windows: SPAWNS,
            trial: cloexec,
            no_copy: &[Inherited],
            ..ARM
        },
    ],
    observe: None,
};

/// Runs this probe with `args` (those after `fdwindow probe flock-survival`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE, args)
}

/// A fresh file, open (close-on-exec as asked) but not yet locked.
fn fresh_file(t: &Trial<'_>, cloexec: bool) -> Result<(File, PathBuf), Fault> {
    let path = t.fresh_path("lock");
    let file = open_rw(&path).ctx("open the lock file")?;
    set_cloexec(&file, cloexec).ctx("set close-on-exec")?;
    Ok((file, path))
}

/// Runs `release` on a locked file inside the window; a hit is the lock still held.
fn release_in_window(
    t: &mut Trial<'_>,
    (file, path): (File, PathBuf),
    release: impl FnOnce(File) -> std::io::Result<()>,
) -> Result<bool, Fault> {
    t.during_window(file.as_raw_fd(), || {
        release(file).ctx("release the lock")?;
        flock_is_held(&path).ctx("try the lock through a new open")
    })
}

fn close(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let (file, path) = fresh_file(t, false)?;
    flock(&file, libc::LOCK_EX).ctx("flock(LOCK_EX)")?;
    release_in_window(t, (file, path), |file| {
        drop(file);
        Ok(())
    })
}

fn unlock_then_close(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let (file, path) = fresh_file(t, false)?;
    flock(&file, libc::LOCK_EX).ctx("flock(LOCK_EX)")?;
    release_in_window(t, (file, path), |file| flock(&file, libc::LOCK_UN))
}

fn std_unlock(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let (file, path) = fresh_file(t, false)?;
    file.lock().ctx("File::lock")?;
    release_in_window(t, (file, path), |file| file.unlock())
}

fn fs2_unlock(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let (file, path) = fresh_file(t, false)?;
    fs2::FileExt::lock_exclusive(&file).ctx("fs2 lock_exclusive")?;
    release_in_window(t, (file, path), |file| fs2::FileExt::unlock(&file))
}

fn cloexec(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let (file, path) = fresh_file(t, true)?;
    flock(&file, libc::LOCK_EX).ctx("flock(LOCK_EX)")?;
    release_in_window(t, (file, path), |file| {
        drop(file);
        Ok(())
    })
}
