//! Spawn paths, and the length of the window in which a child holds copies of
//! the parent's close-on-exec descriptors.
//!
//! Every path here starts `/usr/bin/true` with an empty environment and its
//! stdio on `/dev/null`, so a child can do nothing but exit; every child is
//! reaped by [`Spawned::wait`] or, failing that, on drop.
//!
//! # How the window is measured
//!
//! 1. A fresh pipe is made, both ends close-on-exec, and its write end is
//!    duplicated (close-on-exec) above every open descriptor. The pipe itself
//!    takes the lowest free numbers, and [`OpenFiles`] leaves two free below
//!    its descriptors, so the write end sits at both ends of the table. Exec's
//!    close-on-exec pass closes one copy first and the other last whichever
//!    way it walks: Linux walks upward (`do_close_on_exec`, fs/file.c), xnu
//!    downward (`fdt_exec`, bsd/kern/kern_descrip.c:
//!    `for (int i = fdp->fd_afterlast; i-- > 0;)`). With one copy at the top,
//!    a Mac would close it first and report the window at its shortest.
//! 2. The clock (`Instant`, `CLOCK_MONOTONIC`) starts; the path spawns.
//! 3. As soon as the spawn returns, the parent drops its own write ends and
//!    notes whether the read end already sees end-of-file.
//! 4. `poll(2)` on the read end wakes when the last write end is gone: when the
//!    child's exec has closed both its copies. The clock stops there.
//!
//! Step 3 matters: Linux wakes a vfork parent (glibc's posix_spawn) in
//! `exec_mmap`, before `do_close_on_exec` runs (fs/exec.c, `begin_new_exec`),
//! so a spawn that has returned does not prove the copies are gone. std's
//! fork path is different: its `spawn` reads a close-on-exec error pipe until
//! end-of-file (library/std/src/sys/process/unix/unix.rs); that pipe is newer
//! than ours, so on Linux, walking upward, exec has closed our copies before
//! `spawn` returns; on macOS, walking downward, it may not have.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fdwindow_fix::base::child::TRUE_PROGRAM;
use fdwindow_fix::sys;
use fdwindow_fix::sys::child_hook::Hook;

/// How long one window may last before the measurement counts as broken.
const WINDOW_TIMEOUT: Duration = Duration::from_secs(30);

/// One way of starting a child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnPath {
    /// std's `Command::spawn` as it is: `posix_spawn` where std can use it (on
    /// glibc a `clone(CLONE_VM|CLONE_VFORK)`).
    PosixSpawn,
    /// std's `Command::spawn` with a no-op `pre_exec`, which forces `fork` + `exec`.
    ForkExec,
    /// `vfork(2)`'s kernel path: `clone(CLONE_VM|CLONE_VFORK|SIGCHLD)` with a
    /// child stack of its own, then `execve`. Linux only.
    Vfork,
    /// std with a `pre_exec` that calls `close_range(3, ~0U, 0)` in the child
    /// (fork + exec; Linux 5.9).
    CloseRangeInChild,
    /// std with a `pre_exec` that calls `close(2)` on every number from 3 up
    /// to the soft `RLIMIT_NOFILE` (fork + exec): what Python's `close_fds`
    /// falls back to without `close_range` or a readable `/proc/self/fd`, and
    /// what other spawners do. Its cost grows with the limit, not with the
    /// descriptors actually open.
    CloseEveryFdInChild,
    /// [`fdwindow_fix::spawn`], the leak-free spawn helper: on Linux
    /// `close_range(3, ~0U, CLOSE_RANGE_CLOEXEC)` in the child (5.11+), on
    /// macOS `POSIX_SPAWN_CLOEXEC_DEFAULT`.
    FixSpawn,
    /// [`fdwindow_fix::spawn`] forced onto its fallback for kernels without
    /// `CLOSE_RANGE_CLOEXEC`: a `getdents64` walk of `/proc/self/fd` in the
    /// child, flagging only the descriptors that are open. Linux only.
    FixSpawnFdWalk,
    /// `posix_spawn(3)` called directly, stdio by `adddup2` file actions: the
    /// baseline of the two spawn-attribute fixes below.
    LibcPosixSpawn,
    /// `posix_spawn(3)` with `posix_spawn_file_actions_addclosefrom_np(3)`
    /// (glibc 2.34), found at run time.
    ClosefromFileAction,
    /// `posix_spawn(3)` with the `POSIX_SPAWN_CLOEXEC_DEFAULT` attribute flag
    /// (macOS only).
    SpawnCloexecDefault,
}

impl SpawnPath {
    /// Every path, in display order.
    pub const ALL: [SpawnPath; 10] = [
        SpawnPath::PosixSpawn,
        SpawnPath::ForkExec,
        SpawnPath::Vfork,
        SpawnPath::CloseRangeInChild,
        SpawnPath::CloseEveryFdInChild,
        SpawnPath::FixSpawn,
        SpawnPath::FixSpawnFdWalk,
        SpawnPath::LibcPosixSpawn,
        SpawnPath::ClosefromFileAction,
        SpawnPath::SpawnCloexecDefault,
    ];

