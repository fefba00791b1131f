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
//! `spawn-lock` and its sham run `fdwindow::spawn_lock::spawn_in_gap`: the
//! writer parks with the file open until the spawner has either forked its
//! parked child (the sham: the child holds the copy, every time) or is
//! waiting for the lock (the fix: the fork comes after the close).
//!
//! `retry-on-etxtbsy` meets a child that stalls before exec for a stated
//! time: the retry's own attempts and backoff run, and the parked child is
//! let go (and has exec'd) at the first attempt after the stall has passed.
//! The short stall is half the retry's budget, the long one eight times it
//! (wide enough that sleeps stretched by a loaded machine stay inside it),
//! so the cells say what seed 001 says in words: a bounded retry outlasts a
//! stall shorter than its budget and cannot outlast a longer one (a slow
//! `pre_exec`, a stopped child). The stall is the experiment's variable, a
//! duration on purpose, not a synchronisation: the child's exec is awaited.
//! Two arms rather than a tally, because each stall has its own verdict and
//! its own claim. The short stall has a sham (one attempt, no retry), which
//! shows that the stall does block the first exec.
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
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use std::time::Instant;

use fdwindow::child::HeldChild;
use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Settings, Trial};
use fdwindow::report::Table;
use fdwindow::scratch::Scratch;
use fdwindow::spawn_lock::{SPAWN_LOCK, spawn_in_gap};
use fdwindow::verdict::Role::{Control, Mitigation, Sham};
use fdwindow::verdict::Window::{ForkWindow, PosixSpawn};

static PROBE: Probe = Probe {
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
            about: "Open-to-close under the shared side of fdwindow::spawn_lock::SPAWN_LOCK; forks and the exec under its exclusive side. Sham-tested: its thread choreography differs from the control.",
            windows: &[ForkWindow],
            trial: spawn_lock,
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
            about: "Exec, and on ETXTBSY retry up to 7 times with exponential backoff from 50 us (about 6 ms in all), against real posix_spawn children.",
            windows: &[PosixSpawn],
            trial: retry_on_etxtbsy,
            ..ARM
        },
        Arm {
            id: "retry-on-etxtbsy-short-stall",
            role: Mitigation,
            about: "The same retry, against a child parked before exec for half the retry's budget (about 3 ms). Sham-tested: the stall differs from the control's child.",
            windows: &[ForkWindow],
            trial: retry_short_stall,
            ..ARM
        },
        Arm {
            id: "retry-on-etxtbsy-short-stall-sham",
            role: Sham,
            about: "The short stall with the retry switched off: one attempt.",
            windows: &[ForkWindow],
            trial: retry_short_stall_sham,
            ..ARM
        },
        Arm {
            id: "retry-on-etxtbsy-long-stall",
            role: Mitigation,
            about: "The same retry, against a child parked before exec for eight times the retry's budget (about 51 ms).",
            windows: &[ForkWindow],
            trial: retry_long_stall,
            ..ARM
        },
    ],
    observe: Some(exec_while_open),
};

fn main() -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE)
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
    t.during_window(|| {
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
    let path = t.fresh_path("script");
    let (file, held, _gap) = spawn_in_gap(
        &SPAWN_LOCK,
        locked,
        Instant::now() + GAP_DEADLINE,
        || write_script(&path).map(Some),
        |file| {
            drop(file.take());
            Ok(())
        },
        HeldChild::hold,
    )
    .map_err(|e| match e.kind() {
        io::ErrorKind::TimedOut => Fault::NotConfirmed(e.to_string()),
        _ => Fault::Broken(format!("the spawn-lock gap: {e}")),
    })?;
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

/// The retry's whole backoff: 50 us doubling over 7 waits.
fn retry_budget() -> Duration {
    (0..ATTEMPTS - 1).map(|i| FIRST_BACKOFF * 2u32.pow(i)).sum()
}

fn retry_short_stall(t: &mut Trial<'_>) -> Result<bool, Fault> {
    stalled_retry(t, retry_budget() / 2, ATTEMPTS)
}

fn retry_short_stall_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    stalled_retry(t, retry_budget() / 2, 1)
}

fn retry_long_stall(t: &mut Trial<'_>) -> Result<bool, Fault> {
    stalled_retry(t, retry_budget() * 8, ATTEMPTS)
}

/// The retry against a child parked before exec for `stall`: at the first
/// attempt after the stall has passed, the child is let go and its exec
/// awaited (release returns after it), then that attempt runs.
fn stalled_retry(t: &mut Trial<'_>, stall: Duration, attempts: u32) -> Result<bool, Fault> {
    let path = t.fresh_path("script");
    let file = write_script(&path).ctx("write the script")?;
    let mut held = Some(HeldChild::hold().ctx("hold a child in the fork window")?);
    drop(file);
    let started = Instant::now();
    let mut wait = FIRST_BACKOFF;
    let mut busy = true;
    for attempt in 0..attempts {
        if started.elapsed() >= stall
            && let Some(child) = held.take()
        {
            child.release().ctx("release the stalled child")?;
        }
        if !exec_busy(&path)? {
            busy = false;
            t.tally("retries", &attempt.to_string());
            break;
        }
        if attempt + 1 < attempts {
            std::thread::sleep(wait);
            wait *= 2;
        }
    }
    if busy {
        t.tally("retries", "gave up");
    }
    if let Some(child) = held {
        child.release().ctx("release the held child")?;
    }
    Ok(busy)
}

fn retry_on_etxtbsy(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let path = t.fresh_path("script");
    let file = write_script(&path).ctx("write the script")?;
    let (busy, retries) = t.during_window(|| {
        drop(file);
        let mut wait = FIRST_BACKOFF;
        for attempt in 0..ATTEMPTS {
            if !exec_busy(&path)? {
                return Ok((false, attempt));
            }
            if attempt + 1 < ATTEMPTS {
                std::thread::sleep(wait);
                wait *= 2;
            }
        }
        Ok((true, ATTEMPTS - 1))
    })?;
    let value = if busy {
        "gave up".to_owned()
    } else {
        retries.to_string()
    };
    t.tally("retries", &value);
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
