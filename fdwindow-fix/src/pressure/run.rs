//! The co-tenant itself: threads that start and reap children in the
//! calling process, and what they did.

use std::io;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::base::child::{TRUE_PROGRAM, quiet_command};

use super::{config::*, spec::*};

/// What a [`Pressure`] did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Children started and reaped.
    pub spawns: u64,
    /// Time since the start.
    pub elapsed: Duration,
    /// Time with at least one child between fork and exec (measured from
    /// before the fork to the return of `spawn`, which waits for the exec).
    pub covered: Duration,
}

impl Stats {
    /// Children per second.
    pub fn rate(&self) -> f64 {
        self.spawns as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// The running co-tenant; dropping it stops the threads and reaps the children.
#[derive(Debug)]
pub struct Pressure {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<io::Result<()>>>,
}

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) config: Config,
    pub(super) started: Instant,
    pub(super) stop: AtomicBool,
    pub(super) spawns: AtomicU64,
    /// Children alive now, capped by `max_alive`.
    pub(super) alive: Mutex<usize>,
    pub(super) slot_freed: Condvar,
    /// Threads still looping, so a bounded stop can wait for them.
    pub(super) running: Mutex<usize>,
    pub(super) thread_ended: Condvar,
    pub(super) window: Mutex<WindowClock>,
}

/// The union over all threads of the time a child is inside a window.
#[derive(Debug)]
pub(super) struct WindowClock {
    pub(super) inside: usize,
    pub(super) since: Instant,
    pub(super) covered: Duration,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking pressure thread must not wedge the guard's drop.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Pressure {
    /// Starts the threads. Fails if a thread cannot be started (those already
    /// started are stopped and joined first).
    pub fn start(config: Config) -> io::Result<Pressure> {
        if config.threads == 0 || config.max_alive == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "pressure needs at least one thread and one child alive",
            ));
        }
        let now = Instant::now();
        let shared = Arc::new(Shared {
            config,
            started: now,
            stop: AtomicBool::new(false),
            spawns: AtomicU64::new(0),
            alive: Mutex::new(0),
            slot_freed: Condvar::new(),
            running: Mutex::new(0),
            thread_ended: Condvar::new(),
            window: Mutex::new(WindowClock {
                inside: 0,
                since: now,
                covered: Duration::ZERO,
            }),
        });
        let mut pressure = Pressure {
            shared,
            threads: Vec::with_capacity(config.threads),
        };
        // New threads inherit the creator's mask: block everything here so the
        // spawning threads never take a signal meant for the host (GNU timeout
        // hung waiting for a SIGCHLD that a spawning thread had taken), then
        // restore this thread's mask.
        let old = block_all_signals()?;
        let started = (0..config.threads).try_for_each(|i| {
            let shared = Arc::clone(&pressure.shared);
            *lock(&shared.running) += 1;
            let spawned = std::thread::Builder::new()
                .name(format!("fdwindow-pressure-{i}"))
                .spawn(move || {
                    // Counted out on every path, a panic included, so that
                    // stop_within never waits out its bound for a dead thread.
                    struct CountedOut<'a>(&'a Shared);
                    impl Drop for CountedOut<'_> {
                        fn drop(&mut self) {
                            *lock(&self.0.running) -= 1;
                            self.0.thread_ended.notify_all();
                        }
                    }
                    let _counted = CountedOut(&shared);
                    spawn_loop(&shared, i)
                });
            match spawned {
                Ok(handle) => {
                    pressure.threads.push(handle);
                    Ok(())
                }
                Err(e) => {
                    *lock(&pressure.shared.running) -= 1;
                    Err(e)
                }
            }
        });
        restore_signals(&old);
        started.map(|()| pressure)
    }

    /// What the threads did so far.
    pub fn stats(&self) -> Stats {
        let now = Instant::now();
        let window = lock(&self.shared.window);
        let open = if window.inside > 0 {
            now.saturating_duration_since(window.since)
        } else {
            Duration::ZERO
        };
        Stats {
            spawns: self.shared.spawns.load(Ordering::Relaxed),
            elapsed: now.saturating_duration_since(self.shared.started),
            covered: window.covered + open,
        }
    }

    /// Whether every thread is still spawning (they end at the deadline, or
    /// on a spawn error that [`Pressure::stop`] returns).
    pub fn is_running(&self) -> bool {
        self.threads.iter().all(|t| !t.is_finished())
    }

    /// Stops the threads, reaps their children and returns the final stats,
    /// or the first spawn error that ended a thread early.
    pub fn stop(mut self) -> io::Result<Stats> {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.slot_freed.notify_all();
        let mut first_error = None;
        for t in self.threads.drain(..) {
            let result = t
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("a pressure thread panicked")));
            if let Err(e) = result {
                first_error.get_or_insert(e);
            }
        }
        let stats = self.stats();
        match first_error {
            Some(e) => Err(e),
            None => Ok(stats),
        }
    }

    /// Stops the threads, waiting at most `bound` for them to reap their last
    /// children; `None` if some were still running then (they are detached and
    /// stop at their next loop). For exit handlers, which must not hang.
    pub fn stop_within(mut self, bound: Duration) -> Option<Stats> {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.slot_freed.notify_all();
        let deadline = Instant::now() + bound;
        let mut running = lock(&self.shared.running);
        while *running > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.threads.clear(); // detach
                return None;
            }
            running = self
                .shared
                .thread_ended
                .wait_timeout(running, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        drop(running);
        let stats = self.stats();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        Some(stats)
    }
}

