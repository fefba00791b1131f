//! Who holds an open file, socket or lock: the process scan that tools such
//! as `lsof` and fixtures' "is it released yet?" checks make.
//!
//! Such a scan sees a pre-exec fork as a holder: between fork and exec the
//! child has a copy of every descriptor, close-on-exec ones included, and it
//! still runs the parent's executable. Linux only for now (`/proc`); other
//! OSes return `ENOSYS`.

use std::io;
use std::os::fd::AsFd;
use std::path::PathBuf;

/// `fstat(fd)`'s device and inode: what identifies the open object.
fn identity(fd: impl AsFd) -> io::Result<(u64, u64)> {
    let st = rustix::fs::fstat(fd)?;
    #[allow(
        clippy::unnecessary_cast,
        reason = "dev_t and ino_t are u64 on Linux but not on every target"
    )]
    Ok((st.st_dev as u64, st.st_ino as u64))
}

/// The pids of every process (this one included) that holds a descriptor for
/// the object `fd` refers to, in no particular order.
///
/// On Linux this reads `/proc/*/fd`; processes that vanish or may not be
/// inspected are skipped. Elsewhere it fails with `ENOSYS`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/proc_pid_fd.5.html>
pub fn holders_of(fd: impl AsFd) -> io::Result<Vec<u32>> {
    let (dev, ino) = identity(fd)?;
    crate::sys::holders_of_inode(dev, ino)
}

/// The executable `pid` runs now (`/proc/PID/exe` on Linux). A child between
/// fork and exec still shows its parent's.
pub fn exe_of(pid: u32) -> io::Result<PathBuf> {
    crate::sys::exe_of(pid)
}

/// The live children of `pid` (zombies included until reaped).
pub fn children_of(pid: u32) -> io::Result<Vec<u32>> {
    crate::sys::children_of(pid)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::child::HeldChild;

    #[test]
    fn a_held_fork_is_a_second_holder_running_our_exe() {
        let _serial = crate::test_serial();
        let me = std::process::id();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        assert_eq!(holders_of(&listener).unwrap(), vec![me]);
        let held = HeldChild::hold().unwrap();
        let mut holders = holders_of(&listener).unwrap();
        holders.sort();
        let children = children_of(me).unwrap();
        let fork = holders.iter().copied().find(|p| *p != me);
        let fork_exe = fork.map(exe_of);
        held.release().unwrap();
        assert_eq!(holders.len(), 2, "{holders:?}");
        assert!(children.contains(&fork.unwrap()), "{children:?}");
        assert_eq!(fork_exe.unwrap().unwrap(), std::env::current_exe().unwrap());
    }
}
