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
use std::sync::mpsc;
use std::time::Duration;

use fdwindow::child::HeldChild;
use fdwindow::harness::{Arm, Context, Fault, Probe, Settings, Trial};
use fdwindow::report::Table;
use fdwindow::scratch::Scratch;
use fdwindow::spawn_lock::SPAWN_LOCK;
use fdwindow::verdict::Role::{Control, Mitigation};
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
        },
        Arm {
            id: "spawn-lock",
            role: Mitigation,
            about: "Open-to-close under the shared side of fdwindow::spawn_lock::SPAWN_LOCK; forks and the exec under its exclusive side.",
            windows: &[ForkWindow],
            trial: spawn_lock,
        },
        Arm {
            id: "retry-on-etxtbsy",
            role: Mitigation,
            about: "Exec, and on ETXTBSY retry up to 7 times with exponential backoff from 50 us (about 6 ms in all).",
            // Not in the fork window: a child parked there until the trial
            // ends outlasts any bounded retry by construction, which would be
            // a verdict decided by the harness, not measured.
            windows: &[PosixSpawn],
            trial: retry_on_etxtbsy,
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
    let path = t.fresh_path("script");
    // 1. The writer holds the shared side from open to close. 2. A spawner
    // announces itself and asks for the exclusive side to fork a child that
    // parks before exec. 3. The writer closes and lets go; only then can the
    // fork copy the descriptor table. 4. The script is exec'd (under the
    // exclusive side) while that child is still parked.
    let creating = SPAWN_LOCK.creating();
    let file = write_script(&path).ctx("write the script")?;
    let held = std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        let spawner = s.spawn(move || {
            let _ = tx.send(());
            let _spawning = SPAWN_LOCK.spawning();
            HeldChild::hold()
        });
        let _ = rx.recv();
        drop(file);
        drop(creating);
        spawner
            .join()
            .map_err(|_| Fault::Broken("the spawner panicked".into()))?
            .ctx("hold a child in the fork window")
    })?;
    let busy = {
        let _spawning = SPAWN_LOCK.spawning();
        exec_busy(&path)
    };
    held.release().ctx("release the held child")?;
    busy
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
    }
}