    /// The public id, e.g. `fork-exec`.
    pub fn id(self) -> &'static str {
        match self {
            SpawnPath::PosixSpawn => "posix-spawn",
            SpawnPath::ForkExec => "fork-exec",
            SpawnPath::Vfork => "vfork",
            SpawnPath::CloseRangeInChild => "close-range-in-child",
            SpawnPath::CloseEveryFdInChild => "close-every-fd-in-child",
            SpawnPath::FixSpawn => "fix-spawn",
            SpawnPath::FixSpawnFdWalk => "fix-spawn-fd-walk",
            SpawnPath::LibcPosixSpawn => "libc-posix-spawn",
            SpawnPath::ClosefromFileAction => "closefrom-file-action",
            SpawnPath::SpawnCloexecDefault => "spawn-cloexec-default",
        }
    }

    /// One sentence: what the path calls.
    pub fn about(self) -> &'static str {
        match self {
            SpawnPath::PosixSpawn => "std Command::spawn as is (posix_spawn where std uses it).",
            SpawnPath::ForkExec => "std Command::spawn with a no-op pre_exec (fork, then exec).",
            SpawnPath::Vfork => {
                "clone(CLONE_VM|CLONE_VFORK|SIGCHLD) on a child stack of its own, then execve: \
                 vfork(2)'s kernel path (Rust cannot call vfork() itself soundly: it returns twice)."
            }
            SpawnPath::CloseRangeInChild => {
                "std Command::spawn with a pre_exec calling close_range(3, ~0U, 0) (fork, then exec). It also closes \
                 std's exec-error pipe, so a failed exec goes unreported: fix::spawn uses CLOSE_RANGE_CLOEXEC."
            }
            SpawnPath::CloseEveryFdInChild => {
                "std Command::spawn with a pre_exec calling close(fd) for every fd from 3 up to the \
                 soft RLIMIT_NOFILE (fork, then exec), as Python's close_fds fallback does."
            }
            SpawnPath::FixSpawn => {
                "fdwindow_fix::spawn (Linux: close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) in pre_exec; \
                 macOS: posix_spawn with POSIX_SPAWN_CLOEXEC_DEFAULT)."
            }
            SpawnPath::FixSpawnFdWalk => {
                "fdwindow_fix::spawn forced onto its fallback: a getdents64 walk of /proc/self/fd \
                 in the child, flagging each open descriptor close-on-exec (Linux)."
            }
            SpawnPath::LibcPosixSpawn => "posix_spawn(3) called directly, stdio by adddup2.",
            SpawnPath::ClosefromFileAction => {
                "posix_spawn(3) with posix_spawn_file_actions_addclosefrom_np(3, after stdio)."
            }
            SpawnPath::SpawnCloexecDefault => {
                "posix_spawn(3) with the POSIX_SPAWN_CLOEXEC_DEFAULT attribute flag."
            }
        }
    }
}

/// A spawned child, reaped by [`Spawned::wait`] or on drop.
#[derive(Debug)]
pub struct Spawned(Reap);

#[derive(Debug)]
enum Reap {
    Std(Child),
    Fix(fdwindow_fix::spawn::Child),
    Pid(libc::pid_t),
    Done,
}

impl Spawned {
    /// Waits for the child and fails unless it exited with status 0.
    pub fn wait(mut self) -> io::Result<()> {
        let reap = std::mem::replace(&mut self.0, Reap::Done);
        let ok = match reap {
            Reap::Std(mut child) => child.wait()?.success(),
            Reap::Fix(mut child) => child.wait()?.success(),
            Reap::Pid(pid) => {
                let status = sys::wait_pid(pid)?;
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
            }
            Reap::Done => true,
        };
        if ok {
            Ok(())
        } else {
            Err(io::Error::other("the spawned child did not exit with 0"))
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.0, Reap::Done) {
            Reap::Std(mut child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Reap::Fix(mut child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Reap::Pid(pid) => {
                // Our own unreaped child, so the pid is not reused yet.
                let _ = sys::kill_pid(pid);
                let _ = sys::wait_pid(pid);
            }
            Reap::Done => {}
        }
    }
}

/// Everything a spawn needs, made before the clock starts: the program, its
/// argv and an empty environment as C strings, and `/dev/null` for stdio.
#[derive(Debug)]
pub struct Prepared {
    path: SpawnPath,
    command: Option<Command>,
    /// The command of the [`fdwindow_fix::spawn`] paths.
    fix: Option<fdwindow_fix::spawn::Command>,
    program: CString,
    /// argv (`true`) and an empty envp for the direct posix_spawn paths.
    argv: sys::CStrArray,
    envp: sys::CStrArray,
    devnull: Option<File>,
}

impl Prepared {
    /// Prepares a spawn of `/usr/bin/true` through `path`; fails with
    /// `ErrorKind::Unsupported` where this OS lacks the path.
    pub fn new(path: SpawnPath) -> io::Result<Prepared> {
        let std_command = |pre_exec: Option<Hook>| {
            let mut cmd = Command::new(TRUE_PROGRAM);
            cmd.env_clear()
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if let Some(hook) = pre_exec {
                fdwindow_fix::sys::child_hook::install(&mut cmd, hook);
            }
            cmd
        };
        let command = match path {
            SpawnPath::PosixSpawn => Some(std_command(None)),
            SpawnPath::ForkExec => Some(std_command(Some(Hook::ForkOnly))),
            SpawnPath::CloseRangeInChild => {
                // Detect in the parent, where an error can be reported.
                sys::close_range_supported()?;
                Some(std_command(Some(Hook::CloseRangeFrom(3))))
            }
            SpawnPath::CloseEveryFdInChild => {
                // Read in the parent: the child may only make async-signal-safe calls.
                let limit = open_max()?;
                Some(std_command(Some(Hook::CloseEvery { from: 3, limit })))
            }
            SpawnPath::Vfork
            | SpawnPath::LibcPosixSpawn
            | SpawnPath::ClosefromFileAction
            | SpawnPath::SpawnCloexecDefault
            | SpawnPath::FixSpawn
            | SpawnPath::FixSpawnFdWalk => None,
        };
        if path == SpawnPath::Vfork {
            sys::vfork_supported()?;
        }
        if path == SpawnPath::ClosefromFileAction {
            sys::addclosefrom_supported()?;
        }
        if path == SpawnPath::SpawnCloexecDefault {
            sys::spawn_cloexec_default_flag()?;
        }
        let fix = match path {
            SpawnPath::FixSpawn | SpawnPath::FixSpawnFdWalk => {
                use fdwindow_fix::spawn::{Command as FixCommand, Stdio as FixStdio};
                let walk = path == SpawnPath::FixSpawnFdWalk;
                if walk && !cfg!(target_os = "linux") {
                    return Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        "the /proc/self/fd walk is fix::spawn's Linux fallback",
                    ));
                }
                let mut cmd = FixCommand::new(TRUE_PROGRAM);
                cmd.env_clear()
                    .stdin(FixStdio::Null)
                    .stdout(FixStdio::Null)
                    .stderr(FixStdio::Null)
                    .force_fd_walk(walk);
                Some(cmd)
            }
            _ => None,
        };
        Ok(Prepared {
            path,
            command,
            fix,
            program: CString::new(TRUE_PROGRAM).expect("no NUL"),
            argv: sys::CStrArray::new([CString::new(TRUE_PROGRAM).expect("no NUL")]),
            envp: sys::CStrArray::new([]),
            devnull: None,
        })
    }

