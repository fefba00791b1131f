//! macOS: the product version names the platform (xnu's release tracks it).

use std::io;

use super::owned;
use std::os::fd::{OwnedFd, RawFd};

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

/// No reader for xnu's TCP connection table yet (netstat reads it through
/// the `net.inet.tcp.pcblist_n` sysctl); callers report `unsupported`.
pub(crate) fn tcp_state(
    _local: std::net::SocketAddr,
    _peer: std::net::SocketAddr,
) -> std::io::Result<Option<&'static str>> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "no reader for the TCP connection table on macOS yet",
    ))
}

/// `setsockopt(SO_REUSEPORT, 1)`: on macOS (BSD semantics) every socket
/// binding the same address and port must set it.
///
/// # References
/// - <https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man2/setsockopt.2.html>
pub(crate) fn set_reuse_port(sock: &socket2::Socket) -> std::io::Result<()> {
    sock.set_reuse_port(true)
}

/// macOS has no `SOCK_CLOEXEC`: std makes sockets with `socket`, then
/// `ioctl(FIOCLEX)`.
///
/// # References
/// - gdnsd/gdnsd#180; libc 0.2.68 dropped the constant for Apple targets
///   (vmware-archive/differential-datalog#560); rust-lang/rust#24237
pub(crate) const SOCK_CLOEXEC: Result<libc::c_int, &str> = Err(
    "macOS has no SOCK_CLOEXEC (through macOS 26): sockets are made close-on-exec in a second call",
);

/// macOS has no `accept4` (rust-lang/socket2#105).
pub(crate) fn accept4_cloexec(_fd: RawFd) -> Result<io::Result<OwnedFd>, &'static str> {
    Err(
        "macOS has no accept4 (through macOS 26): accepted sockets are made close-on-exec in a second call",
    )
}

/// `pipe2(fds, O_CLOEXEC)`, looked up at run time: the macOS 27 SDK declares
/// it "available since macOS 27.0"; on macOS 26 and earlier the weak symbol is
/// NULL (rbenv/ruby-build#2641, python/cpython#154718).
pub(crate) fn pipe2_cloexec() -> Result<io::Result<(OwnedFd, OwnedFd)>, &'static str> {
    // SAFETY: dlsym with a NUL-terminated name; RTLD_DEFAULT searches every image.
    let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"pipe2".as_ptr()) };
    if sym.is_null() {
        return Err(
            "this macOS has no pipe2 (added in macOS 27): pipes are made close-on-exec in a second call",
        );
    }
    // SAFETY: pipe2's C signature is int pipe2(int fds[2], int flags).
    let pipe2: unsafe extern "C" fn(*mut libc::c_int, libc::c_int) -> libc::c_int =
        unsafe { std::mem::transmute(sym) };
    let mut fds = [-1; 2];
    // SAFETY: fds has room for the two descriptors pipe2 writes.
    let rc = unsafe { pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if rc < 0 {
        return Ok(Err(io::Error::last_os_error()));
    }
    Ok(owned(fds[0]).and_then(|r| Ok((r, owned(fds[1])?))))
}

/// The descriptors `pid` has open: `proc_pidinfo(PROC_PIDLISTFDS)` (libproc;
/// works for the caller's own children).
pub(crate) fn process_fds(pid: libc::pid_t) -> io::Result<Vec<RawFd>> {
    let size = std::mem::size_of::<libc::proc_fdinfo>();
    let blank = libc::proc_fdinfo {
        proc_fd: 0,
        proc_fdtype: 0,
    };
    let mut buf: Vec<libc::proc_fdinfo> = vec![blank; 64];
    loop {
        let bytes = (buf.len() * size).min(i32::MAX as usize) as libc::c_int;
        // SAFETY: buf has room for `bytes` bytes; proc_pidinfo writes at most that.
        let n = unsafe {
            libc::proc_pidinfo(
                pid,
                libc::PROC_PIDLISTFDS,
                0,
                buf.as_mut_ptr().cast(),
                bytes,
            )
        };
        if n <= 0 {
            return Err(io::Error::last_os_error());
        }
        // A full buffer may have cut the list short: grow and ask again.
        if n < bytes {
            buf.truncate(n as usize / size);
            let mut fds: Vec<RawFd> = buf.iter().map(|i| i.proc_fd).collect();
            fds.sort_unstable();
            return Ok(fds);
        }
        buf.resize(buf.len() * 2, blank);
    }
}

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

