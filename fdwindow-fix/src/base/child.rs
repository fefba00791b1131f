//! The children that hold a copy of the parent's descriptors, one per window kind.
//!
//! - [`HeldChild`] (`fork-window`): std's fork path with a `pre_exec` that parks
//!   the child between fork and exec until the parent releases it.
//! - [`SpawnRace`] (`posix-spawn`): a thread spawning children through std's
//!   default path, which is `posix_spawn` (on glibc a `CLONE_VM|CLONE_VFORK`
//!   clone), to race against.
//! - [`InheritingChild`] (`inherited`): an exec'd child that keeps every
//!   descriptor lacking close-on-exec until the parent lets it go.
//!
//! Every child runs `/usr/bin/true` or `/bin/cat` with an empty environment, so
//! none can start children of its own, and every one is reaped on every path
//! out: release, drop during a panic, or the parent's death (the child then
//! reads end-of-file on its pipe and exits).

use std::io::{self, PipeReader, PipeWriter, Read, Write};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The program every short-lived child execs. POSIX puts `true` in /usr/bin on
/// both Linux (merged /usr or not) and macOS.
pub const TRUE_PROGRAM: &str = "/usr/bin/true";
/// The program an inheriting child execs: it reads stdin to end-of-file, so
/// closing its stdin is how the parent lets it go.
pub const CAT_PROGRAM: &str = "/bin/cat";

/// How long a fork may take to reach its `pre_exec` before the window counts as
/// broken. Generous: a loaded machine can stall a fork for seconds.
const HOLD_TIMEOUT: Duration = Duration::from_secs(30);

/// A `Command` for a child that can do nothing but exit: no environment (so no
/// preload variable reaches it), no stdio.
pub fn quiet_command(program: &str) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// A child parked between fork and exec, holding a copy of every descriptor the
/// parent had when it forked (close-on-exec ones included).
///
/// 1. A helper thread calls `Command::spawn`, which forks (a `pre_exec` forces
///    std's fork path) and then blocks until the child execs.
/// 2. The child's `pre_exec` closes its copies of the parent's pipe ends, writes
///    its pid to `ready` and blocks in `read(2)` on `release`.
/// 3. [`HeldChild::hold`] returns once it has read that pid: from then on the
///    child holds the copies, and [`HeldChild::pid`] names it (the spawning
///    thread learns it only after the exec).
/// 4. [`HeldChild::release`] writes to `release`; the child execs `true`, spawn
///    returns in the helper thread, which reaps the child.
#[derive(Debug)]
pub struct HeldChild {
    pid: u32,
    release: Option<PipeWriter>,
    spawner: Option<JoinHandle<io::Result<ExitStatus>>>,
}

impl HeldChild {
    /// Forks a child and returns once it is parked inside the window.
    pub fn hold() -> io::Result<HeldChild> {
        let (mut ready_r, ready_w) = io::pipe()?;
        let (release_r, release_w) = io::pipe()?;
        let fds = ParkFds {
            parent_ready: ready_r.as_raw_fd(),
            parent_release: release_w.as_raw_fd(),
            ready: ready_w,
            release: release_r,
        };
        let mut cmd = quiet_command(TRUE_PROGRAM);
        // The hook owns the child's pipe ends, and `cmd` owns the hook: they
        // stay open in the parent until `cmd` goes, after the spawn.
        crate::sys::child_hook::install(&mut cmd, fds);
        let spawner = std::thread::Builder::new()
            .name("fdwindow-hold".into())
            .spawn(move || {
                let spawned = cmd.spawn();
                // Only now may the child's pipe ends close in the parent (so
                // that `ready_r` sees end-of-file if the child dies): the
                // child had its copies.
                drop(cmd);
                spawned?.wait()
            })?;
        let mut held = HeldChild {
            pid: 0,
            release: Some(release_w),
            spawner: Some(spawner),
        };
        match read_pid_by(&mut ready_r, Instant::now() + HOLD_TIMEOUT) {
            Ok(Some(pid)) => {
                held.pid = pid;
                Ok(held)
            }
            // End of file: the spawn failed before the child reached the window.
            Ok(None) => Err(held.finish().err().unwrap_or_else(|| {
                io::Error::other("the held child exec'd without parking in pre_exec")
            })),
            Err(e) => Err(e),
        }
    }

    /// The parked child's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Lets the child exec and reaps it.
    pub fn release(mut self) -> io::Result<()> {
        match self.finish()? {
            status if status.success() => Ok(()),
            status => Err(io::Error::other(format!("held child ended with {status}"))),
        }
    }

