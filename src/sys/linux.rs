//! Linux: the kernel release names the platform; glibc reports its own version;
//! open file description locks come from the libc crate.

use std::io;
use std::os::fd::{OwnedFd, RawFd};

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

/// Linux's TCP state names, indexed by the number `/proc/net/tcp` prints
/// (`include/net/tcp_states.h`).
const TCP_STATES: [&str; 13] = [
    "?",
    "ESTABLISHED",
    "SYN_SENT",
    "SYN_RECV",
    "FIN_WAIT1",
    "FIN_WAIT2",
    "TIME_WAIT",
    "CLOSE",
    "CLOSE_WAIT",
    "LAST_ACK",
    "LISTEN",
    "CLOSING",
    "NEW_SYN_RECV",
];

/// Finds `local` → `peer` in `/proc/net/tcp` (or `tcp6`). Each line holds
/// `local_address rem_address st` as hex: the address as the kernel's 32-bit
/// words in host byte order, the port in host order, the state number.
/// Where a stale TIME_WAIT entry shares the 4-tuple, the live one wins.
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/proc_pid_net.5.html>
/// - Linux `net/ipv4/tcp_ipv4.c` (`get_tcp4_sock`), `net/ipv6/tcp_ipv6.c` (`get_tcp6_sock`)
pub(crate) fn tcp_state(
    local: std::net::SocketAddr,
    peer: std::net::SocketAddr,
) -> std::io::Result<Option<&'static str>> {
    let table = if local.is_ipv4() {
        "/proc/net/tcp"
    } else {
        "/proc/net/tcp6"
    };
    let text = std::fs::read_to_string(table)?;
    let mut found = None;
    for line in text.lines().skip(1) {
        let mut fields = line.split_whitespace().skip(1);
        let (Some(l), Some(r), Some(st)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        if parse_proc_addr(l) != Some(local) || parse_proc_addr(r) != Some(peer) {
            continue;
        }
        let state = u8::from_str_radix(st, 16)
            .ok()
            .and_then(|n| TCP_STATES.get(usize::from(n)).copied())
            .unwrap_or("?");
        if state != "TIME_WAIT" {
            return Ok(Some(state));
        }
        found = Some(state);
    }
    Ok(found)
}

/// Parses `0100007F:1F90` (IPv4) or a 32-digit IPv6 form.
fn parse_proc_addr(field: &str) -> Option<std::net::SocketAddr> {
    let (addr, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |i: usize| {
        addr.get(i * 8..i * 8 + 8)
            .and_then(|w| u32::from_str_radix(w, 16).ok())
            .map(u32::to_ne_bytes)
    };
    let ip: std::net::IpAddr = match addr.len() {
        8 => std::net::Ipv4Addr::from(word(0)?).into(),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            std::net::Ipv6Addr::from(bytes).into()
        }
        _ => return None,
    };
    Some(std::net::SocketAddr::new(ip, port))
}

/// `setsockopt(SO_REUSEPORT, 1)` (Linux 3.9): sockets of one user that all
/// set it may bind the same address and port, listening ones included.
///
/// # References
/// - <https://man7.org/linux/man-pages/man7/socket.7.html>
pub(crate) fn set_reuse_port(sock: &socket2::Socket) -> std::io::Result<()> {
    sock.set_reuse_port(true)
}

/// `SOCK_CLOEXEC` (Linux 2.6.27): `socket`/`socketpair` create the descriptor
/// close-on-exec in one step.
pub(crate) const SOCK_CLOEXEC: Result<libc::c_int, &str> = Ok(libc::SOCK_CLOEXEC);

/// `accept4(fd, NULL, NULL, SOCK_CLOEXEC)` (Linux 2.6.28).
pub(crate) fn accept4_cloexec(fd: RawFd) -> Result<io::Result<OwnedFd>, &'static str> {
    // SAFETY: accept4 with null address arguments on a borrowed descriptor.
    let rc = unsafe {
        libc::accept4(
            fd,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_CLOEXEC,
        )
    };
    Ok(owned(rc))
}

