//! Checks whether a scan for "who holds this listener" or "who still holds
//! this file" counts a pre-exec fork as a holder, and whether filtering
//! holders by executable hides it.
//!
//! Method: each trial makes the object first (a loopback listener, or a file
//! it writes, as a fixture does), then:
//! 1. a helper thread forks a child that parks between fork and exec (as a
//!    co-tenant test's `pre_exec` spawn does): it holds a copy of every
//!    descriptor and still runs this executable;
//! 2. the file arms close their file (the fixture is done with it); the
//!    listener arms keep the listener open;
//! 3. the arm scans for the object's holders the way its code does: on Linux
//!    `/proc/*/fd`, on macOS libproc (`fdwindow::hazards::holders`);
//! 4. a hit is a holder the check must not see: a second holder of the
//!    listener, any holder of the closed file. The holders seen and their
//!    kinds (`fdwindow::hazards::holders::classify`) are tallied per trial.
//!
//! `run-isolated` is the fix write-up 001 shipped (HACK-1347: each exposed
//! test re-runs alone in a child test process), as users get it:
//! `fdwindow_fix::isolate::run_isolated_exe` runs this probe again with
//! libtest's arguments (`--exact holder_scan_isolated --include-ignored
//! --test-threads=1`, or `holder_scan_isolated_file`), which it answers,
//! before anything else, as a one-test runner would: the "test" makes its own
//! listener (or writes, closes and removes its own file), scans once and
//! passes only with the holders expected (itself; nobody), while this process
//! keeps its co-tenant fork parked. The isolated process has one thread and
//! never spawns, so it cannot start loops of its own.

use std::fs::File;
use std::io::Write;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Trial};
use fdwindow::hazards::holders::{
    HolderKind, Object, kinds_summary, object_at, object_of, pending_forks, scan,
};
use fdwindow::report::verdict::Role::{Control, Mitigation};
use fdwindow::report::verdict::Window::ForkWindow;
use fdwindow_fix::base::child::HeldChild;

/// The isolated "tests" that `run_isolated_exe` selects with `--exact`.
const ISOLATED_TEST: &str = "holder_scan_isolated";
/// See [`ISOLATED_TEST`]: the file twin.
const ISOLATED_FILE_TEST: &str = "holder_scan_isolated_file";
/// How the isolated test says the scan is unsupported here.
const UNSUPPORTED: &str = "holder scan unsupported:";
/// How the isolated test reports the holders it counted.
const HOLDERS: &str = "holders seen:";
/// The hang guard for one isolated run.
const ISOLATED_LIMIT: Duration = Duration::from_secs(60);
/// How long children may take to exec before `scan-after-exec` is broken.
const EXEC_TIMEOUT: Duration = Duration::from_secs(30);
/// What a fixture writes before it closes the file.
const CONTENT: &[u8] = b"fdwindow holder-scan fixture\n";

pub static PROBE: Probe = Probe {
    hazard: "holder-scan",
    about: "Checks whether a scan for a listener's or a closed file's holders counts a pre-exec fork as a holder.",
    trials: 10,
    race: Duration::ZERO,
    arms: &[
        Arm {
            id: "scan-during-window",
            role: Control,
            about: "Count every process holding the listener (Linux /proc/*/fd, macOS libproc).",
            windows: &[ForkWindow],
            trial: |t| scan_during_window(t, Target::Listener),
            ..ARM
        },
        Arm {
            id: "file-scan-during-window",
            role: Control,
            about: "Write a file, close it, then count every process still holding it, as lsof-style \
                release checks do.",
            windows: &[ForkWindow],
            trial: |t| scan_during_window(t, Target::File),
            ..ARM
        },
        Arm {
            id: "exe-filter",
            role: Mitigation,
            about: "Count only holders running the selected executable, here our own (a test binary \
                scanning for itself).",
            windows: &[ForkWindow],
            trial: |t| exe_filter(t, Target::Listener),
            ..ARM
        },
        Arm {
            id: "file-exe-filter",
            role: Mitigation,
            about: "After the close, count only the file's holders running the selected executable, \
                here our own.",
            windows: &[ForkWindow],
            trial: |t| exe_filter(t, Target::File),
            against: Some("file-scan-during-window"),
            ..ARM
        },
        Arm {
            id: "run-isolated",
            role: Mitigation,
            about: "The listener and the scan live in a child process of their own (this binary \
                re-run as a one-test runner by fdwindow_fix::isolate::run_isolated_exe) where no \
                other thread spawns.",
            windows: &[ForkWindow],
            trial: |t| run_isolated(t, Target::Listener),
            avoids: Some(
                "the listener lives in a process of its own where no thread spawns, and the held fork is of a process that never had it: no copy exists to be counted",
            ),
            no_copy: &[ForkWindow],
            ..ARM
        },
        Arm {
            id: "file-run-isolated",
            role: Mitigation,
            about: "Write, close and scan in a child process of its own (this binary re-run as a \
                one-test runner by fdwindow_fix::isolate::run_isolated_exe) where no other thread \
                spawns.",
            windows: &[ForkWindow],
            trial: |t| run_isolated(t, Target::File),
            against: Some("file-scan-during-window"),
            avoids: Some(
                "the file is written, closed and scanned in a process of its own where no thread spawns, and the held fork is of a process that never had it: no copy exists to be counted",
            ),
            no_copy: &[ForkWindow],
            ..ARM
        },
        Arm {
            id: "scan-after-exec",
            role: Mitigation,
            about: "Wait until no child of ours still runs our executable (every fork \
                has exec'd), then count holders. Judged against its control, with no sham: it \
                is the control's code with only the wait added, and the wait is the fix.",
            windows: &[ForkWindow],
            trial: |t| scan_after_exec(t, Target::Listener),
            ..ARM
        },
        Arm {
            id: "file-scan-after-exec",
            role: Mitigation,
            about: "Close the file, wait until no child of ours still runs our executable, then \
                count its holders. Judged against its control, with no sham: it is the control's \
                code with only the wait added, and the wait is the fix.",
            windows: &[ForkWindow],
            trial: |t| scan_after_exec(t, Target::File),
            against: Some("file-scan-during-window"),
            ..ARM
        },
    ],
    observe: None,
};

