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

/// macOS has no `close_range(2)`.
pub(crate) fn close_range_from(_first: std::os::fd::RawFd) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "macOS has no close_range(2)",
    ))
}

/// macOS has `vfork(2)`, but Rust cannot call it soundly (it returns twice
/// into one stack frame, and Rust has no `returns_twice` attribute), and xnu
/// offers no clone-style call that runs the child on a stack of its own.
pub(crate) fn vfork_supported() -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "vfork() returns twice into one stack frame, which Rust cannot call soundly, and xnu has \
         no clone(CLONE_VM|CLONE_VFORK) to run the child on its own stack",
    ))
}

/// Never called: [`vfork_supported`] fails first.
pub(crate) fn vfork_exec(
    _program: &std::ffi::CStr,
    _argv: &[*const libc::c_char],
    _envp: &[*const libc::c_char],
    _stdio: std::os::fd::RawFd,
) -> std::io::Result<libc::pid_t> {
    vfork_supported().map(|()| 0)
}

/// libSystem has no `posix_spawn_file_actions_addclosefrom_np`; its own
/// answer is `POSIX_SPAWN_CLOEXEC_DEFAULT`.
pub(crate) fn addclosefrom_supported() -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "libSystem has no posix_spawn_file_actions_addclosefrom_np (use POSIX_SPAWN_CLOEXEC_DEFAULT)",
    ))
}

/// Never called: [`addclosefrom_supported`] fails first.
pub(crate) fn addclosefrom(
    _actions: &mut libc::posix_spawn_file_actions_t,
    _from: libc::c_int,
) -> std::io::Result<()> {
    addclosefrom_supported()
}

/// `POSIX_SPAWN_CLOEXEC_DEFAULT`—posix_spawn closes every descriptor not
/// named by a file action in the child (an Apple extension).
///
/// # References
/// - <https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man3/posix_spawnattr_setflags.3.html>
pub(crate) fn spawn_cloexec_default_flag() -> std::io::Result<libc::c_short> {
    Ok(libc::POSIX_SPAWN_CLOEXEC_DEFAULT as libc::c_short)
}
