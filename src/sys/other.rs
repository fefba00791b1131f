//! Other Unixes: uname only. fdwindow measures Linux and macOS; elsewhere it
//! compiles and labels its results with what uname says.

pub(crate) const OS_ID: Option<&str> = None;

pub(crate) fn os_release() -> Option<String> {
    None
}

pub(crate) fn id_version(_os_release: &str, kernel_release: &str) -> String {
    crate::platform::major_minor(kernel_release)
}

pub(crate) fn libc_name_version() -> (String, String) {
    ("libc".into(), String::new())
}

/// No open file description locks are known here.
pub(crate) const F_OFD_GETLK: Option<libc::c_int> = None;
/// See [`F_OFD_GETLK`].
pub(crate) const F_OFD_SETLK: Option<libc::c_int> = None;

/// `socket` then `fcntl(F_SETFD, FD_CLOEXEC)`: no atomic flag is assumed here.
pub(crate) fn socket_cloexec(
    domain: libc::c_int,
    ty: libc::c_int,
) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: socket returns a new descriptor or -1.
    let fd = unsafe { libc::socket(domain, ty, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is new and owned by nobody else.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    crate::locks::set_cloexec(&fd, true)?;
    Ok(fd)
}