/// dyld's insert variable (`dyld(1)`: "a colon separated list of dynamic
/// libraries to load before the ones specified in the program"), and the
/// suffix of a shared library's file name. System Integrity Protection strips
/// `DYLD_*` from protected binaries (those under /usr/bin, /bin), so the host
/// must be the test binary itself, not a shell that runs it.
///
/// # References
/// - `man 1 dyld` (DYLD_INSERT_LIBRARIES)
/// - <https://developer.apple.com/library/archive/documentation/Security/Conceptual/System_Integrity_Protection_Guide/RuntimeProtections/RuntimeProtections.html>
pub(crate) const PRELOAD: Option<(&str, &str)> = Some(("DYLD_INSERT_LIBRARIES", "dylib"));
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

/// Calls `f` with every descriptor this process has open, listed by
/// `proc_pidinfo(getpid(), PROC_PIDLISTFDS)` into a buffer on the stack (no
/// allocation, no lock: a forked child may call it before exec; libproc's
/// calls are thin wrappers of the `proc_info` system call). A process with
/// more than the buffer's 2048 descriptors has only the first 2048 listed.
///
/// # References
/// - xnu `bsd/sys/proc_info.h` (`PROC_PIDLISTFDS`, `struct proc_fdinfo`):
///   <https://github.com/apple-oss-distributions/xnu/blob/main/bsd/sys/proc_info.h>
pub(crate) fn each_open_fd(f: &mut dyn FnMut(RawFd)) -> io::Result<()> {
    let mut buf = [libc::proc_fdinfo {
        proc_fd: -1,
        proc_fdtype: 0,
    }; 2048];
    let bytes = std::mem::size_of_val(&buf) as libc::c_int;
    // SAFETY: getpid cannot fail.
    let pid = unsafe { libc::getpid() };
    // SAFETY: buf has room for `bytes` bytes; proc_pidinfo writes at most that.
    let n = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDLISTFDS,
            0,
            buf.as_mut_ptr().cast(),
            bytes,
        )
    };
    if n <= 0 {
        return Err(io::Error::last_os_error());
    }
    let count = n as usize / std::mem::size_of::<libc::proc_fdinfo>();
    for info in &buf[..count.min(buf.len())] {
        f(info.proc_fd);
    }
    Ok(())
}

/// `PROC_PIDFDSOCKETINFO` (xnu `bsd/sys/proc_info.h`; not in the libc crate).
const PROC_PIDFDSOCKETINFO: libc::c_int = 3;
/// Offset of `psi.soi_options` in `struct socket_fdinfo`: `proc_fileinfo` is
/// 24 bytes, then `socket_info` holds a 136-byte `vinfo_stat`, `soi_so`,
/// `soi_pcb` (8 each), `soi_type`, `soi_protocol`, `soi_family` (4 each),
/// then the `short soi_options`: 24 + 136 + 16 + 12 = 188.
const SOI_OPTIONS_OFFSET: usize = 188;

/// Whether the stream socket `fd` is listening. XNU has no `SO_ACCEPTCONN`
/// getsockopt, but `proc_pidfdinfo(PROC_PIDFDSOCKETINFO)` reports the
/// socket's `so_options`, in which `listen(2)` sets `SO_ACCEPTCONN`
/// (xnu `bsd/sys/socket.h`). No allocation: a forked child may call it.
pub(crate) fn is_listening(fd: RawFd) -> bool {
    // u64 elements: socket_fdinfo is 8-byte aligned; 2 KiB exceeds its size.
    let mut buf = [0u64; 256];
    let bytes = std::mem::size_of_val(&buf) as libc::c_int;
    // SAFETY: getpid cannot fail.
    let pid = unsafe { libc::getpid() };
    // SAFETY: buf has room for `bytes` bytes; proc_pidfdinfo writes at most that.
    let n = unsafe {
        libc::proc_pidfdinfo(
            pid,
            fd,
            PROC_PIDFDSOCKETINFO,
            buf.as_mut_ptr().cast(),
            bytes,
        )
    };
    if n < (SOI_OPTIONS_OFFSET + 2) as libc::c_int {
        return false;
    }
    // The short's two bytes, in native order, from the u64 that holds them.
    let word = buf[SOI_OPTIONS_OFFSET / 8].to_ne_bytes();
    let b = SOI_OPTIONS_OFFSET % 8;
    let options = i16::from_ne_bytes([word[b], word[b + 1]]);
    options & (libc::SO_ACCEPTCONN as i16) != 0
}

