//! Linux: the kernel release names the platform; glibc reports its own version;
//! open file description locks come from the libc crate.

use std::io;

use std::os::fd::{BorrowedFd, OwnedFd, RawFd};

pub const OS_ID: Option<&str> = Some("linux");

/// The distribution, from `os-release(5)`'s PRETTY_NAME.
pub fn os_release() -> Option<String> {
    let text = std::fs::read_to_string("/etc/os-release")
        .or_else(|_| std::fs::read_to_string("/usr/lib/os-release"))
        .ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("PRETTY_NAME="))?;
    Some(line.trim_matches('"').to_owned())
}

/// On Linux the kernel's behaviour is what the probes measure, so its full
/// release, build flavour included, names the platform.
pub fn id_version(_os_release: &str, kernel_release: &str) -> String {
    kernel_release.to_owned()
}

/// The 1-minute load average: the first field of `/proc/loadavg`.
pub fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// How many more processes the machine would start now: the smallest of
/// the kernel's limits (`pid_max`, `threads-max`, this user's
/// `RLIMIT_NPROC`) less the threads that exist (`/proc/loadavg`'s fourth
/// field counts every one; the user's own are fewer, so this errs low).
pub fn process_room() -> Option<u64> {
    let read =
        |path: &str| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    let nproc = rustix::process::getrlimit(rustix::process::Resource::Nproc)
        .current
        .unwrap_or(u64::MAX);
    let limit = read("/proc/sys/kernel/pid_max")?
        .min(read("/proc/sys/kernel/threads-max")?)
        .min(nproc);
    let loadavg = std::fs::read_to_string("/proc/loadavg").ok()?;
    let threads: u64 = loadavg
        .split_whitespace()
        .nth(3)?
        .split_once('/')?
        .1
        .parse()
        .ok()?;
    Some(limit.saturating_sub(threads))
}

/// Whether the kernel lists the `hypervisor` cpu flag in `/proc/cpuinfo`
/// (set from CPUID leaf 1 ECX bit 31 on x86, by the firmware elsewhere).
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/proc_cpuinfo.5.html>
pub fn hypervisor_present() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|t| {
        t.lines()
            .filter(|l| l.starts_with("flags"))
            .any(|l| l.split_ascii_whitespace().any(|w| w == "hypervisor"))
    })
}

