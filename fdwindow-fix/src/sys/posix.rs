//! Safe wrappers over the POSIX calls every OS here shares, so that the rest
//! of the crate holds no `unsafe` for them: `posix_spawn` with its file
//! actions and attributes (rustix does not wrap it), and waiting, signalling
//! and polling through rustix.
//!
//! posix_spawn stays on libc on purpose: it is the call the probes measure,
//! and a preload interposer must see it.
//!
//! # References
//! - <https://pubs.opengroup.org/onlinepubs/9799919799/functions/posix_spawn.html>
//! - <https://pubs.opengroup.org/onlinepubs/9799919799/functions/posix_spawn_file_actions_adddup2.html>

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};

pub use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use std::time::Duration;

/// A NULL-terminated array of C strings that owns them: argv or envp for
/// `posix_spawn` and `execve`, built before any clock starts.
#[derive(Debug)]
pub struct CStrArray {
    _owned: Vec<CString>,
    ptrs: Vec<*mut libc::c_char>,
}

impl CStrArray {
    /// The array of `items`, in order, then NULL.
    pub fn new(items: impl IntoIterator<Item = CString>) -> CStrArray {
        let owned: Vec<CString> = items.into_iter().collect();
        let ptrs = owned
            .iter()
            .map(|s| s.as_ptr().cast_mut())
            .chain(std::iter::once(std::ptr::null_mut()))
            .collect();
        CStrArray {
            _owned: owned,
            ptrs,
        }
    }

    /// The NULL-terminated pointer array.
    pub fn as_ptr(&self) -> *const *mut libc::c_char {
        self.ptrs.as_ptr()
    }
}

fn spawn_rc(rc: libc::c_int, what: &str) -> io::Result<()> {
    if rc == 0 {
        return Ok(());
    }
    let e = io::Error::from_raw_os_error(rc);
    Err(io::Error::new(e.kind(), format!("{what}: {e}")))
}

/// posix_spawn's file actions and attributes, initialised together and
/// destroyed on every path out. The storage is `MaybeUninit` (zeroed, which
/// needs no `unsafe`) and only ever reached through pointers: the C objects
/// are initialised by the `_init` calls in [`Spawner::new`], never read as
/// Rust values.
#[derive(Debug)]
pub struct Spawner {
    actions: std::mem::MaybeUninit<libc::posix_spawn_file_actions_t>,
    attr: std::mem::MaybeUninit<libc::posix_spawnattr_t>,
    /// Whether the attributes were initialised: false only while [`Spawner::new`]
    /// runs, so that a failed `posix_spawnattr_init` leaves Drop to destroy
    /// the file actions alone.
    attr_ready: bool,
}

impl Spawner {
    /// Empty file actions and default attributes.
    pub fn new() -> io::Result<Spawner> {
        let mut actions = std::mem::MaybeUninit::zeroed();
        // SAFETY: initialises the storage above in place.
        let rc = unsafe { libc::posix_spawn_file_actions_init(actions.as_mut_ptr()) };
        spawn_rc(rc, "posix_spawn_file_actions_init")?;
        // From here Drop destroys the file actions on every way out.
        let mut spawner = Spawner {
            actions,
            attr: std::mem::MaybeUninit::zeroed(),
            attr_ready: false,
        };
        // SAFETY: initialises the attribute storage in place.
        let rc = unsafe { libc::posix_spawnattr_init(spawner.attr.as_mut_ptr()) };
        spawn_rc(rc, "posix_spawnattr_init")?;
        spawner.attr_ready = true;
        Ok(spawner)
    }

    /// The file actions, initialised, for an OS's own additions
    /// (`addclosefrom_np`, `addinherit_np`, `addchdir_np`): valid while
    /// `self` lives and is not moved.
    pub fn actions(&mut self) -> *mut libc::posix_spawn_file_actions_t {
        self.actions.as_mut_ptr()
    }

