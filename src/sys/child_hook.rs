//! The code a forked child runs between `fork` and `exec`
//! (`CommandExt::pre_exec`), as a closed set of audited hooks installed by
//! one function, so the crate has one `unsafe` `pre_exec` call instead of one
//! per caller.
//!
//! `pre_exec` is `unsafe` because the hook runs in a copy of a multithreaded
//! process in which only the forking thread exists: it may make only
//! async-signal-safe calls (no allocation, no lock, no printing). Each
//! variant of [`Hook`] below says which calls it makes; [`install`] is safe
//! to call with any of them because that list is closed: a caller picks a
//! hook, it cannot pass code of its own.
//!
//! # References
//! - <https://doc.rust-lang.org/std/os/unix/process/trait.CommandExt.html#tymethod.pre_exec>
//! - <https://man7.org/linux/man-pages/man7/signal-safety.7.html>

use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// One audited hook: the async-signal-safe calls each makes are named.
/// Everything a hook reads was copied in before the fork.
#[derive(Debug)]
pub(crate) enum Hook {
    /// No call at all: a `pre_exec` hook, even an empty one, makes std fork
    /// and exec instead of calling `posix_spawn` (the probes' fork path).
    ForkOnly,
    /// `close_range(from, ~0U, 0)`: one raw system call
    /// ([`crate::sys::close_range_from`]). Its support is decided in the
    /// parent, before the spawn.
    CloseRangeFrom(RawFd),
    /// `close(2)` on every number in `from..limit`, errors ignored
    /// ([`crate::spawn::close_every_fd`]).
    CloseEvery {
        /// The first number closed.
        from: RawFd,
        /// One past the last.
        limit: RawFd,
    },
    /// `fcntl(fd, F_SETFD, 0)`: the child inherits `fd` across exec
    /// ([`crate::sys::set_fd_flags`]).
    Inherit(RawFd),
    /// The held child's park: `close`, `write` and `read` on pipe ends
    /// ([`crate::child::park`]).
    Park(crate::child::ParkFds),
    /// A pressure child's window: closes the descriptors of a class (`open`,
    /// `getdents64`, `fstat`, `getsockopt`, `close`), then holds with
    /// `nanosleep` ([`crate::pressure::hold_in_child`]).
    Pressure(crate::pressure::ChildHold),
    /// Calls `close` on the descriptors of one class
    /// ([`crate::pressure::DropClass::close_all`]).
    #[cfg_attr(
        not(all(test, target_os = "linux")),
        expect(dead_code, reason = "pressure's Linux tests install it")
    )]
    CloseClass(crate::pressure::DropClass),
    /// An OS's own hook ([`crate::sys::ChildHook`]: on Linux the
    /// parent-death signal and `fix::spawn`'s close-on-exec pass).
    #[cfg_attr(
        not(target_os = "linux"),
        expect(dead_code, reason = "only Linux has hooks of its own")
    )]
    Sys(crate::sys::ChildHook),
}

impl Hook {
    /// Runs in the child between fork and exec.
    fn run(&self, child: &InChild) -> io::Result<()> {
        match self {
            Hook::ForkOnly => Ok(()),
            Hook::CloseRangeFrom(from) => crate::sys::close_range_from(*from),
            Hook::CloseEvery { from, limit } => {
                crate::spawn::close_every_fd(*from, *limit, child);
                Ok(())
            }
            Hook::Inherit(fd) => crate::sys::set_fd_flags(*fd, 0),
            Hook::Park(fds) => crate::child::park(*fds, child),
            Hook::Pressure(hold) => crate::pressure::hold_in_child(hold, child),
            Hook::CloseClass(class) => class.close_all(child),
            Hook::Sys(hook) => hook.run(),
        }
    }
}

/// Proof that the code holding it runs in a forked child between fork and
/// exec: only [`install`]'s hook makes one (the field is private), and only
/// by reference does it leave there.
#[derive(Debug)]
pub(crate) struct InChild(());

/// `close(fd)` on a descriptor *number*, errors ignored (`EBADF` for one
/// that is not open). Safe with the [`InChild`] proof: the child either
/// execs or `_exit`s (std's fork path never returns from a hook into the
/// caller's frames), so no owner in it (an `OwnedFd`, a `File`) runs its
/// drop and closes the number a second time; the parent's descriptors are
/// its own, untouched. Async-signal-safe: one system call.
pub(crate) fn close(fd: RawFd, _: &InChild) {
    // SAFETY: closes a number in the forked child, which runs no owner's
    // drop afterwards (see above); close takes no pointer.
    unsafe { libc::close(fd) };
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

/// Makes `cmd`'s child run `hook` between fork and exec (and so makes std
/// fork instead of calling `posix_spawn`).
pub(crate) fn install(cmd: &mut Command, hook: Hook) {
    // SAFETY: every variant of `Hook` makes only the async-signal-safe calls
    // its documentation lists, on data copied in before the fork; none
    // allocates, takes a lock, prints or panics (the match and the calls it
    // makes index nothing unchecked). The closure only borrows `hook`.
    unsafe { cmd.pre_exec(move || hook.run(&InChild(()))) };
}