#[cfg(target_env = "gnu")]
pub fn libc_name_version() -> (String, String) {
    // confstr(_CS_GNU_LIBC_VERSION) answers "glibc 2.36": the version of the
    // glibc loaded now, as gnu_get_libc_version(3) would.
    let mut buf = [0u8; 64];
    // SAFETY: confstr writes at most buf.len() bytes, NUL included, into buf.
    let n = unsafe {
        libc::confstr(
            libc::_CS_GNU_LIBC_VERSION,
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let text = std::ffi::CStr::from_bytes_until_nul(&buf[..n.min(buf.len())])
        .map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default();
    let version = text.strip_prefix("glibc ").unwrap_or(&text).to_owned();
    ("glibc".into(), version)
}

// musl has no call that reports its version; say so rather than guess.
#[cfg(not(target_env = "gnu"))]
pub fn libc_name_version() -> (String, String) {
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
pub const F_OFD_GETLK: Option<libc::c_int> = Some(libc::F_OFD_GETLK);
/// See [`F_OFD_GETLK`].
pub const F_OFD_SETLK: Option<libc::c_int> = Some(libc::F_OFD_SETLK);

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
pub fn tcp_state(
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
pub fn set_reuse_port(sock: &socket2::Socket) -> std::io::Result<()> {
    sock.set_reuse_port(true)
}

/// `SOCK_CLOEXEC` (Linux 2.6.27): `socket`/`socketpair` create the descriptor
/// close-on-exec in one step.
pub const SOCK_CLOEXEC: Result<libc::c_int, &str> = Ok(libc::SOCK_CLOEXEC);

/// `accept4(fd, NULL, NULL, SOCK_CLOEXEC)` (Linux 2.6.28).
/// Through nix, which calls libc's `accept4` (the parked-call interposer
/// wraps it; rustix's raw system call would pass it by).
pub fn accept4_cloexec(fd: BorrowedFd<'_>) -> Result<io::Result<OwnedFd>, &'static str> {
    use nix::sys::socket::SockFlag;
    Ok(nix::sys::socket::accept4(fd, SockFlag::SOCK_CLOEXEC).map_err(io::Error::from))
}

/// `pipe2(fds, O_CLOEXEC)` (Linux 2.6.27).
/// Through nix, which calls libc's `pipe2` (interposed, as above).
pub fn pipe2_cloexec() -> Result<io::Result<(OwnedFd, OwnedFd)>, &'static str> {
    Ok(nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from))
}

/// `close_range(first, ~0U, 0)`—Close every descriptor from `first` up (Linux 5.9).
///
/// A raw `syscall(2)`, so it is async-signal-safe (it may run in `pre_exec`)
/// and links against any glibc; `ENOSYS` (an older kernel) comes back as
/// `ErrorKind::Unsupported`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/close_range.2.html>
pub fn close_range_from(first: std::os::fd::RawFd) -> std::io::Result<()> {
    close_range(first, 0)
}

/// `close_range(first, ~0U, flags)` as one raw syscall: async-signal-safe.
fn close_range(first: RawFd, flags: libc::c_uint) -> io::Result<()> {
    // SAFETY: closes (or, with CLOSE_RANGE_CLOEXEC, flags) descriptors only;
    // the caller owns what it closes.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first as libc::c_uint,
            libc::c_uint::MAX,
            flags,
        )
    };
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Whether `close_range(2)` works here, decided in the parent: a call over
/// an empty range (from the highest descriptor number) closes nothing.
pub fn close_range_supported() -> std::io::Result<()> {
    close_range_from(RawFd::MAX)
}

/// The descriptors `pid` has open, from `/proc/<pid>/fd` (proc(5)).
pub fn process_fds(pid: libc::pid_t) -> io::Result<Vec<RawFd>> {
    let mut fds = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))? {
        if let Some(fd) = entry?.file_name().to_str().and_then(|s| s.parse().ok()) {
            fds.push(fd);
        }
    }
    fds.sort_unstable();
    Ok(fds)
}

/// `KCMP_FILE` (linux/kcmp.h; the libc crate does not export it).
const KCMP_FILE: libc::c_int = 0;

/// Whether `pid`'s descriptor `theirs` is the same open file description as
/// this process's `ours`: a copy inherited or passed, not merely
/// another open of the same file. `kcmp(KCMP_FILE)` answers that exactly
/// (0: the same; `EBADF`: `pid` has no such descriptor). A kernel without
/// kcmp (`CONFIG_KCMP`, `ENOSYS`) or one that refuses it (`EPERM`) is
/// asked through `/proc/PID/fd/N`, whose link resolves to the object itself:
/// the same device and inode is the same socket or pipe, and for a file the
/// same file (another open of it would pass there too).
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/kcmp.2.html>
/// - <https://man7.org/linux/man-pages/man5/proc_pid_fd.5.html>
pub fn same_open_file_as(pid: u32, theirs: RawFd, ours: RawFd) -> io::Result<bool> {
    // SAFETY: kcmp takes five integers and touches no memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_kcmp,
            std::process::id() as libc::pid_t,
            pid as libc::pid_t,
            KCMP_FILE,
            ours as libc::c_ulong,
            theirs as libc::c_ulong,
        )
    };
    if r >= 0 {
        return Ok(r == 0);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EBADF) => return Ok(false),
        Some(libc::ENOSYS | libc::EPERM) => {}
        _ => return Err(e),
    }
    same_object_by_proc(pid, theirs, ours)
}