    /// The path this spawns through.
    pub fn path(&self) -> SpawnPath {
        self.path
    }

    /// Opens `/dev/null` for the child's stdio ahead of the spawn, as std does
    /// inside its own spawn (the raw paths open it here, untimed, when asked).
    fn devnull(&mut self) -> io::Result<RawFd> {
        if self.devnull.is_none() {
            self.devnull = Some(File::options().read(true).write(true).open("/dev/null")?);
        }
        Ok(self.devnull.as_ref().expect("just set").as_raw_fd())
    }

    /// Spawns the child.
    pub fn spawn(&mut self) -> io::Result<Spawned> {
        if let Some(cmd) = &mut self.command {
            return Ok(Spawned(Reap::Std(cmd.spawn()?)));
        }
        if let Some(cmd) = &mut self.fix {
            return Ok(Spawned(Reap::Fix(cmd.spawn()?)));
        }
        let stdio = self.devnull()?;
        let argv: [*const libc::c_char; 2] = [self.program.as_ptr(), std::ptr::null()];
        let envp: [*const libc::c_char; 1] = [std::ptr::null()];
        let pid = match self.path {
            SpawnPath::Vfork => sys::vfork_exec(&self.program, &argv, &envp, stdio)?,
            SpawnPath::LibcPosixSpawn => {
                libc_posix_spawn(&self.program, &self.argv, &self.envp, stdio, Extra::None)?
            }
            SpawnPath::ClosefromFileAction => libc_posix_spawn(
                &self.program,
                &self.argv,
                &self.envp,
                stdio,
                Extra::Closefrom,
            )?,
            SpawnPath::SpawnCloexecDefault => libc_posix_spawn(
                &self.program,
                &self.argv,
                &self.envp,
                stdio,
                Extra::CloexecDefault,
            )?,
            SpawnPath::PosixSpawn
            | SpawnPath::ForkExec
            | SpawnPath::CloseRangeInChild
            | SpawnPath::CloseEveryFdInChild
            | SpawnPath::FixSpawn
            | SpawnPath::FixSpawnFdWalk => unreachable!("these paths have a Command"),
        };
        Ok(Spawned(Reap::Pid(pid)))
    }
}

/// What a direct `posix_spawn` adds to the baseline.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Extra {
    None,
    Closefrom,
    CloexecDefault,
}

/// The soft `RLIMIT_NOFILE`, as `sysconf(_SC_OPEN_MAX)` reports it: one more
/// than the highest descriptor number the process may open (capped at
/// `RawFd::MAX` for an unlimited soft limit).
fn open_max() -> io::Result<RawFd> {
    let soft = get_nofile()?.rlim_cur;
    Ok(if soft == libc::RLIM_INFINITY {
        RawFd::MAX
    } else {
        soft.min(RawFd::MAX as libc::rlim_t) as RawFd
    })
}

/// `posix_spawn(pid, path, file_actions, attrp, argv, envp)`—Spawn a process.
///
/// stdio goes to `stdio` by `adddup2` file actions; `extra` adds the fix.
///
/// # References
/// - <https://man7.org/linux/man-pages/man3/posix_spawn.3.html>
/// - <https://pubs.opengroup.org/onlinepubs/9799919799/functions/posix_spawn.html>
fn libc_posix_spawn(
    program: &CStr,
    argv: &sys::CStrArray,
    envp: &sys::CStrArray,
    stdio: RawFd,
    extra: Extra,
) -> io::Result<libc::pid_t> {
    let mut spawner = sys::Spawner::new()?;
    for target in 0..3 {
        spawner.dup2(stdio, target)?;
    }
    match extra {
        Extra::None => {}
        Extra::Closefrom => sys::addclosefrom(&mut spawner, 3)?,
        Extra::CloexecDefault => spawner.set_flags(sys::spawn_cloexec_default_flag()?)?,
    }
    spawner.spawn(program, argv, envp, false)
}

/// One measured window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowSample {
    /// From just before the spawn until the child held neither copy of the
    /// measuring pipe's close-on-exec write end (one low, one high).
    pub window: Duration,
    /// From just before the spawn until the spawn returned.
    pub spawn_returned: Duration,
    /// Whether the child still held the copy when the spawn had returned.
    pub held_after_return: bool,
}

/// Spawns once through `prepared` and measures the window (see the module
/// doc); reaps the child before returning.
pub fn measure_window(prepared: &mut Prepared) -> io::Result<WindowSample> {
    let (read, write) = cloexec_pipe()?;
    let top = top_copy(&write)?;
    let started = Instant::now();
    let child = prepared.spawn()?;
    let spawn_returned = started.elapsed();
    drop((write, top));
    let held_after_return = !wait_eof(&read, Some(Instant::now()))?;
    if held_after_return && !wait_eof(&read, None)? {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the child held the pipe for 30 s",
        ));
    }
    let window = started.elapsed();
    child.wait()?;
    Ok(WindowSample {
        window,
        spawn_returned,
        held_after_return,
    })
}

/// A close-on-exec copy of `fd` numbered above every descriptor open now
/// (`fcntl(F_DUPFD_CLOEXEC, highest + 1)`), so that with the original low in
/// the table the pass that closes descriptors meets one copy last whichever
/// way it walks. Where the open descriptors cannot be listed, the copy takes
/// the lowest free number above 2 and the module doc's caveat applies.
fn top_copy(fd: &OwnedFd) -> io::Result<OwnedFd> {
    let highest = sys::process_fds(std::process::id() as libc::pid_t)
        .ok()
        .and_then(|fds| fds.into_iter().max())
        .unwrap_or(2);
    Ok(rustix::io::fcntl_dupfd_cloexec(fd, highest + 1)?)
}

