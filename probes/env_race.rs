//! Checks whether `setenv` in one thread tears or crashes a concurrent read of
//! the environment through libc's `getenv`, as C code, DNS resolution or a
//! child spawn does, bypassing std's environment lock.
//!
//! Method: each trial runs in a fresh child process (this binary re-run with
//! a dedicated first argument, handled before anything else; that process
//! never spawns, so it cannot start loops of its own):
//! 1. before any thread starts, it sets 256 variables, then the target
//!    `FDWINDOW_TARGET`;
//! 2. two threads are released by a `Barrier`: the writer unsets and re-sets
//!    each of the 256 once (each unset shifts the target down a slot, each
//!    re-set appends and may reallocate the environ array), then adds and
//!    removes 64 more, 4 times, changing the environment as the arm does;
//! 3. until the writer is done, the reader reads the target as the arm does;
//! 4. the child exits 3 if a read was missing or wrong (a torn read).
//!
//! A hit is a torn read or an abnormal exit (a signal, or a hang past 10 s);
//! the child's end is tallied. The libc name and version are in the report's
//! platform: glibc made getenv safe against concurrent setenv in 2.41.

use std::ffi::{CStr, CString};
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitCode, Stdio};
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Trial};
use fdwindow::report::verdict::Kind;
use fdwindow::report::verdict::Role::{Control, Mitigation, Sham};
use fdwindow::report::verdict::Window::InProcess;

/// The first argument that makes this binary one trial's child.
const CHILD_FLAG: &str = "--fdwindow-env-race-child";
/// The child's exit status for a torn read.
const EXIT_TORN: i32 = 3;
/// A child still running after this is killed and counted as hung.
const CHILD_TIMEOUT: Duration = Duration::from_secs(10);
/// Reads of the target at most per trial (the reader stops when the writer is done).
const MAX_READS: usize = 1_000_000;
/// Variables ahead of the target that the writer unsets and re-sets once each.
const CHURN: usize = 256;
/// Variables the writer adds behind the target and removes again, per cycle.
const GROW: usize = 64;
/// Add-and-remove cycles of the `GROW` variables per trial.
const GROW_CYCLES: usize = 4;
const TARGET: &CStr = c"FDWINDOW_TARGET";
const EXPECTED: &CStr = c"the-value-every-read-must-see";

pub static PROBE: Probe = Probe {
    hazard: "env-race",
    about: "Checks whether setenv in one thread tears or crashes a concurrent libc getenv in another.",
    trials: 20,
    race: Duration::ZERO,
    arms: &[
        Arm {
            id: "setenv-vs-libc-getenv",
            role: Control,
            about: "One thread calls libc setenv/unsetenv while another calls libc getenv.",
            windows: &[InProcess],
            trial: |t| trial(t, "setenv-vs-libc-getenv"),
            kind: Some(Kind::Statistical),
            ..ARM
        },
        Arm {
            id: "std-env-only",
            role: Mitigation,
            about: "Both sides through std::env (set_var/remove_var and var), which take std's lock. Sham-tested: its writer runs std's code, not libc's.",
            windows: &[InProcess],
            trial: |t| trial(t, "std-env-only"),
            kind: Some(Kind::Statistical),
            ..ARM
        },
        Arm {
            id: "std-env-only-sham",
            role: Sham,
            about: "std-env-only's writer (std::env::set_var/remove_var) against the control's libc getenv reader, which takes no lock: std's code with the shared lock switched off on the reading side.",
            windows: &[InProcess],
            trial: |t| trial(t, "std-env-only-sham"),
            kind: Some(Kind::Statistical),
            ..ARM
        },
        Arm {
            id: "one-env-guard",
            role: Mitigation,
            about: "fdwindow_fix::env: one process-wide guard owns every change (and restores it); readers hold it too. Sham-tested: its writer runs fix::env's code, not libc's.",
            windows: &[InProcess],
            trial: |t| trial(t, "one-env-guard"),
            kind: Some(Kind::Statistical),
            ..ARM
        },
        Arm {
            id: "one-env-guard-sham",
            role: Sham,
            about: "one-env-guard's writer (fdwindow_fix::env) against the control's libc getenv reader, which does not hold the guard: the guard switched off on the reading side.",
            windows: &[InProcess],
            trial: |t| trial(t, "one-env-guard-sham"),
            kind: Some(Kind::Statistical),
            ..ARM
        },
        Arm {
            id: "pass-explicitly",
            role: Mitigation,
            about: "No environment change: the writer passes its values as arguments; the reader's libc getenv stays.",
            windows: &[InProcess],
            trial: |t| trial(t, "pass-explicitly"),
            kind: Some(Kind::Statistical),
            avoids: Some("no thread writes the environment, so a reader has nothing to race"),
            ..ARM
        },
    ],
    observe: None,
};

