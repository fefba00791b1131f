//! Run one test alone, in a child test process of its own, so that no other
//! test's fork can hold a copy of its descriptors while it checks them.
//!
//! Hazard `holder-scan`, arm `run-isolated` (window `fork-window`): a scan
//! for "who holds this listener" counts a co-tenant test's pre-exec fork as a
//! second holder; run isolated, the listener and the scan live in a process
//! where no other thread spawns. The matrix lists it as `avoids` (no trial can
//! test it: the listener lives in a process where no thread spawns, so no
//! copy exists to be counted); `fdwindow verdict holder-scan run-isolated`
//! shows it, with the control `present` beside it (the scan is Linux's
//! `/proc`). The helper is write-up 001's `run_isolated` (HACK-1347): the
//! parent passes only if the child's exact `test NAME ... ok` line and
//! `1 passed` appear, so a child that is missing, misspelled, filtered out or
//! ignored cannot pass silently.
//!
//! ```no_run
//! // In a test file of a crate with fdwindow as a dev-dependency:
//! #[test]
//! fn listener_is_released_on_drop() {
//!     fdwindow_fix::isolate::run_isolated("listener_is_released_on_drop_isolated").unwrap();
//! }
//!
//! #[test]
//! #[ignore = "run by listener_is_released_on_drop, alone in its own process"]
//! fn listener_is_released_on_drop_isolated() {
//!     // bind, drop, and check that nothing holds the port any more
//! }
//! ```
//!
//! The name is the child's full test path as libtest prints it
//! (`module::name` in a unit test, `name` at an integration test's top level).
//!
//! # With nextest
//!
//! `cargo nextest run` already runs every test in a process of its own, so a
//! parent's descriptors are never shared with another test's forks; the
//! child re-runs in a further process all the same, and passes or fails as
//! under `cargo test`. nextest skips `#[ignore]`d tests by default, so the
//! child runs once, inside its parent. With `--run-ignored all` (or `cargo
//! test -- --include-ignored`) the child also runs directly, in the shared
//! process, where it may flake: select parents only (`-E 'not
//! test(/_isolated$/)'`). The child is started with the same executable, so
//! it works from unit tests, integration tests and doc-less test binaries
//! alike, but not from a doctest (each doctest is its own binary).
//!
//! # The hang guard and interrupts
//!
//! The child runs in a process group of its own, so the hang guard can kill
//! whatever it started along with it. The guard bounds the whole call: the
//! output is read until end-of-file or the deadline, whichever comes first,
//! so a process the child started outside its group (`setsid`, its own
//! group) that keeps the output open cannot make the parent wait for it;
//! that is reported as an error. A group of its own also means a terminal's
//! Ctrl-C (sent to the foreground group) does not reach the child. So: where
//! this process catches interrupts with [`crate::base::interrupts::catch_interrupts`]
//! (the probes do), an interrupt kills the child's group at once and the call
//! returns `ErrorKind::Interrupted`; and on Linux the child gets `SIGKILL`
//! when the calling thread dies (`PR_SET_PDEATHSIG`), so a Ctrl-C that kills
//! a test binary by default takes the isolated test with it. What that test
//! started in its group is not signalled then, and on macOS, which has no
//! parent-death signal, a child whose parent died that way runs on until it
//! ends by itself.
//!
//! # References
//! - <https://doc.rust-lang.org/rustc/tests/index.html> (libtest's `--exact`,
//!   `--include-ignored`, `--test-threads`)
//! - <https://nexte.st/docs/running/> (process per test)
//! - <https://man7.org/linux/man-pages/man2/pr_set_pdeathsig.2const.html>

