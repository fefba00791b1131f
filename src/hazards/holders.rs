//! Who holds an open file, socket or lock: the process scan that tools such
//! as `lsof` and fixtures' "is it released yet?" checks make.
//!
//! Such a scan sees a pre-exec fork as a holder: between fork and exec the
//! child has a copy of every descriptor, close-on-exec ones included, and it
//! still runs the parent's executable. The scan itself is per OS (Linux walks
//! `/proc/*/fd`; macOS asks libproc); telling the holders apart
//! ([`classify`]) is one pure function shared by both.

use std::io;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

// Defined beside the per-OS scans that make and compare it, which sit below
// this module; this is its public home.
pub use fdwindow_fix::sys::Object;

/// The object `fd` refers to.
pub fn object_of(fd: impl AsFd) -> io::Result<Object> {
    fdwindow_fix::sys::object_of(fd.as_fd())
}

/// The file at `path`, as a scan for its holders compares it (`stat(2)`):
/// what `lsof PATH` looks for.
pub fn object_at(path: &Path) -> io::Result<Object> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok(fdwindow_fix::sys::inode_object(m.dev(), m.ino()))
}

/// The pids of every process (this one included) that holds a descriptor for
/// the object `fd` refers to, in no particular order.
///
/// On Linux this reads `/proc/*/fd`; on macOS it lists processes with
/// `proc_listallpids` and their descriptors with `proc_pidinfo` and
/// `proc_pidfdinfo`. Processes that vanish or may not be inspected are
/// skipped, as `lsof` skips them. Elsewhere it fails with `ENOSYS`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/proc_pid_fd.5.html>
/// - xnu `libsyscall/wrappers/libproc/libproc.c`, `bsd/kern/proc_info.c`
pub fn holders_of(fd: impl AsFd) -> io::Result<Vec<u32>> {
    holders_of_object(object_of(fd)?)
}

/// The pids holding `object` (see [`holders_of`]).
pub fn holders_of_object(object: Object) -> io::Result<Vec<u32>> {
    fdwindow_fix::sys::holders_of_object(object)
}

/// The executable `pid` runs now (`/proc/PID/exe` on Linux, `proc_pidpath`
/// on macOS). A child between fork and exec still shows its parent's.
pub fn exe_of(pid: u32) -> io::Result<PathBuf> {
    fdwindow_fix::sys::exe_of(pid)
}

/// The live children of `pid` (zombies included until reaped).
pub fn children_of(pid: u32) -> io::Result<Vec<u32>> {
    fdwindow_fix::sys::children_of(pid)
}

/// What a scan learned about one holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The holder's pid.
    pub pid: u32,
    /// Whether it is a child of the scanning process.
    pub child: bool,
    /// The executable it runs now; `None` when it could not be read (the
    /// process has gone, or may not be inspected).
    pub exe: Option<PathBuf>,
}

/// Which holder a scan met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HolderKind {
    /// The scanning process itself.
    Scanner,
    /// A child of the scanner still running the scanner's executable: a fork
    /// that has not exec'd yet, holding copies of every descriptor.
    PreExecFork,
    /// A child of the scanner that runs another executable: it has exec'd, so
    /// it holds only what it inherited without close-on-exec.
    ExecdChild,
    /// Not the scanner's child, but running the same executable (another
    /// instance, or a grandchild fork).
    SameExe,
    /// Any other process.
    Foreign,
    /// Its executable could not be read: it has gone, or may not be inspected.
    Unknown,
}

