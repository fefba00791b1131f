//! Socket plumbing that is the same on every Unix but for small differences
//! marked by cfg: the BSD sockaddr length byte, and whether SOCK_CLOEXEC exists.

use std::net::SocketAddr;

/// The address as a `sockaddr_storage` and its length, for bind/connect.
pub(crate) fn sockaddr_from(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for sockaddr_in.
            let sin = unsafe { &mut *(&raw mut storage).cast::<libc::sockaddr_in>() };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr = libc::in_addr {
                s_addr: u32::from(*a.ip()).to_be(),
            };
            #[cfg(any(target_os = "macos", target_os = "freebsd", target_os = "ios"))]
            {
                sin.sin_len = size_of::<libc::sockaddr_in>() as u8;
            }
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6 = unsafe { &mut *(&raw mut storage).cast::<libc::sockaddr_in6>() };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr = libc::in6_addr {
                s6_addr: a.ip().octets(),
            };
            sin6.sin6_flowinfo = a.flowinfo();
            sin6.sin6_scope_id = a.scope_id();
            #[cfg(any(target_os = "macos", target_os = "freebsd", target_os = "ios"))]
            {
                sin6.sin6_len = size_of::<libc::sockaddr_in6>() as u8;
            }
            size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// `socket` then `fcntl(F_SETFD, FD_CLOEXEC)`, for systems without
/// SOCK_CLOEXEC (macOS through 26). A spawn between the two calls inherits the
/// socket for the child's life (the `two-step-cloexec` hazard): callers that
/// spawn concurrently need a spawn lock around this.
#[cfg(not(target_os = "linux"))]
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