    /// `posix_spawn_file_actions_adddup2(fd, target)`. `fd` must stay open
    /// until the spawn.
    pub fn dup2(&mut self, fd: RawFd, target: RawFd) -> io::Result<()> {
        // SAFETY: records an action in the initialised object; no pointer kept.
        let rc = unsafe {
            libc::posix_spawn_file_actions_adddup2(self.actions.as_mut_ptr(), fd, target)
        };
        spawn_rc(rc, "posix_spawn_file_actions_adddup2")
    }

    /// `posix_spawnattr_setflags(flags)`.
    pub fn set_flags(&mut self, flags: libc::c_short) -> io::Result<()> {
        // SAFETY: sets a field of the initialised attributes object.
        let rc = unsafe { libc::posix_spawnattr_setflags(self.attr.as_mut_ptr(), flags) };
        spawn_rc(rc, "posix_spawnattr_setflags")
    }

    /// `posix_spawnattr_setsigdefault(set)` (with `POSIX_SPAWN_SETSIGDEF`).
    pub fn set_sigdefault(&mut self, set: &SigSet) -> io::Result<()> {
        // SAFETY: copies the set into the initialised attributes object.
        let rc =
            unsafe { libc::posix_spawnattr_setsigdefault(self.attr.as_mut_ptr(), set.as_ref()) };
        spawn_rc(rc, "posix_spawnattr_setsigdefault")
    }

    /// `posix_spawn` (a path) or, with `search`, `posix_spawnp` (a name
    /// looked up in this process's `PATH`); the child's pid.
    pub fn spawn(
        &self,
        program: &CStr,
        argv: &CStrArray,
        envp: &CStrArray,
        search: bool,
    ) -> io::Result<libc::pid_t> {
        let call = if search {
            libc::posix_spawnp
        } else {
            libc::posix_spawn
        };
        let mut pid = 0;
        // SAFETY: the objects are initialised; program is a C string and argv
        // and envp NULL-terminated arrays of C strings, all outliving the call.
        let rc = unsafe {
            call(
                &mut pid,
                program.as_ptr(),
                self.actions.as_ptr(),
                self.attr.as_ptr(),
                argv.as_ptr(),
                envp.as_ptr(),
            )
        };
        spawn_rc(
            rc,
            if search {
                "posix_spawnp"
            } else {
                "posix_spawn"
            },
        )?;
        Ok(pid)
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        // SAFETY: initialised in new, destroyed once.
        unsafe { libc::posix_spawn_file_actions_destroy(self.actions.as_mut_ptr()) };
        if self.attr_ready {
            // SAFETY: initialised in new (attr_ready says so), destroyed once.
            unsafe { libc::posix_spawnattr_destroy(self.attr.as_mut_ptr()) };
        }
    }
}

/// `posix_spawn_file_actions_addclosefrom_np`'s C type (glibc 2.34, FreeBSD
/// 13.1; no libSystem through macOS 26).
#[cfg(any(target_os = "linux", target_os = "macos"))]
type AddClosefrom =
    unsafe extern "C" fn(*mut libc::posix_spawn_file_actions_t, libc::c_int) -> libc::c_int;

/// The libc's `posix_spawn_file_actions_addclosefrom_np`, looked up once at
/// run time (so the binary still runs on a libc without it: an older glibc,
/// musl, every macOS so far), for every OS that may have it.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn addclosefrom_fn() -> Option<AddClosefrom> {
    static FN: std::sync::OnceLock<Option<AddClosefrom>> = std::sync::OnceLock::new();
    *FN.get_or_init(|| {
        let sym = super::symbol(c"posix_spawn_file_actions_addclosefrom_np")?;
        // SAFETY: a symbol of that name is the function of glibc's and
        // FreeBSD's documented signature, `int (posix_spawn_file_actions_t *, int)`.
        Some(unsafe { std::mem::transmute::<*mut libc::c_void, AddClosefrom>(sym.as_ptr()) })
    })
}

