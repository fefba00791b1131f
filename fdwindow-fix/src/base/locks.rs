//! The lock calls the lock probes (and users' fixes) are made of, each a thin
//! wrapper that returns `io::Result` and names its call in the error.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;

use crate::sys;

fn check(rc: libc::c_int, what: &str) -> io::Result<()> {
    if rc == -1 {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(())
    }
}

fn named(what: &str) -> impl Fn(rustix::io::Errno) -> io::Error + '_ {
    move |e| {
        let e = io::Error::from(e);
        io::Error::new(e.kind(), format!("{what}: {e}"))
    }
}

/// Sets or clears `FD_CLOEXEC` with `fcntl(F_SETFD)` (through rustix: this is
/// never the creating call a parked-call interposer watches).
pub fn set_cloexec(fd: impl AsFd, on: bool) -> io::Result<()> {
    use rustix::io::FdFlags;
    let fd = fd.as_fd();
    let flags = rustix::io::fcntl_getfd(fd).map_err(named("fcntl(F_GETFD)"))?;
    let flags = if on {
        flags | FdFlags::CLOEXEC
    } else {
        flags - FdFlags::CLOEXEC
    };
    rustix::io::fcntl_setfd(fd, flags).map_err(named("fcntl(F_SETFD)"))
}

/// `flock(fd, operation)`—Apply or remove an advisory lock on an open file.
///
/// The lock belongs to the open file description, so every duplicate (dup or
/// fork) refers to the same lock: closing one copy leaves it held, and
/// `LOCK_UN` through any copy releases it for all.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/flock.2.html>
/// - <https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man2/flock.2.html>
pub fn flock(fd: impl AsFd, operation: libc::c_int) -> io::Result<()> {
    use rustix::fs::FlockOperation as Op;
    let op = match operation {
        libc::LOCK_SH => Op::LockShared,
        libc::LOCK_EX => Op::LockExclusive,
        libc::LOCK_UN => Op::Unlock,
        o if o == libc::LOCK_SH | libc::LOCK_NB => Op::NonBlockingLockShared,
        o if o == libc::LOCK_EX | libc::LOCK_NB => Op::NonBlockingLockExclusive,
        o if o == libc::LOCK_UN | libc::LOCK_NB => Op::NonBlockingUnlock,
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "flock: operation {operation} is not LOCK_SH, LOCK_EX or LOCK_UN (| LOCK_NB)"
                ),
            ));
        }
    };
    rustix::fs::flock(fd, op).map_err(named("flock"))
}

/// Opens `path` anew (a new open file description, close-on-exec).
pub fn open_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

/// Whether someone holds a flock on `path`: a fresh open file description
/// tries `LOCK_EX|LOCK_NB` (and, on success, drops it again by closing).
pub fn flock_is_held(path: &Path) -> io::Result<bool> {
    let probe = open_rw(path)?;
    match flock(&probe, libc::LOCK_EX | libc::LOCK_NB) {
        Ok(()) => Ok(false),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(true),
        Err(e) => Err(e),
    }
}

/// Which record lock API to use: traditional POSIX (owned by the process) or
/// open file description (owned like a flock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordLock {
    /// `F_SETLK`: owned by the process, not inherited, dropped by any close of the file.
    Posix,
    /// `F_OFD_SETLK`: owned by the open file description, shared by its copies.
    Ofd,
}

/// A whole-file `struct flock` of type `l_type` (`F_WRLCK`, `F_UNLCK`).
fn whole_file(l_type: libc::c_int) -> libc::flock {
    // The whole file from offset 0; l_pid must be 0 for OFD locks.
    libc::flock {
        l_type: l_type as _,
        l_whence: libc::SEEK_SET as _,
        l_start: 0,
        l_len: 0,
        l_pid: 0,
    }
}

fn ofd_command(cmd: Option<libc::c_int>) -> io::Result<libc::c_int> {
    cmd.ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))
}

/// The `fcntl` record-lock commands this module makes: each reads or
/// writes exactly one `struct flock`.
#[derive(Clone, Copy, Debug)]
enum LockCmd {
    /// `F_GETLK` (POSIX).
    Get,
    /// `F_OFD_GETLK` (Linux 3.15).
    OfdGet,
    /// `F_OFD_SETLK` (Linux 3.15).
    OfdSet,
}

/// `fcntl(fd, cmd, fl)` for a record-lock command on a descriptor number:
/// its return value (`-1` with errno set), or `EINVAL` where the OS has no
/// OFD locks. The one raw call for every such command here (rustix 1.1 has
/// none of them with a `struct flock`): safe for any number and any `fl`,
/// since these commands only read and write that one struct. One system
/// call, no allocation on the `F_GETLK` path, so a forked child may make it.
fn fcntl_lock(
    fd: std::os::fd::RawFd,
    cmd: LockCmd,
    fl: &mut libc::flock,
) -> io::Result<libc::c_int> {
    let raw = match cmd {
        LockCmd::Get => libc::F_GETLK,
        LockCmd::OfdGet => ofd_command(sys::F_OFD_GETLK)?,
        LockCmd::OfdSet => ofd_command(sys::F_OFD_SETLK)?,
    };
    // SAFETY: `fl` is a valid, writable struct flock, all these commands
    // read or write.
    Ok(unsafe { libc::fcntl(fd, raw, &raw mut *fl) })
}