/// Runs this probe with `args` (those after `fdwindow probe holder-scan`).
pub fn main(args: Vec<String>) -> ExitCode {
    // Before anything else, so the isolated test never reaches the harness.
    if args.first().map(String::as_str) == Some("--exact") {
        // Through the writer: a closed or full stdout is 141 or 1, no panic.
        return fdwindow::base::out::status(isolated_test(&args));
    }
    fdwindow::harness::main(&PROBE, args)
}

/// What the arm's check looks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// A listener this process still has open: one holder is expected.
    Listener,
    /// A file this process wrote and closed: no holder is expected.
    File,
}

impl Target {
    /// Holders the check expects; any more is a hit.
    fn expected(self) -> usize {
        match self {
            Target::Listener => 1,
            Target::File => 0,
        }
    }
}

/// Answers `--exact NAME --include-ignored --test-threads=1` as libtest
/// would for a binary holding two ignored tests: [`ISOLATED_TEST`] binds and
/// scans (passes with one holder, this process); [`ISOLATED_FILE_TEST`]
/// writes a file, closes it and scans (passes with none), then removes it.
fn isolated_test(args: &[String]) -> ExitCode {
    let (name, target) = match args.get(1).map(String::as_str) {
        Some(ISOLATED_TEST) => (ISOLATED_TEST, Target::Listener),
        Some(ISOLATED_FILE_TEST) => (ISOLATED_FILE_TEST, Target::File),
        _ => {
            // libtest's answer for a name it does not have: nothing ran.
            fdwindow::say!(
                "\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 2 filtered out\n"
            );
            return ExitCode::SUCCESS;
        }
    };
    fdwindow::say!("\nrunning 1 test");
    let scan = match target {
        Target::Listener => TcpListener::bind("127.0.0.1:0").and_then(|l| scan(object_of(&l)?)),
        Target::File => {
            let path = std::env::temp_dir().join(format!(
                "fdwindow-holder-scan-{}.written",
                std::process::id()
            ));
            let found = write_file(&path).and_then(|file| {
                let object = object_of(&file)?;
                drop(file);
                scan(object)
            });
            let _ = std::fs::remove_file(&path);
            found
        }
    };
    let passed = match scan {
        Ok(found) => {
            fdwindow::say!("{HOLDERS} {}", found.len());
            found.len() == target.expected()
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
            fdwindow::say!("{UNSUPPORTED} {e}");
            false
        }
        Err(e) => {
            fdwindow::say!("isolated scan: {e}");
            false
        }
    };
    if passed {
        fdwindow::say!(
            "test {name} ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 1 filtered out\n"
        );
        ExitCode::SUCCESS
    } else {
        fdwindow::say!(
            "test {name} ... FAILED\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 1 filtered out\n"
        );
        ExitCode::from(101)
    }
}

/// Creates `path` (close-on-exec, as std opens every file) and writes to it.
fn write_file(path: &Path) -> std::io::Result<File> {
    let mut file = File::create(path)?;
    file.write_all(CONTENT)?;
    Ok(file)
}

/// The object under check, made before the window opens so the fork copies
/// it; the file is returned open, to be closed inside the window.
fn make(t: &Trial<'_>, target: Target) -> Result<(Object, Held), Fault> {
    match target {
        Target::Listener => {
            let l = TcpListener::bind("127.0.0.1:0").ctx("bind a loopback listener")?;
            let object = object_of(&l).ctx_feature("identify the listener")?;
            Ok((object, Held::Listener(l)))
        }
        Target::File => {
            let path = t.fresh_path("written");
            let file = write_file(&path).ctx("write the fixture's file")?;
            let object = object_at(&path).ctx("stat the fixture's file")?;
            Ok((object, Held::File(file)))
        }
    }
}