/// `posix_spawn_file_actions_addclosefrom_np(actions, from)` where this libc
/// has it; `missing()` otherwise (each OS says why in its own words).
#[cfg(any(target_os = "linux", target_os = "macos"))]
pub fn addclosefrom_or(
    spawner: &mut Spawner,
    from: libc::c_int,
    missing: impl FnOnce() -> io::Error,
) -> io::Result<()> {
    let f = addclosefrom_fn().ok_or_else(missing)?;
    // SAFETY: a Spawner's file actions are initialised while it lives; the
    // call only appends an action to them.
    match unsafe { f(spawner.actions(), from) } {
        0 => Ok(()),
        rc => Err(io::Error::from_raw_os_error(rc)),
    }
}

// The creating calls the close-on-exec probe makes in two steps (or, for
// dup and open, with the atomic flag). They go through nix, which calls
// libc's own names, rather than rustix on purpose: on Linux rustix makes raw
// system calls, which the parked-call interposer (an LD_PRELOAD shim wrapping
// libc's names, `shims/parked_call.c`) cannot see, and the probe measures
// what happens while that interposer holds the calling thread right after
// the call.

/// `pipe(fds)`: a pipe without close-on-exec, the first of the two steps
/// (the caller sets `FD_CLOEXEC` afterwards, as code without `pipe2` must).
/// Through libc, so the parked-call interposer sees it.
///
/// # References
/// - <https://pubs.opengroup.org/onlinepubs/9799919799/functions/pipe.html>
pub fn pipe_inheritable() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe()?)
}

/// `fcntl(fd, F_DUPFD, min)`, or `F_DUPFD_CLOEXEC` with `cloexec`: a copy of
/// `fd` at the lowest free number from `min` up. Through libc, so the
/// parked-call interposer sees it.
///
/// # References
/// - <https://pubs.opengroup.org/onlinepubs/9799919799/functions/fcntl.html>
pub fn dup_from(fd: BorrowedFd<'_>, min: RawFd, cloexec: bool) -> io::Result<OwnedFd> {
    use nix::fcntl::FcntlArg::{F_DUPFD, F_DUPFD_CLOEXEC};
    let cmd = if cloexec {
        F_DUPFD_CLOEXEC(min)
    } else {
        F_DUPFD(min)
    };
    Ok(super::FreshFd(nix::fcntl::fcntl(fd, cmd)?).own())
}

/// `open("/dev/null", O_RDONLY)`, with `O_CLOEXEC` where `cloexec`. Through
/// libc, so the parked-call interposer sees it.
///
/// # References
/// - <https://pubs.opengroup.org/onlinepubs/9799919799/functions/open.html>
pub fn open_dev_null(cloexec: bool) -> io::Result<OwnedFd> {
    use nix::fcntl::OFlag;
    let cloexec = if cloexec {
        OFlag::O_CLOEXEC
    } else {
        OFlag::empty()
    };
    let mode = nix::sys::stat::Mode::empty();
    Ok(nix::fcntl::open(
        c"/dev/null",
        OFlag::O_RDONLY | cloexec,
        mode,
    )?)
}

/// `fcntl(fd, F_GETFD)` (`set` is `None`) or `fcntl(fd, F_SETFD, flags)` on
/// a descriptor *number*: the flags read, or 0 after a set. The one raw call
/// for descriptor flags here: safe for any number, since it reads or changes
/// only that descriptor's close-on-exec flag and touches no memory (a closed
/// number answers `EBADF`); rustix's `fcntl_getfd`/`fcntl_setfd` need a
/// borrowed descriptor, which a bare number from a directory listing or a
/// copied-in value is not. One system call, async-signal-safe, so a forked
/// child may make it before exec.
pub fn fd_flags_op(fd: RawFd, set: Option<libc::c_int>) -> io::Result<libc::c_int> {
    // F_GETFD ignores its third argument; F_SETFD reads it as an int.
    let (cmd, arg) = set.map_or((libc::F_GETFD, 0), |flags| (libc::F_SETFD, flags));
    // SAFETY: both commands take at most an int argument and no pointer.
    let rc = unsafe { libc::fcntl(fd, cmd, arg) };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc)
}

/// `fcntl(fd, F_SETFD, flags)` on a descriptor *number* ([`fd_flags_op`]).
pub fn set_fd_flags(fd: RawFd, flags: libc::c_int) -> io::Result<()> {
    fd_flags_op(fd, Some(flags)).map(drop)
}

