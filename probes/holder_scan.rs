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
//! `run-isolated` is the fix write-up 001 shipped (HACK-1347: each exposed
//! test re-runs alone in a child test process), as users get it:
//! `fdwindow::fix::isolate::run_isolated_exe` runs this probe again with
//! libtest's arguments (`--exact holder_scan_isolated --include-ignored
//! --test-threads=1`), which it answers, before anything else, as a one-test
//! runner would: the "test" binds its own listener, scans once and passes
//! only with a single holder, while this process keeps its co-tenant fork
//! parked. The isolated process has one thread and never spawns, so it cannot
//! start loops of its own.

use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fdwindow::child::HeldChild;
use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Trial};
use fdwindow::holders::{children_of, exe_of, holders_of};
use fdwindow::verdict::Role::{Control, Mitigation};
use fdwindow::verdict::Window::ForkWindow;

/// The isolated "test" that `run_isolated_exe` selects with `--exact`.
const ISOLATED_TEST: &str = "holder_scan_isolated";
/// How the isolated test says the scan is unsupported here.
const UNSUPPORTED: &str = "holder scan unsupported:";
/// How the isolated test reports the holders it counted.
const HOLDERS: &str = "holders seen:";
/// The hang guard for one isolated run.
const ISOLATED_LIMIT: Duration = Duration::from_secs(60);
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
    // Before anything else, so the isolated test never reaches the harness.
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--exact") {
        return isolated_test(&args);
    }
    fdwindow::harness::main(&PROBE)
}

/// Answers `--exact NAME --include-ignored --test-threads=1` as libtest
/// would for a binary holding one ignored test, `holder_scan_isolated`: bind,
/// scan once, pass only with a single holder (this process).
fn isolated_test(args: &[String]) -> ExitCode {
    if args.get(1).map(String::as_str) != Some(ISOLATED_TEST) {
        // libtest's answer for a name it does not have: nothing ran.
        println!(
            "\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 1 filtered out\n"
        );
        return ExitCode::SUCCESS;
    }
    println!("\nrunning 1 test");
    let scan = TcpListener::bind("127.0.0.1:0").and_then(|l| holders_of(&l));
    let passed = match scan {
        Ok(holders) => {
            println!("{HOLDERS} {}", holders.len());
            holders.len() == 1
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
            println!("{UNSUPPORTED} {e}");
            false
        }
        Err(e) => {
            println!("isolated scan: {e}");
            false
        }
    };
    if passed {
        println!(
            "test {ISOLATED_TEST} ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
        );
        ExitCode::SUCCESS
    } else {
        println!(
            "test {ISOLATED_TEST} ... FAILED\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n"
        );
        ExitCode::from(101)
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
    let outcome = t.during_window(|| {
        Ok(fdwindow::fix::isolate::run_isolated_exe(
            &me,
            ISOLATED_TEST,
            ISOLATED_LIMIT,
        ))
    })?;
    let Err(e) = outcome else {
        // Passed: the isolated test saw exactly one holder, its own process.
        return Ok(count(t, 1));
    };
    let text = e.to_string();
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_owned()))
    };
    if let Some(why) = field(UNSUPPORTED) {
        return Err(Fault::Unsupported(why));
    }
    match field(HOLDERS).and_then(|n| n.parse::<usize>().ok()) {
        // The helper returned Err because the test failed: a second holder.
        Some(n) => Ok(count(t, n)),
        None => Err(Fault::Broken(format!("the isolated test: {text}"))),
    }
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
