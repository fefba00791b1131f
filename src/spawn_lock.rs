//! A process-wide spawn lock: the fix that serialises descriptor creation
//! against spawning, as Go's `syscall.ForkLock` does.
//!
//! A descriptor made in two steps (create, then `fcntl(F_SETFD, FD_CLOEXEC)`)
//! leaks into any child spawned between the steps, for the child's whole life;
//! and a file open for writing while a child is forked stays open in that child
//! until it execs, so executing the file fails with `ETXTBSY`. Both gaps close
//! if every such creation (or write) runs under the lock's *shared* side and
//! every spawn under its *exclusive* side: no spawn can then copy the
//! descriptor table while a descriptor is half made or a written file is open.
//!
//! The lock protects only code that takes it: a library that creates
//! descriptors or spawns children on its own (std's `Command` included) is not
//! covered unless its calls are wrapped. Prefer atomic flags (`SOCK_CLOEXEC`,
//! `pipe2`, `accept4`, `O_CLOEXEC`) where the OS has them; use the lock for the
//! calls it lacks (macOS through 26 has no `SOCK_CLOEXEC`, `accept4` or
//! `pipe2`) and for write-then-exec.
//!
//! Go holds `ForkLock` for writing around the fork and its status pipe only;
//! a spawn here likewise needs the exclusive side only until the child's copy
//! of the descriptor table is made (`Command::spawn` returning is later still).
//!
//! # References
//! - Go `src/syscall/exec_unix.go` (`ForkLock`): <https://github.com/golang/go/blob/master/src/syscall/exec_unix.go>
//! - rust-lang/rust#95584: `Command::spawn` leaks descriptors where `pipe2` is missing;
//!   evmar/n2#14 put spawns behind a mutex to stop it.
//!
//! # Example
//!
//! ```
//! use std::process::{Command, Stdio};
//! use fdwindow::spawn_lock::SPAWN_LOCK;
//!
//! // Creating: the descriptor and its close-on-exec flag under the shared side.
//! let file = {
//!     let _creating = SPAWN_LOCK.creating();
//!     std::fs::File::open("/dev/null")? // a two-step call would go here
//! };
//! // Spawning: under the exclusive side, so no creation is half done.
//! let mut child = {
//!     let _spawning = SPAWN_LOCK.spawning();
//!     Command::new("/usr/bin/true").env_clear().stdin(Stdio::null()).spawn()?
//! };
//! child.wait()?;
//! drop(file);
//! # Ok::<(), std::io::Error>(())
//! ```

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A read-write lock whose shared side guards descriptor creation and whose
/// exclusive side guards spawning. See the [module docs](self).
#[derive(Debug, Default)]
pub struct SpawnLock {
    lock: RwLock<()>,
}

/// Held while creating a descriptor (or writing a file to execute); many at once.
pub type Creating<'a> = RwLockReadGuard<'a, ()>;
/// Held while spawning; excludes every [`Creating`].
pub type Spawning<'a> = RwLockWriteGuard<'a, ()>;

impl SpawnLock {
    /// A new, unlocked lock. Most programs want the one [`SPAWN_LOCK`].
    pub const fn new() -> SpawnLock {
        SpawnLock {
            lock: RwLock::new(()),
        }
    }

    /// Takes the shared side: hold it from creating a descriptor until it is
    /// close-on-exec (or, for a file to execute, from open until close).
    pub fn creating(&self) -> Creating<'_> {
        // The lock guards no data: a panic while it was held left nothing
        // half-updated, so a poisoned lock is still good.
        self.lock.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the exclusive side: hold it across the spawn call.
    pub fn spawning(&self) -> Spawning<'_> {
        self.lock.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The process-wide spawn lock: every creator and every spawner must use the
/// same one.
pub static SPAWN_LOCK: SpawnLock = SpawnLock::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creators_share_and_exclude_spawners() {
        let lock = SpawnLock::new();
        let creating = lock.creating();
        let second = lock.creating(); // shared: a second creator does not wait
        assert!(
            lock.lock.try_write().is_err(),
            "a spawner got past a creator"
        );
        drop((creating, second));
        let spawning = lock.spawning();
        assert!(
            lock.lock.try_read().is_err(),
            "a creator got past a spawner"
        );
        drop(spawning);
    }
}