/// Runs this probe with `args` (those after `fdwindow probe env-race`).
pub fn main(args: Vec<String>) -> ExitCode {
    // Before anything else: a child runs its one race and exits, never
    // reaching the harness, so it can never spawn children of its own.
    if args.first().map(String::as_str) == Some(CHILD_FLAG) {
        return race_child(args.get(1).map_or("", String::as_str));
    }
    fdwindow::harness::main(&PROBE, args)
}

/// One trial: run the child, wait for it (bounded), classify its end.
fn trial(t: &mut Trial<'_>, arm: &str) -> Result<bool, Fault> {
    let mut child = fdwindow::harness::probe_command(PROBE.hazard)
        .ctx("find our executable")?
        .arg(CHILD_FLAG)
        .arg(arm)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ctx("spawn the race child")?;
    let deadline = Instant::now() + CHILD_TIMEOUT;
    let mut pause = Duration::from_micros(100);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                child.wait().ctx("reap the hung race child")?;
                break None;
            }
            // Bounded polling with backoff: std has no wait with a timeout.
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(e).ctx("wait for the race child");
            }
        }
    };
    let end = match status {
        None => "hung".to_owned(),
        Some(s) => match (s.code(), s.signal()) {
            (Some(0), _) => "clean".to_owned(),
            (Some(EXIT_TORN), _) => "torn-read".to_owned(),
            (_, Some(sig)) => format!("signal-{sig}"),
            (Some(code), None) => {
                return Err(Fault::Broken(format!(
                    "the race child failed with exit {code}"
                )));
            }
            // Stopped or continued: wait reports neither without WUNTRACED.
            (None, None) => return Err(Fault::Broken(format!("the race child: {s}"))),
        },
    };
    t.tally("child", &end);
    Ok(end != "clean")
}

/// The race itself, in the child. Exit 0 clean, 3 torn read, 2 bad usage.
fn race_child(arm: &str) -> ExitCode {
    // A crash is an expected outcome here: no core file for it.
    let no_core = rustix::process::Rlimit {
        current: Some(0),
        maximum: Some(0),
    };
    let _ = rustix::process::setrlimit(rustix::process::Resource::Core, no_core);
    let churn: Vec<CString> = (0..CHURN)
        .map(|i| CString::new(format!("FDWINDOW_CHURN_{i}")).expect("no NUL"))
        .collect();
    let grow: Vec<CString> = (0..GROW)
        .map(|i| CString::new(format!("FDWINDOW_GROW_{i}")).expect("no NUL"))
        .collect();
    for name in churn.iter().map(CString::as_c_str).chain([TARGET]) {
        let value = if name == TARGET { EXPECTED } else { c"v" };
        // No other thread exists yet, so nothing reads the environment concurrently.
        libc_write(name, Some(value));
    }
    let write: fn(&CStr, Option<&CStr>) = match arm {
        "setenv-vs-libc-getenv" => libc_write,
        "std-env-only" | "std-env-only-sham" => std_write,
        "one-env-guard" | "one-env-guard-sham" => guarded_write,
        "pass-explicitly" => pass_write,
        _ => return ExitCode::from(2),
    };
    let read: fn() -> Option<Vec<u8>> = match arm {
        "std-env-only" => std_read,
        "one-env-guard" => guarded_read,
        // The shams: the fix's writer, the control's unlocked reader.
        _ => libc_read,
    };
    let (started, done) = (Barrier::new(2), AtomicBool::new(false));
    let torn = std::thread::scope(|s| {
        s.spawn(|| {
            started.wait();
            // Each unset of a variable ahead of the target shifts the target
            // down one slot under a scanning reader; each re-set appends and
            // may move (realloc) the whole array.
            for name in &churn {
                write(name, None);
                write(name, Some(c"v"));
            }
            for _ in 0..GROW_CYCLES {
                for name in &grow {
                    write(name, Some(c"g"));
                }
                for name in &grow {
                    write(name, None);
                }
            }
            done.store(true, Ordering::Release);
        });
        started.wait();
        let mut torn = 0;
        for _ in 0..MAX_READS {
            if done.load(Ordering::Acquire) {
                break;
            }
            torn += usize::from(read().as_deref() != Some(EXPECTED.to_bytes()));
        }
        torn
    });
    if torn > 0 {
        ExitCode::from(EXIT_TORN as u8)
    } else {
        ExitCode::SUCCESS
    }
}

