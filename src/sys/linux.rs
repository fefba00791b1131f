//! Linux: the kernel release names the platform; glibc reports its own version;
//! open file description locks come from the libc crate.

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

/// The dynamic loader's preload variable (`ld.so(8)`: "A list of additional,
/// user-specified, ELF shared objects to be loaded before all others"), and the
/// file name cargo gives the injector cdylib.
///
/// # References
/// - <https://man7.org/linux/man-pages/man8/ld.so.8.html>
pub(crate) const PRELOAD: Option<(&str, &str)> = Some(("LD_PRELOAD", "libfdwindow_inject.so"));
