//! The fork-pressure co-tenant: threads that keep starting children inside a
//! process, so that a test's descriptors are copied into children the way a
//! busy test runner copies them, and descriptor-inheritance flakes show on
//! demand instead of once a week in CI.
//!
//! [`Pressure::start`] starts [`Config::threads`] threads. Each loops:
//!
//! 1. take a slot (at most [`Config::max_alive`] children alive at once);
//! 2. start a child by the chosen [`SpawnPath`]: fork+exec with a `pre_exec`
//!    that sleeps [`Config::hold`] between fork and exec (the child holds a copy
//!    of every descriptor, close-on-exec ones included, for that long), or
//!    std's default path (`posix_spawn`; on glibc a `CLONE_VM|CLONE_VFORK`
//!    clone whose window is short and cannot be stretched), or both in turn;
//! 3. reap the child and give the slot back.
//!
//! Every child execs `/usr/bin/true` with an empty environment prepared before
//! the fork, so no child can start pressure of its own (a preloaded injector
//! whose children kept `LD_PRELOAD` would fill the process table in seconds).
//! The threads block every signal, so a host's signal handling is unchanged:
//! process-directed signals (SIGCHLD, SIGINT, SIGTERM) go to the host's threads.
//! Dropping the guard stops the threads and reaps every child; the threads also
//! stop by themselves at [`Config::deadline`], so a leaked guard cannot spawn
//! forever.
//!
//! ```
//! use fdwindow_fix::pressure::{Config, Pressure};
//!
//! let pressure = Pressure::start(Config::default())?;
//! // ... the code under test: open, lock, close, bind, spawn ...
//! let stats = pressure.stop()?;
//! eprintln!("{} children, {:?} with one inside a window", stats.spawns, stats.covered);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The same loop runs inside any process, in any language, from the injector
//! (`shims/inject.c` in the `fdwindow` crate, a C port of this loop that
//! `fdwindow preload inject` writes out, preloaded with `LD_PRELOAD` /
//! `DYLD_INSERT_LIBRARIES` and configured by [`ENV_VAR`] in the [`Spec`]
//! syntax), which `fdwindow stress` and `fdwindow audit` use.
//!
//! # References
//! - <https://man7.org/linux/man-pages/man2/fork.2.html> ("The child inherits
//!   copies of the parent's set of open file descriptors.")
//! - <https://man7.org/linux/man-pages/man7/signal-safety.7.html> (`nanosleep`
//!   is async-signal-safe)
//! - <https://man7.org/linux/man-pages/man3/pthread_sigmask.3.html> ("A new
//!   thread inherits a copy of its creator's signal mask.")

use std::fmt;
use std::io;
use std::process::{Child, Command};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::base::child::{TRUE_PROGRAM, quiet_command};

/// The environment variable the injector reads its [`Spec`] from.
pub const ENV_VAR: &str = "FDWINDOW_PRESSURE";

/// How pressure threads start their children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnPath {
    /// fork, hold for [`Config::hold`] in `pre_exec`, exec: a long window in
    /// which the child holds copies of every descriptor.
    ForkExec,
    /// std's default path (`posix_spawn`): the path most real test runners and
    /// libraries take; [`Config::hold`] does not apply.
    PosixSpawn,
    /// Each thread alternates between the two.
    Mix,
}

impl SpawnPath {
    /// The id used in [`Spec`] strings.
    pub fn id(self) -> &'static str {
        match self {
            SpawnPath::ForkExec => "fork",
            SpawnPath::PosixSpawn => "spawn",
            SpawnPath::Mix => "mix",
        }
    }
}

/// What a [`Pressure`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Spawning threads.
    pub threads: usize,
    /// Time each fork+exec child sleeps between fork and exec.
    pub hold: Duration,
    /// How children are started.
    pub path: SpawnPath,
    /// Children alive at once, over all threads (each thread has at most one).
    pub max_alive: usize,
    /// The threads stop by themselves this long after the start.
    pub deadline: Duration,
    /// Descriptors each fork+exec child closes right after the fork, before
    /// its hold (`None`: it keeps them all). A diagnosis tool: a flake that
    /// clears when children drop one class was caused by a copy of that class.
    pub drop: Option<DropClass>,
}