/// What the trial keeps open until the check: the listener stays, the file
/// is closed first ([`Held::done`]).
enum Held {
    Listener(TcpListener),
    File(File),
}

impl Held {
    /// The descriptor the fixture holds.
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Held::Listener(l) => l.as_raw_fd(),
            Held::File(f) => f.as_raw_fd(),
        }
    }

    /// The fixture is done: the file is closed, the listener kept.
    fn done(self) -> Option<TcpListener> {
        match self {
            Held::Listener(l) => Some(l),
            Held::File(f) => {
                drop(f);
                None
            }
        }
    }
}

fn scan_step(object: Object) -> Result<Vec<(u32, HolderKind)>, Fault> {
    scan(object).ctx_feature("scan for holders")
}

/// Tallies the scan and says whether it saw more holders than expected.
fn count(t: &mut Trial<'_>, target: Target, found: &[(u32, HolderKind)], counted: usize) -> bool {
    t.tally("holders", &counted.to_string());
    t.tally("kinds", &kinds_summary(found));
    counted > target.expected()
}

fn scan_during_window(t: &mut Trial<'_>, target: Target) -> Result<bool, Fault> {
    let (object, held) = make(t, target)?;
    let found = t.during_window(held.as_raw_fd(), || {
        let _kept = held.done();
        scan_step(object)
    })?;
    Ok(count(t, target, &found, found.len()))
}

fn exe_filter(t: &mut Trial<'_>, target: Target) -> Result<bool, Fault> {
    let (object, held) = make(t, target)?;
    let found = t.during_window(held.as_raw_fd(), || {
        let _kept = held.done();
        scan_step(object)
    })?;
    let kept = found.iter().filter(|(_, k)| k.runs_scanner_exe()).count();
    Ok(count(t, target, &found, kept))
}

fn run_isolated(t: &mut Trial<'_>, target: Target) -> Result<bool, Fault> {
    // This probe again, as a one-test runner (`fdwindow probe holder-scan --exact …`).
    let me = fdwindow::harness::probe_command(PROBE.hazard).ctx("find our executable")?;
    let test = match target {
        Target::Listener => ISOLATED_TEST,
        Target::File => ISOLATED_FILE_TEST,
    };
    let outcome = t.during_bare_window(|| {
        Ok(fdwindow_fix::isolate::run_isolated_command(
            me,
            test,
            ISOLATED_LIMIT,
        ))
    })?;
    let counted = |t: &mut Trial<'_>, n: usize| {
        t.tally("holders", &n.to_string());
        n > target.expected()
    };
    let Err(e) = outcome else {
        // Passed: the isolated test saw exactly the holders expected.
        return Ok(counted(t, target.expected()));
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
        // The helper returned Err because the test failed: an extra holder.
        Some(n) => Ok(counted(t, n)),
        None => Err(Fault::Broken(format!("the isolated test: {text}"))),
    }
}

fn scan_after_exec(t: &mut Trial<'_>, target: Target) -> Result<bool, Fault> {
    let (object, held) = make(t, target)?;
    // The window by hand: the co-tenant's fork must exec on its own while the
    // scanner waits, so it is released from another thread, as the co-tenant's
    // own spawn would finish.
    let child = HeldChild::hold().ctx("hold a child in the fork window")?;
    t.own_spawn();
    // What the scan must not find after exec, the child held before it.
    t.require_copy(child.pid(), held.as_raw_fd())?;
    let _kept = held.done();
    let seen = pending_forks().ctx_feature("list our children")?.len();
    t.tally("pending-forks-seen", &seen.to_string());
    let co_tenant = std::thread::spawn(move || child.release());
    let deadline = Instant::now() + EXEC_TIMEOUT;
    let mut pause = Duration::from_micros(50);
    let waited = loop {
        match pending_forks() {
            Ok(p) if p.is_empty() => break Ok(()),
            Ok(_) if Instant::now() >= deadline => {
                break Err(Fault::Broken("children never exec'd".into()));
            }
            Ok(_) => {
                // Bounded polling with backoff: neither /proc nor libproc has
                // an event for another process's exec.
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(10));
            }
            Err(e) => break Err(e).ctx("list our children"),
        }
    };
    // Linux switches /proc/PID/exe (exec_mmap) a few steps before it closes
    // the close-on-exec descriptors (do_close_on_exec, both in fs/exec.c
    // begin_new_exec), so a scan could in principle meet an exec'd child's
    // copy; the scan that follows takes far longer than that gap. xnu closes
    // them first (fdt_exec, inside exec_mach_imgact) and sets the path that
    // proc_pidpath reads afterwards (exec_resettextvp, bsd/kern/kern_exec.c).
    let found = waited.and_then(|()| scan_step(object));
    let released = co_tenant
        .join()
        .map_err(|_| Fault::Broken("the co-tenant thread panicked".into()))?;
    let found = found?;
    released.ctx("release the held child")?;
    Ok(count(t, target, &found, found.len()))
}