impl HolderKind {
    /// The kebab-case name tallied in reports.
    pub fn id(self) -> &'static str {
        match self {
            HolderKind::Scanner => "scanner",
            HolderKind::PreExecFork => "pre-exec-fork",
            HolderKind::ExecdChild => "execd-child",
            HolderKind::SameExe => "same-exe",
            HolderKind::Foreign => "foreign",
            HolderKind::Unknown => "unknown",
        }
    }

    /// Whether a filter "holders running the selected executable", with the
    /// scanner's own executable selected, keeps this holder (write-up 001's
    /// endpoint discovery did exactly this).
    pub fn runs_scanner_exe(self) -> bool {
        match self {
            HolderKind::Scanner | HolderKind::PreExecFork | HolderKind::SameExe => true,
            HolderKind::ExecdChild | HolderKind::Foreign | HolderKind::Unknown => false,
        }
    }
}

/// Tells a holder apart: the scanner `me` (running `my_exe`), a pre-exec
/// fork of it, an exec'd child, or another process. Pure: the scan supplies
/// what it read, so the same rule holds on every OS.
pub fn classify(seen: &Seen, me: u32, my_exe: &Path) -> HolderKind {
    if seen.pid == me {
        return HolderKind::Scanner;
    }
    let Some(exe) = seen.exe.as_deref() else {
        return HolderKind::Unknown;
    };
    match (seen.child, exe == my_exe) {
        (true, true) => HolderKind::PreExecFork,
        (true, false) => HolderKind::ExecdChild,
        (false, true) => HolderKind::SameExe,
        (false, false) => HolderKind::Foreign,
    }
}

/// Scans for the holders of `object` and classifies each against this
/// process and its executable, sorted by pid.
pub fn scan(object: Object) -> io::Result<Vec<(u32, HolderKind)>> {
    let me = std::process::id();
    let my_exe = scanner_exe(me)?;
    let children = children_of(me)?;
    let mut found: Vec<(u32, HolderKind)> = holders_of_object(object)?
        .into_iter()
        .map(|pid| {
            let seen = Seen {
                pid,
                child: children.contains(&pid),
                exe: exe_of(pid).ok(),
            };
            (pid, classify(&seen, me, &my_exe))
        })
        .collect();
    found.sort_unstable_by_key(|(pid, _)| *pid);
    Ok(found)
}

/// The children of this process that are pre-exec forks ([`classify`]):
/// what a scan must wait out before it can trust its count.
pub fn pending_forks() -> io::Result<Vec<u32>> {
    let me = std::process::id();
    let my_exe = scanner_exe(me)?;
    Ok(children_of(me)?
        .into_iter()
        .filter(|&pid| {
            let seen = Seen {
                pid,
                child: true,
                exe: exe_of(pid).ok(),
            };
            classify(&seen, me, &my_exe) == HolderKind::PreExecFork
        })
        .collect())
}

/// This process's executable as [`exe_of`] reports it for any pid, so that
/// [`classify`] compares like with like. `std::env::current_exe` will not do
/// on macOS: it is dyld's `_NSGetExecutablePath`, the path the process was
/// exec'd by (symlinks and `./` kept: Apple's `dyld(3)` says "the path may be
/// a symbolic link and not the real file"), while `proc_pidpath` answers the
/// vnode's resolved path (`/private/var/...` for `/var/...`); a fork would
/// then never match and be counted an exec'd child. On Linux both are
/// `/proc/PID/exe`.
fn scanner_exe(me: u32) -> io::Result<PathBuf> {
    exe_of(me)
}