use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::process::{ChildStderr, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::base::child::{GroupExit, wait_group};

/// How long [`run_isolated`] lets the child run before it kills it (write-up
/// 001's hang guard): generous, since a loaded CI machine is slow, and only a
/// hang should reach it.
pub const HANG_GUARD: Duration = Duration::from_secs(120);

/// Runs the `#[ignore]`d test `child` alone: this test executable again, with
/// `--exact CHILD --include-ignored --test-threads=1`, under [`HANG_GUARD`].
/// `Ok(())` only when the child exited successfully and its output holds the
/// exact line `test CHILD ... ok` and the summary `1 passed`; otherwise `Err`
/// carrying the child's status and output.
pub fn run_isolated(child: &str) -> io::Result<()> {
    run_isolated_within(child, HANG_GUARD)
}

/// [`run_isolated`] with a hang guard of `limit`.
pub fn run_isolated_within(child: &str, limit: Duration) -> io::Result<()> {
    let exe = std::env::current_exe()?;
    run_isolated_exe(&exe, child, limit)
}

/// Runs `exe --exact CHILD --include-ignored --test-threads=1` and judges its
/// output as [`run_isolated`] does (for a test runner that is not the
/// current executable).
pub fn run_isolated_exe(exe: &std::path::Path, child: &str, limit: Duration) -> io::Result<()> {
    run_isolated_command(Command::new(exe), child, limit)
}

/// [`run_isolated_exe`] for a runner that is a command with arguments of its
/// own (`fdwindow probe holder-scan`, say): `cmd --exact CHILD
/// --include-ignored --test-threads=1`, its stdio and group set here.
pub fn run_isolated_command(mut cmd: Command, child: &str, limit: Duration) -> io::Result<()> {
    cmd.args(["--exact", child, "--include-ignored", "--test-threads=1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group: the hang guard kills whatever the child started too.
        .process_group(0);
    // Linux: SIGKILL to the child when this thread dies (it waits for the
    // child below, so it outlives it); see the module's interrupt notes.
    crate::sys::die_with_parent(&mut cmd);
    let started = Instant::now();
    let deadline = started + limit;
    let mut proc = cmd.spawn()?;
    let (out, err) = (proc.stdout.take(), proc.stderr.take());
    // Read both pipes while waiting, so a chatty child never blocks on a full
    // pipe; the reads end at the deadline (plus a moment for the last output
    // of a group killed there) even if something still holds a pipe open.
    let (exit, (stdout, stderr, complete)) = std::thread::scope(|s| {
        let reader = s.spawn(move || read_until(out, err, deadline + READ_GRACE));
        let exit = wait_group(&mut proc, deadline, crate::base::interrupts::interrupted);
        let read = reader.join().unwrap_or_default();
        (exit, read)
    });
    let output = format!(
        "--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr)
    );
    let status = match exit? {
        GroupExit::Exited(_) if !complete => {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "isolated test {child} exited, but its output was still open after {limit:?}: \
                     a process it started outside its process group holds it\n{output}"
                ),
            ));
        }
        GroupExit::Exited(status) => status,
        GroupExit::TimedOut => {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("isolated test {child} still ran after {limit:?} and was killed\n{output}"),
            ));
        }
        GroupExit::Stopped => {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                format!("isolated test {child} was killed: this process was interrupted\n{output}"),
            ));
        }
    };
    let text = String::from_utf8_lossy(&stdout);
    let ok_line = format!("test {child} ... ok");
    let passed = text.lines().any(|l| l == ok_line);
    let one_passed = text
        .lines()
        .any(|l| l.starts_with("test result: ok. 1 passed;"));
    if status.success() && passed && one_passed {
        Ok(())
    } else {
        let why = if !status.success() {
            format!("exited with {status}")
        } else if !passed {
            format!("no line {ok_line:?}: the child is missing, misspelled or did not pass")
        } else {
            "no \"1 passed\" summary".to_owned()
        };
        Err(io::Error::other(format!(
            "isolated test {child}: {why}\n{output}"
        )))
    }
}

/// How long past the deadline the output is still read: a group the hang
/// guard kills at the deadline closes its pipes a moment later.
const READ_GRACE: Duration = Duration::from_secs(1);

