//! The helper crate of the workspace benchmark, as a real workspace has one:
//! a key-value store that locks its file, a test server, a port picker, a
//! scratch folder, and the busy work the suites' ordinary tests do.
//!
//! Four of its helpers are how tests elsewhere in the workspace get
//! exposed (labels.json): [`store::with_store`] drops its locked file without
//! unlocking it, so does a dropped `journal::Writer` (an OFD byte-range
//! lock, Linux), [`server::TestServer::stop`] drops a listener that the
//! caller then expects to be gone, and [`ports::free_udp_port`] hands out a
//! port whose probe socket it has just dropped. Each is correct in a
//! process that never forks; a child's copy of the dropped descriptor
//! (between fork and exec, or the audit's held copy) breaks the next step.
//!
//! Nothing here leaves a thread or a child process behind; every scratch
//! path is removed on every way out; every wait is bounded.

pub mod busy;
#[cfg(target_os = "linux")]
pub mod journal;
pub mod ports;
pub mod server;
pub mod store;

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;

/// A folder unique to this process and call, removed with its contents when
/// dropped (so on a panic's unwinding too).
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Creates `$TMPDIR/fdwindow-workspace-<pid>-<tag>-<n>`.
    pub fn new(tag: &str) -> ScratchDir {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("fdwindow-workspace-{}-{tag}-{n}", std::process::id());
        let path = std::env::temp_dir().join(name);
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

/// Reads `fd` until end-of-file, waiting at most `limit_ms` in all
/// (`poll(2)`, no sleep): `None` if the deadline passed first. End-of-file
/// comes once every copy of the pipe's write end is closed.
pub fn read_to_eof_within(fd: &impl AsFd, limit_ms: u64) -> Option<Vec<u8>> {
    let deadline = Instant::now() + Duration::from_millis(limit_ms);
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut pfd = [PollFd::new(fd, PollFlags::IN)];
        let timeout = Timespec::try_from(left).expect("a timeout");
        match poll(&mut pfd, Some(&timeout)) {
            Ok(0) => return None,
            Err(Errno::INTR) => continue,
            Err(e) => panic!("poll: {e}"),
            Ok(_) => {}
        }
        match rustix::io::read(fd, &mut buf) {
            Ok(0) => return Some(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(Errno::INTR) => {}
            Err(e) => panic!("read: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::ErrorKind;
    use std::os::unix::net::{UnixListener, UnixStream};

    use super::ScratchDir;

    mod busy {
        include!(concat!(env!("OUT_DIR"), "/busy_tests.rs"));
    }

    fn busy(i: usize) {
        crate::busy::mixed(i);
    }

    /// A daemon's control socket: after it stops (its listener dropped, the
    /// path left behind), the next start's stale-socket check connects and
    /// expects a refusal before it removes the path. A child's copy of the
    /// listener still accepts, so the check takes a stopped daemon for a
    /// running one (unix-listener-survival).
    #[test]
    fn stale_control_socket_is_detected() {
        let dir = ScratchDir::new("control");
        let path = dir.join("control.sock");
        let daemon = UnixListener::bind(&path).unwrap();
        let client = UnixStream::connect(&path).unwrap();
        drop(daemon.accept().unwrap());
        drop(client);
        drop(daemon);
        match UnixStream::connect(&path) {
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {}
            Err(e) => panic!("stale-socket check on {}: {e}", path.display()),
            Ok(_) => panic!(
                "the stopped daemon's socket {} still accepts",
                path.display()
            ),
        }
    }
}
