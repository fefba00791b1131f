//! Helpers shared by the benchmark's test binaries (`tests/*.rs`): scratch
//! folders removed on every way out, a bounded wait for end-of-file, a
//! per-process random number, the sleep that models a test's work, and
//! ([`patterns`]) the exposed patterns and CPU work more than one binary runs.
//!
//! Nothing here starts a child process or a thread that outlives its test.

pub mod patterns;

use std::os::fd::AsFd;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The work a real test does between one use of a resource and the next
/// (parsing, a request, an assertion on the result). A sleep models it: it
/// synchronises nothing, so no result depends on its length.
pub fn work(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

/// Work between releasing a resource and checking it again (a teardown
/// step, a restart's setup), in microseconds; a sleep, as in [`work`]. Zero
/// does nothing: the check comes right after the release.
pub fn work_us(us: u64) {
    if us > 0 {
        std::thread::sleep(Duration::from_micros(us));
    }
}

/// A folder unique to this process and call, removed with its contents when
/// dropped (so on a panic's unwinding too).
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Creates `$TMPDIR/fdwindow-flakes-<pid>-<tag>-<n>`.
    pub fn new(tag: &str) -> ScratchDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("fdwindow-flakes-{}-{tag}-{n}", std::process::id()));
        std::fs::create_dir(&path)
            .unwrap_or_else(|e| panic!("scratch folder {}: {e}", path.display()));
        ScratchDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Why [`read_to_eof_within`] gave up.
#[derive(Debug)]
pub enum EofWait {
    /// The deadline passed with the pipe still open for writing somewhere.
    TimedOut {
        read: Vec<u8>,
        waited: Duration,
    },
    Io(std::io::Error),
}

/// Reads `fd` until end-of-file, waiting at most `limit` in all (poll(2)
/// with the time left; no sleep). End-of-file comes only once every copy of
/// the write end is closed.
pub fn read_to_eof_within(fd: &impl AsFd, limit: Duration) -> Result<Vec<u8>, EofWait> {
    let start = Instant::now();
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let left = limit.saturating_sub(start.elapsed());
        let mut pfd = [PollFd::new(&fd, PollFlags::IN)];
        let ready = match poll(
            &mut pfd,
            Some(&Timespec::try_from(left).expect("a timeout")),
        ) {
            Err(Errno::INTR) => continue,
            Err(e) => return Err(EofWait::Io(e.into())),
            Ok(ready) => ready,
        };
        if ready == 0 {
            return Err(EofWait::TimedOut {
                read: out,
                waited: start.elapsed(),
            });
        }
        match rustix::io::read(fd, &mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(Errno::INTR) => {}
            Err(e) => return Err(EofWait::Io(e.into())),
        }
    }
}

/// A random number that differs from process to process (std's hasher
/// keys come from the OS's random source once per thread), as a property
/// test's seed does when nobody pins it.
pub fn process_random() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64)
}