/// A pipe whose ends are both close-on-exec (std's `io::pipe` uses `pipe2`
/// with `O_CLOEXEC` where it exists, else sets the flag before returning).
fn cloexec_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = io::pipe()?;
    Ok((OwnedFd::from(r), OwnedFd::from(w)))
}

/// Waits until the read end of a pipe sees end-of-file: every write end is
/// closed. `Some(now)` checks once without waiting; `None` waits up to
/// [`WINDOW_TIMEOUT`]. Nothing is ever written, so readiness is end-of-file.
fn wait_eof(read: &OwnedFd, poll_once: Option<Instant>) -> io::Result<bool> {
    let deadline = poll_once.unwrap_or_else(|| Instant::now() + WINDOW_TIMEOUT);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match sys::poll_one(read.as_fd(), libc::POLLIN, left) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
            Ok(false) if left.is_zero() => return Ok(false),
            Ok(false) => continue,
            Ok(true) => return Ok(true),
        }
    }
}

/// Anonymous memory with every page touched, so it is resident: it makes the
/// parent's page tables as large as a process of that size has. Freed on drop.
pub struct Ballast {
    /// Every byte written (a heap block this large is an anonymous mapping
    /// of its own in glibc's and macOS's allocators), so every page is resident.
    bytes: Vec<u8>,
}

impl std::fmt::Debug for Ballast {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ballast({} MiB)", self.bytes.len() >> 20)
    }
}

impl Ballast {
    /// Allocates `mib` MiB and writes every byte, so every page is touched.
    pub fn touch(mib: usize) -> io::Result<Ballast> {
        let len = mib
            .checked_shl(20)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "ballast too large"))?;
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(len)
            .map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e.to_string()))?;
        // Non-zero, so the writes cannot be replaced by fresh zero pages.
        bytes.resize(len, 1u8);
        std::hint::black_box(&mut bytes);
        Ok(Ballast { bytes })
    }
}

/// The page size (rustix: the kernel's auxv, or `sysconf(_SC_PAGESIZE)`).
pub fn page_size() -> usize {
    rustix::param::page_size()
}

/// Extra open descriptors (each its own open of `/dev/null`, close-on-exec)
/// that bring the process's count to a target; the soft `RLIMIT_NOFILE` is
/// raised (never above the hard limit) while they are open and restored on drop.
#[derive(Debug)]
pub struct OpenFiles {
    files: Vec<File>,
    restore: Option<libc::rlimit>,
}

impl OpenFiles {
    /// Opens descriptors until the process has `target` open (plus `spare`
    /// free slots under the limit for the spawns to come).
    pub fn fill_to(target: usize, spare: usize) -> io::Result<OpenFiles> {
        let mut limit = get_nofile()?;
        let needed = (target + spare) as libc::rlim_t;
        let mut restore = None;
        if limit.rlim_cur < needed {
            if limit.rlim_max != libc::RLIM_INFINITY && limit.rlim_max < needed {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!(
                        "RLIMIT_NOFILE hard limit {} is under the {needed} descriptors needed",
                        limit.rlim_max
                    ),
                ));
            }
            restore = Some(limit);
            limit.rlim_cur = needed;
            set_nofile(&limit)?;
        }
        let mut open = OpenFiles {
            files: Vec::new(),
            restore,
        };
        // Two numbers below the fill are held, then freed: each measurement's
        // pipe takes them, so its write end sits below every filler (see the
        // module doc, step 1).
        let below = [File::open("/dev/null")?, File::open("/dev/null")?];
        let have = count_open_fds()?;
        for _ in have..target + below.len() {
            open.files.push(File::open("/dev/null")?);
        }
        drop(below);
        Ok(open)
    }
}

impl Drop for OpenFiles {
    fn drop(&mut self) {
        self.files.clear();
        if let Some(limit) = self.restore {
            let _ = set_nofile(&limit);
        }
    }
}

fn get_nofile() -> io::Result<libc::rlimit> {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let raw = |v: Option<u64>| v.unwrap_or(libc::RLIM_INFINITY);
    Ok(libc::rlimit {
        rlim_cur: raw(limit.current),
        rlim_max: raw(limit.maximum),
    })
}

fn set_nofile(limit: &libc::rlimit) -> io::Result<()> {
    let opt = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v);
    let new = rustix::process::Rlimit {
        current: opt(limit.rlim_cur),
        maximum: opt(limit.rlim_max),
    };
    Ok(rustix::process::setrlimit(
        rustix::process::Resource::Nofile,
        new,
    )?)
}

/// How many descriptors this process has open: `fcntl(F_GETFD)` on every
/// number under the soft limit (portable; at most a few tens of thousands of calls).
pub fn count_open_fds() -> io::Result<usize> {
    let limit = get_nofile()?.rlim_cur.min(1 << 20) as RawFd;
    Ok((0..limit)
        .filter(|&fd| crate::hazards::cloexec::fd_flags(fd).is_some())
        .count())
}

/// Durations summarised by nearest-rank percentiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// How many durations.
    pub samples: usize,
    /// 50th percentile.
    pub median: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// The largest.
    pub max: Duration,
}