/// A child of `fix::spawn` on macOS: its pid, and its status once reaped.
#[derive(Debug)]
pub(crate) struct SpawnedProcess {
    pid: libc::pid_t,
    status: Option<std::process::ExitStatus>,
}

impl SpawnedProcess {
    pub(crate) fn id(&self) -> u32 {
        self.pid as u32
    }

    /// SIGKILL; a child already reaped is left alone (its pid may be reused).
    pub(crate) fn kill(&mut self) -> io::Result<()> {
        if self.status.is_some() {
            return Ok(());
        }
        super::kill_pid(self.pid)
    }

    pub(crate) fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        if let Some(status) = self.status {
            return Ok(status);
        }
        let status = std::process::ExitStatus::from_raw(super::wait_pid(self.pid)?);
        self.status = Some(status);
        Ok(status)
    }

    pub(crate) fn try_wait(&mut self) -> io::Result<Option<std::process::ExitStatus>> {
        use std::os::unix::process::ExitStatusExt;
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let pid = rustix::process::Pid::from_raw(self.pid)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
        match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG) {
            Ok(Some((_, raw))) => {
                let status = std::process::ExitStatus::from_raw(raw.as_raw());
                self.status = Some(status);
                Ok(Some(status))
            }
            Ok(None) | Err(rustix::io::Errno::INTR) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

unsafe extern "C" {
    /// Apple's `posix_spawn_file_actions_addinherit_np(3)` (macOS 10.7): the
    /// descriptor survives `POSIX_SPAWN_CLOEXEC_DEFAULT`. Not in the libc crate.
    fn posix_spawn_file_actions_addinherit_np(
        actions: *mut libc::posix_spawn_file_actions_t,
        fd: libc::c_int,
    ) -> libc::c_int;
}

fn errno(rc: libc::c_int, what: &str) -> io::Result<()> {
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::from_raw_os_error(rc);
    Err(io::Error::new(e.kind(), format!("{what}: {e}")))
}

fn c_string(s: &std::ffi::OsStr) -> io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{s:?} holds a NUL byte"),
        )
    })
}

/// `posix_spawn_file_actions_addinherit_np(fd)`.
fn add_inherit(spawner: &mut super::Spawner, fd: RawFd) -> io::Result<()> {
    // SAFETY: records an inherit action in the initialised actions object.
    let rc = unsafe { posix_spawn_file_actions_addinherit_np(spawner.actions(), fd) };
    errno(rc, "posix_spawn_file_actions_addinherit_np")
}

