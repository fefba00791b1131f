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
//! use fdwindow::hazards::spawn_lock::SPAWN_LOCK;
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

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use fdwindow_fix::base::child::HeldChild;

/// A read-write lock whose shared side guards descriptor creation and whose
/// exclusive side guards spawning. See the [module docs](self).
#[derive(Debug, Default)]
pub struct SpawnLock {
    lock: RwLock<()>,
    /// Spawners inside [`SpawnLock::spawning`] that do not hold the lock yet.
    waiting: AtomicUsize,
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
            waiting: AtomicUsize::new(0),
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
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let guard = self.lock.write().unwrap_or_else(PoisonError::into_inner);
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        guard
    }

    /// Spawners that asked for the exclusive side and do not hold it yet.
    /// Once this is non-zero while a creator holds the shared side, that
    /// spawner cannot copy the descriptor table before the creator lets go:
    /// what the probes wait for to build the spawn-lock window on purpose.
    pub fn waiting_spawners(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }
}

/// The process-wide spawn lock: every creator and every spawner must use the
/// same one.
pub static SPAWN_LOCK: SpawnLock = SpawnLock::new();

/// What a spawner had done when the creator went on to its second step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gap {
    /// The spawn had completed: the child copied the table inside the gap.
    Spawned,
    /// The spawner was waiting for the exclusive side: it cannot copy the
    /// table before the creator lets go.
    SpawnerBlocked,
}

/// Builds the gap between a creator's two steps on purpose, with a spawn
/// inside it, so a trial shows deterministically whether `lock` closes it.
///
/// 1. With `locked`, the caller takes the shared side; then `first` runs
///    (create without the flag; open and write a file to execute).
/// 2. A spawner thread asks for the exclusive side (with `locked`) and runs `spawn`.
/// 3. The caller parks until the spawner has either finished `spawn` or is
///    waiting for the lock (bounded polling with backoff, until `deadline`).
/// 4. `second` runs (set the flag; close the file); the shared side goes;
///    the spawner's result is collected.
///
/// Without `locked` this is the same code with the fix switched off (a
/// sham): the spawn then always falls in the gap. A deadline that passes is
/// an `io::ErrorKind::TimedOut` error: the gap was not confirmed.
pub fn spawn_in_gap<A, S: Send>(
    lock: &SpawnLock,
    locked: bool,
    deadline: std::time::Instant,
    first: impl FnOnce() -> std::io::Result<A>,
    second: impl FnOnce(&mut A) -> std::io::Result<()>,
    spawn: impl FnOnce() -> std::io::Result<S> + Send,
) -> std::io::Result<(A, S, Gap)> {
    use std::time::{Duration, Instant};
    let creating = locked.then(|| lock.creating());
    let mut made = first()?;
    std::thread::scope(|scope| {
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let spawner = scope.spawn(move || {
            let spawned = {
                let _spawning = locked.then(|| lock.spawning());
                spawn()
            };
            let _ = done_tx.send(());
            spawned
        });
        let mut pause = Duration::from_micros(20);
        let gap = loop {
            match done_rx.recv_timeout(pause) {
                Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    break Some(Gap::Spawned);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
            if locked && lock.waiting_spawners() > 0 {
                break Some(Gap::SpawnerBlocked);
            }
            if Instant::now() >= deadline {
                break None;
            }
            pause = (pause * 2).min(Duration::from_millis(5));
        };
        let flagged = second(&mut made);
        drop(creating);
        let spawned = spawner
            .join()
            .map_err(|_| std::io::Error::other("the spawner panicked"))?;
        let gap = gap.ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the spawner neither spawned nor waited for the lock before the deadline",
            )
        })?;
        flagged?;
        Ok((made, spawned?, gap))
    })
}

/// [`spawn_in_gap`] whose spawn parks a child in the fork window
/// ([`HeldChild::hold`]). `in_gap(pid, &made)` runs just before `second`
/// when that child was forked inside the gap (without the lock, always),
/// while what `first` made is still open for the child's copy to be
/// compared; a child the lock held back is forked after `second`.
pub fn hold_in_gap<A>(
    lock: &SpawnLock,
    locked: bool,
    deadline: std::time::Instant,
    first: impl FnOnce() -> std::io::Result<A>,
    in_gap: impl FnOnce(u32, &A),
    second: impl FnOnce(&mut A) -> std::io::Result<()>,
) -> std::io::Result<(A, HeldChild, Gap)> {
    let forked = std::sync::OnceLock::new();
    spawn_in_gap(
        lock,
        locked,
        deadline,
        first,
        |made| {
            if let Some(&pid) = forked.get() {
                in_gap(pid, made);
            }
            second(made)
        },
        || {
            HeldChild::hold().inspect(|held| {
                let _ = forked.set(held.pid());
            })
        },
    )
}

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
        assert_eq!(lock.waiting_spawners(), 0);
        let creating = lock.creating();
        std::thread::scope(|s| {
            let spawner = s.spawn(|| drop(lock.spawning()));
            // Bounded polling with backoff until the spawner waits.
            let mut pause = std::time::Duration::from_micros(10);
            while lock.waiting_spawners() == 0 {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(10));
            }
            assert!(!spawner.is_finished(), "a spawner got past a creator");
            drop(creating);
            spawner.join().unwrap();
        });
        assert_eq!(lock.waiting_spawners(), 0);
    }
}