impl Summary {
    /// Summarises `durations` (sorted here); `None` when empty.
    pub fn of(durations: &mut [Duration]) -> Option<Summary> {
        if durations.is_empty() {
            return None;
        }
        durations.sort_unstable();
        // Nearest rank: the smallest value with at least p% of samples at or below it.
        let rank = |p: usize| durations[(durations.len() * p).div_ceil(100).max(1) - 1];
        Some(Summary {
            samples: durations.len(),
            median: rank(50),
            p90: rank(90),
            p99: rank(99),
            max: durations[durations.len() - 1],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_write_end_sits_below_and_above_every_filler() {
        // Descriptor numbers are process-wide: no other test may open or
        // close meanwhile.
        let _serial = crate::test_serial();
        let fill = OpenFiles::fill_to(count_open_fds().unwrap() + 50, 8).unwrap();
        let fillers: Vec<RawFd> = fill.files.iter().map(AsRawFd::as_raw_fd).collect();
        let (lowest, highest) = (
            *fillers.iter().min().unwrap(),
            *fillers.iter().max().unwrap(),
        );
        let (read, write) = cloexec_pipe().unwrap();
        let top = top_copy(&write).unwrap();
        assert!(
            write.as_raw_fd() < lowest,
            "{} vs {lowest}",
            write.as_raw_fd()
        );
        assert!(
            top.as_raw_fd() > highest,
            "{} vs {highest}",
            top.as_raw_fd()
        );
        let flags = rustix::io::fcntl_getfd(&top).unwrap();
        assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
        // One pipe: EOF only once both write ends are gone.
        drop(write);
        assert!(!wait_eof(&read, Some(Instant::now())).unwrap());
        drop(top);
        assert!(wait_eof(&read, Some(Instant::now())).unwrap());
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut d: Vec<Duration> = (1..=100).rev().map(Duration::from_micros).collect();
        let s = Summary::of(&mut d).unwrap();
        assert_eq!(s.samples, 100);
        assert_eq!(s.median, Duration::from_micros(50));
        assert_eq!(s.p90, Duration::from_micros(90));
        assert_eq!(s.p99, Duration::from_micros(99));
        assert_eq!(s.max, Duration::from_micros(100));
        let mut one = [Duration::from_micros(7)];
        assert_eq!(Summary::of(&mut one).unwrap().p99, Duration::from_micros(7));
        assert!(Summary::of(&mut []).is_none());
    }

    #[test]
    fn every_supported_path_spawns_and_reaps() {
        let _serial = crate::test_serial();
        let mut ran = 0;
        for path in SpawnPath::ALL {
            match Prepared::new(path) {
                Ok(mut p) => {
                    p.spawn().unwrap().wait().unwrap();
                    ran += 1;
                }
                Err(e) => assert_eq!(e.kind(), io::ErrorKind::Unsupported, "{path:?}: {e}"),
            }
        }
        assert!(ran >= 2, "std's two paths always work");
    }

    #[test]
    fn window_ends_after_spawn_starts() {
        let _serial = crate::test_serial();
        for path in [SpawnPath::PosixSpawn, SpawnPath::ForkExec] {
            let mut p = Prepared::new(path).unwrap();
            let s = measure_window(&mut p).unwrap();
            assert!(s.window >= s.spawn_returned, "{path:?}: {s:?}");
        }
    }

    #[test]
    fn a_tiny_sweep_fills_every_table() {
        let _serial = crate::test_serial();
        let base = count_open_fds().unwrap();
        let sweep = Sweep {
            rss_mib: vec![1, 8],
            fds: vec![base + 20],
            samples: 3,
        };
        let tables = measure_sweep(&sweep, &|| false);
        let ids: Vec<&str> = tables.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, [TABLE_PATHS, TABLE_BY_RSS, TABLE_BY_FDS, TABLE_SLOPES]);
        let measured = tables[0].rows.iter().filter(|r| r[2] == "measured").count();
        assert!(measured >= 2, "{:?}", tables[0]);
        for t in &tables {
            assert_eq!(t.problem, None, "{}", t.id);
            assert!(t.rows.iter().all(|r| r.len() == t.columns.len()), "{t:?}");
        }
        assert_eq!(tables[1].rows.len(), 2 * measured);
        assert_eq!(tables[2].rows.len(), measured);
        for t in &tables[1..3] {
            for r in &t.rows {
                assert_eq!(cell(t, r, "samples"), Some(3.0), "{r:?}");
                let median = cell(t, r, "median µs").unwrap();
                let max = cell(t, r, "max µs").unwrap();
                assert!(0.0 < median && median <= max, "{r:?}");
            }
        }
        // Two memory points per path give every path a slope against memory.
        assert!(
            tables[3].rows.iter().all(|r| r[1] != "—"),
            "{:?}",
            tables[3]
        );
    }

    #[test]
    fn nofile_points_reach_2_20_and_the_hard_limit() {
        assert_eq!(
            nofile_points(20_000),
            [1 << 10, 1 << 14, 20_000, 1 << 17, 1 << 20]
        );
        assert_eq!(
            nofile_points(libc::RLIM_INFINITY),
            [1 << 10, 1 << 14, 1 << 17, 1 << 20]
        );
        assert_eq!(
            nofile_points(1 << 30),
            [1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 22]
        );
        assert_eq!(nofile_points(1 << 20), [1 << 10, 1 << 14, 1 << 17, 1 << 20]);
    }

    #[test]
    fn a_tiny_nofile_sweep_measures_or_says_why_not() {
        let _serial = crate::test_serial();
        let before = get_nofile().unwrap();
        let soft = before.rlim_cur.min(4096) as u64;
        // One point the process may set, one it may not unless privileged.
        let t = measure_nofile_sweep(&[soft, u64::MAX >> 1], 2, &|| false);
        assert_eq!(t.problem, None);
        assert_eq!(t.rows.len(), 2 * NOFILE_PATHS.len());
        for r in &t.rows {
            assert_eq!(r.len(), NOFILE_COLUMNS.len(), "{r:?}");
        }
        let measured: Vec<&Vec<String>> = t.rows[..NOFILE_PATHS.len()]
            .iter()
            .filter(|r| r[4] == "2")
            .collect();
        // std's two paths and the brute-force loop work everywhere.
        assert!(measured.len() >= 3, "{:?}", t.rows);
        for r in measured {
            assert!(cell(&t, r, "median µs").unwrap() > 0.0, "{r:?}");
        }
        // The limit is put back.
        let after = get_nofile().unwrap();
        assert_eq!(
            (after.rlim_cur, after.rlim_max),
            (before.rlim_cur, before.rlim_max)
        );
    }

    #[test]
    fn least_squares_slope() {
        assert_eq!(slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]), Some(2.0));
        assert_eq!(slope(&[(1.0, 1.0), (1.0, 3.0)]), None);
        assert_eq!(slope(&[(1.0, 1.0)]), None);
    }