/// `setenv(3)`/`unsetenv(3)` directly: the naive code.
fn libc_write(name: &CStr, value: Option<&CStr>) {
    // SAFETY: deliberately racy against `libc_read`: this child exists only
    // to measure that race, and whatever it breaks ends with this process,
    // whose only output is its exit status.
    match value {
        // SAFETY: as above.
        Some(v) => unsafe { libc::setenv(name.as_ptr(), v.as_ptr(), 1) },
        // SAFETY: as above.
        None => unsafe { libc::unsetenv(name.as_ptr()) },
    };
}

/// `getenv(3)` directly, copied out at once.
fn libc_read() -> Option<Vec<u8>> {
    // SAFETY: see `libc_write`: the race is the measurement. The pointer is
    // copied from before any later call of ours could free it.
    let p = unsafe { libc::getenv(TARGET.as_ptr()) };
    // SAFETY: a non-null getenv result is a NUL-terminated string (see above).
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes().to_vec())
}

fn std_write(name: &CStr, value: Option<&CStr>) {
    let name = name.to_str().expect("ASCII");
    // SAFETY: in `std-env-only`'s child every thread reads and writes the
    // environment only through std::env, which serialises them on std's
    // environment lock: the condition std's documentation sets for set_var
    // and remove_var. In the sham's child the reader is libc's getenv, racy
    // on purpose: that child exists only to measure the race, and its only
    // output is its exit status.
    match value {
        // SAFETY: as above.
        Some(v) => unsafe { std::env::set_var(name, v.to_str().expect("ASCII")) },
        // SAFETY: as above.
        None => unsafe { std::env::remove_var(name) },
    }
}

fn std_read() -> Option<Vec<u8>> {
    std::env::var_os(TARGET.to_str().expect("ASCII")).map(|v| v.into_encoded_bytes())
}

/// The TestEnv of write-up 000, as users get it: `fdwindow_fix::env`. One
/// guard owns each change and restores it when dropped (so each write here is
/// a change and its undoing, both under the guard).
fn guarded_write(name: &CStr, value: Option<&CStr>) {
    let name = name.to_str().expect("ASCII");
    let mut held = fdwindow_fix::env::lock();
    match value {
        // SAFETY: in `one-env-guard`'s child every read and write of the
        // environment goes through fdwindow_fix::env (the arm's premise).
        // In the sham's child libc's getenv reads without the guard, racy on
        // purpose: that child exists only to measure the race.
        Some(v) => unsafe { held.set(name, v.to_str().expect("ASCII")) },
        // SAFETY: as above.
        None => unsafe { held.remove(name) },
    }
}

fn guarded_read() -> Option<Vec<u8>> {
    fdwindow_fix::env::get(TARGET.to_str().expect("ASCII")).map(|v| v.into_encoded_bytes())
}

/// No environment change: the value goes to the code that needs it as an
/// argument (here, into a value the optimiser must keep).
fn pass_write(name: &CStr, value: Option<&CStr>) {
    std::hint::black_box((name, value));
}