/// `pipe2(fds, O_CLOEXEC)` (Linux 2.6.27).
pub(crate) fn pipe2_cloexec() -> Result<io::Result<(OwnedFd, OwnedFd)>, &'static str> {
    let mut fds = [-1; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if rc < 0 {
        return Ok(Err(io::Error::last_os_error()));
    }
    Ok(owned(fds[0]).and_then(|r| Ok((r, owned(fds[1])?))))
}

/// `close_range(first, ~0U, 0)` (Linux 5.9): closes every descriptor from
/// `first` up. Async-signal-safe (one raw syscall, no allocation: the error is
/// an errno value), so it may run in `pre_exec`. A kernel before 5.9 answers
/// `ENOSYS`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/close_range.2.html>
pub(crate) fn close_range_from(first: libc::c_uint) -> io::Result<()> {
    // SAFETY: close_range touches only this process's descriptor table; the
    // libc crate's SYS_close_range avoids needing glibc 2.34's wrapper.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            libc::c_uint::MAX,
            0 as libc::c_uint,
        )
    };
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `POSIX_SPAWN_CLOEXEC_DEFAULT` is an Apple extension.
pub(crate) const POSIX_SPAWN_CLOEXEC_DEFAULT: Result<libc::c_short, &str> = Err(
    "POSIX_SPAWN_CLOEXEC_DEFAULT is an Apple extension: glibc and Linux have no such posix_spawn flag",
);

/// The descriptors `pid` has open, from `/proc/<pid>/fd` (proc(5)).
pub(crate) fn process_fds(pid: libc::pid_t) -> io::Result<Vec<RawFd>> {
    let mut fds = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        if let Some(fd) = entry?.file_name().to_str().and_then(|s| s.parse().ok()) {
            fds.push(fd);
        }
    }
    fds.sort_unstable();
    Ok(fds)
}

fn owned(rc: libc::c_int) -> io::Result<OwnedFd> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        // SAFETY: a descriptor the kernel just returned, owned by no one else.
        Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(rc) })
    }
}

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

/// The dynamic loader's preload variable (`ld.so(8)`: "A list of additional,
/// user-specified, ELF shared objects to be loaded before all others"), and the
/// file name cargo gives the injector cdylib.
///
/// # References
/// - <https://man7.org/linux/man-pages/man8/ld.so.8.html>
pub(crate) const PRELOAD: Option<(&str, &str)> = Some(("LD_PRELOAD", "libfdwindow_inject.so"));

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

    /// Formats an address as the kernel does (`%08X` of each 32-bit word as
    /// it lies in memory, so this holds on either byte order).
    fn kernel_form(ip: &[u8], port: u16) -> String {
        let words: String = ip
            .chunks(4)
            .map(|w| format!("{:08X}", u32::from_ne_bytes(w.try_into().unwrap())))
            .collect();
        format!("{words}:{port:04X}")
    }

    #[test]
    fn parses_both_families() {
        let v4 = SocketAddr::from((Ipv4Addr::LOCALHOST, 8080));
        assert_eq!(
            parse_proc_addr(&kernel_form(&[127, 0, 0, 1], 8080)),
            Some(v4)
        );
        let ip6 = Ipv4Addr::LOCALHOST.to_ipv6_mapped();
        let v6 = SocketAddr::from((ip6, 443));
        assert_eq!(parse_proc_addr(&kernel_form(&ip6.octets(), 443)), Some(v6));
        let lo6 = SocketAddr::from((Ipv6Addr::LOCALHOST, 1));
        assert_eq!(
            parse_proc_addr(&kernel_form(&Ipv6Addr::LOCALHOST.octets(), 1)),
            Some(lo6)
        );
        assert_eq!(parse_proc_addr("0100007F"), None);
        assert_eq!(parse_proc_addr("XYZ:0001"), None);
    }
}
