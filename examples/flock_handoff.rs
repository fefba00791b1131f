//! A test with the flock close-only pattern: it takes a lock, "releases" it by
//! closing the file, and expects the next owner to get it at once. It passes
//! alone and fails under fork pressure, because a child forked while the file
//! was open holds the open file description, and the lock with it, until it
//! execs or exits. With `--fix` it unlocks before closing, which releases the
//! lock on the description every copy shares, and passes under pressure too.
//!
//! ```text
//! cargo build --release --examples --bins
//! target/release/fdwindow stress --runs 200 --pressure threads=4,hold=1ms -- target/release/examples/flock_handoff
//! target/release/fdwindow stress --runs 200 --pressure threads=4,hold=1ms -- target/release/examples/flock_handoff --fix
//! ```
//!
//! 1. Open the lock file and take an exclusive lock (`File::lock`, which is
//!    `flock(LOCK_EX)` on Linux and macOS).
//! 2. With `--fix`, `File::unlock` (`flock(LOCK_UN)`); then drop the file.
//! 3. Open it again and `try_lock`: `WouldBlock` is the failure a flaky test sees.
//!
//! Repeated `--rounds` times (default 1000) per run, as a test suite would.

use std::fs::{File, OpenOptions, TryLockError};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fix = args.iter().any(|a| a == "--fix");
    let rounds: u32 = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    let path = std::env::temp_dir().join(format!("fdwindow-flock-handoff-{}", std::process::id()));
    let open = || -> File {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .expect("open the lock file")
    };
    let mut result = ExitCode::SUCCESS;
    for round in 0..rounds {
        let owner = open();
        // Blocking: a copy left over from the previous round may still hold it.
        owner.lock().expect("lock");
        if fix {
            owner.unlock().expect("unlock");
        }
        drop(owner);
        let next = open();
        match next.try_lock() {
            Ok(()) => next.unlock().expect("unlock"),
            Err(TryLockError::WouldBlock) => {
                eprintln!("round {round}: the lock outlived close (a forked child holds it)");
                result = ExitCode::FAILURE;
                break;
            }
            Err(TryLockError::Error(e)) => panic!("try_lock: {e}"),
        }
    }
    let _ = std::fs::remove_file(&path);
    result
}
