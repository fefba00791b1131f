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

fn unsupported(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("{what} is not wired up on this OS"),
    )
}

/// Not wired up here.
pub(crate) fn close_range_from(_first: std::os::fd::RawFd) -> std::io::Result<()> {
    Err(unsupported("close_range"))
}

/// Not wired up here.
pub(crate) fn vfork_supported() -> std::io::Result<()> {
    Err(unsupported("a vfork-style spawn"))
}

/// Not wired up here.
pub(crate) fn vfork_exec(
    _program: &std::ffi::CStr,
    _argv: &[*const libc::c_char],
    _envp: &[*const libc::c_char],
    _stdio: std::os::fd::RawFd,
) -> std::io::Result<libc::pid_t> {
    Err(unsupported("a vfork-style spawn"))
}

/// Not wired up here.
pub(crate) fn addclosefrom_supported() -> std::io::Result<()> {
    Err(unsupported("posix_spawn_file_actions_addclosefrom_np"))
}

/// Not wired up here.
pub(crate) fn addclosefrom(
    _actions: &mut libc::posix_spawn_file_actions_t,
    _from: libc::c_int,
) -> std::io::Result<()> {
    Err(unsupported("posix_spawn_file_actions_addclosefrom_np"))
}

/// Not wired up here.
pub(crate) fn spawn_cloexec_default_flag() -> std::io::Result<libc::c_short> {
    Err(unsupported("POSIX_SPAWN_CLOEXEC_DEFAULT"))
}
