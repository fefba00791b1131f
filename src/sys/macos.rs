//! macOS: the product version names the platform (xnu's release tracks it).

pub(crate) const OS_ID: Option<&str> = Some("macos");

/// `sysctlbyname("kern.osproductversion")`, e.g. `15.3.1`.
pub(crate) fn os_release() -> Option<String> {
    let name = c"kern.osproductversion";
    let mut buf = [0u8; 64];
    let mut len = buf.len();
    // SAFETY: buf and len describe a writable buffer; no new value is set.
    let rc = unsafe {
        libc::sysctlbyname(
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return None;
    }
    let end = buf[..len].iter().position(|&b| b == 0).unwrap_or(len);
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

pub(crate) fn id_version(os_release: &str, _kernel_release: &str) -> String {
    crate::platform::major_minor(os_release)
}

/// libSystem carries no version of its own apart from the OS's.
pub(crate) fn libc_name_version() -> (String, String) {
    ("libsystem".into(), String::new())
}

/// `fcntl` commands for open file description locks. xnu defines them publicly
/// (since El Capitan) but the libc crate does not export them for Apple targets.
///
/// # References
/// - xnu `bsd/sys/fcntl.h`: `F_OFD_SETLK 90`, `F_OFD_GETLK 92`
pub(crate) const F_OFD_GETLK: Option<libc::c_int> = Some(92);
/// See [`F_OFD_GETLK`].
pub(crate) const F_OFD_SETLK: Option<libc::c_int> = Some(90);

/// No reader for xnu's TCP connection table yet (netstat reads it through
/// the `net.inet.tcp.pcblist_n` sysctl); callers report `unsupported`.
pub(crate) fn tcp_state(
    _local: std::net::SocketAddr,
    _peer: std::net::SocketAddr,
) -> std::io::Result<Option<&'static str>> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "no reader for the TCP connection table on macOS yet",
    ))
}

/// `setsockopt(SO_REUSEPORT, 1)`: on macOS (BSD semantics) every socket
/// binding the same address and port must set it.
///
/// # References
/// - <https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man2/setsockopt.2.html>
pub(crate) fn set_reuse_port(sock: &socket2::Socket) -> std::io::Result<()> {
    sock.set_reuse_port(true)
}