/// Sets (`F_WRLCK`) or removes (`F_UNLCK`) a whole-file record lock without
/// waiting (`F_SETLK` / `F_OFD_SETLK`).
///
/// A kernel without OFD locks answers `EINVAL`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/fcntl.2.html>
pub fn record_lock(fd: impl AsFd, kind: RecordLock, l_type: libc::c_int) -> io::Result<()> {
    if kind == RecordLock::Posix {
        // rustix's fcntl_lock is exactly a whole-file F_SETLK/F_SETLKW.
        use rustix::fs::FlockOperation as Op;
        let op = match l_type {
            t if t == libc::F_WRLCK as libc::c_int => Op::NonBlockingLockExclusive,
            t if t == libc::F_RDLCK as libc::c_int => Op::NonBlockingLockShared,
            t if t == libc::F_UNLCK as libc::c_int => Op::NonBlockingUnlock,
            _ => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
        };
        return rustix::fs::fcntl_lock(fd, op).map_err(named("fcntl(F_SETLK)"));
    }
    // OFD locks stay on libc: rustix 1.1 has no F_OFD_SETLK.
    let mut fl = whole_file(l_type);
    let rc = fcntl_lock(fd.as_fd().as_raw_fd(), LockCmd::OfdSet, &mut fl)?;
    check(rc, "fcntl(F_OFD_SETLK)")
}

/// Whether a write lock on `path` would conflict with an OFD lock someone
/// holds, asked through a fresh open file description with `F_OFD_GETLK`.
///
/// Not for this process's POSIX locks: closing the fresh descriptor afterwards
/// would itself drop them. Use [`posix_lock_seen_from_child`] for those.
pub fn record_lock_is_held(path: &Path) -> io::Result<bool> {
    let probe = open_rw(path)?;
    let mut fl = whole_file(libc::F_WRLCK as libc::c_int);
    let rc = fcntl_lock(probe.as_raw_fd(), LockCmd::OfdGet, &mut fl)?;
    check(rc, "fcntl(F_OFD_GETLK)")?;
    Ok(fl.l_type as libc::c_int != libc::F_UNLCK as libc::c_int)
}

/// Whether another process sees a record lock on `fd`'s file: a forked child
/// asks `F_GETLK` and reports through its exit status.
///
/// `F_GETLK` in the owning process never reports the owner's own locks, and a
/// fresh descriptor closed afterwards would drop them; a child does neither
/// (record locks are not inherited, so its exit releases nothing of ours).
pub fn posix_lock_seen_from_child(fd: impl AsFd) -> io::Result<bool> {
    let fd = fd.as_fd().as_raw_fd();
    let mut fl = whole_file(libc::F_WRLCK as libc::c_int);
    // SAFETY: between fork and _exit the child makes only async-signal-safe
    // calls (fcntl, _exit) on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // F_GETLK on a descriptor inherited from the parent, with a struct
        // flock prepared before the fork; async-signal-safe, no allocation.
        let rc = fcntl_lock(fd, LockCmd::Get, &mut fl).unwrap_or(-1);
        let code = if rc == -1 {
            2
        } else if fl.l_type as libc::c_int == libc::F_UNLCK as libc::c_int {
            0
        } else {
            1
        };
        sys::exit_now(code);
    }
    check(if pid < 0 { -1 } else { 0 }, "fork")?;
    let status =
        sys::wait_pid(pid).map_err(|e| io::Error::new(e.kind(), format!("waitpid: {e}")))?;
    match libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)) {
        Some(0) => Ok(false),
        Some(1) => Ok(true),
        _ => Err(io::Error::other(format!(
            "F_GETLK child failed (wait status {status})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::scratch::Scratch;

    #[test]
    fn flock_conflicts_across_open_file_descriptions() {
        let s = Scratch::new("locks").unwrap();
        let path = s.fresh("f");
        let f = open_rw(&path).unwrap();
        assert!(!flock_is_held(&path).unwrap());
        flock(&f, libc::LOCK_EX).unwrap();
        assert!(flock_is_held(&path).unwrap());
        flock(&f, libc::LOCK_UN).unwrap();
        assert!(!flock_is_held(&path).unwrap());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn ofd_getlk_sees_ofd_locks() {
        let s = Scratch::new("locks").unwrap();
        let path = s.fresh("f");
        let f = open_rw(&path).unwrap();
        assert!(!record_lock_is_held(&path).unwrap());
        record_lock(&f, RecordLock::Ofd, libc::F_WRLCK as _).unwrap();
        assert!(record_lock_is_held(&path).unwrap());
        record_lock(&f, RecordLock::Ofd, libc::F_UNLCK as _).unwrap();
        assert!(!record_lock_is_held(&path).unwrap());
    }

    #[test]
    fn a_child_sees_the_parents_posix_lock() {
        let _serial = crate::test_serial();
        let s = Scratch::new("locks").unwrap();
        let f = open_rw(&s.fresh("f")).unwrap();
        assert!(!posix_lock_seen_from_child(&f).unwrap());
        record_lock(&f, RecordLock::Posix, libc::F_WRLCK as _).unwrap();
        assert!(posix_lock_seen_from_child(&f).unwrap());
        assert!(
            posix_lock_seen_from_child(&f).unwrap(),
            "asking must not drop the lock"
        );
        record_lock(&f, RecordLock::Posix, libc::F_UNLCK as _).unwrap();
        assert!(!posix_lock_seen_from_child(&f).unwrap());
    }
}