    fn finish(&mut self) -> io::Result<ExitStatus> {
        if let Some(mut release) = self.release.take() {
            // A byte rather than end-of-file: another fork may hold a copy of
            // this write end, and EOF would wait for it.
            let _ = release.write_all(b"r");
        }
        match self.spawner.take() {
            Some(spawner) => spawner
                .join()
                .map_err(|_| io::Error::other("the hold thread panicked"))?,
            None => Err(io::Error::other("held child already released")),
        }
    }
}

impl Drop for HeldChild {
    fn drop(&mut self) {
        if self.spawner.is_some() {
            let _ = self.finish();
        }
    }
}

/// The pipe ends the held child parks on: its own ends, owned here (the
/// hook, and so the `Command` that holds it, keeps them open in the parent
/// until the spawn is over), and the numbers of the parent's ends, which the
/// child closes.
#[derive(Debug)]
pub struct ParkFds {
    ready: PipeWriter,
    release: PipeReader,
    parent_ready: RawFd,
    parent_release: RawFd,
}

// SAFETY: `park` makes four kinds of call, each one async-signal-safe
// system call (signal-safety(7)) that allocates nothing: `close` on the
// child's copies of the parent-side ends (numbers copied in before the fork,
// `child_hook::close`), `rustix::process::getpid` (on Linux the raw system
// call, on Apple libc's `getpid`), then `rustix::io::write` of its four bytes
// from a local array and `rustix::io::read` of one byte into another, on pipe
// ends the hook owns. In rustix 1.1.6 both are a single call and nothing else: on
// Linux (`backend/linux_raw/io/syscalls.rs`) the raw `write`/`read` system
// call through inline assembly, the result checked in a register; on Apple
// (`backend/libc/io/syscalls.rs`) libc's `write`/`read`, with `errno` read
// through the `errno` crate. `read` into `&mut [u8; 1]` (`buffer.rs`) only
// passes the array's pointer and length. Errors come back as values.
unsafe impl crate::sys::child_hook::ChildCode for ParkFds {
    fn run(&self, child: &crate::sys::child_hook::InChild) -> io::Result<()> {
        park(self, child)
    }
}

/// Runs in the child between fork and exec: async-signal-safe calls only.
/// A failure only shortens the hold, which the parent then sees as
/// end-of-file.
pub fn park(fds: &ParkFds, child: &crate::sys::child_hook::InChild) -> io::Result<()> {
    // The child's copies of the parent-side pipe ends.
    for fd in [fds.parent_ready, fds.parent_release] {
        crate::sys::child_hook::close(fd, child);
    }
    // Four bytes, under PIPE_BUF, so written at once. Ignored, as before:
    // had it failed, the parent's wait for the pid would time out.
    let pid = rustix::process::getpid()
        .as_raw_nonzero()
        .get()
        .to_ne_bytes();
    let _ = rustix::io::write(&fds.ready, &pid);
    let mut buf = [0u8; 1];
    loop {
        match rustix::io::read(&fds.release, &mut buf) {
            Err(rustix::io::Errno::INTR) => continue,
            // A byte, end-of-file (the parent died), or an error: go on to exec.
            _ => return Ok(()),
        }
    }
}

/// Reads the pid a parked child wrote, waiting at most until `deadline`:
/// `Ok(None)` on end of file (the child never reached the window).
fn read_pid_by(reader: &mut PipeReader, deadline: Instant) -> io::Result<Option<u32>> {
    let mut pid = [0u8; 4];
    let mut got = 0;
    while got < pid.len() {
        match read_by(reader, &mut pid[got..], deadline)? {
            0 => return Ok(None),
            n => got += n,
        }
    }
    Ok(Some(u32::from_ne_bytes(pid)))
}

/// Reads one byte, waiting at most until `deadline`: `Ok(false)` on end of file.
pub fn read_byte_by(reader: &mut (impl Read + AsFd), deadline: Instant) -> io::Result<bool> {
    Ok(read_by(reader, &mut [0u8; 1], deadline)? == 1)
}

/// One `read` into `buf` once `reader` is readable, waiting at most until
/// `deadline`: the bytes read, 0 at end of file.
fn read_by(
    reader: &mut (impl Read + AsFd),
    buf: &mut [u8],
    deadline: Instant,
) -> io::Result<usize> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no byte from the child before the deadline",
            ));
        }
        match crate::sys::poll_one(reader.as_fd(), libc::POLLIN, left) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
            Ok(false) => continue,
            Ok(true) => return reader.read(buf),
        }
    }
}

