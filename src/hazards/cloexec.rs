//! Descriptor creation with and without the atomic close-on-exec flag, and the
//! children that show which descriptors a spawn leaked.
//!
//! Each creation call ([`Call`]) is made either in two steps (the call without
//! its close-on-exec flag; the caller sets `FD_CLOEXEC` afterwards) or
//! atomically (`SOCK_CLOEXEC`, `accept4`, `pipe2`, `F_DUPFD_CLOEXEC`,
//! `O_CLOEXEC`). A call the OS lacks fails with [`io::ErrorKind::Unsupported`]
//! and says why, without making a syscall.
//!
//! A [`Holder`] is `/bin/cat`, spawned one of several ways ([`SpawnHow`]) and
//! known to have exec'd (it echoed a byte), so every descriptor it still has
//! beyond stdio is one it inherited for its whole life; [`Holder::fds`] lists
//! them (`/proc/<pid>/fd` on Linux, `proc_pidinfo(PROC_PIDLISTFDS)` on macOS).

use socket2::{Domain, Socket, Type};
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fdwindow_fix::base::child::CAT_PROGRAM;
use fdwindow_fix::base::child::read_byte_by;
use fdwindow_fix::sys;
use fdwindow_fix::sys::child_hook::Hook;

/// How long a holder may take to exec and echo before spawning counts as broken.
const ECHO_TIMEOUT: Duration = Duration::from_secs(30);

/// A call that creates descriptors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Call {
    /// `socket(AF_INET, SOCK_STREAM)`: a TCP socket, like std's `TcpListener`.
    Socket,
    /// `socketpair(AF_UNIX, SOCK_STREAM)`.
    Socketpair,
    /// `accept` on a listening Unix socket.
    Accept,
    /// `pipe`.
    Pipe,
    /// `fcntl(F_DUPFD)` (what `dup` does, with a chosen lowest number).
    Dup,
    /// `open("/dev/null", O_RDONLY)`.
    Open,
    /// `socket(AF_UNIX, SOCK_STREAM)` then `connect` to a listening Unix
    /// socket: the client side, like std's `UnixStream::connect`.
    Connect,
}

impl Call {
    /// Every call, in matrix order.
    pub const ALL: [Call; 7] = [
        Call::Socket,
        Call::Socketpair,
        Call::Accept,
        Call::Pipe,
        Call::Dup,
        Call::Open,
        Call::Connect,
    ];

    /// The public id, e.g. `socketpair`.
    pub fn id(self) -> &'static str {
        match self {
            Call::Socket => "socket",
            Call::Socketpair => "socketpair",
            Call::Accept => "accept",
            Call::Pipe => "pipe",
            Call::Dup => "dup",
            Call::Open => "open",
            Call::Connect => "connect",
        }
    }

    /// The one-step way to create it close-on-exec.
    pub fn atomic_form(self) -> &'static str {
        match self {
            Call::Socket => "socket(SOCK_CLOEXEC)",
            Call::Socketpair => "socketpair(SOCK_CLOEXEC)",
            Call::Accept => "accept4(SOCK_CLOEXEC)",
            Call::Pipe => "pipe2(O_CLOEXEC)",
            Call::Dup => "fcntl(F_DUPFD_CLOEXEC)",
            Call::Open => "open(O_CLOEXEC)",
            Call::Connect => "socket(SOCK_CLOEXEC), then connect",
        }
    }

    /// The std constructor that makes this kind of descriptor.
    pub fn std_wrapper(self) -> &'static str {
        match self {
            Call::Socket => "TcpListener::bind",
            Call::Socketpair => "UnixStream::pair",
            Call::Accept => "UnixListener::accept",
            Call::Pipe => "std::io::pipe",
            Call::Dup => "OwnedFd::try_clone",
            Call::Open => "File::open",
            Call::Connect => "UnixStream::connect",
        }
    }
}

/// Whether a call sets close-on-exec itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flag {
    /// Without the flag: the caller sets `FD_CLOEXEC` in a second call.
    TwoStep,
    /// With the atomic flag.
    Atomic,
}

/// What one call must have ready: for `accept`, a listener and a path to
/// connect to; for `dup`, a descriptor to duplicate.
#[derive(Debug)]
pub struct Maker {
    call: Call,
    listener: Option<(UnixListener, std::path::PathBuf)>,
    source: Option<File>,
}