/// Whether the socket `fd` has a local name another socket could want: an
/// inet port other than 0, a Unix path or (Linux) abstract name.
/// `getsockname(2)` into rustix's stack storage, read without allocating:
/// async-signal-safe, so a forked child may ask.
pub fn has_socket_name(fd: BorrowedFd<'_>) -> bool {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketAddrV4, SocketAddrV6};
    let Ok(addr) = rustix::net::getsockname(fd) else {
        return false;
    };
    match addr.address_family() {
        AddressFamily::INET => SocketAddrV4::try_from(addr).is_ok_and(|a| a.port() != 0),
        AddressFamily::INET6 => SocketAddrV6::try_from(addr).is_ok_and(|a| a.port() != 0),
        // An unnamed Unix socket has neither a path nor an abstract name
        // (rustix reads its bare family as an empty name, hence the
        // emptiness checks).
        AddressFamily::UNIX => SocketAddrUnix::try_from(addr).is_ok_and(|unix| {
            #[cfg(target_os = "linux")]
            let abstract_name = unix.abstract_name().is_some_and(|n| !n.is_empty());
            #[cfg(not(target_os = "linux"))]
            let abstract_name = false;
            unix.path_bytes().is_some_and(|p| !p.is_empty()) || abstract_name
        }),
        _ => false,
    }
}

/// Whether the socket `fd` is connected (`getpeername(2)` names a peer).
/// Async-signal-safe.
pub fn has_socket_peer(fd: BorrowedFd<'_>) -> bool {
    rustix::net::getpeername(fd).is_ok_and(|peer| peer.is_some())
}

/// `_exit(code)`: ends this process at once, running no destructor, no
/// atexit handler and no stdio flush of anyone's. Async-signal-safe, so a
/// forked child ends with it.
pub fn exit_now(code: libc::c_int) -> ! {
    // SAFETY: `_exit` takes an int, touches no memory of the caller's and
    // never returns; it is safe in any state, a forked child's included.
    unsafe { libc::_exit(code) }
}

/// `pthread_sigmask(how, set, &old)`: this thread's previous mask.
/// Async-signal-safe (it is one system call), so a vfork child may call it.
pub fn thread_sigmask(how: SigmaskHow, set: Option<&SigSet>) -> io::Result<SigSet> {
    let mut old = SigSet::empty();
    nix::sys::signal::pthread_sigmask(how, set, Some(&mut old))?;
    Ok(old)
}

fn pid_of(pid: libc::pid_t) -> io::Result<rustix::process::Pid> {
    rustix::process::Pid::from_raw(pid).ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))
}

/// `waitpid(pid, &status, 0)` retried on `EINTR`: the raw wait status.
pub fn wait_pid(pid: libc::pid_t) -> io::Result<libc::c_int> {
    let pid = pid_of(pid)?;
    loop {
        match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty()) {
            Ok(Some((_, status))) => return Ok(status.as_raw()),
            Ok(None) => continue, // only with WNOHANG; never here
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// `kill(pid, SIGKILL)`; `ESRCH` (already gone) is not an error.
pub fn kill_pid(pid: libc::pid_t) -> io::Result<()> {
    match rustix::process::kill_process(pid_of(pid)?, rustix::process::Signal::KILL) {
        Ok(()) | Err(rustix::io::Errno::SRCH) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// `poll` for `events` (`POLLIN`, …; an error or hang-up always counts) on one
/// descriptor for at most `timeout`: whether it became ready. `EINTR` comes
/// back as `ErrorKind::Interrupted`, for the caller's deadline loop.
pub fn poll_one(fd: BorrowedFd<'_>, events: libc::c_short, timeout: Duration) -> io::Result<bool> {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(&fd, PollFlags::from_bits_truncate(events as _))];
    let ts = Timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as i64,
        tv_nsec: i64::from(timeout.subsec_nanos()) as _,
    };
    Ok(rustix::event::poll(&mut fds, Some(&ts))? > 0)
}