    #[test]
    fn ballast_and_open_files_come_and_go() {
        let _serial = crate::test_serial();
        drop(Ballast::touch(2).unwrap());
        let before = count_open_fds().unwrap();
        // Other test threads may open or close a few descriptors meanwhile:
        // allow for that, not for 50.
        let files = OpenFiles::fill_to(before + 50, 16).unwrap();
        assert!(count_open_fds().unwrap() >= before + 40);
        drop(files);
        assert!(count_open_fds().unwrap() <= before + 10);
    }
}

/// The table of windows by touched memory (open descriptors as they are).
pub const TABLE_BY_RSS: &str = "window-by-rss";
/// The table of windows by open descriptors (no extra memory touched).
pub const TABLE_BY_FDS: &str = "window-by-fds";
/// The table of least-squares slopes of the median window.
pub const TABLE_SLOPES: &str = "slopes";
/// The table of spawn paths and whether each could be measured.
pub const TABLE_PATHS: &str = "paths";

/// Columns of [`TABLE_BY_RSS`] and [`TABLE_BY_FDS`]; the first is the row key
/// (`<path>/rss-<MiB>MiB` or `<path>/fds-<n>`).
pub const WINDOW_COLUMNS: [&str; 10] = [
    "point",
    "path",
    "touched MiB",
    "open fds",
    "samples",
    "median µs",
    "p90 µs",
    "p99 µs",
    "max µs",
    "held after spawn returned",
];

/// The spawn paths the window is measured for.
pub const WINDOW_PATHS: [SpawnPath; 3] =
    [SpawnPath::PosixSpawn, SpawnPath::ForkExec, SpawnPath::Vfork];

/// Where to measure: touched MiB for the memory sweep, open descriptors for
/// the descriptor sweep, and samples per point and path.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// MiB of touched anonymous memory at each point of the memory sweep.
    pub rss_mib: Vec<usize>,
    /// Open descriptors at each point of the descriptor sweep.
    pub fds: Vec<usize>,
    /// Windows measured per point and path.
    pub samples: usize,
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

/// Measures the windows of every path in [`WINDOW_PATHS`] over `sweep` and
/// returns the observation tables: paths, by memory, by descriptors, slopes.
///
/// At each point the paths take turns, one sample each, so that a drift in
/// the machine's load spreads over all paths alike.
pub fn measure_sweep(sweep: &Sweep, interrupted: &dyn Fn() -> bool) -> Vec<crate::report::Table> {
    use crate::report::Table;
    let mut prepared: Vec<(SpawnPath, Result<Prepared, String>)> = WINDOW_PATHS
        .iter()
        .map(|&p| {
            (
                p,
                Prepared::new(p).map_err(|e| match e.kind() {
                    io::ErrorKind::Unsupported => format!("unsupported: {e}"),
                    _ => format!("broken: {e}"),
                }),
            )
        })
        .collect();
    let paths = Table {
        id: TABLE_PATHS.into(),
        about: "The spawn paths whose window is measured, and whether each could be.".into(),
        columns: vec!["path".into(), "how".into(), "status".into()],
        rows: prepared
            .iter()
            .map(|(p, r)| {
                vec![
                    p.id().to_owned(),
                    p.about().to_owned(),
                    r.as_ref()
                        .err()
                        .cloned()
                        .unwrap_or_else(|| "measured".into()),
                ]
            })
            .collect(),
        problem: None,
    };
    let window_table = |id: &str, about: String| Table {
        id: id.into(),
        about,
        columns: WINDOW_COLUMNS.iter().map(|c| (*c).to_owned()).collect(),
        rows: Vec::new(),
        problem: None,
    };
    let mut by_rss = window_table(
        TABLE_BY_RSS,
        format!(
            "Time from the start of a spawn until the child no longer holds either copy of a \
             close-on-exec pipe's write end, one below and one above every other descriptor, so \
             exec's close-on-exec pass meets one of them last whichever way it walks (poll(2) on \
             the read end sees end-of-file), \
             CLOCK_MONOTONIC, with this much anonymous memory touched in the parent (4 KiB pages \
             unless transparent huge pages say otherwise: {}); the probe's own few MiB come on top.",
            sys_thp()
        ),
    );
    let mut by_fds = window_table(
        TABLE_BY_FDS,
        "The same window with the parent holding this many open descriptors (each an open of \
         /dev/null, close-on-exec), no extra memory touched."
            .into(),
    );
    let points = sweep
        .rss_mib
        .iter()
        .map(|&m| (true, m))
        .chain(sweep.fds.iter().map(|&n| (false, n)));
    for (is_rss, value) in points {
        if interrupted() {
            break;
        }
        let table = if is_rss { &mut by_rss } else { &mut by_fds };
        if table.problem.is_some() {
            continue;
        }
        measure_point(
            &mut prepared,
            is_rss,
            value,
            sweep.samples,
            table,
            interrupted,
        );
    }
    let slopes = slopes_table(&by_rss, &by_fds);
    vec![paths, by_rss, by_fds, slopes]
}

