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
//!     fdwindow::fix::isolate::run_isolated("listener_is_released_on_drop_isolated").unwrap();
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
//! # References
//! - <https://doc.rust-lang.org/rustc/tests/index.html> (libtest's `--exact`,
//!   `--include-ignored`, `--test-threads`)
//! - <https://nexte.st/docs/running/> (process per test)

use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::child::{GroupExit, wait_group};

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
/// current executable, such as a probe that answers libtest's arguments).
pub fn run_isolated_exe(exe: &std::path::Path, child: &str, limit: Duration) -> io::Result<()> {
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", child, "--include-ignored", "--test-threads=1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group: the hang guard kills whatever the child started too.
        .process_group(0);
    let started = Instant::now();
    let mut proc = cmd.spawn()?;
    // Read both pipes while waiting, so a chatty child never blocks on a full pipe.
    let readers = [proc.stdout.take().map(drain), proc.stderr.take().map(drain)];
    let exit = wait_group(&mut proc, started + limit, || false);
    let [stdout, stderr] =
        readers.map(|r| r.map(|h| h.join().unwrap_or_default()).unwrap_or_default());
    let output = format!(
        "--- stdout\n{}--- stderr\n{}",
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr)
    );
    let status = match exit? {
        GroupExit::Exited(status) => status,
        GroupExit::TimedOut | GroupExit::Stopped => {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("isolated test {child} still ran after {limit:?} and was killed\n{output}"),
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

fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
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
    fn run_isolated_passes_only_the_exact_passing_child() {
        let _serial = crate::test_serial();
        run_isolated("fix::isolate::tests::isolated_child_passes").unwrap();
        // Misspelled, a prefix, a failing child: never a silent pass.
        for name in [
            "fix::isolate::tests::isolated_child_pases",
            "fix::isolate::tests::isolated_child",
            "isolated_child_passes",
        ] {
            let e = run_isolated(name).unwrap_err();
            assert!(e.to_string().contains("no line"), "{name}: {e}");
        }
        let e = run_isolated("fix::isolate::tests::isolated_child_fails").unwrap_err();
        assert!(e.to_string().contains("failed on purpose"), "{e}");
    }
}