/// A class of descriptor that pressure children close right after the fork.
///
/// The child classifies its own descriptors (a snapshot taken in the parent
/// would race with the very descriptors that matter): it lists them with
/// getdents64 on `/proc/self/fd` (Linux) or `proc_pidinfo(PROC_PIDLISTFDS)`
/// (macOS), then `fstat`, `getsockopt(SO_TYPE)` and, for stream sockets,
/// `SO_ACCEPTCONN` (Linux) or `proc_pidfdinfo` (macOS). Descriptors 0-2 are
/// the child's own `/dev/null` and are kept.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/fstat.2.html>
/// - <https://man7.org/linux/man-pages/man7/socket.7.html> (`SO_TYPE`, `SO_ACCEPTCONN`)
/// - <https://man7.org/linux/man-pages/man7/signal-safety.7.html> (`fstat`,
///   `getsockopt`, `close`, `open` are async-signal-safe)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropClass {
    /// Regular files (locks, executables being written).
    File,
    /// Listening stream sockets.
    Listener,
    /// Sockets that hold a name and nothing more: a stream socket bound but
    /// neither listening nor connected, or a datagram socket with a name (a
    /// port, a Unix path or abstract name). A held copy keeps the name taken
    /// (port-pick, a Unix name rebound); for a datagram socket the name is
    /// all a copy can keep, so a named one is `bound`, not `dgram`.
    Bound,
    /// Stream sockets that are connected, or neither bound nor listening.
    Stream,
    /// Datagram sockets without a name (a socketpair's).
    Datagram,
    /// Pipes and FIFOs.
    Pipe,
    /// Every descriptor from 3 up: the sham that drops everything.
    All,
}

impl DropClass {
    /// Every class, the sham last.
    pub const ALL: [DropClass; 7] = [
        DropClass::File,
        DropClass::Listener,
        DropClass::Bound,
        DropClass::Stream,
        DropClass::Datagram,
        DropClass::Pipe,
        DropClass::All,
    ];

