//! The code a forked child runs between `fork` and `exec`
//! (`CommandExt::pre_exec`), as a closed set of audited hooks installed by
//! one function, so the crate has one `unsafe` `pre_exec` call instead of one
//! per caller.
//!
//! `pre_exec` is `unsafe` because the hook runs in a copy of a multithreaded
//! process in which only the forking thread exists: it may make only
//! async-signal-safe calls (no allocation, no lock, no printing). A hook is
//! a value of a type that implements the `unsafe` trait [`ChildCode`]: the
//! OS-level hooks here ([`Hook`], each variant naming its calls), the held
//! child's park (`base::child`), and the pressure child's class drop and
//! hold (`cotenant::pressure`). Each `unsafe impl` says which calls its
//! `run` makes; [`install`] is safe to call with any of them because that
//! set is closed within the crate (the trait is crate-private) and every
//! member is audited where it is defined: a caller picks a hook, it cannot
//! pass code of its own. The trait, rather than one enum naming every hook,
//! keeps this module at the bottom layer: the hooks of higher layers
//! implement it there, and this module imports none of them.
//!
//! # References
//! - <https://doc.rust-lang.org/std/os/unix/process/trait.CommandExt.html#tymethod.pre_exec>
//! - <https://man7.org/linux/man-pages/man7/signal-safety.7.html>

use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Code that runs in a forked child between fork and exec.
///
/// # Safety
///
/// `run` makes only async-signal-safe calls (signal-safety(7)) on data
/// copied in before the fork: it allocates nothing, takes no lock, prints
/// nothing, and cannot panic. Each `unsafe impl` names the calls it makes.
pub unsafe trait ChildCode: Send + Sync + 'static {
    /// Runs in the child between fork and exec.
    fn run(&self, child: &InChild) -> io::Result<()>;
}

/// The OS-level hooks: the async-signal-safe calls each makes are named.
/// Everything a hook reads was copied in before the fork.
#[derive(Debug)]
pub enum Hook {
    /// No call at all: a `pre_exec` hook, even an empty one, makes std fork
    /// and exec instead of calling `posix_spawn` (the probes' fork path).
    ForkOnly,
    /// `close_range(from, ~0U, 0)`: one raw system call
    /// ([`crate::sys::close_range_from`]). Its support is decided in the
    /// parent, before the spawn.
    CloseRangeFrom(RawFd),
    /// `close(2)` on every number in `from..limit`, errors ignored
    /// ([`close_every_fd`]).
    CloseEvery {
        /// The first number closed.
        from: RawFd,
        /// One past the last.
        limit: RawFd,
    },
    /// `fcntl(fd, F_SETFD, 0)`: the child inherits `fd` across exec
    /// ([`crate::sys::set_fd_flags`]).
    Inherit(RawFd),
    /// An OS's own hook ([`crate::sys::ChildHook`]: on Linux the
    /// parent-death signal and `fix::spawn`'s close-on-exec pass).
    Sys(crate::sys::ChildHook),
}

// SAFETY: each variant makes only the async-signal-safe calls its
// documentation lists (close_range, close, fcntl, and the OS's own hooks',
// each listed at `ChildHook`), on numbers and flags copied in before the
// fork; the match indexes nothing and nothing allocates.
unsafe impl ChildCode for Hook {
    fn run(&self, child: &InChild) -> io::Result<()> {
        match self {
            Hook::ForkOnly => Ok(()),
            Hook::CloseRangeFrom(from) => crate::sys::close_range_from(*from),
            Hook::CloseEvery { from, limit } => {
                close_every_fd(*from, *limit, child);
                Ok(())
            }
            Hook::Inherit(fd) => crate::sys::set_fd_flags(*fd, 0),
            Hook::Sys(hook) => hook.run(),
        }
    }
}

/// Proof that the code holding it runs in a forked child between fork and
/// exec: only [`install`]'s hook makes one (the field is private), and only
/// by reference does it leave there.
#[derive(Debug)]
pub struct InChild(());

/// `close(fd)` on a descriptor *number*, errors ignored (`EBADF` for one
/// that is not open). Safe with the [`InChild`] proof: the child either
/// execs or `_exit`s (std's fork path never returns from a hook into the
/// caller's frames), so no owner in it (an `OwnedFd`, a `File`) runs its
/// drop and closes the number a second time; the parent's descriptors are
/// its own, untouched. Async-signal-safe: one system call.
pub fn close(fd: RawFd, _: &InChild) {
    // SAFETY: closes a number in the forked child, which runs no owner's
    // drop afterwards (see above); close takes no pointer.
    unsafe { libc::close(fd) };
}

/// `close(fd)` for every `fd` in `from..limit`, ignoring `EBADF`: the
/// brute-force loop, one system call per number whether or not it is open.
/// Async-signal-safe: only `close(2)`.
pub fn close_every_fd(from: RawFd, limit: RawFd, child: &InChild) {
    for fd in from..limit {
        close(fd, child);
    }
}

/// Makes `cmd` fork and exec instead of calling `posix_spawn`, with nothing
/// run in between: the fork path a benchmark compares.
pub fn fork_only(cmd: &mut Command) {
    install(cmd, Hook::ForkOnly);
}

/// Makes `cmd`'s child inherit descriptor number `fd` across exec: its
/// close-on-exec flag is cleared in the child only, between fork and exec
/// (`fcntl(F_SETFD, 0)`). Safe for any number: in the
/// child it changes one descriptor's flag and touches no memory.
pub fn inherit(cmd: &mut Command, fd: RawFd) {
    install(cmd, Hook::Inherit(fd));
}

/// Makes `cmd`'s child die (SIGKILL) when the calling thread ends, so a
/// command under test never outlives an fdwindow killed outright: Linux's
/// `PR_SET_PDEATHSIG`, with the `getppid` check, between fork and exec
/// (it survives the exec). Spawn and wait on the same thread. Elsewhere a
/// no-op: macOS has no such setting.
pub fn die_with_parent(cmd: &mut Command) {
    super::die_with_parent(cmd);
}

/// Makes `cmd`'s child run `hook` between fork and exec (and so makes std
/// fork instead of calling `posix_spawn`).
pub fn install(cmd: &mut Command, hook: impl ChildCode) {
    // SAFETY: `hook` is a `ChildCode`, whose contract is that `run` makes
    // only async-signal-safe calls on data copied in before the fork and
    // allocates, locks, prints and panics not at all; every implementor is
    // audited at its `unsafe impl`. The closure only borrows `hook`.
    unsafe { cmd.pre_exec(move || hook.run(&InChild(()))) };
}