/// Reads the child's stdout and stderr until both reach end-of-file or
/// `until` passes (`poll(2)`, then a read of what is ready, so no read ever
/// blocks): what was read, and whether both ended. The pipes are closed on
/// return, so a process still writing to them gets `EPIPE`.
fn read_until(
    mut out: Option<ChildStdout>,
    mut err: Option<ChildStderr>,
    until: Instant,
) -> (Vec<u8>, Vec<u8>, bool) {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let (mut out_buf, mut err_buf) = (Vec::new(), Vec::new());
    let mut chunk = vec![0u8; 64 * 1024];
    while out.is_some() || err.is_some() {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (out_buf, err_buf, false);
        }
        let (out_ready, err_ready) = {
            let mut fds = Vec::with_capacity(2);
            if let Some(o) = &out {
                fds.push(PollFd::new(o, PollFlags::IN));
            }
            if let Some(e) = &err {
                fds.push(PollFd::new(e, PollFlags::IN));
            }
            let ts = Timespec {
                tv_sec: left.as_secs().min(i64::MAX as u64) as i64,
                tv_nsec: i64::from(left.subsec_nanos()) as _,
            };
            match poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => return (out_buf, err_buf, false),
            }
            // Readable, at end-of-file (hang-up) or failed: a read settles it.
            let ready = |f: &PollFd<'_>| !f.revents().is_empty();
            let mut it = fds.iter();
            let o = out.is_some() && it.next().is_some_and(ready);
            let e = err.is_some() && it.next().is_some_and(ready);
            (o, e)
        };
        if out_ready && read_some(out.as_mut(), &mut chunk, &mut out_buf) {
            out = None;
        }
        if err_ready && read_some(err.as_mut(), &mut chunk, &mut err_buf) {
            err = None;
        }
    }
    (out_buf, err_buf, true)
}