/// An exec'd child that holds every descriptor of the parent that lacked
/// close-on-exec when it was spawned, until [`InheritingChild::release`].
///
/// `spawn` returning is not enough to know the child dropped its close-on-exec
/// copies: Linux wakes a vfork parent (glibc's posix_spawn) in `exec_mmap`,
/// before `do_close_on_exec` runs (fs/exec.c, `begin_new_exec`), so for a
/// moment after `spawn` returns the child still holds them. (This crate's own
/// test caught it: about 1 run in 8 saw a close-on-exec copy after spawn.) So
/// the child is `cat`, and [`InheritingChild::spawn`] returns only after cat
/// has echoed a byte: user code runs, exec is complete.
#[derive(Debug)]
pub struct InheritingChild {
    child: Child,
}

impl InheritingChild {
    /// Spawns `cat` on two pipes and waits for it to echo one byte.
    pub fn spawn() -> io::Result<InheritingChild> {
        let mut cmd = quiet_command(CAT_PROGRAM);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut held = InheritingChild {
            child: cmd.spawn()?,
        };
        held.child.stdin.as_mut().expect("piped").write_all(b"x")?;
        let stdout = held.child.stdout.as_mut().expect("piped");
        if !read_byte_by(stdout, Instant::now() + HOLD_TIMEOUT)? {
            return Err(io::Error::other("cat exited before echoing"));
        }
        Ok(held)
    }

    /// The exec'd child's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes the child's stdin, so it exits, and reaps it.
    pub fn release(mut self) -> io::Result<()> {
        drop(self.child.stdin.take());
        let status = self.child.wait()?;
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "inheriting child ended with {status}"
            )))
        }
    }
}

impl Drop for InheritingChild {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A thread spawning `true` through std's default path (posix_spawn where std
/// uses it), one child at a time, until stopped or until its deadline.
///
/// Spawns are numbered from 1 in start order: [`SpawnRace::started`] counts
/// those begun, [`SpawnRace::finished`] those reaped, so a caller can tell
/// which spawns were in progress while it did something: those numbered
/// from `finished()` before, plus one, to `started()` after.
#[derive(Debug)]
pub struct SpawnRace {
    stop: Arc<AtomicBool>,
    started: Arc<AtomicU64>,
    spawns: Arc<AtomicU64>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl SpawnRace {
    /// Starts the race; it ends by itself at `deadline` if never stopped.
    pub fn start(deadline: Instant) -> io::Result<SpawnRace> {
        let stop = Arc::new(AtomicBool::new(false));
        let started = Arc::new(AtomicU64::new(0));
        let spawns = Arc::new(AtomicU64::new(0));
        let (stop2, started2, spawns2) =
            (Arc::clone(&stop), Arc::clone(&started), Arc::clone(&spawns));
        let thread = std::thread::Builder::new()
            .name("fdwindow-race".into())
            .spawn(move || {
                let mut cmd = quiet_command(TRUE_PROGRAM);
                while !stop2.load(Ordering::Relaxed) && Instant::now() < deadline {
                    // Counted before the fork: a spawn in progress is started.
                    started2.fetch_add(1, Ordering::SeqCst);
                    let mut child = match cmd.spawn() {
                        Ok(child) => child,
                        Err(e) => {
                            // It never ran: not a spawn after all.
                            started2.fetch_sub(1, Ordering::SeqCst);
                            return Err(e);
                        }
                    };
                    if let Err(e) = child.wait() {
                        // Never leave a child unreaped, even when wait fails.
                        let _ = child.kill();
                        let _ = child.wait();
                        return Err(e);
                    }
                    spawns2.fetch_add(1, Ordering::SeqCst);
                }
                Ok(())
            })?;
        Ok(SpawnRace {
            stop,
            started,
            spawns,
            thread: Some(thread),
        })
    }

    /// Children spawned and reaped so far.
    pub fn spawns(&self) -> u64 {
        self.finished()
    }

    /// Spawns begun so far (the one in progress included).
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::SeqCst)
    }

    /// Spawns whose child has been reaped.
    pub fn finished(&self) -> u64 {
        self.spawns.load(Ordering::SeqCst)
    }

    /// Whether the spawning thread is still running (it ends at its deadline
    /// or on a spawn error).
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stops the race and reaps its last child: the number of spawns (every
    /// one started, every one reaped), or the error that ended the race early.
    pub fn stop(mut self) -> io::Result<u64> {
        self.finish()?;
        Ok(self.started())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| io::Error::other("the race thread panicked"))?,
            None => Ok(()),
        }
    }
}