/// [`same_open_file_as`] without kcmp: whether `/proc/PID/fd/THEIRS`
/// resolves to the object this process's `ours` does (the same device and inode).
fn same_object_by_proc(pid: u32, theirs: RawFd, ours: RawFd) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let ours = std::fs::metadata(format!("/proc/self/fd/{ours}"))?;
    match std::fs::metadata(format!("/proc/{pid}/fd/{theirs}")) {
        Ok(m) => Ok(m.dev() == ours.dev() && m.ino() == ours.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The clocks `clock_gettime(2)` offers here, by name. The coarse clocks
/// (Linux 2.6.32) read the tick-granular time the kernel last stored, without
/// touching the clocksource.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/clock_gettime.2.html>
pub const CLOCKS: &[(&str, libc::clockid_t)] = &[
    ("CLOCK_REALTIME", libc::CLOCK_REALTIME),
    ("CLOCK_MONOTONIC", libc::CLOCK_MONOTONIC),
    ("CLOCK_MONOTONIC_RAW", libc::CLOCK_MONOTONIC_RAW),
    ("CLOCK_REALTIME_COARSE", libc::CLOCK_REALTIME_COARSE),
    ("CLOCK_MONOTONIC_COARSE", libc::CLOCK_MONOTONIC_COARSE),
];

/// The clock behind `std::time::Instant` here (rust-lang/rust
/// `library/std/src/sys/pal/unix/time.rs`).
pub const INSTANT_CLOCK: &str = "CLOCK_MONOTONIC";

/// A file's identity, as `stat(2)` gives it.
pub fn inode_object(dev: u64, ino: u64) -> super::Object {
    super::Object::Inode { dev, ino }
}

/// `fstat(fd)`'s device and inode: on Linux every descriptor has one
/// (sockets and pipes live on their own pseudo-filesystems).
pub fn object_of(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<super::Object> {
    let st = rustix::fs::fstat(fd)?;
    Ok(inode_object(st.st_dev, st.st_ino))
}

/// The pids holding `object`: see [`holders_of_inode`].
pub fn holders_of_object(object: super::Object) -> io::Result<Vec<u32>> {
    match object {
        super::Object::Inode { dev, ino } => holders_of_inode(dev, ino),
        // Never made on Linux: object_of always answers with an inode.
        super::Object::Socket(_) => Err(io::Error::from_raw_os_error(libc::EINVAL)),
    }
}

/// The pids whose descriptor table holds the open object `(dev, ino)`, found
/// by `stat(2)` on every `/proc/PID/fd/N` (the link resolves to the object
/// itself, sockets included). Processes that vanish or that we may not
/// inspect are skipped, as `lsof` skips them.
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/proc_pid_fd.5.html>
fn holders_of_inode(dev: u64, ino: u64) -> std::io::Result<Vec<u32>> {
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
pub fn exe_of(pid: u32) -> std::io::Result<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/exe"))
}

/// The live children of `parent`, from field 4 (ppid) of every
/// `/proc/PID/stat`. The command name (field 2) may hold spaces and `)`, so
/// the fields are counted after its last `)`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html>
pub fn children_of(parent: u32) -> std::io::Result<Vec<u32>> {
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

/// The start time of process `pid`, field 22 (`starttime`, clock ticks since
/// boot) of `/proc/PID/stat`, counted after the command name's last `)`:
/// with the pid it names one process, as a reused pid starts later. The
/// injector reads the same field (shims/inject.c, `start_time_of`).
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/proc_pid_stat.5.html>
pub fn start_time_of(pid: u32) -> io::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(19)?.parse().ok())
        .ok_or_else(|| io::Error::other(format!("/proc/{pid}/stat: no starttime field")))
}

/// The dynamic loader's preload variable (`ld.so(8)`: "A list of additional,
/// user-specified, ELF shared objects to be loaded before all others"), and the
/// suffix of a shared library's file name.
///
/// # References
/// - <https://man7.org/linux/man-pages/man8/ld.so.8.html>
pub const PRELOAD: Option<(&str, &str)> = Some(("LD_PRELOAD", "so"));

/// vfork's kernel path is available on every Linux.
pub fn vfork_supported() -> std::io::Result<()> {
    Ok(())
}

/// What the vfork child reads and writes; it lives on the parent's stack,
/// which the child may touch because the parent's thread is suspended.
struct VforkArgs {
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    stdio: libc::c_int,
    mask: super::SigSet,
    /// Set by the child on a failed step; atomic, so the parent's read after
    /// the clone sees the child's write.
    errno: std::sync::atomic::AtomicI32,
}

/// The vfork child's exit on a failed step: records errno for the parent
/// (reading errno is async-signal-safe and does not allocate) and `_exit`s.
fn vfork_fail(args: &mut VforkArgs) -> ! {
    let errno = std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO);
    args.errno.store(errno, std::sync::atomic::Ordering::SeqCst);
    super::exit_now(127)
}

/// A `struct sigaction` with `handler` (`SIG_DFL`, `SIG_IGN` or a function's
/// address), `mask` and `flags`: built field by field, nothing left unset.
/// glibc's and musl's `struct sigaction` have a fourth field, the restorer
/// (set by libc itself; `None` here).
pub fn sigaction_of(
    handler: libc::sighandler_t,
    mask: super::SigSet,
    flags: libc::c_int,
) -> libc::sigaction {
    libc::sigaction {
        sa_sigaction: handler,
        sa_mask: *mask.as_ref(),
        sa_flags: flags,
        sa_restorer: None,
    }
}

/// `sigaction(sig, new, &old)`: the old action. One system call,
/// async-signal-safe.
fn sigaction(sig: libc::c_int, new: Option<&libc::sigaction>) -> Option<libc::sigaction> {
    // Storage for the kernel to fill.
    let mut old = sigaction_of(libc::SIG_DFL, super::SigSet::empty(), 0);
    let new = new.map_or(std::ptr::null(), |n| n as *const libc::sigaction);
    // SAFETY: `new` is null or a valid action; `old` is writable.
    (unsafe { libc::sigaction(sig, new, &mut old) } == 0).then_some(old)
}

/// The vfork child: async-signal-safe calls only, on its own stack.
extern "C" fn vfork_child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's VforkArgs, alive until the parent resumes,
    // which happens only once this child has exec'd or exited.
    let args = unsafe { &mut *arg.cast::<VforkArgs>() };
    for target in 0..3 {
        // SAFETY: dup2 on descriptor numbers; an error is reported below.
        if unsafe { libc::dup2(args.stdio, target) } == -1 {
            vfork_fail(args);
        }
    }
    // Every signal is still blocked (the parent blocked them around the
    // clone). Before unblocking, send each caught signal back to its
    // default: the parent's handlers must not run on this stack in the
    // shared address space. The child has its own signal table (no
    // CLONE_SIGHAND), so this leaves the parent's alone, as glibc's
    // posix_spawn does (sysdeps/unix/sysv/linux/spawni.c).
    if let Some(mut dfl) = sigaction(libc::SIGCHLD, None) {
        dfl.sa_sigaction = libc::SIG_DFL;
        dfl.sa_flags = 0;
        // 1..=64: every signal number Linux has (_NSIG is 65).
        for sig in 1..65 {
            if sigaction(sig, None).is_some_and(|old| {
                old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN
            }) {
                sigaction(sig, Some(&dfl));
            }
        }
    }
    let _ = super::thread_sigmask(super::SigmaskHow::SIG_SETMASK, Some(&args.mask));
    // SAFETY: program, argv and envp are the parent's C strings and
    // NULL-terminated arrays, alive until it resumes.
    unsafe { libc::execve(args.program, args.argv, args.envp) };
    vfork_fail(args)
}

