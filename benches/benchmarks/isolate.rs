//! Running one test in its own child process (the "run isolated" fix, as
//! nextest does: the test binary re-executed for one test) versus in-process.
//!
//! The test takes and releases a flock on a scratch file. The child is this
//! bench binary itself: [`serve_child`], listed first in `criterion_main!`,
//! runs the test and exits when the environment says so, before criterion
//! starts, so a child can never start benchmarks or children of its own.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use criterion::{Criterion, criterion_group};
use fdwindow_fix::base::locks::{flock, open_rw};
use fdwindow_fix::base::scratch::Scratch;

use super::support::Group;

/// Names the lock file of a child that is to run the test and exit.
const CHILD_ENV: &str = "FDWINDOW_BENCH_ISOLATED_TEST";

fn the_test(path: &Path) {
    let f = open_rw(path).expect("open");
    flock(&f, libc::LOCK_EX).expect("lock");
    flock(&f, libc::LOCK_UN).expect("unlock");
}

/// In a child started by [`run_test`]: runs the test and exits. Elsewhere: returns.
pub fn serve_child() {
    if let Some(path) = std::env::var_os(CHILD_ENV) {
        the_test(Path::new(&path));
        std::process::exit(0);
    }
}

fn run_test(c: &mut Criterion) {
    let scratch = Scratch::new("bench-isolate").expect("scratch folder");
    let path = scratch.fresh("lock");
    let exe = std::env::current_exe().expect("this bench binary");
    let mut child = Command::new(&exe);
    child
        .env_clear()
        .env(CHILD_ENV, &path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut group = Group::new(c, "run-test", Duration::from_millis(1500));
    group.bench("in-process", "flock-take-release", || the_test(&path));
    group.bench("own-process", "flock-take-release", || {
        // status() waits for the child: every child is reaped.
        let status = child.status().expect("run the test's own process");
        assert!(status.success(), "the isolated test failed: {status}");
    });
    group.finish();
}

criterion_group!(isolate, run_test);