    /// The id used in [`Spec`] strings (`drop=`).
    pub fn id(self) -> &'static str {
        match self {
            DropClass::File => "file",
            DropClass::Listener => "listener",
            DropClass::Bound => "bound",
            DropClass::Stream => "stream",
            DropClass::Datagram => "dgram",
            DropClass::Pipe => "pipe",
            DropClass::All => "all",
        }
    }

    /// The class with this id.
    pub fn from_id(id: &str) -> Option<DropClass> {
        DropClass::ALL.into_iter().find(|c| c.id() == id)
    }

    /// The class of the open descriptor `fd`, `None` for anything else
    /// (terminals, directories, event descriptors).
    ///
    /// Async-signal-safe, so a forked child may call it: `fstat`, then for a
    /// socket `getsockopt` (and, on macOS, `proc_pidfdinfo`), all into the
    /// stack. `rustix::fs::fstat` (checked in rustix 1.1.6,
    /// `backend/*/fs/syscalls.rs`) is one `fstat` and a copy on the backends
    /// this crate builds with: the raw system call on 64-bit Linux, libc's
    /// `fstat` (in POSIX's async-signal-safe list) on Apple. Only on 32-bit
    /// and mips64 Linux does it try `statx` first; rustix's own backend
    /// there makes only system calls and keeps whether `statx` works in a
    /// static atomic, but its libc backend (`rustix_use_libc`, or a target
    /// linux_raw does not support) finds `statx` with `dlsym` the first
    /// time, which is not async-signal-safe: such a build would have to
    /// call `fstat` some other way.
    ///
    /// # References
    /// - <https://pubs.opengroup.org/onlinepubs/9799919799/functions/fstat.html>
    /// - <https://man7.org/linux/man-pages/man7/signal-safety.7.html>
    pub fn of(fd: std::os::fd::BorrowedFd<'_>) -> Option<DropClass> {
        use rustix::fs::FileType;
        let st = rustix::fs::fstat(fd).ok()?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Some(DropClass::File),
            FileType::Fifo => Some(DropClass::Pipe),
            FileType::Socket => {
                use rustix::net::SocketType;
                let ty = rustix::net::sockopt::socket_type(fd).ok()?;
                let named = || crate::sys::has_socket_name(fd);
                match ty {
                    SocketType::DGRAM if named() => Some(DropClass::Bound),
                    SocketType::DGRAM => Some(DropClass::Datagram),
                    _ if crate::sys::is_listening(fd) => Some(DropClass::Listener),
                    SocketType::STREAM | SocketType::SEQPACKET
                        if !crate::sys::has_socket_peer(fd) && named() =>
                    {
                        Some(DropClass::Bound)
                    }
                    SocketType::STREAM | SocketType::SEQPACKET => Some(DropClass::Stream),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Closes every descriptor from 3 up of this class in the calling
    /// process. Async-signal-safe, and only for a forked child before exec
    /// (the [`crate::sys::child_hook::InChild`] proof).
    pub(crate) fn close_all(self, child: &crate::sys::child_hook::InChild) -> io::Result<()> {
        crate::sys::each_open_fd(&mut |fd| {
            if fd <= 2 {
                return;
            }
            let ours = self == DropClass::All || {
                // SAFETY: `fd` (above 2, so not -1) is a descriptor the walk
                // just found open in this process, and it stays open until
                // `of` returns: this forked child runs one thread, and the
                // only closes here are `close_all`'s own, each of a number
                // the walk has already passed (it yields each number once).
                let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
                DropClass::of(borrowed) == Some(self)
            };
            if ours {
                crate::sys::child_hook::close(fd, child);
            }
        })
    }
}

impl Default for Config {
    /// Four threads alternating fork+exec with a 1 ms hold and posix_spawn:
    /// on the examples measured here (see README, "Fork pressure") rate beats
    /// hold, since a descriptor open for microseconds is caught by a fork
    /// landing in that moment, and the mix reproduced the flock flake fastest
    /// (the listener flake showed in nearly every run at any short hold).
    fn default() -> Config {
        Config {
            threads: 4,
            hold: Duration::from_millis(1),
            path: SpawnPath::Mix,
            max_alive: 64,
            deadline: Duration::from_secs(600),
            drop: None,
        }
    }
}

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
struct Shared {
    config: Config,
    started: Instant,
    stop: AtomicBool,
    spawns: AtomicU64,
    /// Children alive now, capped by `max_alive`.
    alive: Mutex<usize>,
    slot_freed: Condvar,
    /// Threads still looping, so a bounded stop can wait for them.
    running: Mutex<usize>,
    thread_ended: Condvar,
    window: Mutex<WindowClock>,
}

/// The union over all threads of the time a child is inside a window.
#[derive(Debug)]
struct WindowClock {
    inside: usize,
    since: Instant,
    covered: Duration,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
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

fn block_all_signals() -> io::Result<crate::sys::SigSet> {
    crate::sys::thread_sigmask(
        crate::sys::SigmaskHow::SIG_BLOCK,
        Some(&crate::sys::SigSet::all()),
    )
}

fn restore_signals(old: &crate::sys::SigSet) {
    let _ = crate::sys::thread_sigmask(crate::sys::SigmaskHow::SIG_SETMASK, Some(old));
}

/// A `Command` for `/usr/bin/true` with an empty environment and no stdio.
///
/// std builds the child's argv and envp in `spawn` before it forks, so the
/// child never allocates; the empty environment is what keeps `LD_PRELOAD`,
/// `DYLD_INSERT_LIBRARIES` and [`ENV_VAR`] from reaching it.
fn true_command() -> Command {
    quiet_command(TRUE_PROGRAM)
}

/// A fork+exec command: a `pre_exec` (even an empty one) makes std fork
/// instead of calling posix_spawn; this one sleeps `hold` in the window.
fn fork_command(hold: Duration, drop: Option<DropClass>) -> Command {
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
    fn new(hold: Duration, drop: Option<DropClass>) -> ChildHold {
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

fn spawn_loop(shared: &Shared, index: usize) -> io::Result<()> {
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
fn reap(mut child: Child) -> io::Result<()> {
    match child.wait() {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ECHILD) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Takes one of `max_alive` slots; false when stopped or past the deadline.
fn take_slot(shared: &Shared, deadline: Instant) -> bool {
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

fn enter_window(shared: &Shared) {
    let mut w = lock(&shared.window);
    if w.inside == 0 {
        w.since = Instant::now();
    }
    w.inside += 1;
}

fn leave_window(shared: &Shared) {
    let mut w = lock(&shared.window);
    w.inside -= 1;
    if w.inside == 0 {
        let since = w.since;
        w.covered += since.elapsed();
    }
}

/// One process, named so that a reused pid is not taken for it: its pid and
/// its start time as the kernel reports it (Linux: `/proc/PID/stat`'s
/// `starttime`; macOS: `proc_pidinfo`'s `pbi_start`), as `PID@START`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessId {
    /// Its pid.
    pub pid: u32,
    /// Its start time, in the kernel's unit.
    pub start: u64,
}

impl ProcessId {
    /// This process.
    pub fn this_process() -> std::io::Result<ProcessId> {
        let pid = std::process::id();
        Ok(ProcessId {
            pid,
            start: crate::sys::start_time_of(pid)?,
        })
    }
}

impl fmt::Display for ProcessId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.pid, self.start)
    }
}

impl std::str::FromStr for ProcessId {
    type Err = SpecError;

    /// `PID@START`, as the injector reads it: a pid of 1 to 2^31-1 and a
    /// start time of at most 18 digits.
    fn from_str(text: &str) -> Result<ProcessId, SpecError> {
        let bad = || bad_spec!("controller={text}: expected PID@START");
        let digits =
            |s: &str| !s.is_empty() && s.len() <= 18 && s.bytes().all(|b| b.is_ascii_digit());
        let (pid, start) = text.split_once('@').ok_or_else(bad)?;
        if !digits(pid) || !digits(start) {
            return Err(bad());
        }
        let pid: u32 = pid
            .parse()
            .ok()
            .filter(|p| (1..=i32::MAX as u32).contains(p))
            .ok_or_else(bad)?;
        Ok(ProcessId {
            pid,
            start: start.parse().map_err(|_| bad())?,
        })
    }
}

/// A pressure configuration as text, for the injector's [`ENV_VAR`] and
/// `fdwindow stress --pressure`: comma-separated `key=value` pairs, any
/// subset, e.g. `threads=4,hold=20ms,path=fork`.
///
/// | key | value | default |
/// |---|---|---|
/// | `threads` | spawning threads | 4 |
/// | `hold` | `0`, `500us`, `20ms`, `1s` | `1ms` |
/// | `path` | `fork`, `spawn` (posix_spawn) or `mix` | `mix` |
/// | `max-alive` | children alive at once | 64 |
/// | `for` | the threads stop after this long | `600s` |
/// | `match` | start only in a process whose executable's file name matches this glob (`*` only) | any |
/// | `drop` | fork+exec children close this [`DropClass`] right after the fork: `file`, `listener`, `bound`, `stream`, `dgram`, `pipe`, `all` | `none` |
/// | `close-hold` | the injector only: no spawning threads; each close of a descriptor of this [`DropClass`] is first held by a child for `hold` ([`Spec::close_hold`]) | `none` |
/// | `hold-by` | the injector only, with `close-hold`: `pass` sends each copy to one holder process over a Unix socket, `fork` forks a child per copy ([`HoldBy`]) | `pass` |
/// | `close-site` | the injector only, with `close-hold`: hold only the closes whose stack passes through one of these addresses of the executable, hexadecimal, joined by `+` (at most 16; the addresses the injector's `site` report lines give) ([`Spec::close_sites`]) | every close |
/// | `controller` | `PID@START`, the controller's process ([`ProcessId`]): the injector stops when it ends, and starts nothing once it has | none |
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Spec {
    /// The pressure to start.
    pub config: Config,
    /// Start only in processes whose executable name matches (the injector
    /// checks; a build driver such as cargo and its compilers stay unpressured).
    pub exe_match: Option<String>,
    /// The controller (`fdwindow stress`, `fdwindow audit`), `controller=PID@START`:
    /// the injector watches that process (no descriptor is passed down) and
    /// stops its threads within one hold once it ends, killed included.
    /// Only the injector reads it; [`Pressure`] ignores it.
    pub controller: Option<ProcessId>,
    /// `close-hold=CLASS`: the injector's deterministic mode. It starts no
    /// spawning threads; instead, before the process closes a descriptor of
    /// this class, a copy of it is kept alive for [`Config::hold`], as
    /// [`Spec::hold_by`] says. Only the injector can do this (it interposes
    /// `close`); [`Pressure`] ignores it.
    pub close_hold: Option<DropClass>,
    /// `hold-by=`: how [`Spec::close_hold`] keeps its copies.
    pub hold_by: HoldBy,
    /// `close-site=HEX+HEX…`: with [`Spec::close_hold`], only the closes
    /// whose call stack passes through one of these addresses of the
    /// executable (in its own address space, as the injector reports
    /// stacks) are held: the call sites of one line. Empty: every close.
    pub close_sites: Vec<u64>,
}

/// How the injector's `close-hold=` keeps a copy of each closed descriptor.
///
/// Both copies are the same open file description as the host's (a lock, a
/// listener, a bound name, a pipe's write end live on in either); they
/// differ in what else comes with them and what they cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HoldBy {
    /// Sent over a Unix socket (`SCM_RIGHTS`) to one holder process the
    /// injector starts: microseconds a close, and every close held but
    /// where the system bounds it (each such close counted by reason). Its
    /// sham sends the same message without the descriptor.
    #[default]
    Pass,
    /// A fork of the process per copy, keeping only that descriptor: what
    /// a real spawn does, at the cost of a fork (bounded by `max-alive` and
    /// half of each second spent forking). Its sham's children drop it.
    Fork,
}

impl HoldBy {
    /// Both ways.
    pub const ALL: [HoldBy; 2] = [HoldBy::Pass, HoldBy::Fork];

    /// The way [`HoldBy::id`] names `id`, if any.
    pub fn from_id(id: &str) -> Option<HoldBy> {
        HoldBy::ALL.into_iter().find(|h| h.id() == id)
    }

    /// The id in [`Spec`] strings.
    pub fn id(self) -> &'static str {
        match self {
            HoldBy::Pass => "pass",
            HoldBy::Fork => "fork",
        }
    }
}

/// Addresses `close-site=` takes at most (the injector's table).
pub const MAX_CLOSE_SITES: usize = 16;

impl Spec {
    /// Whether the pressure applies to an executable named `exe_name`.
    pub fn applies_to(&self, exe_name: &str) -> bool {
        self.exe_match
            .as_deref()
            .is_none_or(|pattern| glob_match(pattern, exe_name))
    }
}

impl FromStr for Spec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Spec, SpecError> {
        let mut spec = Spec::default();
        for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| bad_spec!("{pair:?} is not key=value"))?;
            let count = |v: &str| match v.parse::<usize>() {
                Ok(n) if (1..=1024).contains(&n) => Ok(n),
                _ => Err(bad_spec!("{key}={v}: expected a number from 1 to 1024")),
            };
            let c = &mut spec.config;
            match key {
                "threads" => c.threads = count(value)?,
                "max-alive" => c.max_alive = count(value)?,
                "hold" => c.hold = parse_duration(value)?,
                "for" => c.deadline = parse_duration(value)?,
                "path" => {
                    c.path = match value {
                        "fork" | "fork-exec" => SpawnPath::ForkExec,
                        "spawn" | "posix-spawn" => SpawnPath::PosixSpawn,
                        "mix" => SpawnPath::Mix,
                        _ => return Err(bad_spec!("path={value}: expected fork, spawn or mix")),
                    }
                }
                "match" if !value.is_empty() => spec.exe_match = Some(value.to_owned()),
                "controller" => spec.controller = Some(value.parse()?),
                "hold-by" => {
                    spec.hold_by = HoldBy::from_id(value)
                        .ok_or_else(|| bad_spec!("hold-by={value}: expected pass or fork"))?;
                }
                "close-site" => {
                    let bad = || {
                        bad_spec!("close-site={value}: expected hexadecimal addresses joined by +")
                    };
                    spec.close_sites = value
                        .split('+')
                        .map(|a| match u64::from_str_radix(a, 16) {
                            Ok(n) if n > 0 => Ok(n),
                            _ => Err(bad()),
                        })
                        .collect::<Result<_, _>>()?;
                    if spec.close_sites.len() > MAX_CLOSE_SITES {
                        return Err(bad_spec!(
                            "close-site={value}: at most {MAX_CLOSE_SITES} addresses"
                        ));
                    }
                }
                "drop" | "close-hold" => {
                    let class = match value {
                        "none" => None,
                        _ => Some(DropClass::from_id(value).ok_or_else(|| {
                            bad_spec!(
                                "{key}={value}: expected none, file, listener, bound, stream, dgram, pipe or all"
                            )
                        })?),
                    };
                    if key == "drop" {
                        c.drop = class;
                    } else {
                        spec.close_hold = class;
                    }
                }
                _ => {
                    return Err(bad_spec!(
                        "unknown key {key:?}; keys: threads, hold, path, max-alive, for, match, drop, close-hold, hold-by, close-site, controller"
                    ));
                }
            }
        }
        if spec.config.hold >= spec.config.deadline {
            return Err(bad_spec!("hold must be shorter than for"));
        }
        Ok(spec)
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        write!(
            f,
            "threads={},hold={},path={},max-alive={},for={}",
            c.threads,
            duration_text(c.hold),
            c.path.id(),
            c.max_alive,
            duration_text(c.deadline)
        )?;
        if let Some(d) = c.drop {
            write!(f, ",drop={}", d.id())?;
        }
        if let Some(d) = self.close_hold {
            write!(f, ",close-hold={}", d.id())?;
        }
        if self.hold_by != HoldBy::default() {
            write!(f, ",hold-by={}", self.hold_by.id())?;
        }
        if !self.close_sites.is_empty() {
            let sites: Vec<String> = self.close_sites.iter().map(|a| format!("{a:x}")).collect();
            write!(f, ",close-site={}", sites.join("+"))?;
        }
        if let Some(c) = self.controller {
            write!(f, ",controller={c}")?;
        }
        if let Some(m) = &self.exe_match {
            write!(f, ",match={m}")?;
        }
        Ok(())
    }
}