/// `clone(CLONE_VM|CLONE_VFORK|SIGCHLD)` then `execve`: what `vfork(2)` does
/// in the kernel (kernel/fork.c: vfork is `kernel_clone` with
/// `CLONE_VFORK|CLONE_VM` and `SIGCHLD`), with the child on a stack of its own.
///
/// Rust cannot call `vfork()` itself soundly: it returns twice into one stack
/// frame, and Rust has no `returns_twice` attribute to stop the optimiser from
/// keeping state across the first return. A separate stack avoids that; this
/// is how glibc's posix_spawn runs its child too. Every signal is blocked
/// around the clone, so no handler of the parent runs on the child's stack
/// before the child restores the mask just ahead of `execve`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/vfork.2.html>
/// - <https://man7.org/linux/man-pages/man2/clone.2.html>
/// - glibc `sysdeps/unix/sysv/linux/spawni.c` (`__spawnix`)
pub fn vfork_exec(
    program: &std::ffi::CStr,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    stdio: std::os::fd::RawFd,
) -> std::io::Result<libc::pid_t> {
    assert!(argv.last().is_some_and(|p| p.is_null()) && envp.last().is_some_and(|p| p.is_null()));
    const STACK: usize = 64 * 1024;
    let mut stack = vec![0u8; STACK];
    let mut args = VforkArgs {
        program: program.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        stdio,
        mask: super::SigSet::empty(),
        errno: std::sync::atomic::AtomicI32::new(0),
    };
    args.mask = super::thread_sigmask(super::SigmaskHow::SIG_SETMASK, Some(&super::SigSet::all()))?;
    // Stacks grow down on every architecture Linux runs Rust on here; the
    // top is kept 16-byte aligned as the ABIs want.
    let top = (stack.as_mut_ptr().wrapping_add(STACK) as usize & !15) as *mut libc::c_void;
    // SAFETY: the stack outlives the child's use of it (the parent resumes
    // only after exec or exit); VforkArgs outlives the call; the child runs
    // only async-signal-safe code.
    let pid = unsafe {
        libc::clone(
            vfork_child,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw mut args).cast(),
        )
    };
    let clone_error = std::io::Error::last_os_error();
    let _ = super::thread_sigmask(super::SigmaskHow::SIG_SETMASK, Some(&args.mask));
    if pid == -1 {
        return Err(clone_error);
    }
    let errno = args.errno.load(std::sync::atomic::Ordering::SeqCst);
    if errno != 0 {
        let _ = super::wait_pid(pid);
        return Err(std::io::Error::from_raw_os_error(errno));
    }
    Ok(pid)
}

