//! Checks whether executing a file just written and closed fails with
//! `ETXTBSY` because a concurrently forked child still holds a copy of its
//! write descriptor.
//!
//! Method: each trial writes a fresh `#!/bin/sh` script (mode 0755, through a
//! close-on-exec descriptor, as std's `File` makes it), closes it and spawns
//! it; `ETXTBSY` from the spawn is a hit.
//!
//! `fork-window` (deterministic): 1. open and write; 2. a child is parked
//! between fork and exec, holding a copy of the write descriptor; 3. close;
//! 4. exec the script while the child is still parked. `posix-spawn`
//! (statistical): the same with the harness's race thread spawning `true`
//! throughout, so a posix_spawn child may hold the copy until its exec.
//!
//! `spawn-lock` and its sham run `fdwindow::hazards::spawn_lock::spawn_in_gap`: the
//! writer parks with the file open until the spawner has either forked its
//! parked child (the sham: the child holds the copy, every time) or is
//! waiting for the lock (the fix: the fork comes after the close).
//!
//! `retry-on-etxtbsy` meets a child that stalls before exec, with the stall
//! counted in the retry's own failed attempts rather than in time: the parent
//! lets the parked child go (and awaits its exec) after exactly K attempts
//! have failed with `ETXTBSY`. The short stall is K = half the retry's
//! attempt budget, the long one K = twice it, so the cells say what seed 001
//! says in words, deterministically and whatever the load: a bounded retry
//! outlasts a stall shorter than its budget and cannot outlast a longer one
//! (a slow `pre_exec`, a stopped child). The backoff sleeps still run, as the
//! retry has them, but no verdict depends on how long they take. Two arms
//! rather than a tally, because each stall has its own verdict and its own
//! claim. The short stall has a sham (one attempt, no retry), which shows
//! that the stall does block the first exec.
//!
//! Linux denies exec of a file open for writing (`deny_write_access` in
//! fs/exec.c), but not in every release: commit 2a010c412853 ("fs: don't
//! block i_writecount during exec", 2024, in 6.11) stopped exec from taking
//! that exclusion (LTP's creat07 then failed), and 3b832035387f (Revert "fs:
//! don't block i_writecount during exec", 2024-11-27, for 6.13) restored it.
//! A kernel between the two is expected [U] to run the script and show the
//! control absent. So this kernel's answer is measured without any fork in the
//! `exec-while-open` table, and the platform record names the release.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use std::time::Instant;

use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Settings, Trial};
use fdwindow::hazards::spawn_lock::{SPAWN_LOCK, hold_in_gap};
use fdwindow::report::Table;
use fdwindow::report::verdict::Role::{Control, Mitigation, Sham};
use fdwindow::report::verdict::Window::{ForkWindow, PosixSpawn};
use fdwindow_fix::base::child::HeldChild;
use fdwindow_fix::base::scratch::Scratch;

pub static PROBE: Probe = Probe {
    hazard: "etxtbsy",
    about: "Checks whether executing a file just written fails with ETXTBSY while a forked child holds its write descriptor.",
    trials: 10,
    race: Duration::from_millis(150),
    arms: &[
        Arm {
            id: "write-then-exec",
            role: Control,
            about: "Write a script through a close-on-exec descriptor, close it, exec it.",
            windows: &[ForkWindow, PosixSpawn],
            trial: write_then_exec,
            ..ARM
        },
        Arm {
            id: "spawn-lock",
            role: Mitigation,
            about: "Open-to-close under the shared side of fdwindow::hazards::spawn_lock::SPAWN_LOCK; forks and the exec under its exclusive side. Sham-tested: its thread choreography differs from the control.",
            windows: &[ForkWindow],
            trial: spawn_lock,
            no_copy: &[ForkWindow],
            ..ARM
        },
        Arm {
            id: "spawn-lock-sham",
            role: Sham,
            about: "spawn-lock's code with the lock switched off: the writer keeps the file open until the child has forked.",
            windows: &[ForkWindow],
            trial: spawn_lock_sham,
            ..ARM
        },
        Arm {
            id: "retry-on-etxtbsy",
            role: Mitigation,
            about: "Exec, and on ETXTBSY retry up to 7 times with exponential backoff from 50 us, against real posix_spawn children.",
            windows: &[PosixSpawn],
            trial: retry_on_etxtbsy,
            ..ARM
        },
        Arm {
            id: "retry-on-etxtbsy-short-stall",
            role: Mitigation,
            about: "The same retry, against a child parked before exec until half the retry's attempts have failed with ETXTBSY, then let go by the parent. Sham-tested: the stall differs from the control's child.",
            windows: &[ForkWindow],
            trial: retry_short_stall,
            timed: true,
            ..ARM
        },
        Arm {
            id: "retry-on-etxtbsy-short-stall-sham",
            role: Sham,
            about: "The short stall with the retry switched off: one attempt.",
            windows: &[ForkWindow],
            trial: retry_short_stall_sham,
            timed: true,
            ..ARM
        },
        Arm {
            id: "retry-on-etxtbsy-long-stall",
            role: Mitigation,
            about: "The same retry, against a child parked before exec until twice the retry's attempts have failed: longer than the retry lasts, so it gives up.",
            windows: &[ForkWindow],
            trial: retry_long_stall,
            timed: true,
            ..ARM
        },
    ],
    observe: Some(exec_while_open),
};

