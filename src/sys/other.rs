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

/// POSIX requires only CLOCK_REALTIME; CLOCK_MONOTONIC is near universal.
/// Missing ones show as unsupported at run time.
pub(crate) const CLOCKS: &[(&str, libc::clockid_t)] = &[
    ("CLOCK_REALTIME", libc::CLOCK_REALTIME),
    ("CLOCK_MONOTONIC", libc::CLOCK_MONOTONIC),
];

/// The clock behind `std::time::Instant` on other Unixes.
pub(crate) const INSTANT_CLOCK: &str = "CLOCK_MONOTONIC";

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
