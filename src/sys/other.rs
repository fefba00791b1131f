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

/// No reader for this OS's TCP connection table.
pub(crate) fn tcp_state(
    _local: std::net::SocketAddr,
    _peer: std::net::SocketAddr,
) -> std::io::Result<Option<&'static str>> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "no reader for the TCP connection table on this OS",
    ))
}

/// `SO_REUSEPORT` is not wired up here (socket2 lacks it on some Unixes):
/// reported as `ENOPROTOOPT`, which the bind matrix shows in its cells.
pub(crate) fn set_reuse_port(_sock: &socket2::Socket) -> std::io::Result<()> {
    Err(std::io::Error::from_raw_os_error(libc::ENOPROTOOPT))
}
