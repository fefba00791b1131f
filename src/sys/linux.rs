//! Linux: the kernel release names the platform; glibc reports its own version;
//! open file description locks come from the libc crate.

use std::io;
use std::os::fd::{OwnedFd, RawFd};

pub(crate) const OS_ID: Option<&str> = Some("linux");

/// The distribution, from `os-release(5)`'s PRETTY_NAME.
pub(crate) fn os_release() -> Option<String> {
    let text = std::fs::read_to_string("/etc/os-release")
        .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"))
        .ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("PRETTY_NAME="))?;
    Some(line.trim_matches('"').to_owned())
}

/// On Linux the kernel's behaviour is what the probes measure, so its version
/// names the platform.
pub(crate) fn id_version(_os_release: &str, kernel_release: &str) -> String {
    crate::platform::major_minor(kernel_release)
}

#[cfg(target_env = "gnu")]
pub(crate) fn libc_name_version() -> (String, String) {
    unsafe extern "C" {
        /// glibc's `gnu_get_libc_version(3)`: the version of the glibc loaded now.
        fn gnu_get_libc_version() -> *const libc::c_char;
    }
    // SAFETY: returns a pointer to a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(gnu_get_libc_version()) };
    ("glibc".into(), version.to_string_lossy().into_owned())
}

// musl has no call that reports its version; say so rather than guess.
#[cfg(not(target_env = "gnu"))]
pub(crate) fn libc_name_version() -> (String, String) {
    let name = if cfg!(target_env = "musl") {
        "musl"
    } else {
        "libc"
    };
    (name.into(), String::new())
}

/// `fcntl` commands for open file description locks (Linux 3.15).
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/fcntl.2.html> ("Open file description locks")
pub(crate) const F_OFD_GETLK: Option<libc::c_int> = Some(libc::F_OFD_GETLK);
/// See [`F_OFD_GETLK`].
pub(crate) const F_OFD_SETLK: Option<libc::c_int> = Some(libc::F_OFD_SETLK);

/// `SOCK_CLOEXEC` (Linux 2.6.27): `socket`/`socketpair` create the descriptor
/// close-on-exec in one step.
pub(crate) const SOCK_CLOEXEC: Result<libc::c_int, &str> = Ok(libc::SOCK_CLOEXEC);

/// `accept4(fd, NULL, NULL, SOCK_CLOEXEC)` (Linux 2.6.28).
pub(crate) fn accept4_cloexec(fd: RawFd) -> Result<io::Result<OwnedFd>, &'static str> {
    // SAFETY: accept4 with null address arguments on a borrowed descriptor.
    let rc = unsafe {
        libc::accept4(
            fd,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_CLOEXEC,
        )
    };
    Ok(owned(rc))
}

/// `pipe2(fds, O_CLOEXEC)` (Linux 2.6.27).
pub(crate) fn pipe2_cloexec() -> Result<io::Result<(OwnedFd, OwnedFd)>, &'static str> {
    let mut fds = [-1; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if rc < 0 {
        return Ok(Err(io::Error::last_os_error()));
    }
    Ok(owned(fds[0]).and_then(|r| Ok((r, owned(fds[1])?))))
}

/// `close_range(first, ~0U, 0)` (Linux 5.9): closes every descriptor from
/// `first` up. Async-signal-safe (one raw syscall, no allocation: the error is
/// an errno value), so it may run in `pre_exec`. A kernel before 5.9 answers
/// `ENOSYS`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/close_range.2.html>
pub(crate) fn close_range_from(first: libc::c_uint) -> io::Result<()> {
    // SAFETY: close_range touches only this process's descriptor table; the
    // libc crate's SYS_close_range avoids needing glibc 2.34's wrapper.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            libc::c_uint::MAX,
            0 as libc::c_uint,
        )
    };
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `POSIX_SPAWN_CLOEXEC_DEFAULT` is an Apple extension.
pub(crate) const POSIX_SPAWN_CLOEXEC_DEFAULT: Result<libc::c_short, &str> = Err(
    "POSIX_SPAWN_CLOEXEC_DEFAULT is an Apple extension: glibc and Linux have no such posix_spawn flag",
);

/// The descriptors `pid` has open, from `/proc/<pid>/fd` (proc(5)).
pub(crate) fn process_fds(pid: libc::pid_t) -> io::Result<Vec<RawFd>> {
    let mut fds = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        if let Some(fd) = entry?.file_name().to_str().and_then(|s| s.parse().ok()) {
            fds.push(fd);
        }
    }
    fds.sort_unstable();
    Ok(fds)
}

fn owned(rc: libc::c_int) -> io::Result<OwnedFd> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        // SAFETY: a descriptor the kernel just returned, owned by no one else.
        Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(rc) })
    }
}