/// Whether this libc has `posix_spawn_file_actions_addclosefrom_np`.
/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34) is looked up at
/// run time, so that the binary still runs on an older glibc or on musl.
pub fn addclosefrom_supported() -> std::io::Result<()> {
    if super::has_function(c"posix_spawn_file_actions_addclosefrom_np") {
        Ok(())
    } else {
        Err(no_addclosefrom())
    }
}

fn no_addclosefrom() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "this libc has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 added it)",
    )
}

/// `posix_spawn_file_actions_addclosefrom_np(actions, from)`—Add a "close
/// every descriptor from `from` up" action (glibc 2.34).
///
/// # References
/// - <https://man7.org/linux/man-pages/man3/posix_spawn_file_actions_addclosefrom_np.3.html>
pub fn addclosefrom(spawner: &mut super::Spawner, from: libc::c_int) -> std::io::Result<()> {
    super::addclosefrom_or(spawner, from, no_addclosefrom)
}

/// `POSIX_SPAWN_CLOEXEC_DEFAULT` is Apple's; Linux has no such attribute.
pub fn spawn_cloexec_default_flag() -> std::io::Result<libc::c_short> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "POSIX_SPAWN_CLOEXEC_DEFAULT is an Apple extension; Linux's posix_spawn has no such flag",
    ))
}