impl Maker {
    /// Prepares `call`; `scratch` is a fresh path for the `accept` listener.
    pub fn new(call: Call, scratch: &Path) -> io::Result<Maker> {
        let listener = match call {
            Call::Accept | Call::Connect => {
                Some((UnixListener::bind(scratch)?, scratch.to_owned()))
            }
            _ => None,
        };
        let source = match call {
            Call::Dup => Some(File::open("/dev/null")?),
            _ => None,
        };
        Ok(Maker {
            call,
            listener,
            source,
        })
    }

    /// The call this maker makes.
    pub fn call(&self) -> Call {
        self.call
    }

    /// Makes the call's descriptors, two-step (no flag yet) or atomically.
    pub fn make(&self, flag: Flag) -> io::Result<Made> {
        let mut made = Made { fds: Vec::new() };
        let atomic = flag == Flag::Atomic;
        match self.call {
            // socket2's `*_raw` calls are libc's socket, socketpair and
            // accept with exactly the flags given (none added), so the
            // two-step form stays two-step and an interposer sees the call.
            Call::Socket => {
                let ty = Type::from(libc::SOCK_STREAM | sock_flag(atomic)?);
                made.fds.push(
                    Socket::new_raw(Domain::IPV4, ty, None)
                        .map_err(|e| flag_unknown(e, atomic))?
                        .into(),
                );
            }
            Call::Connect => {
                let (listener, path) = self
                    .listener
                    .as_ref()
                    .expect("connect maker has a listener");
                let ty = Type::from(libc::SOCK_STREAM | sock_flag(atomic)?);
                let sock =
                    Socket::new_raw(Domain::UNIX, ty, None).map_err(|e| flag_unknown(e, atomic))?;
                sock.connect(&socket2::SockAddr::unix(path)?)?;
                let fd = OwnedFd::from(sock);
                // Take the server side at once, so a loop of connects never
                // fills the listener's backlog (connect would then block).
                drop(listener.accept()?);
                made.fds.push(fd);
            }
            Call::Socketpair => {
                let ty = Type::from(libc::SOCK_STREAM | sock_flag(atomic)?);
                let (a, b) = Socket::pair_raw(Domain::UNIX, ty, None)
                    .map_err(|e| flag_unknown(e, atomic))?;
                made.fds.extend([a.into(), b.into()]);
            }
            Call::Accept => {
                let (listener, path) = self.listener.as_ref().expect("accept maker has a listener");
                // The client end comes from std (atomic on Linux); only the
                // accepted end is under test.
                let _client = UnixStream::connect(path)?;
                made.fds.push(if atomic {
                    sys::accept4_cloexec(listener.as_fd()).map_err(unsupported)??
                } else {
                    socket2::SockRef::from(listener).accept_raw()?.0.into()
                });
            }
            Call::Pipe => {
                let (r, w) = if atomic {
                    sys::pipe2_cloexec().map_err(unsupported)??
                } else {
                    sys::pipe_inheritable()?
                };
                made.fds.extend([r, w]);
            }
            Call::Dup => {
                let source = self.source.as_ref().expect("dup maker has a source");
                made.fds.push(sys::dup_from(source.as_fd(), 3, atomic)?);
            }
            Call::Open => {
                made.fds.push(sys::open_dev_null(atomic)?);
            }
        }
        Ok(made)
    }
}

/// The descriptors one call created.
#[derive(Debug)]
pub struct Made {
    fds: Vec<OwnedFd>,
}

impl Made {
    /// The second step: `fcntl(F_SETFD, FD_CLOEXEC)` on each descriptor.
    pub fn set_cloexec(&self) -> io::Result<()> {
        for fd in &self.fds {
            fdwindow_fix::base::locks::set_cloexec(fd, true)?;
        }
        Ok(())
    }

    /// The descriptor numbers.
    pub fn raw_fds(&self) -> Vec<RawFd> {
        self.fds.iter().map(AsRawFd::as_raw_fd).collect()
    }
}

fn sock_flag(atomic: bool) -> io::Result<libc::c_int> {
    if atomic {
        sys::SOCK_CLOEXEC.map_err(unsupported)
    } else {
        Ok(0)
    }
}