/// `fix::spawn` on macOS: the helper's own `posix_spawn` with
/// `POSIX_SPAWN_CLOEXEC_DEFAULT`, so the kernel closes at exec every
/// descriptor that no file action names; stdio and the kept descriptors are
/// named with `posix_spawn_file_actions_addinherit_np` (or set up by
/// `adddup2`/`addopen`). The signal mask is emptied and SIGPIPE reset to its
/// default, as std does for its children.
///
/// # References
/// - Apple, `man 3 posix_spawnattr_setflags` (`POSIX_SPAWN_CLOEXEC_DEFAULT`)
/// - <https://pubs.opengroup.org/onlinepubs/9799919799/functions/posix_spawn.html>
pub(crate) fn spawn_isolated(
    cmd: &crate::fix::spawn::Command,
    stdio: [crate::fix::spawn::Stdio; 3],
) -> io::Result<crate::fix::spawn::Child> {
    use crate::fix::spawn::Stdio;
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;

    // Everything the spawn reads is prepared first.
    let program = c_string(&cmd.program)?;
    let mut argv = vec![program.clone()];
    for a in &cmd.args {
        argv.push(c_string(a)?);
    }
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = if cmd.env_clear {
        Vec::new()
    } else {
        std::env::vars_os().collect()
    };
    for (key, value) in &cmd.env {
        env.retain(|(k, _)| k != key);
        if let Some(v) = value {
            env.push((key.clone(), v.clone()));
        }
    }
    let mut envp = Vec::with_capacity(env.len());
    for (k, v) in &env {
        let mut kv = k.clone();
        kv.push("=");
        kv.push(v);
        envp.push(c_string(&kv)?);
    }
    let (argv, envp) = (super::CStrArray::new(argv), super::CStrArray::new(envp));
    let cwd = cmd
        .cwd
        .as_deref()
        .map(|d| c_string(d.as_os_str()))
        .transpose()?;

    let mut spawner = super::Spawner::new()?;
    // Pipes for Piped: the parent's ends by stdio number; the child's ends
    // stay open until the spawn returns.
    let mut parent_ends: [Option<OwnedFd>; 3] = [None, None, None];
    let mut child_ends: Vec<OwnedFd> = Vec::new();
    for (fd, how) in stdio.iter().enumerate() {
        let fd = fd as libc::c_int;
        match how {
            Stdio::Inherit => add_inherit(&mut spawner, fd)?,
            Stdio::Null => {
                let mode = if fd == 0 {
                    libc::O_RDONLY
                } else {
                    libc::O_WRONLY
                };
                spawner.open(fd, c"/dev/null", mode)?;
            }
            Stdio::Piped => {
                // Two steps inside std on macOS (no pipe2); both ends end up close-on-exec.
                let (reader, writer) = io::pipe()?;
                let (parent, child): (OwnedFd, OwnedFd) = if fd == 0 {
                    (writer.into(), reader.into())
                } else {
                    (reader.into(), writer.into())
                };
                spawner.dup2(child.as_raw_fd(), fd)?;
                parent_ends[fd as usize] = Some(parent);
                child_ends.push(child);
            }
        }
    }
    for &fd in &cmd.keep {
        add_inherit(&mut spawner, fd)?;
    }
    if let Some(dir) = &cwd {
        // SAFETY: records a chdir action (macOS 10.15); dir outlives the spawn.
        let rc =
            unsafe { libc::posix_spawn_file_actions_addchdir_np(spawner.actions(), dir.as_ptr()) };
        errno(rc, "posix_spawn_file_actions_addchdir_np")?;
    }
    // macOS's sigset_t is a bit mask (<sys/signal.h>: sigaddset sets bit signo-1).
    let empty: libc::sigset_t = 0;
    let pipe_only: libc::sigset_t = 1 << (libc::SIGPIPE - 1);
    spawner.set_sigmask(&empty)?;
    spawner.set_sigdefault(&pipe_only)?;
    // The probe's sham switches off only the fix.
    let fix = if cmd.sham {
        0
    } else {
        libc::POSIX_SPAWN_CLOEXEC_DEFAULT
    };
    let flags = fix | libc::POSIX_SPAWN_SETSIGMASK | libc::POSIX_SPAWN_SETSIGDEF;
    spawner.set_flags(flags as libc::c_short)?;
    let search = !cmd.program.as_bytes().contains(&b'/');
    let spawned = spawner.spawn(&program, &argv, &envp, search);
    drop(child_ends);
    // ENOENT, EACCES…: the kind is the errno's, as std's failed exec.
    let pid = spawned?;
    let [stdin, stdout, stderr] = parent_ends;
    Ok(crate::fix::spawn::Child {
        stdin: stdin.map(std::process::ChildStdin::from),
        stdout: stdout.map(std::process::ChildStdout::from),
        stderr: stderr.map(std::process::ChildStderr::from),
        process: SpawnedProcess { pid, status: None },
    })
}