/// A pressure spec, a duration or a controller id that does not parse: what
/// was given, and what was expected instead, in one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

/// A [`SpecError`] with a `format!` message.
macro_rules! bad_spec {
    ($($arg:tt)*) => {
        SpecError(format!($($arg)*))
    };
}
use bad_spec;

/// `0`, `250us`, `20ms`, `2s`.
pub fn parse_duration(text: &str) -> Result<Duration, SpecError> {
    let bad = || bad_spec!("{text:?}: expected a duration such as 0, 500us, 20ms or 2s");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let n: u64 = text[..split].parse().map_err(|_| bad())?;
    let d = match &text[split..] {
        "us" => Duration::from_micros(n),
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        _ => return Err(bad()),
    };
    // Deadlines are `Instant + duration`: keep them far from overflow. A day
    // is longer than any pressured run needs.
    if d > MAX_DURATION {
        return Err(bad_spec!("{text:?}: at most a day (86400s)"));
    }
    Ok(d)
}

/// The longest hold or run time [`parse_duration`] accepts.
pub const MAX_DURATION: Duration = Duration::from_secs(86_400);

/// The shortest exact text [`parse_duration`] reads back.
fn duration_text(d: Duration) -> String {
    let us = d.as_micros();
    if us == 0 {
        "0".into()
    } else if us.is_multiple_of(1_000_000) {
        format!("{}s", us / 1_000_000)
    } else if us.is_multiple_of(1_000) {
        format!("{}ms", us / 1_000)
    } else {
        format!("{us}us")
    }
}