/// Makes this process the reaper of its orphaned descendants
/// (`PR_SET_CHILD_SUBREAPER`, prctl(2)): a process group that
/// [`crate::base::child::wait_group`] killed is then reaped to its last
/// member, instead of the orphans dying later under init, still running
/// (SIGKILL pending, not yet scheduled on a loaded machine) when the
/// command returns. Process-wide: for a command's `main`, not a library.
pub fn adopt_orphans() -> io::Result<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
    Ok(())
}

/// Makes the child `cmd` starts receive SIGKILL when this thread ends
/// (`prctl(2)`, `PR_SET_PDEATHSIG`): a VM must not outlive a `fdwindow vm`
/// that was itself killed. The signal follows the creating *thread*, so call
/// this only for children spawned from a thread that outlives them.
pub fn die_with_parent(cmd: &mut std::process::Command) {
    let parent = rustix::process::getpid();
    crate::sys::child_hook::install(
        cmd,
        crate::sys::child_hook::Hook::Sys(ChildHook::DieWithParent(parent)),
    );
}

/// Nothing to set up in the child: on Linux its parent's
/// [`die_with_parent`] set `PR_SET_PDEATHSIG` before exec, which exec keeps
/// (prctl(2): cleared only for a set-user-ID or capability-raising binary),
/// and the kernel delivers it when that thread dies, SIGKILL included.
pub fn exit_with_parent(_parent: u32) -> io::Result<()> {
    Ok(())
}

/// Linux's own code for a child between fork and exec
/// ([`crate::sys::child_hook`]): each variant names its async-signal-safe calls.
#[derive(Debug)]
pub enum ChildHook {
    /// `prctl(PR_SET_PDEATHSIG, SIGKILL)`, then `getppid()` against the
    /// parent's pid taken before the fork: two raw system calls.
    DieWithParent(rustix::process::Pid),
    /// `fix::spawn`'s pass: `close_range(3, ~0U, CLOSE_RANGE_CLOEXEC)` or the
    /// walk (`open`, `getdents64`, `fcntl`, `close`), then `fcntl(F_SETFD, 0)`
    /// on each kept descriptor; nothing at all for the probe's sham.
    Isolate {
        /// The probe's sham: the same fork path, no fix.
        sham: bool,
        /// Walk `/proc/self/fd` even where `close_range` works.
        walk: bool,
        /// The descriptors passed on (read only: no allocation in the child).
        keep: Vec<RawFd>,
    },
}

impl ChildHook {
    /// Runs in the child between fork and exec.
    pub fn run(&self) -> io::Result<()> {
        match self {
            ChildHook::DieWithParent(parent) => set_pdeathsig(*parent),
            ChildHook::Isolate { sham: true, .. } => Ok(()),
            ChildHook::Isolate { walk, keep, .. } => {
                cloexec_above_stdio(*walk)?;
                keep.iter().try_for_each(|&fd| super::set_fd_flags(fd, 0))
            }
        }
    }
}