/// A socket call made with the close-on-exec type flag that the kernel
/// refused as unknown type bits (`EINVAL` on Linux, `EPROTONOSUPPORT` or
/// `EPROTOTYPE` from xnu): the flag is absent here, reported as unsupported.
fn flag_unknown(e: io::Error, atomic: bool) -> io::Error {
    if atomic && fdwindow_fix::base::errno::means_flag_unknown(&e) {
        io::Error::new(
            io::ErrorKind::Unsupported,
            format!("the kernel refused the close-on-exec type flag: {e}"),
        )
    } else {
        e
    }
}

/// An error that says the OS lacks the call (`ErrorKind::Unsupported`).
fn unsupported(reason: &str) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, reason.to_owned())
}

/// The descriptors this process has open without close-on-exec: what any
/// child inherits whatever the code under test does.
pub fn inheritable_fds() -> io::Result<Vec<RawFd>> {
    let mut fds = sys::process_fds(std::process::id() as libc::pid_t)?;
    // A closed number (the listing's own directory descriptor) is dropped.
    fds.retain(|&fd| fd_flags(fd).is_some_and(|f| f & libc::FD_CLOEXEC == 0));
    Ok(fds)
}

/// `fcntl(fd, F_GETFD)` on a descriptor *number*: its flags, or `None` when
/// nothing is open there. It only reads, so any number is fine, one this
/// process does not own included (rustix's safe `fcntl_getfd` needs a
/// borrowed descriptor, which a bare number is not).
pub fn fd_flags(fd: RawFd) -> Option<libc::c_int> {
    sys::fd_flags_op(fd, None).ok()
}

/// How a [`Holder`] is spawned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnHow {
    /// std's `Command::spawn` (posix_spawn where std uses it).
    Std,
    /// std's `Command` with a `pre_exec` that calls `close_range(3, ~0U, 0)`
    /// (forces std's fork path). It also closes std's exec-error channel, so
    /// `spawn` returns before exec; the holder waits for cat's echo anyway.
    CloseRangeInChild,
    /// `posix_spawn` with `posix_spawn_file_actions_addclosefrom_np(3)` after
    /// the stdio `dup2`s (glibc 2.34; looked up at run time).
    ClosefromFileAction,
    /// `posix_spawn` with `POSIX_SPAWN_CLOEXEC_DEFAULT` (macOS).
    CloexecDefault,
    /// std's `Command` with a `pre_exec` that does nothing: the fork path of
    /// [`SpawnHow::CloseRangeInChild`] with the fix switched off (its sham).
    ForkNoop,
    /// `posix_spawn` called directly, as [`SpawnHow::ClosefromFileAction`]
    /// and [`SpawnHow::CloexecDefault`] call it, without their fix (their sham).
    RawPlain,
    /// [`fdwindow_fix::spawn`], the helper users call instead of
    /// `Command::spawn` (close_range with `CLOSE_RANGE_CLOEXEC` on Linux,
    /// `POSIX_SPAWN_CLOEXEC_DEFAULT` on macOS).
    Fix,
    /// [`fdwindow_fix::spawn`] with its close-on-exec step switched off (its sham).
    FixSham,
}

/// `/bin/cat` on two pipes, exec'd and alive until released: every descriptor
/// it has beyond 0, 1 and 2 it inherited.
#[derive(Debug)]
pub struct Holder {
    pid: libc::pid_t,
    stdin: Option<File>,
    stdout: File,
    /// Set when std spawned it (std then reaps it); else reaped by waitpid.
    child: Option<Child>,
    /// Set when [`fdwindow_fix::spawn`] spawned it (it reaps it).
    fix_child: Option<fdwindow_fix::spawn::Child>,
    reaped: bool,
}