/// One read from a pipe `poll` said is ready, appended to `into`; `true` at
/// end-of-file or on an error (the pipe is done with).
fn read_some(pipe: Option<&mut impl Read>, chunk: &mut [u8], into: &mut Vec<u8>) -> bool {
    let Some(pipe) = pipe else { return true };
    match pipe.read(chunk) {
        Ok(0) => true,
        Ok(n) => {
            into.extend_from_slice(&chunk[..n]);
            false
        }
        Err(e) => e.kind() != io::ErrorKind::Interrupted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "run by run_isolated_passes_only_the_exact_passing_child"]
    fn isolated_child_passes() {}

    #[test]
    #[ignore = "run by run_isolated_passes_only_the_exact_passing_child"]
    fn isolated_child_fails() {
        panic!("the isolated child failed on purpose");
    }

    #[test]
    #[ignore = "run by a_process_outside_the_group_cannot_hold_the_parent_past_the_guard"]
    #[expect(
        clippy::zombie_processes,
        reason = "the escaped process is the point: this test process exits at once and the parent test kills it"
    )]
    fn isolated_child_leaves_its_output_open() {
        use std::io::Write;
        // A process of its own group that inherits stdout and stderr and
        // outlives this test by far: the parent must not wait for it.
        let escaped = Command::new("sleep")
            .arg("60")
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        // Straight to the descriptor (libtest captures only print!), so the
        // parent can end it.
        writeln!(io::stdout(), "escaped pid {}", escaped.id()).unwrap();
    }

    #[test]
    fn a_process_outside_the_group_cannot_hold_the_parent_past_the_guard() {
        let _serial = crate::test_serial();
        let got = run_isolated_within(
            "isolate::tests::isolated_child_leaves_its_output_open",
            Duration::from_secs(10),
        );
        // End the escaped process whatever the outcome.
        let text = format!("{got:?}");
        if let Some(pid) = text
            .split("escaped pid ")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|p| p.parse::<i32>().ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
        let e = got.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(e.to_string().contains("output was still open"), "{e}");
    }

    /// Where [`isolated_child_hangs`] writes its pid (set only by
    /// `killing_the_parent_kills_the_isolated_child`).
    const PID_FILE_VAR: &str = "FDWINDOW_ISOLATE_TEST_PID_FILE";

    #[test]
    #[ignore = "run by killing_the_parent_kills_the_isolated_child"]
    fn isolated_child_hangs() {
        let Some(path) = std::env::var_os(PID_FILE_VAR) else {
            return; // run directly: nothing to hang for
        };
        std::fs::write(path, std::process::id().to_string()).unwrap();
        // The hang itself (not a synchronisation): bounded, so a failed
        // test leaves nothing behind for long.
        std::thread::sleep(Duration::from_secs(60));
    }

    #[test]
    #[ignore = "run by killing_the_parent_kills_the_isolated_child"]
    fn isolated_parent_of_a_hang() {
        if std::env::var_os(PID_FILE_VAR).is_none() {
            return;
        }
        let _ = run_isolated_within(
            "isolate::tests::isolated_child_hangs",
            Duration::from_secs(120),
        );
    }

    /// A Ctrl-C's SIGINT kills a test binary that does not catch it; its
    /// isolated child, in a group of its own, must not run on (Linux:
    /// `PR_SET_PDEATHSIG`).
    #[cfg(target_os = "linux")]
    #[test]
    fn killing_the_parent_kills_the_isolated_child() {
        use rustix::process::{Pid, Signal, kill_process};
        let _serial = crate::test_serial();
        let pid_file =
            std::env::temp_dir().join(format!("fdwindow-isolate-test-{}.pid", std::process::id()));
        let _ = std::fs::remove_file(&pid_file);
        let mut parent = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "isolate::tests::isolated_parent_of_a_hang",
                "--include-ignored",
                "--test-threads=1",
            ])
            .env(PID_FILE_VAR, &pid_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The isolated child's pid, once it has written it (bounded polling).
        let mut wait = Duration::from_millis(5);
        let deadline = Instant::now() + Duration::from_secs(60);
        let child = loop {
            let read = std::fs::read_to_string(&pid_file).ok();
            if let Some(pid) = read.and_then(|t| t.trim().parse::<i32>().ok()) {
                break Pid::from_raw(pid);
            }
            if Instant::now() >= deadline || parent.try_wait().unwrap().is_some() {
                break None;
            }
            std::thread::sleep(wait);
            wait = (wait * 2).min(Duration::from_millis(200));
        };
        let parent_pid = Pid::from_raw(parent.id() as i32).unwrap();
        let _ = kill_process(parent_pid, Signal::INT);
        let status = parent.wait().unwrap();
        let _ = std::fs::remove_file(&pid_file);
        let child = child.expect("the isolated child never wrote its pid");
        assert!(!status.success(), "{status}");
        // Gone, or a zombie waiting for its new parent: not running.
        let running = || {
            std::fs::read_to_string(format!("/proc/{}/stat", child.as_raw_nonzero()))
                .ok()
                .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
                .unwrap_or(false)
        };
        let mut wait = Duration::from_millis(5);
        let deadline = Instant::now() + Duration::from_secs(20);
        while running() && Instant::now() < deadline {
            std::thread::sleep(wait);
            wait = (wait * 2).min(Duration::from_millis(200));
        }
        let survived = running();
        if survived {
            let _ = kill_process(child, Signal::KILL);
        }
        assert!(!survived, "the isolated child outlived its killed parent");
    }

    #[test]
    fn run_isolated_passes_only_the_exact_passing_child() {
        let _serial = crate::test_serial();
        run_isolated("isolate::tests::isolated_child_passes").unwrap();
        // Misspelled, a prefix, a failing child: never a silent pass.
        for name in [
            "isolate::tests::isolated_child_pases",
            "isolate::tests::isolated_child",
            "isolated_child_passes",
        ] {
            let e = run_isolated(name).unwrap_err();
            assert!(e.to_string().contains("no line"), "{name}: {e}");
        }
        let e = run_isolated("isolate::tests::isolated_child_fails").unwrap_err();
        assert!(e.to_string().contains("failed on purpose"), "{e}");
    }
}