/// Runs in the child between fork and exec: async-signal-safe calls only
/// (rustix's `prctl` and `getppid` are raw system calls; the error is built
/// from a number, without allocating). A parent that died between the fork
/// and the `prctl` sends no signal, so the child checks that it still has
/// the parent it was forked from (prctl(2) suggests this) and does not exec
/// otherwise.
fn set_pdeathsig(parent: rustix::process::Pid) -> std::io::Result<()> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
    if rustix::process::getppid() != Some(parent) {
        return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// Calls `f` with every descriptor this process has open (except the one it
/// reads the list through), read with `getdents64(2)` from `/proc/self/fd`
/// through rustix's `RawDir` into a buffer on the stack: rustix's `open`,
/// `getdents64` and `close` are plain system calls and `RawDir` allocates
/// nothing (it parses records in place, in the caller's buffer), so a forked
/// child may call this before exec. Closing descriptors from `f` is allowed:
/// procfs keeps its position in the table by descriptor number.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/getdents64.2.html>
/// - <https://man7.org/linux/man-pages/man5/proc_pid_fd.5.html>
/// - <https://man7.org/linux/man-pages/man7/signal-safety.7.html> (`open`,
///   `close` are async-signal-safe; getdents64 is a plain system call)
pub fn each_open_fd(f: &mut dyn FnMut(RawFd)) -> io::Result<()> {
    use rustix::fs::{Mode, OFlags, RawDir};
    use std::os::fd::AsRawFd;
    let dir = rustix::fs::open(
        c"/proc/self/fd",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let own = dir.as_raw_fd();
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
    let mut entries = RawDir::new(&dir, &mut buf);
    while let Some(entry) = entries.next() {
        if let Some(fd) = parse_fd(entry?.file_name().to_bytes())
            && fd != own
        {
            f(fd);
        }
    }
    Ok(())
}

/// Whether the stream socket `fd` is listening: `getsockopt(SO_ACCEPTCONN)`
/// (socket(7): "Returns a value indicating whether or not this socket has
/// been marked to accept connections with listen(2)"). Async-signal-safe.
pub fn is_listening(fd: BorrowedFd<'_>) -> bool {
    rustix::net::sockopt::socket_acceptconn(fd).unwrap_or(false)
}

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

    /// The fallback for a kernel without kcmp tells a child's copy from
    /// another descriptor, as kcmp does.
    #[test]
    fn proc_identity_agrees_with_kcmp() {
        use std::os::fd::AsRawFd;
        let _serial = crate::test_serial();
        let (_r, w) = std::io::pipe().unwrap();
        let held = crate::base::child::HeldChild::hold().unwrap();
        let fresh = std::fs::File::open("/dev/null").unwrap();
        for fd in [w.as_raw_fd(), fresh.as_raw_fd()] {
            assert_eq!(
                same_object_by_proc(held.pid(), fd, fd).unwrap(),
                same_open_file_as(held.pid(), fd, fd).unwrap(),
                "descriptor {fd}"
            );
        }
        let w = w.as_raw_fd();
        assert!(same_object_by_proc(held.pid(), w, w).unwrap());
        held.release().unwrap();
    }

    #[test]
    fn a_filtered_or_old_close_range_falls_back_to_the_walk() {
        // ENOSYS (before 5.9), EINVAL (the flag, 5.9-5.10), EPERM (a seccomp
        // profile that predates the call): the walk does it. Anything else
        // (EBADF, a real failure) fails the spawn.
        for errno in [libc::ENOSYS, libc::EINVAL, libc::EPERM] {
            assert!(close_range_missing(Some(errno)), "{errno}");
        }
        assert!(!close_range_missing(Some(libc::EBADF)));
        assert!(!close_range_missing(None));
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

/// A child of `fix::spawn` on Linux: std's own.
#[derive(Debug)]
pub struct SpawnedProcess(std::process::Child);

impl SpawnedProcess {
    pub fn id(&self) -> u32 {
        self.0.id()
    }

    pub fn kill(&mut self) -> io::Result<()> {
        self.0.kill()
    }

    pub fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        self.0.wait()
    }

    pub fn try_wait(&mut self) -> io::Result<Option<std::process::ExitStatus>> {
        self.0.try_wait()
    }
}

/// `fix::spawn` on Linux: std's `Command` with a `pre_exec` that gives every
/// descriptor above stdio close-on-exec, then clears it on the kept ones.
/// std's exec-error pipe is close-on-exec already, so it still reports a
/// failed exec; the hook forces std's fork path (posix_spawn takes no hook).
pub fn spawn_isolated(
    cmd: &super::IsolatedSpawn,
    stdio: [super::SpawnStdio; 3],
) -> io::Result<super::Spawned> {
    use super::SpawnStdio as Stdio;
    let mut std_cmd = std::process::Command::new(&cmd.program);
    std_cmd.args(&cmd.args);
    if cmd.env_clear {
        std_cmd.env_clear();
    }
    for (key, value) in &cmd.env {
        match value {
            Some(v) => std_cmd.env(key, v),
            None => std_cmd.env_remove(key),
        };
    }
    if let Some(dir) = &cmd.cwd {
        std_cmd.current_dir(dir);
    }
    let std_stdio = |how: Stdio| match how {
        Stdio::Inherit => std::process::Stdio::inherit(),
        Stdio::Null => std::process::Stdio::null(),
        Stdio::Piped => std::process::Stdio::piped(),
    };
    std_cmd
        .stdin(std_stdio(stdio[0]))
        .stdout(std_stdio(stdio[1]))
        .stderr(std_stdio(stdio[2]));
    // Moved into the hook, which only reads it: no allocation in the child.
    let hook = ChildHook::Isolate {
        sham: cmd.sham,
        walk: cmd.walk_fds,
        keep: cmd.keep.clone(),
    };
    crate::sys::child_hook::install(&mut std_cmd, crate::sys::child_hook::Hook::Sys(hook));
    let mut child = std_cmd.spawn()?;
    Ok(super::Spawned {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        process: SpawnedProcess(child),
    })
}

/// Gives every descriptor from 3 up close-on-exec, in a child before exec:
/// `close_range(3, ~0U, CLOSE_RANGE_CLOEXEC)` (Linux 5.11), or when that is
/// missing (`ENOSYS` before 5.9, `EINVAL` for the flag on 5.9–5.10, `EPERM`
/// from a seccomp filter that predates the call, as container runtimes'
/// default profiles answered unknown system calls), or `walk` asks for it,
/// [`cloexec_by_walk`].
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/close_range.2.html>
/// - <https://man7.org/linux/man-pages/man2/seccomp.2.html> (`SECCOMP_RET_ERRNO`)
fn cloexec_above_stdio(walk: bool) -> io::Result<()> {
    if !walk {
        match close_range(3, libc::CLOSE_RANGE_CLOEXEC) {
            Ok(()) => return Ok(()),
            Err(e) if close_range_missing(e.raw_os_error()) => {}
            Err(e) => return Err(e),
        }
    }
    cloexec_by_walk()
}

/// Whether `close_range`'s error (a bare errno, read between fork and exec)
/// means the call or its flag is not available here, so the walk must do it.
fn close_range_missing(errno: Option<i32>) -> bool {
    matches!(errno, Some(libc::ENOSYS | libc::EINVAL | libc::EPERM))
}

/// Sets `FD_CLOEXEC` on every *open* descriptor from 3 up, found by
/// [`each_open_fd`]: open, getdents64, fcntl and close are plain system calls
/// and nothing allocates, so this may run between fork and exec. It visits only
/// what is open, never every number up to `RLIMIT_NOFILE`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/getdents.2.html> (`linux_dirent64`)
/// - <https://man7.org/linux/man-pages/man5/proc_pid_fd.5.html>
fn cloexec_by_walk() -> io::Result<()> {
    let mut first_error = Ok(());
    each_open_fd(&mut |fd| {
        if fd > 2 && first_error.is_ok() {
            first_error = super::set_fd_flags(fd, libc::FD_CLOEXEC);
        }
    })?;
    first_error
}

/// The descriptor number a `/proc/self/fd` entry names (digits up to the NUL);
/// `None` for `.` and `..`.
fn parse_fd(name: &[u8]) -> Option<RawFd> {
    let mut fd: RawFd = 0;
    let mut digits = 0;
    for &b in name.iter().take_while(|&&b| b != 0) {
        if !b.is_ascii_digit() {
            return None;
        }
        fd = fd.checked_mul(10)?.checked_add(RawFd::from(b - b'0'))?;
        digits += 1;
    }
    (digits > 0).then_some(fd)
}