impl Drop for Pressure {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.slot_freed.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

pub(super) fn block_all_signals() -> io::Result<crate::sys::SigSet> {
    crate::sys::thread_sigmask(
        crate::sys::SigmaskHow::SIG_BLOCK,
        Some(&crate::sys::SigSet::all()),
    )
}

pub(super) fn restore_signals(old: &crate::sys::SigSet) {
    let _ = crate::sys::thread_sigmask(crate::sys::SigmaskHow::SIG_SETMASK, Some(old));
}

/// A `Command` for `/usr/bin/true` with an empty environment and no stdio.
///
/// std builds the child's argv and envp in `spawn` before it forks, so the
/// child never allocates; the empty environment is what keeps `LD_PRELOAD`,
/// `DYLD_INSERT_LIBRARIES` and [`ENV_VAR`] from reaching it.
pub(super) fn true_command() -> Command {
    quiet_command(TRUE_PROGRAM)
}

/// A fork+exec command: a `pre_exec` (even an empty one) makes std fork
/// instead of calling posix_spawn; this one sleeps `hold` in the window.
pub(super) fn fork_command(hold: Duration, drop: Option<DropClass>) -> Command {
    let mut cmd = true_command();
    crate::sys::child_hook::install(&mut cmd, ChildHold::new(hold, drop));
    cmd
}

/// What a pressure child does between fork and exec, copied in before the
/// fork: see [`hold_in_child`].
#[derive(Debug)]
pub(crate) struct ChildHold {
    drop: Option<DropClass>,
    ts: rustix::thread::Timespec,
    held: bool,
}

impl ChildHold {
    /// Close `drop`'s class (if any), then sleep `hold` (none if zero).
    pub(super) fn new(hold: Duration, drop: Option<DropClass>) -> ChildHold {
        ChildHold {
            drop,
            ts: rustix::thread::Timespec {
                tv_sec: hold.as_secs().min(i64::MAX as u64) as _,
                tv_nsec: hold.subsec_nanos() as _,
            },
            held: !hold.is_zero(),
        }
    }
}

// SAFETY: `hold_in_child` makes only open, getdents64, fstat, getsockopt and
// close (in `close_all`) and nanosleep, on data copied in before the fork; it
// allocates nothing.
unsafe impl crate::sys::child_hook::ChildCode for ChildHold {
    fn run(&self, child: &crate::sys::child_hook::InChild) -> io::Result<()> {
        hold_in_child(self, child)
    }
}

/// Runs in a pressure child between fork and exec: closes `drop`'s class,
/// then sleeps the hold. Async-signal-safe calls only (open, getdents64,
/// fstat, getsockopt and close in `close_all`; nanosleep); no allocation.
pub(crate) fn hold_in_child(
    hold: &ChildHold,
    child: &crate::sys::child_hook::InChild,
) -> io::Result<()> {
    if let Some(class) = hold.drop {
        // std's exec-error pipe is a pipe too: with `pipe` or `all` the
        // parent's spawn returns at the close instead of the exec.
        class.close_all(child)?;
    }
    // Sleeping is the purpose here, not synchronisation: the hold is how
    // long the child keeps its copies.
    if hold.held {
        // EINTR: sleep what is left. One system call each, no allocation.
        let mut req = hold.ts;
        while let rustix::thread::NanosleepRelativeResult::Interrupted(rem) =
            rustix::thread::nanosleep(&req)
        {
            req = rem;
        }
    }
    Ok(())
}

pub(super) fn spawn_loop(shared: &Shared, index: usize) -> io::Result<()> {
    let config = shared.config;
    // Config is public, so a caller may pass any Duration: saturate.
    let deadline = shared
        .started
        .checked_add(config.deadline)
        .unwrap_or(shared.started + MAX_DURATION);
    let mut fork = fork_command(config.hold, config.drop);
    let mut spawn = true_command();
    let mut turn = index; // Mix: threads start on alternate paths.
    while !shared.stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        if !take_slot(shared, deadline) {
            break;
        }
        let cmd = match config.path {
            SpawnPath::ForkExec => &mut fork,
            SpawnPath::PosixSpawn => &mut spawn,
            SpawnPath::Mix if turn.is_multiple_of(2) => &mut fork,
            SpawnPath::Mix => &mut spawn,
        };
        turn = turn.wrapping_add(1);
        enter_window(shared);
        let spawned = cmd.spawn();
        leave_window(shared);
        let result = spawned.and_then(reap);
        *lock(&shared.alive) -= 1;
        shared.slot_freed.notify_one();
        result?;
        shared.spawns.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// Waits for the child. ECHILD counts as reaped: a host that ignores SIGCHLD
/// or reaps with `waitpid(-1)` takes the status first.
pub(super) fn reap(mut child: Child) -> io::Result<()> {
    match child.wait() {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ECHILD) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Takes one of `max_alive` slots; false when stopped or past the deadline.
pub(super) fn take_slot(shared: &Shared, deadline: Instant) -> bool {
    let mut alive = lock(&shared.alive);
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return false;
        }
        if *alive < shared.config.max_alive {
            *alive += 1;
            return true;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        alive = shared
            .slot_freed
            .wait_timeout(alive, left)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

pub(super) fn enter_window(shared: &Shared) {
    let mut w = lock(&shared.window);
    if w.inside == 0 {
        w.since = Instant::now();
    }
    w.inside += 1;
}

pub(super) fn leave_window(shared: &Shared) {
    let mut w = lock(&shared.window);
    w.inside -= 1;
    if w.inside == 0 {
        let since = w.since;
        w.covered += since.elapsed();
    }
}
