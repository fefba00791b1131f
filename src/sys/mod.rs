//! Everything that differs between operating systems, one file per OS chosen
//! here and nowhere else. Callers detect features at run time: a constant being
//! defined here says the OS may have the call, not that this kernel does.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::*;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub(crate) use macos::*;

// POSIX wrappers shared by every OS (posix_spawn; wait, kill, poll via rustix).
mod posix;
pub(crate) use posix::*;

// Other Unixes compile; their probes report `unsupported` where a call is missing.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod other;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(crate) use other::*;

// Holder scans read Linux's /proc. On macOS, proc_pidinfo(PROC_PIDLISTFDS)
// with proc_pidfdinfo could do the same; until it is written, the scan
// reports ENOSYS there and elsewhere, which the probes show as unsupported.
#[cfg(not(target_os = "linux"))]
mod no_scan {
    fn no_scan<T>() -> std::io::Result<T> {
        Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
    }

    /// Unsupported here: see `no_scan`.
    pub(crate) fn holders_of_inode(_dev: u64, _ino: u64) -> std::io::Result<Vec<u32>> {
        no_scan()
    }

    /// Unsupported here: see `no_scan`.
    pub(crate) fn exe_of(_pid: u32) -> std::io::Result<std::path::PathBuf> {
        no_scan()
    }

    /// Unsupported here: see `no_scan`.
    pub(crate) fn children_of(_parent: u32) -> std::io::Result<Vec<u32>> {
        no_scan()
    }
}
#[cfg(not(target_os = "linux"))]
pub(crate) use no_scan::*;

/// Takes ownership of a descriptor a call just returned, or its error (`-1`).
pub(crate) fn owned(rc: libc::c_int) -> std::io::Result<std::os::fd::OwnedFd> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        // SAFETY: a descriptor the kernel just returned, owned by no one else.
        Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(rc) })
    }
}