/// A one-word summary of a scan's kinds for a tally, e.g.
/// `pre-exec-fork+scanner` (sorted, so equal scans tally alike), or `none`.
pub fn kinds_summary(found: &[(u32, HolderKind)]) -> String {
    let mut ids: Vec<&str> = found.iter().map(|(_, k)| k.id()).collect();
    ids.sort_unstable();
    if ids.is_empty() {
        "none".to_owned()
    } else {
        ids.join("+")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: u32 = 100;
    const EXE: &str = "/target/debug/deps/probe-1234";

    fn seen(pid: u32, child: bool, exe: Option<&str>) -> Seen {
        Seen {
            pid,
            child,
            exe: exe.map(PathBuf::from),
        }
    }

    fn kind(s: Seen) -> HolderKind {
        classify(&s, ME, Path::new(EXE))
    }

    #[test]
    fn the_scanner_is_itself_whatever_else_is_read() {
        assert_eq!(kind(seen(ME, false, Some(EXE))), HolderKind::Scanner);
        assert_eq!(kind(seen(ME, false, None)), HolderKind::Scanner);
    }

    #[test]
    fn a_child_on_our_exe_is_a_pre_exec_fork_and_one_on_another_has_execd() {
        assert_eq!(kind(seen(101, true, Some(EXE))), HolderKind::PreExecFork);
        assert_eq!(
            kind(seen(101, true, Some("/bin/cat"))),
            HolderKind::ExecdChild
        );
    }

    #[test]
    fn strangers_and_the_unreadable() {
        assert_eq!(kind(seen(7, false, Some(EXE))), HolderKind::SameExe);
        assert_eq!(
            kind(seen(7, false, Some("/sbin/launchd"))),
            HolderKind::Foreign
        );
        assert_eq!(kind(seen(101, true, None)), HolderKind::Unknown);
        assert_eq!(kind(seen(7, false, None)), HolderKind::Unknown);
    }

    #[test]
    fn the_exe_filter_keeps_the_fork_the_seed_tripped_on() {
        // Write-up 001's scan: itself plus a co-tenant's pre-exec fork, both
        // on the selected executable: the filter keeps both (two holders).
        let scan = [seen(ME, false, Some(EXE)), seen(101, true, Some(EXE))];
        let kept = scan
            .iter()
            .filter(|s| kind((*s).clone()).runs_scanner_exe())
            .count();
        assert_eq!(kept, 2);
        // Once the fork has exec'd, only the scanner is kept.
        let scan = [
            seen(ME, false, Some(EXE)),
            seen(101, true, Some("/usr/bin/true")),
        ];
        let kept = scan
            .iter()
            .filter(|s| kind((*s).clone()).runs_scanner_exe())
            .count();
        assert_eq!(kept, 1);
    }

    #[test]
    fn summary_is_sorted_and_names_an_empty_scan() {
        let found = [(ME, HolderKind::Scanner), (101, HolderKind::PreExecFork)];
        assert_eq!(kinds_summary(&found), "pre-exec-fork+scanner");
        assert_eq!(kinds_summary(&[]), "none");
    }

    #[cfg(any(target_os = "linux", target_os = "macos"))]
    mod live {
        use super::super::*;
        use fdwindow_fix::base::child::HeldChild;

        #[test]
        fn a_held_fork_is_a_second_holder_running_our_exe() {
            let _serial = crate::test_serial();
            let me = std::process::id();
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            assert_eq!(holders_of(&listener).unwrap(), vec![me]);
            let held = HeldChild::hold().unwrap();
            let found = scan(object_of(&listener).unwrap());
            let pending = pending_forks();
            held.release().unwrap();
            let found = found.unwrap();
            assert_eq!(kinds_summary(&found), "pre-exec-fork+scanner", "{found:?}");
            let fork = found.iter().find(|(p, _)| *p != me).unwrap().0;
            assert_eq!(pending.unwrap(), vec![fork]);
        }

        #[test]
        fn a_written_file_is_held_by_the_fork_after_our_close() {
            let _serial = crate::test_serial();
            let dir = fdwindow_fix::base::scratch::Scratch::new("holders").unwrap();
            let path = dir.fresh("written");
            let mut file = std::fs::File::create(&path).unwrap();
            std::io::Write::write_all(&mut file, b"fixture").unwrap();
            let object = object_at(&path).unwrap();
            assert_eq!(object, object_of(&file).unwrap());
            let held = HeldChild::hold().unwrap();
            drop(file);
            let found = scan(object);
            held.release().unwrap();
            assert_eq!(kinds_summary(&found.unwrap()), "pre-exec-fork");
            assert!(holders_of_object(object).unwrap().is_empty());
        }
    }
}
