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

/// The clocks `clock_gettime(3)` offers on macOS (10.12+), by name. Apple's
/// Libc builds CLOCK_REALTIME from `gettimeofday()`, so it ticks in whole
/// microseconds; the `_APPROX` clocks are the cheap, coarse ones.
///
/// # References
/// - Apple `clock_gettime(3)`; Libc-1158.1.2 `gen/clock_gettime.c`, quoted in mono/mono#21137
pub(crate) const CLOCKS: &[(&str, libc::clockid_t)] = &[
    ("CLOCK_REALTIME", libc::CLOCK_REALTIME),
    ("CLOCK_MONOTONIC", libc::CLOCK_MONOTONIC),
    ("CLOCK_MONOTONIC_RAW", libc::CLOCK_MONOTONIC_RAW),
    (
        "CLOCK_MONOTONIC_RAW_APPROX",
        libc::CLOCK_MONOTONIC_RAW_APPROX,
    ),
    ("CLOCK_UPTIME_RAW", libc::CLOCK_UPTIME_RAW),
    ("CLOCK_UPTIME_RAW_APPROX", libc::CLOCK_UPTIME_RAW_APPROX),
];

/// The clock behind `std::time::Instant` on Apple targets (rust-lang/rust
/// `library/std/src/sys/pal/unix/time.rs`).
pub(crate) const INSTANT_CLOCK: &str = "CLOCK_UPTIME_RAW";

// Holder scans read Linux's /proc. On macOS, proc_pidinfo(PROC_PIDLISTFDS)
// with proc_pidfdinfo could do the same; until it is written, the scan
// reports ENOSYS, which the probes show as unsupported.
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