/// Runs this probe with `args` (those after `fdwindow probe etxtbsy`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE, args)
}

const SCRIPT: &[u8] = b"#!/bin/sh\nexit 0\n";
/// Attempts in all for `retry-on-etxtbsy`; the waits between them double
/// from [`FIRST_BACKOFF`]: bounded polling, not a guess at a duration.
const ATTEMPTS: u32 = 8;
const FIRST_BACKOFF: Duration = Duration::from_micros(50);

/// Creates `path` executable and writes the script; the descriptor stays open.
fn write_script(path: &Path) -> io::Result<File> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(path)?;
    file.write_all(SCRIPT)?;
    Ok(file)
}

/// Spawns the script and reaps it: `Ok(false)` when it ran, `Ok(true)` on
/// `ETXTBSY`.
fn exec_busy(path: &Path) -> Result<bool, Fault> {
    let spawned = Command::new(path)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        Ok(mut child) => {
            let status = child.wait().ctx("wait for the script")?;
            if status.success() {
                Ok(false)
            } else {
                Err(Fault::Broken(format!("the script ended with {status}")))
            }
        }
        Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => Ok(true),
        Err(e) => Err(Fault::Broken(format!("exec the script: {e}"))),
    }
}

fn write_then_exec(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let path = t.fresh_path("script");
    let file = write_script(&path).ctx("write the script")?;
    t.during_window(file.as_raw_fd(), || {
        drop(file);
        exec_busy(&path)
    })
}

fn spawn_lock(t: &mut Trial<'_>) -> Result<bool, Fault> {
    locked_trial(t, true)
}

fn spawn_lock_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    locked_trial(t, false)
}

/// 1. The writer holds the shared side from open to close (with `locked`).
/// 2. A spawner asks for the exclusive side to fork a child that parks
///    before exec. 3. The writer parks until that child is parked (the sham)
///    or the spawner waits for the lock (the fix); then closes and lets go.
/// 4. The script is exec'd (under the exclusive side) while the child is
///    still parked.
fn locked_trial(t: &mut Trial<'_>, locked: bool) -> Result<bool, Fault> {
    // The child parked in the gap is this trial's own window.
    t.own_spawn();
    let path = t.fresh_path("script");
    let mut copy_check = Ok(false);
    let (file, held, _gap) = hold_in_gap(
        &SPAWN_LOCK,
        locked,
        Instant::now() + GAP_DEADLINE,
        || write_script(&path).map(Some),
        |pid, file| {
            copy_check = t.child_holds(pid, file.as_ref().map(AsRawFd::as_raw_fd).as_slice());
        },
        |file| {
            drop(file.take());
            Ok(())
        },
    )
    .map_err(|e| match e.kind() {
        io::ErrorKind::TimedOut => Fault::NotConfirmed(e.to_string()),
        _ => Fault::Broken(format!("the spawn-lock gap: {e}")),
    })?;
    copy_check?;
    debug_assert!(file.is_none());
    let busy = {
        let _spawning = locked.then(|| SPAWN_LOCK.spawning());
        exec_busy(&path)
    };
    held.release().ctx("release the held child")?;
    busy
}

/// How long a trial waits for its spawner before the gap counts as unconfirmed.
const GAP_DEADLINE: Duration = Duration::from_secs(30);

fn retry_short_stall(t: &mut Trial<'_>) -> Result<bool, Fault> {
    stalled_retry(t, ATTEMPTS / 2, ATTEMPTS)
}

fn retry_short_stall_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    stalled_retry(t, ATTEMPTS / 2, 1)
}

fn retry_long_stall(t: &mut Trial<'_>) -> Result<bool, Fault> {
    stalled_retry(t, ATTEMPTS * 2, ATTEMPTS)
}