impl Drop for SpawnRace {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// How [`wait_group`] ended.
#[derive(Debug)]
pub enum GroupExit {
    /// The leader exited by itself with this status.
    Exited(ExitStatus),
    /// The deadline passed; the group was killed.
    TimedOut,
    /// `stop` said so (e.g. Ctrl-C); the group was killed.
    Stopped,
}

/// Waits for `child`, the leader of its own process group (spawned with
/// `process_group(0)`), until it exits, `deadline` passes or `stop()` is true;
/// then kills whatever is left of the group and reaps the leader (and the
/// members orphaned to this process, see [`reap_group`]).
///
/// The exit is watched with `waitid(WNOWAIT)`, so the leader stays a zombie
/// until the group is killed: its pid, the group id, cannot be reused in
/// between, and the kill can never reach a stranger. `stop` is polled every
/// 50 ms; the exit itself wakes the wait at once.
pub fn wait_group(
    child: &mut Child,
    deadline: Instant,
    stop: impl Fn() -> bool,
) -> io::Result<GroupExit> {
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = std::sync::mpsc::channel();
    let watcher = std::thread::spawn(move || {
        let _ = tx.send(wait_for_exit(pid));
    });
    let ended = loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Ok(())) => break None,
            Ok(Err(e)) => break Some(Err(e)),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if stop() => {
                break Some(Ok(GroupExit::Stopped));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if Instant::now() >= deadline => {
                break Some(Ok(GroupExit::TimedOut));
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                break Some(Err(io::Error::other("lost the exit watcher")));
            }
        }
    };
    // The leader is not reaped yet (see above), so its pid, the group id, is
    // still ours.
    if let Some(group) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    let status = child.wait();
    reap_group(pid);
    let _ = watcher.join();
    match ended {
        None => Ok(GroupExit::Exited(status?)),
        Some(other) => other,
    }
}

/// Reaps the killed group's members that are this process's children: where
/// it adopts orphans (`sys::adopt_orphans`), every member the kill reached,
/// so none is still on its way out (SIGKILL pending, not yet scheduled) when
/// [`wait_group`] returns. Each is dying, so the wait is short; it ends with
/// ECHILD once none is left (at once where orphans go to init).
fn reap_group(pgid: libc::pid_t) {
    use rustix::process::{Pid, WaitOptions, waitpgid};
    let Some(pgid) = Pid::from_raw(pgid) else {
        return;
    };
    loop {
        match waitpgid(pgid, WaitOptions::empty()) {
            Ok(Some(_)) | Err(rustix::io::Errno::INTR) => {}
            Ok(None) | Err(_) => return,
        }
    }
}

/// Waits until process `pid` has exited, without reaping it (`WNOWAIT`).
fn wait_for_exit(pid: libc::pid_t) -> io::Result<()> {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    let pid = Pid::from_raw(pid).ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
    loop {
        match waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipe whose write end only the parent should hold: while a copy exists
    /// elsewhere, the read end never sees end-of-file.
    fn copy_is_held(w: PipeWriter, mut r: io::PipeReader) -> bool {
        drop(w);
        // A zero timeout: readiness now, no waiting.
        let ready = crate::sys::poll_one(r.as_fd(), libc::POLLIN, Duration::ZERO).unwrap();
        !(ready && r.read(&mut [0u8; 1]).unwrap() == 0)
    }

    #[test]
    fn held_child_holds_close_on_exec_copies_until_released() {
        let _serial = crate::test_serial();
        let (r, w) = io::pipe().unwrap(); // close-on-exec
        let held = HeldChild::hold().unwrap();
        assert_ne!(held.pid(), std::process::id());
        assert!(crate::sys::same_open_file(held.pid(), w.as_raw_fd()).unwrap());
        // Opened after the fork: whatever the child has at that number (if
        // anything) is another open file.
        let fresh = std::fs::File::open("/dev/null").unwrap();
        assert!(!crate::sys::same_open_file(held.pid(), fresh.as_raw_fd()).unwrap());
        assert!(
            copy_is_held(w, r),
            "a parked child must hold the parent's copy"
        );
        held.release().unwrap();
    }

    #[test]
    fn inheriting_child_holds_only_descriptors_without_cloexec() {
        let _serial = crate::test_serial();
        let (r1, w1) = io::pipe().unwrap();
        let (r2, w2) = io::pipe().unwrap();
        crate::base::locks::set_cloexec(&w2, false).unwrap();
        let child = InheritingChild::spawn().unwrap();
        assert!(!crate::sys::same_open_file(child.pid(), w1.as_raw_fd()).unwrap());
        assert!(crate::sys::same_open_file(child.pid(), w2.as_raw_fd()).unwrap());
        assert!(!copy_is_held(w1, r1), "close-on-exec copy survived exec");
        assert!(
            copy_is_held(w2, r2),
            "a descriptor without close-on-exec must be inherited"
        );
        child.release().unwrap();
    }

    #[test]
    fn spawn_race_spawns_and_stops() {
        let _serial = crate::test_serial();
        let race = SpawnRace::start(Instant::now() + Duration::from_secs(60)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while race.spawns() < 3 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert!(race.is_running());
        assert!(race.stop().unwrap() >= 3);
    }
}