impl Holder {
    /// Spawns cat as `how` says and returns once it has echoed a byte.
    pub fn spawn(how: SpawnHow) -> io::Result<Holder> {
        let mut holder = match how {
            SpawnHow::Std | SpawnHow::CloseRangeInChild | SpawnHow::ForkNoop => {
                let mut cmd = Command::new(CAT_PROGRAM);
                cmd.env_clear()
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null());
                if how == SpawnHow::CloseRangeInChild {
                    // Support is decided here, in the parent: the child must
                    // not be the place where a missing call is found out.
                    sys::close_range_supported()?;
                }
                // The sham's hook does nothing: it only forces std's fork path.
                let hook = match how {
                    SpawnHow::CloseRangeInChild => Some(Hook::CloseRangeFrom(3)),
                    SpawnHow::ForkNoop => Some(Hook::ForkOnly),
                    _ => None,
                };
                if let Some(hook) = hook {
                    fdwindow_fix::sys::child_hook::install(&mut cmd, hook);
                }
                let mut child = cmd.spawn()?;
                Holder {
                    pid: child.id() as libc::pid_t,
                    stdin: child.stdin.take().map(|s| File::from(OwnedFd::from(s))),
                    stdout: File::from(OwnedFd::from(child.stdout.take().expect("piped"))),
                    child: Some(child),
                    fix_child: None,
                    reaped: false,
                }
            }
            SpawnHow::ClosefromFileAction | SpawnHow::CloexecDefault | SpawnHow::RawPlain => {
                raw_spawn(how)?
            }
            SpawnHow::Fix | SpawnHow::FixSham => {
                use fdwindow_fix::spawn::{Command as FixCommand, Stdio as FixStdio};
                let mut child = FixCommand::new(CAT_PROGRAM)
                    .env_clear()
                    .stdin(FixStdio::Piped)
                    .stdout(FixStdio::Piped)
                    .stderr(FixStdio::Null)
                    .sham(how == SpawnHow::FixSham)
                    .spawn()?;
                Holder {
                    pid: child.id() as libc::pid_t,
                    stdin: child.stdin.take().map(|s| File::from(OwnedFd::from(s))),
                    stdout: File::from(OwnedFd::from(child.stdout.take().expect("piped"))),
                    child: None,
                    fix_child: Some(child),
                    reaped: false,
                }
            }
        };
        holder
            .stdin
            .as_mut()
            .expect("stdin held until release")
            .write_all(b"x")?;
        if !read_byte_by(&mut holder.stdout, Instant::now() + ECHO_TIMEOUT)? {
            return Err(io::Error::other("cat exited before echoing"));
        }
        Ok(holder)
    }

    /// The holder's pid.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// The descriptors the holder has open.
    pub fn fds(&self) -> io::Result<Vec<RawFd>> {
        sys::process_fds(self.pid)
    }

    /// Closes cat's stdin, so it exits, and reaps it.
    pub fn release(mut self) -> io::Result<()> {
        drop(self.stdin.take());
        let code = self.reap()?;
        if code == 0 {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "cat ended with wait status {code}"
            )))
        }
    }

    fn reap(&mut self) -> io::Result<libc::c_int> {
        self.reaped = true;
        if let Some(child) = self.child.as_mut() {
            let status = child.wait()?;
            return Ok(if status.success() { 0 } else { 1 });
        }
        if let Some(child) = self.fix_child.as_mut() {
            let status = child.wait()?;
            return Ok(if status.success() { 0 } else { 1 });
        }
        sys::wait_pid(self.pid)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        if !self.reaped {
            // Closing stdin ends cat; kill covers a cat that is stuck.
            drop(self.stdin.take());
            // Our own, not yet reaped, child: its pid cannot be reused yet.
            let _ = sys::kill_pid(self.pid);
            let _ = self.reap();
        }
    }
}

/// The C library functions behind atomic close-on-exec forms and spawn-time
/// closing that some libcs lack: glibc has all four (accept4 2.10, pipe2 and
/// dup3 2.9, addclosefrom_np 2.34); macOS has none through 26, and its 27 SDK
/// declares `pipe2` and `dup3` (rbenv/ruby-build#2641).
pub const LOOKED_UP: [&std::ffi::CStr; 4] = [
    c"pipe2",
    c"accept4",
    c"dup3",
    c"posix_spawn_file_actions_addclosefrom_np",
];

/// Whether this process's C library has `name`, looked up at run time
/// (`dlsym`), never decided from the headers the binary was built with.
pub fn libc_has(name: &std::ffi::CStr) -> bool {
    sys::has_function(name)
}

/// Whether `posix_spawn_file_actions_addclosefrom_np` exists in this libc.
pub fn has_addclosefrom_np() -> bool {
    sys::addclosefrom_supported().is_ok()
}