/// The retry (`attempts` attempts) against a child parked before exec for
/// `stall` failed attempts: [`Stall`] lets the child go, and awaits its exec,
/// once `stall` attempts have met `ETXTBSY`.
fn stalled_retry(t: &mut Trial<'_>, stall: u32, attempts: u32) -> Result<bool, Fault> {
    // The stalled child is this trial's own window.
    t.own_spawn();
    let path = t.fresh_path("script");
    let file = write_script(&path).ctx("write the script")?;
    let held = HeldChild::hold().map_err(|e| match e.kind() {
        io::ErrorKind::TimedOut => {
            Fault::NotConfirmed(format!("hold a child in the fork window: {e}"))
        }
        _ => Fault::Broken(format!("hold a child in the fork window: {e}")),
    })?;
    // The retry is tried against the child's copy of the script.
    t.require_copy(held.pid(), file.as_raw_fd())?;
    drop(file);
    let mut stalled = Stall::new(held, stall);
    let (busy, retries) = retry(attempts, || {
        let busy = exec_busy(&path)?;
        stalled.failed_attempt(busy)?;
        Ok(busy)
    })?;
    stalled.finish()?;
    t.tally("retries", &retries);
    Ok(busy)
}

/// A child parked before exec until a count of failed attempts: the stall
/// is measured in the retry's attempts, so it ends where it is declared to,
/// independent of how long the backoff sleeps take.
struct Stall {
    held: Option<HeldChild>,
    left: u32,
}

impl Stall {
    fn new(held: HeldChild, attempts: u32) -> Stall {
        Stall {
            held: Some(held),
            left: attempts,
        }
    }

    /// Counts one attempt; after the `attempts`-th failed one the child is
    /// let go and its exec awaited, so the next attempt meets no holder.
    fn failed_attempt(&mut self, busy: bool) -> Result<(), Fault> {
        if !busy {
            return Ok(());
        }
        self.left = self.left.saturating_sub(1);
        if self.left == 0
            && let Some(child) = self.held.take()
        {
            child.release().ctx("release the stalled child")?;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(), Fault> {
        match self.held.take() {
            Some(child) => child.release().ctx("release the held child"),
            None => Ok(()),
        }
    }
}

/// The retry: up to `attempts` calls of `attempt` (true: `ETXTBSY`), the
/// waits between them doubling from [`FIRST_BACKOFF`]. Returns whether it
/// gave up, and the tally value (the retries it took, or "gave up").
fn retry(
    attempts: u32,
    mut attempt: impl FnMut() -> Result<bool, Fault>,
) -> Result<(bool, String), Fault> {
    let mut wait = FIRST_BACKOFF;
    for n in 0..attempts {
        if !attempt()? {
            return Ok((false, n.to_string()));
        }
        if n + 1 < attempts {
            std::thread::sleep(wait);
            wait *= 2;
        }
    }
    Ok((true, "gave up".to_owned()))
}

fn retry_on_etxtbsy(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let path = t.fresh_path("script");
    let file = write_script(&path).ctx("write the script")?;
    let (busy, retries) = t.during_window(file.as_raw_fd(), || {
        drop(file);
        retry(ATTEMPTS, || exec_busy(&path))
    })?;
    t.tally("retries", &retries);
    Ok(busy)
}

/// What this kernel answers with no fork at all: exec while this process
/// itself still holds the write descriptor, and after closing it.
fn exec_while_open(scratch: &Scratch, _: Settings) -> Vec<Table> {
    let case = |close_first: bool| -> String {
        let path = scratch.fresh("script");
        let file = match write_script(&path) {
            Ok(file) => file,
            Err(e) => return format!("broken: write the script: {e}"),
        };
        if close_first {
            drop(file);
            errno_name(exec_busy(&path))
        } else {
            let result = errno_name(exec_busy(&path));
            drop(file);
            result
        }
    };
    let rows = vec![
        vec!["write descriptor open".to_owned(), case(false)],
        vec!["write descriptor closed".to_owned(), case(true)],
    ];
    vec![Table {
        id: "exec-while-open".into(),
        about: "Exec of a script by this process, no fork involved: while it still holds the script's write \
                descriptor, and after closing it. Linux answers ETXTBSY to the first; the platform record names \
                the kernel release."
            .into(),
        columns: vec!["case".into(), "exec".into()],
        rows,
        problem: None,
    }]
}

fn errno_name(r: Result<bool, Fault>) -> String {
    match r {
        Ok(true) => "ETXTBSY".into(),
        Ok(false) => "runs".into(),
        Err(Fault::Broken(e)) => format!("broken: {e}"),
        Err(Fault::Unsupported(e)) => format!("unsupported: {e}"),
        Err(Fault::NotConfirmed(e)) => format!("not confirmed: {e}"),
    }
}