/// One sweep point: `value` MiB touched (`is_rss`) or descriptors open,
/// every prepared path sampled in turns, a row per path in `table`; a point
/// that cannot be set up gives the table its problem (or unsupported rows).
fn measure_point(
    prepared: &mut [(SpawnPath, Result<Prepared, String>)],
    is_rss: bool,
    value: usize,
    samples_per_path: usize,
    table: &mut crate::report::Table,
    interrupted: &dyn Fn() -> bool,
) {
    let (ballast, files) = if is_rss {
        match Ballast::touch(value) {
            Ok(b) => (Some(b), None),
            Err(e) => {
                table.problem = Some(format!("broken: touch {value} MiB: {e}"));
                return;
            }
        }
    } else {
        // Room for each spawn's own descriptors: the pipe, /dev/null, std's error pipe.
        match OpenFiles::fill_to(value, 64) {
            Ok(f) => (None, Some(f)),
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                for (path, _) in prepared.iter() {
                    let mut row = vec![format!("{}/fds-{value}", path.id()), path.id().into()];
                    row.extend(["0".into(), value.to_string(), format!("unsupported: {e}")]);
                    row.resize(WINDOW_COLUMNS.len(), "—".into());
                    table.rows.push(row);
                }
                return;
            }
            Err(e) => {
                table.problem = Some(format!("broken: open {value} descriptors: {e}"));
                return;
            }
        }
    };
    let open = count_open_fds().unwrap_or(0);
    let mut samples: Vec<(Vec<Duration>, usize)> = vec![(Vec::new(), 0); prepared.len()];
    'sampling: for _ in 0..samples_per_path {
        for (i, (_, prep)) in prepared.iter_mut().enumerate() {
            let Ok(prep) = prep else { continue };
            if interrupted() {
                break 'sampling;
            }
            match measure_window(prep) {
                Ok(s) => {
                    samples[i].0.push(s.window);
                    samples[i].1 += usize::from(s.held_after_return);
                }
                Err(e) => {
                    table.problem = Some(format!("broken: {} spawn: {e}", prep.path().id()));
                    break 'sampling;
                }
            }
        }
    }
    drop((ballast, files));
    if table.problem.is_some() {
        return;
    }
    for ((path, prep), (mut durations, held)) in prepared.iter().zip(samples) {
        if prep.is_err() {
            continue;
        }
        let Some(s) = Summary::of(&mut durations) else {
            continue;
        };
        let key = if is_rss {
            format!("{}/rss-{value}MiB", path.id())
        } else {
            format!("{}/fds-{value}", path.id())
        };
        table.rows.push(vec![
            key,
            path.id().into(),
            if is_rss {
                value.to_string()
            } else {
                "0".into()
            },
            open.to_string(),
            s.samples.to_string(),
            us(s.median),
            us(s.p90),
            us(s.p99),
            us(s.max),
            format!("{held}/{}", s.samples),
        ]);
    }
}

/// The numeric value of a window-table cell, by column name.
pub fn cell(table: &crate::report::Table, row: &[String], column: &str) -> Option<f64> {
    let i = table.columns.iter().position(|c| c == column)?;
    row.get(i)?.parse().ok()
}

/// Least-squares slope of `y` against `x`; `None` under two distinct x values.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (points.len() >= 2 && sxx > 0.0).then(|| sxy / sxx)
}

fn slopes_table(
    by_rss: &crate::report::Table,
    by_fds: &crate::report::Table,
) -> crate::report::Table {
    let per_path = |t: &crate::report::Table, path: &str, x: &str, scale: f64| {
        let points: Vec<(f64, f64)> = t
            .rows
            .iter()
            .filter(|r| r.get(1).is_some_and(|p| p == path))
            .filter_map(|r| Some((cell(t, r, x)?, cell(t, r, "median µs")?)))
            .collect();
        slope(&points).map_or_else(|| "—".to_owned(), |s| format!("{:.1}", s * scale))
    };
    let mut paths: Vec<&str> = by_rss
        .rows
        .iter()
        .chain(&by_fds.rows)
        .filter_map(|r| r.get(1).map(String::as_str))
        .collect();
    let mut seen = Vec::new();
    paths.retain(|p| {
        let new = !seen.contains(p);
        seen.push(*p);
        new
    });
    crate::report::Table {
        id: TABLE_SLOPES.into(),
        about: "Least-squares slope of the median window against touched memory (µs per GiB) and \
                against open descriptors (µs per 1000), per path."
            .into(),
        columns: vec![
            "path".into(),
            "µs per GiB touched".into(),
            "µs per 1000 open fds".into(),
        ],
        rows: paths
            .iter()
            .map(|p| {
                vec![
                    (*p).to_owned(),
                    per_path(by_rss, p, "touched MiB", 1024.0),
                    per_path(by_fds, p, "open fds", 1000.0),
                ]
            })
            .collect(),
        problem: None,
    }
}

/// The transparent-huge-page mode, which decides whether touched memory costs
/// a fork one page-table entry per 4 KiB or per 2 MiB.
fn sys_thp() -> String {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .ok()
        .and_then(|s| {
            let start = s.find('[')?;
            let end = s[start..].find(']')? + start;
            Some(format!("THP {}", &s[start + 1..end]))
        })
        .unwrap_or_else(|| "no THP setting found".into())
}

/// The table of the cost of one spawn by `RLIMIT_NOFILE` (thorough runs only).
pub const TABLE_BY_NOFILE: &str = "cost-by-nofile";

/// Columns of [`TABLE_BY_NOFILE`]; the first is the row key (`<path>/nofile-<n>`).
pub const NOFILE_COLUMNS: [&str; 9] = [
    "point",
    "path",
    "RLIMIT_NOFILE",
    "open fds",
    "samples",
    "median µs",
    "p90 µs",
    "p99 µs",
    "max µs",
];

/// The paths swept against `RLIMIT_NOFILE`: std's two, which close nothing
/// in the child (the flat baseline), and each path that closes descriptors
/// in the child.
pub const NOFILE_PATHS: [SpawnPath; 7] = [
    SpawnPath::PosixSpawn,
    SpawnPath::ForkExec,
    SpawnPath::FixSpawn,
    SpawnPath::FixSpawnFdWalk,
    SpawnPath::CloseRangeInChild,
    SpawnPath::ClosefromFileAction,
    SpawnPath::CloseEveryFdInChild,
];

/// The `RLIMIT_NOFILE` values to sweep given the hard limit: 2^10, 2^14,
/// 2^17 and 2^20 (a container's usual huge limit, and Linux's default
/// `fs.nr_open`), and the hard limit itself where it is finite (capped at
/// 2^22, so that the brute-force loop's samples stay within seconds), in
/// order. Values over the hard limit stay in: a process that may raise its
/// hard limit (CAP_SYS_RESOURCE) measures them; another records why it could not.
pub fn nofile_points(hard: libc::rlim_t) -> Vec<u64> {
    let mut points: Vec<u64> = vec![1 << 10, 1 << 14, 1 << 17, 1 << 20];
    if hard != libc::RLIM_INFINITY {
        points.push(hard.clamp(1 << 10, 1 << 22));
    }
    points.sort_unstable();
    points.dedup();
    points
}

