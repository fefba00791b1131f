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

/// dyld's insert variable (`dyld(1)`: "a colon separated list of dynamic
/// libraries to load before the ones specified in the program"), and the file
/// name cargo gives the injector cdylib. System Integrity Protection strips
/// `DYLD_*` from protected binaries (those under /usr/bin, /bin), so the host
/// must be the test binary itself, not a shell that runs it.
///
/// # References
/// - `man 1 dyld` (DYLD_INSERT_LIBRARIES)
/// - <https://developer.apple.com/library/archive/documentation/Security/Conceptual/System_Integrity_Protection_Guide/RuntimeProtections/RuntimeProtections.html>
pub(crate) const PRELOAD: Option<(&str, &str)> =
    Some(("DYLD_INSERT_LIBRARIES", "libfdwindow_inject.dylib"));