/// Spawns cat with `posix_spawn` directly: the only way to add a closefrom
/// file action or `POSIX_SPAWN_CLOEXEC_DEFAULT`, which std never sets.
fn raw_spawn(how: SpawnHow) -> io::Result<Holder> {
    let closefrom = how == SpawnHow::ClosefromFileAction;
    if closefrom {
        sys::addclosefrom_supported()?;
    }
    let cloexec_default = match how {
        SpawnHow::CloexecDefault => Some(sys::spawn_cloexec_default_flag()?),
        _ => None,
    };
    // Everything the spawn reads is prepared first; the environment is empty.
    let path = CString::new(CAT_PROGRAM).expect("no NUL");
    let argv = sys::CStrArray::new([CString::new("cat").expect("no NUL")]);
    let envp = sys::CStrArray::new([]);
    let (in_r, in_w) = io::pipe()?;
    let (out_r, out_w) = io::pipe()?;
    let mut spawner = sys::Spawner::new()?;
    spawner.dup2(in_r.as_raw_fd(), 0)?;
    spawner.dup2(out_w.as_raw_fd(), 1)?;
    // /dev/null opened here (close-on-exec), dup2'd onto stderr in the child.
    let devnull = File::options().write(true).open("/dev/null")?;
    spawner.dup2(devnull.as_raw_fd(), 2)?;
    // After the dup2s: their sources are above 2 and would be closed first.
    if closefrom {
        sys::addclosefrom(&mut spawner, 3).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("posix_spawn_file_actions_addclosefrom_np: {e}"),
            )
        })?;
    }
    if let Some(flag) = cloexec_default {
        spawner.set_flags(flag)?;
    }
    let pid = spawner.spawn(&path, &argv, &envp, false)?;
    drop((in_r, out_w));
    Ok(Holder {
        pid,
        stdin: Some(File::from(OwnedFd::from(in_w))),
        stdout: File::from(OwnedFd::from(out_r)),
        child: None,
        fix_child: None,
        reaped: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdwindow_fix::base::scratch::Scratch;

    fn has_cloexec(fd: RawFd) -> bool {
        let flags = fd_flags(fd).unwrap_or_else(|| panic!("fd {fd} is not open"));
        flags & libc::FD_CLOEXEC != 0
    }

    #[test]
    fn two_step_makes_without_the_flag_until_set() {
        // Descriptors without the flag would leak into other tests' children.
        let _serial = crate::test_serial();
        let s = Scratch::new("cloexec").unwrap();
        for call in Call::ALL {
            let maker = Maker::new(call, &s.fresh("sock")).unwrap();
            let made = maker.make(Flag::TwoStep).unwrap();
            assert!(!made.raw_fds().is_empty());
            assert!(
                made.raw_fds().iter().all(|&fd| !has_cloexec(fd)),
                "{call:?}"
            );
            made.set_cloexec().unwrap();
            assert!(made.raw_fds().iter().all(|&fd| has_cloexec(fd)), "{call:?}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn linux_has_every_atomic_form() {
        let s = Scratch::new("cloexec").unwrap();
        for call in Call::ALL {
            let made = Maker::new(call, &s.fresh("sock"))
                .unwrap()
                .make(Flag::Atomic)
                .unwrap();
            assert!(made.raw_fds().iter().all(|&fd| has_cloexec(fd)), "{call:?}");
        }
    }

    #[test]
    fn a_holder_keeps_exactly_the_descriptors_without_the_flag() {
        let _serial = crate::test_serial();
        let s = Scratch::new("cloexec").unwrap();
        let maker = Maker::new(Call::Pipe, &s.fresh("sock")).unwrap();
        let bare = maker.make(Flag::TwoStep).unwrap();
        let flagged = maker.make(Flag::TwoStep).unwrap();
        flagged.set_cloexec().unwrap();
        let holder = Holder::spawn(SpawnHow::Std).unwrap();
        let held = holder.fds().unwrap();
        holder.release().unwrap();
        assert!(
            bare.raw_fds().iter().all(|fd| held.contains(fd)),
            "{held:?}"
        );
        assert!(
            !flagged.raw_fds().iter().any(|fd| held.contains(fd)),
            "{held:?}"
        );
    }
}