/// A glob with `*` (any run of characters) and nothing else.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty(); // no `*`: an exact match
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_bounded() {
        assert_eq!(parse_duration("86400s"), Ok(MAX_DURATION));
        let err = parse_duration("18446744073709551615s")
            .unwrap_err()
            .to_string();
        assert!(err.contains("at most a day"), "{err}");
        assert!(parse_duration("99999999999999999999s").is_err());
    }

    #[test]
    fn spec_round_trips_and_rejects_nonsense() {
        let spec: Spec =
            "threads=2,hold=250us,path=mix,match=demo-*,drop=listener,controller=7@123456"
                .parse()
                .unwrap();
        assert_eq!(spec.config.drop, Some(DropClass::Listener));
        assert_eq!(
            spec.controller,
            Some(ProcessId {
                pid: 7,
                start: 123456
            })
        );
        assert_eq!(spec.config.threads, 2);
        assert_eq!(spec.config.hold, Duration::from_micros(250));
        assert_eq!(spec.config.path, SpawnPath::Mix);
        assert_eq!(spec.to_string().parse::<Spec>().unwrap(), spec);
        assert_eq!("".parse::<Spec>().unwrap(), Spec::default());
        let sited: Spec = "close-hold=file,close-site=1a2b+ff".parse().unwrap();
        assert_eq!(sited.close_sites, [0x1a2b, 0xff]);
        assert_eq!(sited.to_string().parse::<Spec>().unwrap(), sited);
        assert_eq!(sited.hold_by, HoldBy::Pass);
        let forked: Spec = "close-hold=all,hold-by=fork".parse().unwrap();
        assert_eq!(forked.hold_by, HoldBy::Fork);
        assert_eq!(forked.to_string().parse::<Spec>().unwrap(), forked);
        for bad in [
            "threads=0",
            "hold=5",
            "path=vfork",
            "colour=red",
            "threads",
            "drop=sockets",
            "controller=7",
            "controller=0@1",
            "controller=-1@1",
            "controller=7@",
            "controller=7@x",
            "controller=2147483648@1",
            "controller=7@1234567890123456789",
            "ctl=7",
            "close-site=",
            "close-site=0",
            "close-site=zz",
            "close-site=1++2",
            "close-site=1+2+3+4+5+6+7+8+9+a+b+c+d+e+f+10+11",
            "hold-by=clone",
        ] {
            assert!(bad.parse::<Spec>().is_err(), "{bad}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn descriptors_are_classified_in_the_process_itself() {
        use std::os::fd::{AsFd, AsRawFd};
        let _serial = crate::test_serial();
        let file = tempfile::tempfile().unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let (reader, _writer) = std::io::pipe().unwrap();
        let dir = std::fs::File::open("/").unwrap();
        assert_eq!(DropClass::of(file.as_fd()), Some(DropClass::File));
        assert_eq!(DropClass::of(listener.as_fd()), Some(DropClass::Listener));
        assert_eq!(DropClass::of(stream.as_fd()), Some(DropClass::Stream));
        // A name and nothing more is `bound`: a named datagram socket, a
        // stream socket bound but neither listening nor connected, a Unix
        // abstract name; an unnamed datagram socket is `dgram`, an unbound
        // stream socket `stream`.
        assert_eq!(DropClass::of(udp.as_fd()), Some(DropClass::Bound));
        let tcp = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        assert_eq!(DropClass::of(tcp.as_fd()), Some(DropClass::Stream));
        tcp.bind(
            &"127.0.0.1:0"
                .parse::<std::net::SocketAddr>()
                .unwrap()
                .into(),
        )
        .unwrap();
        assert_eq!(DropClass::of(tcp.as_fd()), Some(DropClass::Bound));
        let name = format!("fdwindow-class-{}", std::process::id());
        let addr =
            <std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(
                name.as_bytes(),
            )
            .unwrap();
        let named = std::os::unix::net::UnixDatagram::bind_addr(&addr).unwrap();
        assert_eq!(DropClass::of(named.as_fd()), Some(DropClass::Bound));
        let (pair, _other) = std::os::unix::net::UnixDatagram::pair().unwrap();
        assert_eq!(DropClass::of(pair.as_fd()), Some(DropClass::Datagram));
        assert_eq!(DropClass::of(reader.as_fd()), Some(DropClass::Pipe));
        assert_eq!(DropClass::of(dir.as_fd()), None);
        // In a forked child: close the listeners, then list what is left in
        // /proc/self/fd from the exec'd shell (inheritable copies only).
        crate::base::locks::set_cloexec(&file, false).unwrap();
        crate::base::locks::set_cloexec(&listener, false).unwrap();
        // `ls -l` names each descriptor's target: the listener's number may
        // be reused by ls itself once the child closed it.
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "ls -l /proc/self/fd/"]);
        let drop_listeners = ChildHold::new(Duration::ZERO, Some(DropClass::Listener));
        crate::sys::child_hook::install(&mut cmd, drop_listeners);
        let out = cmd.output().unwrap();
        let listing = String::from_utf8_lossy(&out.stdout);
        let file_line = format!(" {} -> ", file.as_raw_fd());
        assert!(listing.contains(&file_line), "{listing}");
        assert!(!listing.contains("socket:"), "{listing}");
    }

    #[test]
    fn glob_matches_star_only() {
        assert!(glob_match("demo-*", "demo-0123abcd"));
        assert!(glob_match("demo", "demo"));
        assert!(!glob_match("demo", "demo-1"));
        assert!(glob_match("*test*", "my_tests-9"));
        assert!(!glob_match("a*b*c", "acb"));
        assert!(glob_match("a*a", "aa"));
        assert!(!glob_match("a*a", "a"));
        assert!(!glob_match("rustc", "demo-1"));
    }

    #[test]
    fn guard_spawns_covers_and_reaps() {
        let _serial = crate::test_serial();
        let config = Config {
            threads: 2,
            hold: Duration::from_millis(1),
            path: SpawnPath::Mix,
            ..Config::default()
        };
        let pressure = Pressure::start(config).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while pressure.stats().spawns < 6 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(pressure.is_running());
        let stats = pressure.stop().unwrap();
        assert!(stats.spawns >= 6, "{stats:?}");
        // Every forked child slept 1 ms inside its window.
        assert!(stats.covered >= Duration::from_millis(1), "{stats:?}");
        assert!(stats.covered <= stats.elapsed, "{stats:?}");
        // Reaped: this process has no child left, exited or running (every
        // unit test that starts children holds the serial guard).
        let r = rustix::process::waitpid(None, rustix::process::WaitOptions::NOHANG);
        assert!(
            matches!(r, Err(rustix::io::Errno::CHILD)),
            "a child was left: waitpid gave {r:?}"
        );
    }

    #[test]
    fn pressure_stops_by_itself_at_its_deadline() {
        let _serial = crate::test_serial();
        let pressure = Pressure::start(Config {
            threads: 1,
            deadline: Duration::from_millis(50),
            ..Config::default()
        })
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while pressure.is_running() && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(!pressure.is_running());
        pressure.stop().unwrap();
    }

    #[test]
    fn spawning_threads_block_every_signal() {
        let _serial = crate::test_serial();
        // The mask of this thread is restored after start: the whole set.
        let mask = || crate::sys::thread_sigmask(crate::sys::SigmaskHow::SIG_BLOCK, None).unwrap();
        let before = mask();
        let pressure = Pressure::start(Config {
            threads: 1,
            ..Config::default()
        })
        .unwrap();
        let after = mask();
        assert_eq!(before, after);
        // The thread names itself when it starts: wait until it has spawned.
        let deadline = Instant::now() + Duration::from_secs(60);
        while pressure.stats().spawns == 0 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        #[cfg(target_os = "linux")]
        {
            // /proc/self/task/<tid>/status: the pressure thread's SigBlk.
            let tasks = std::fs::read_dir("/proc/self/task").unwrap();
            let blocked = tasks.filter_map(Result::ok).any(|t| {
                let path = t.path();
                let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
                let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
                comm.starts_with("fdwindow-pressu")
                    && status.lines().any(|l| {
                        l.strip_prefix("SigBlk:").is_some_and(|m| {
                            u64::from_str_radix(m.trim(), 16).unwrap_or(0)
                                & (1 << (libc::SIGCHLD - 1))
                                != 0
                        })
                    })
            });
            assert!(blocked, "the pressure thread does not block SIGCHLD");
        }
        pressure.stop().unwrap();
    }

    #[test]
    fn stop_within_returns_stats() {
        let _serial = crate::test_serial();
        let pressure = Pressure::start(Config {
            threads: 2,
            ..Config::default()
        })
        .unwrap();
        assert!(pressure.stop_within(Duration::from_secs(30)).is_some());
    }
}