/// `RLIMIT_NOFILE` set to one value (soft, and hard too where the value is
/// above the hard limit: that needs CAP_SYS_RESOURCE, and on Linux stays
/// under `fs.nr_open`), restored on drop.
///
/// # References
/// - getrlimit(2): <https://man7.org/linux/man-pages/man2/getrlimit.2.html>
/// - proc_sys_fs(5), `nr_open`: <https://man7.org/linux/man-pages/man5/proc_sys_fs.5.html>
#[derive(Debug)]
pub struct NofileLimit {
    restore: libc::rlimit,
}

impl NofileLimit {
    /// Sets the soft limit (and the hard one, if lower) to `n`. A refusal
    /// (`EPERM`, `EINVAL`) comes back as `ErrorKind::Unsupported`.
    pub fn set(n: u64) -> io::Result<NofileLimit> {
        let old = get_nofile()?;
        let mut new = old;
        new.rlim_cur = n;
        if old.rlim_max != libc::RLIM_INFINITY && old.rlim_max < new.rlim_cur {
            new.rlim_max = new.rlim_cur;
        }
        match set_nofile(&new) {
            Ok(()) => Ok(NofileLimit { restore: old }),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EINVAL)) => {
                Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!(
                        "setrlimit(RLIMIT_NOFILE, {n}) with hard limit {}: {}",
                        old.rlim_max,
                        fdwindow_fix::base::errno::error_name(&e)
                    ),
                ))
            }
            Err(e) => Err(e),
        }
    }
}

impl Drop for NofileLimit {
    fn drop(&mut self) {
        let _ = set_nofile(&self.restore);
    }
}

/// Spawns once through `prepared` and waits for the child to exit: the whole
/// cost of one spawn, including whatever the child does before exec.
///
/// The window of [`measure_window`] cannot serve here: a path that closes
/// descriptors in the child closes the measuring pipe early in its walk, not
/// at its end.
pub fn measure_cost(prepared: &mut Prepared) -> io::Result<Duration> {
    let started = Instant::now();
    prepared.spawn()?.wait()?;
    Ok(started.elapsed())
}

/// Measures the cost of one spawn (start to exit) on every path in
/// [`NOFILE_PATHS`] at each `RLIMIT_NOFILE` in `limits`, `samples` times
/// per point and path, the paths taking turns.
pub fn measure_nofile_sweep(
    limits: &[u64],
    samples: usize,
    interrupted: &dyn Fn() -> bool,
) -> crate::report::Table {
    let mut table = crate::report::Table {
        id: TABLE_BY_NOFILE.into(),
        about: "Cost of one spawn of /usr/bin/true, from the start of the spawn until the child \
                has exited and been reaped (CLOCK_MONOTONIC), with the soft RLIMIT_NOFILE (and the \
                hard one where it was lower, as root) set to this value in the spawning process; \
                the parent holds only its usual few descriptors. A path that closes every number \
                up to the limit pays for the limit; one that asks the kernel (close_range, \
                closefrom) or walks /proc/self/fd (fix-spawn-fd-walk) pays for the descriptors \
                actually open. Measured only by a thorough \
                run (--thorough)."
            .into(),
        columns: NOFILE_COLUMNS.iter().map(|c| (*c).to_owned()).collect(),
        rows: Vec::new(),
        problem: None,
    };
    let skipped = |path: SpawnPath, limit: u64, why: String| {
        let mut row = vec![
            format!("{}/nofile-{limit}", path.id()),
            path.id().to_owned(),
            limit.to_string(),
            "—".into(),
            why,
        ];
        row.resize(NOFILE_COLUMNS.len(), "—".into());
        row
    };
    for &limit in limits {
        if interrupted() {
            break;
        }
        let guard = match NofileLimit::set(limit) {
            Ok(g) => g,
            Err(e) => {
                let why = match e.kind() {
                    io::ErrorKind::Unsupported => format!("unsupported: {e}"),
                    _ => format!("broken: {e}"),
                };
                for path in NOFILE_PATHS {
                    table.rows.push(skipped(path, limit, why.clone()));
                }
                continue;
            }
        };
        // Made at each point: the brute-force path reads the limit here.
        let mut prepared: Vec<(SpawnPath, Result<Prepared, String>)> = NOFILE_PATHS
            .iter()
            .map(|&p| {
                (
                    p,
                    Prepared::new(p).map_err(|e| match e.kind() {
                        io::ErrorKind::Unsupported => format!("unsupported: {e}"),
                        _ => format!("broken: {e}"),
                    }),
                )
            })
            .collect();
        let open = count_open_fds().unwrap_or(0);
        let mut costs: Vec<Result<Vec<Duration>, String>> = vec![Ok(Vec::new()); prepared.len()];
        // One untimed spawn per path first: the first spawn after a limit
        // change pays for page faults and caches the others do not.
        for (i, (_, prep)) in prepared.iter_mut().enumerate() {
            if let Ok(prep) = prep
                && let Err(e) = measure_cost(prep)
            {
                costs[i] = Err(format!("broken: spawn: {e}"));
            }
        }
        'sampling: for _ in 0..samples {
            for (i, (_, prep)) in prepared.iter_mut().enumerate() {
                let (Ok(prep), Ok(done)) = (prep, &mut costs[i]) else {
                    continue;
                };
                if interrupted() {
                    break 'sampling;
                }
                match measure_cost(prep) {
                    Ok(d) => done.push(d),
                    Err(e) => costs[i] = Err(format!("broken: spawn: {e}")),
                }
            }
        }
        drop(guard);
        for ((path, prep), cost) in prepared.into_iter().zip(costs) {
            let mut durations = match (prep, cost) {
                (Err(why), _) | (Ok(_), Err(why)) => {
                    table.rows.push(skipped(path, limit, why));
                    continue;
                }
                (Ok(_), Ok(d)) => d,
            };
            let Some(s) = Summary::of(&mut durations) else {
                continue;
            };
            table.rows.push(vec![
                format!("{}/nofile-{limit}", path.id()),
                path.id().into(),
                limit.to_string(),
                open.to_string(),
                s.samples.to_string(),
                us(s.median),
                us(s.p90),
                us(s.p99),
                us(s.max),
            ]);
        }
    }
    table
}
