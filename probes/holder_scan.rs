//! Checks whether a scan for "who holds this listener" counts a pre-exec fork
//! as a second holder, and whether filtering holders by executable hides it.
//!
//! Method: each trial binds a loopback listener, then:
//! 1. a helper thread forks a child that parks between fork and exec (as a
//!    co-tenant test's `pre_exec` spawn does): it holds a copy of the listener
//!    and still runs this executable;
//! 2. the arm scans `/proc/*/fd` for processes holding the listener's inode,
//!    the way its code does;
//! 3. a hit is more than one holder left after the arm's filter. The number of
//!    holders seen is tallied per trial.
//!
//! `run-isolated` models the fix write-up 001 shipped (HACK-1347: each exposed
//! test re-runs alone in a child test process): this probe re-executes itself
//! with a dedicated first argument, handled before anything else, and that
//! process binds its own listener and scans once, while this one keeps its
//! co-tenant fork parked. The isolated process has one thread and never
//! spawns, so it cannot start loops of its own.

use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use fdwindow::child::HeldChild;
use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Trial};
use fdwindow::holders::{children_of, exe_of, holders_of};
use fdwindow::verdict::Role::{Control, Mitigation};
use fdwindow::verdict::Window::ForkWindow;

/// The first argument that makes this binary the isolated scanner.
const ISOLATED_FLAG: &str = "--fdwindow-isolated-scan";
/// The isolated scanner's exit status when the scan is unsupported here.
const EXIT_UNSUPPORTED: u8 = 4;
/// How long children may take to exec before `scan-after-exec` is broken.
const EXEC_TIMEOUT: Duration = Duration::from_secs(30);

static PROBE: Probe = Probe {
    hazard: "holder-scan",
    about: "Checks whether a /proc scan for a listener's holders counts a pre-exec fork as a second holder.",
    trials: 10,
    race: Duration::ZERO,
    arms: &[
        Arm {
            id: "scan-during-window",
            role: Control,
            about: "Count every process holding the listener's inode in /proc/*/fd.",
            windows: &[ForkWindow],
            trial: scan_during_window,
            ..ARM
        },
        Arm {
            id: "exe-filter",
            role: Mitigation,
            about: "Count only holders whose /proc/PID/exe is the selected executable, \
                here our own (a test binary scanning for itself).",
            windows: &[ForkWindow],
            trial: exe_filter,
            ..ARM
        },
        Arm {
            id: "run-isolated",
            role: Mitigation,
            about: "The listener and the scan live in a child process of their own \
                (this binary re-run with one flag) where no other thread spawns.",
            windows: &[ForkWindow],
            trial: run_isolated,
            avoids: Some(
                "the listener lives in a process of its own where no thread spawns, and the held fork is of a process that never had it: no copy exists to be counted",
            ),
            ..ARM
        },
        Arm {
            id: "scan-after-exec",
            role: Mitigation,
            about: "Wait until no child of ours still runs our executable (every fork \
                has exec'd), then count holders.",
            windows: &[ForkWindow],
            trial: scan_after_exec,
            avoids: Some(
                "the count waits until every fork of ours has exec'd, when the kernel has closed their close-on-exec copies: the window is over before the scan",
            ),
            ..ARM
        },
    ],
    observe: None,
};

fn main() -> ExitCode {
    // Before anything else, so the isolated scanner never reaches the harness.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == ISOLATED_FLAG)
    {
        return isolated_scan();
    }
    fdwindow::harness::main(&PROBE)
}

/// The isolated process: bind, scan once, print the holder count.
fn isolated_scan() -> ExitCode {
    let scan = TcpListener::bind("127.0.0.1:0").and_then(|l| holders_of(&l));
    match scan {
        Ok(holders) => {
            println!("{}", holders.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("isolated scan: {e}");
            match e.raw_os_error() {
                Some(libc::ENOSYS) => ExitCode::from(EXIT_UNSUPPORTED),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

fn listener() -> Result<TcpListener, Fault> {
    TcpListener::bind("127.0.0.1:0").ctx("bind a loopback listener")
}

fn count(t: &mut Trial<'_>, holders: usize) -> bool {
    t.tally("holders", &holders.to_string());
    holders > 1
}

fn our_exe() -> Result<PathBuf, Fault> {
    std::env::current_exe().ctx("find our executable")
}

fn scan_during_window(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let l = listener()?;
    let n = t.during_window(|| holders_of(&l).ctx_feature("scan /proc for holders"))?;
    Ok(count(t, n.len()))
}

fn exe_filter(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let (l, me) = (listener()?, our_exe()?);
    let n = t.during_window(|| {
        let holders = holders_of(&l).ctx_feature("scan /proc for holders")?;
        // A holder whose exe cannot be read has gone: not a holder.
        Ok(holders
            .into_iter()
            .filter(|&p| exe_of(p).is_ok_and(|e| e == me))
            .count())
    })?;
    Ok(count(t, n))
}

fn run_isolated(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let me = our_exe()?;
    let out = t.during_window(|| {
        Command::new(&me)
            .arg(ISOLATED_FLAG)
            .env_clear()
            .stdin(Stdio::null())
            .output()
            .ctx("run the isolated scanner")
    })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => {}
        Some(c) if c == i32::from(EXIT_UNSUPPORTED) => {
            return Err(Fault::Unsupported(stderr.trim().to_owned()));
        }
        _ => {
            return Err(Fault::Broken(format!(
                "isolated scanner: {}: {}",
                out.status,
                stderr.trim()
            )));
        }
    }
    let n = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|e| Fault::Broken(format!("isolated scanner's count: {e}")))?;
    Ok(count(t, n))
}

/// Children of ours that still run our executable: forks that have not exec'd.
///
/// Linux switches `/proc/PID/exe` (exec_mmap) a few steps before it closes
/// the close-on-exec descriptors (do_close_on_exec, both in fs/exec.c
/// begin_new_exec), so a scan could in principle still meet an exec'd
/// child's copy; the scan that follows takes far longer than that gap.
fn pending_forks(me: &Path) -> io::Result<Vec<u32>> {
    Ok(children_of(std::process::id())?
        .into_iter()
        .filter(|&p| exe_of(p).is_ok_and(|e| e == *me))
        .collect())
}

fn scan_after_exec(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let (l, me) = (listener()?, our_exe()?);
    // The window by hand: the co-tenant's fork must exec on its own while the
    // scanner waits, so it is released from another thread, as the co-tenant's
    // own spawn would finish.
    let held = HeldChild::hold().ctx("hold a child in the fork window")?;
    let seen = pending_forks(&me).ctx_feature("list our children")?.len();
    t.tally("pending-forks-seen", &seen.to_string());
    let co_tenant = std::thread::spawn(move || held.release());
    let deadline = Instant::now() + EXEC_TIMEOUT;
    let mut pause = Duration::from_micros(50);
    let waited = loop {
        match pending_forks(&me) {
            Ok(p) if p.is_empty() => break Ok(()),
            Ok(_) if Instant::now() >= deadline => {
                break Err(Fault::Broken("children never exec'd".into()));
            }
            Ok(_) => {
                // Bounded polling with backoff: /proc has no event for exec.
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(10));
            }
            Err(e) => break Err(e).ctx("list our children"),
        }
    };
    let scan = waited.and_then(|()| holders_of(&l).ctx_feature("scan /proc for holders"));
    let released = co_tenant
        .join()
        .map_err(|_| Fault::Broken("the co-tenant thread panicked".into()))?;
    let holders = scan?;
    released.ctx("release the held child")?;
    Ok(count(t, holders.len()))
}
