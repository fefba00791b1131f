//! Process-unique scratch names: the fix for `clock-collision`.
//!
//! Names built as `<prefix>-<pid>-<timestamp>` collide when two threads read
//! the same clock value, and on macOS CLOCK_REALTIME (so `SystemTime`) ticks
//! in whole microseconds, so they do. A process-wide atomic counter cannot
//! repeat within the process, and the pid keeps processes apart.
//!
//! A pid can be reused after its process dies, so a name may still meet a
//! folder a killed run left behind: create exclusively and skip names that
//! exist, as [`create_unique_dir`] does.
//!
//! # References
//! - `clock-collision` in `results/MATRIX.md` (arm `process-sequence`)
//! - shared/reference write-up 001, HACK-1348 (the witnessed collision and this fix)

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// One counter for the whole process, so every caller on every thread draws
/// from the same sequence.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// `<prefix>-<pid>-<n>`, where `n` is drawn from a process-wide counter: no
/// two calls in one process return the same name, whatever thread they run on
/// and whatever the clock says.
///
/// # Examples
///
/// ```
/// use fdwindow_fix::scratch::unique_name;
///
/// let a = unique_name("fixture");
/// let b = std::thread::spawn(|| unique_name("fixture")).join().unwrap();
/// assert_ne!(a, b);
/// assert!(a.starts_with(&format!("fixture-{}-", std::process::id())));
/// ```
pub fn unique_name(prefix: &str) -> String {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}-{}-{n}", std::process::id())
}

/// Creates `parent/<unique_name(prefix)>` exclusively and returns its path;
/// a name that already exists (a dead process with a recycled pid left it) is
/// skipped, up to 1000 times.
///
/// # Examples
///
/// ```
/// let parent = std::env::temp_dir();
/// let dir = fdwindow_fix::scratch::create_unique_dir(&parent, "doc-example").unwrap();
/// assert!(dir.is_dir());
/// std::fs::remove_dir(&dir).unwrap();
/// ```
pub fn create_unique_dir(parent: &Path, prefix: &str) -> io::Result<PathBuf> {
    for _ in 0..1000 {
        let dir = parent.join(unique_name(prefix));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("no free name for {prefix} under {}", parent.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;
    use std::sync::Barrier;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Threads released together by a barrier (as the collision probe
        /// does) never draw the same name, for any thread count and prefix.
        #[test]
        fn names_never_repeat_across_threads(
            threads in 2usize..9,
            per_thread in 1usize..50,
            prefix in "[a-z]{1,8}",
        ) {
            let barrier = Barrier::new(threads);
            let names: Vec<String> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..threads)
                    .map(|_| {
                        s.spawn(|| {
                            barrier.wait();
                            (0..per_thread).map(|_| unique_name(&prefix)).collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
            });
            let distinct: HashSet<&String> = names.iter().collect();
            prop_assert_eq!(distinct.len(), threads * per_thread);
        }
    }

    #[test]
    fn create_skips_names_that_exist() {
        let scratch = crate::base::scratch::Scratch::new("fix-test").unwrap();
        // Occupy the next few names, as a dead process with our pid would have.
        let next = NEXT.load(Ordering::Relaxed);
        for n in next..next + 3 {
            let stale = format!("p-{}-{n}", std::process::id());
            std::fs::create_dir(scratch.dir().join(stale)).unwrap();
        }
        let dir = create_unique_dir(scratch.dir(), "p").unwrap();
        assert!(dir.is_dir());
    }
}
