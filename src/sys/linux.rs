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

/// The clocks `clock_gettime(2)` offers here, by name. The coarse clocks
/// (Linux 2.6.32) read the tick-granular time the kernel last stored, without
/// touching the clocksource.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/clock_gettime.2.html>
pub(crate) const CLOCKS: &[(&str, libc::clockid_t)] = &[
    ("CLOCK_REALTIME", libc::CLOCK_REALTIME),
    ("CLOCK_MONOTONIC", libc::CLOCK_MONOTONIC),
    ("CLOCK_MONOTONIC_RAW", libc::CLOCK_MONOTONIC_RAW),
    ("CLOCK_REALTIME_COARSE", libc::CLOCK_REALTIME_COARSE),
    ("CLOCK_MONOTONIC_COARSE", libc::CLOCK_MONOTONIC_COARSE),
];

/// The clock behind `std::time::Instant` here (rust-lang/rust
/// `library/std/src/sys/pal/unix/time.rs`).
pub(crate) const INSTANT_CLOCK: &str = "CLOCK_MONOTONIC";

/// The pids whose descriptor table holds the open object `(dev, ino)`, found
/// by `stat(2)` on every `/proc/PID/fd/N` (the link resolves to the object
/// itself, sockets included). Processes that vanish or that we may not
/// inspect are skipped, as `lsof` skips them.
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/proc_pid_fd.5.html>
pub(crate) fn holders_of_inode(dev: u64, ino: u64) -> std::io::Result<Vec<u32>> {
    use std::os::unix::fs::MetadataExt;
    let mut holders = Vec::new();
    for pid in proc_pids()? {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let held = fds
            .flatten()
            .any(|fd| std::fs::metadata(fd.path()).is_ok_and(|m| m.dev() == dev && m.ino() == ino));
        if held {
            holders.push(pid);
        }
    }
    Ok(holders)
}

/// Every numeric entry of `/proc`. No `/proc` reads as ENOSYS: the scan is
/// then unsupported here, not broken.
fn proc_pids() -> std::io::Result<Vec<u32>> {
    let dir = std::fs::read_dir("/proc").map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => std::io::Error::from_raw_os_error(libc::ENOSYS),
        _ => e,
    })?;
    Ok(dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect())
}

/// `/proc/PID/exe`: the executable the process runs now. A pre-exec fork
/// still shows its parent's.
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/proc_pid_exe.5.html>
pub(crate) fn exe_of(pid: u32) -> std::io::Result<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe"))
}

/// The live children of `parent`, from field 4 (ppid) of every
/// `/proc/PID/stat`. The command name (field 2) may hold spaces and `)`, so
/// the fields are counted after its last `)`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html>
pub(crate) fn children_of(parent: u32) -> std::io::Result<Vec<u32>> {
    Ok(proc_pids()?
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(parent)
            })
        })
        .collect())
}
