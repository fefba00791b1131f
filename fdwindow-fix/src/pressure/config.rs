//! What the co-tenant is told: how its threads spawn, how many, for how
//! long, and which closed descriptors a child drops or holds.

use std::io;
use std::time::Duration;

/// The environment variable the injector reads its [`Spec`](super::Spec) from.
pub const ENV_VAR: &str = "FDWINDOW_PRESSURE";

/// How pressure threads start their children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnPath {
    /// fork, hold for [`Config::hold`] in `pre_exec`, exec: a long window in
    /// which the child holds copies of every descriptor.
    ForkExec,
    /// std's default path (`posix_spawn`): the path most real test runners and
    /// libraries take; [`Config::hold`] does not apply.
    PosixSpawn,
    /// Each thread alternates between the two.
    Mix,
}

impl SpawnPath {
    /// The id used in [`Spec`](super::Spec) strings.
    pub fn id(self) -> &'static str {
        match self {
            SpawnPath::ForkExec => "fork",
            SpawnPath::PosixSpawn => "spawn",
            SpawnPath::Mix => "mix",
        }
    }
}

/// What a [`Pressure`](super::Pressure) does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Spawning threads.
    pub threads: usize,
    /// Time each fork+exec child sleeps between fork and exec.
    pub hold: Duration,
    /// How children are started.
    pub path: SpawnPath,
    /// Children alive at once, over all threads (each thread has at most one).
    pub max_alive: usize,
    /// The threads stop by themselves this long after the start.
    pub deadline: Duration,
    /// Descriptors each fork+exec child closes right after the fork, before
    /// its hold (`None`: it keeps them all). A diagnosis tool: a flake that
    /// clears when children drop one class was caused by a copy of that class.
    pub drop: Option<DropClass>,
}

/// A class of descriptor that pressure children close right after the fork.
///
/// The child classifies its own descriptors (a snapshot taken in the parent
/// would race with the very descriptors that matter): it lists them with
/// getdents64 on `/proc/self/fd` (Linux) or `proc_pidinfo(PROC_PIDLISTFDS)`
/// (macOS), then `fstat`, `getsockopt(SO_TYPE)` and, for stream sockets,
/// `SO_ACCEPTCONN` (Linux) or `proc_pidfdinfo` (macOS). Descriptors 0-2 are
/// the child's own `/dev/null` and are kept.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/fstat.2.html>
/// - <https://man7.org/linux/man-pages/man7/socket.7.html> (`SO_TYPE`, `SO_ACCEPTCONN`)
/// - <https://man7.org/linux/man-pages/man7/signal-safety.7.html> (`fstat`,
///   `getsockopt`, `close`, `open` are async-signal-safe)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropClass {
    /// Regular files (locks, executables being written).
    File,
    /// Listening stream sockets.
    Listener,
    /// Sockets that hold a name and nothing more: a stream socket bound but
    /// neither listening nor connected, or a datagram socket with a name (a
    /// port, a Unix path or abstract name). A held copy keeps the name taken
    /// (port-pick, a Unix name rebound); for a datagram socket the name is
    /// all a copy can keep, so a named one is `bound`, not `dgram`.
    Bound,
    /// Stream sockets that are connected, or neither bound nor listening.
    Stream,
    /// Datagram sockets without a name (a socketpair's).
    Datagram,
    /// Pipes and FIFOs.
    Pipe,
    /// Every descriptor from 3 up: the sham that drops everything.
    All,
}

impl DropClass {
    /// Every class, the sham last.
    pub const ALL: [DropClass; 7] = [
        DropClass::File,
        DropClass::Listener,
        DropClass::Bound,
        DropClass::Stream,
        DropClass::Datagram,
        DropClass::Pipe,
        DropClass::All,
    ];

    /// The id used in [`Spec`](super::Spec) strings (`drop=`).
    pub fn id(self) -> &'static str {
        match self {
            DropClass::File => "file",
            DropClass::Listener => "listener",
            DropClass::Bound => "bound",
            DropClass::Stream => "stream",
            DropClass::Datagram => "dgram",
            DropClass::Pipe => "pipe",
            DropClass::All => "all",
        }
    }

    /// The class with this id.
    pub fn from_id(id: &str) -> Option<DropClass> {
        DropClass::ALL.into_iter().find(|c| c.id() == id)
    }

    /// The class of the open descriptor `fd`, `None` for anything else
    /// (terminals, directories, event descriptors).
    ///
    /// Async-signal-safe, so a forked child may call it: `fstat`, then for a
    /// socket `getsockopt` (and, on macOS, `proc_pidfdinfo`), all into the
    /// stack. `rustix::fs::fstat` (checked in rustix 1.1.6,
    /// `backend/*/fs/syscalls.rs`) is one `fstat` and a copy on the backends
    /// this crate builds with: the raw system call on 64-bit Linux, libc's
    /// `fstat` (in POSIX's async-signal-safe list) on Apple. Only on 32-bit
    /// and mips64 Linux does it try `statx` first; rustix's own backend
    /// there makes only system calls and keeps whether `statx` works in a
    /// static atomic, but its libc backend (`rustix_use_libc`, or a target
    /// linux_raw does not support) finds `statx` with `dlsym` the first
    /// time, which is not async-signal-safe: such a build would have to
    /// call `fstat` some other way.
    ///
    /// # References
    /// - <https://pubs.opengroup.org/onlinepubs/9799919799/functions/fstat.html>
    /// - <https://man7.org/linux/man-pages/man7/signal-safety.7.html>
    pub fn of(fd: std::os::fd::BorrowedFd<'_>) -> Option<DropClass> {
        use rustix::fs::FileType;
        let st = rustix::fs::fstat(fd).ok()?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Some(DropClass::File),
            FileType::Fifo => Some(DropClass::Pipe),
            FileType::Socket => {
                use rustix::net::SocketType;
                let ty = rustix::net::sockopt::socket_type(fd).ok()?;
                let named = || crate::sys::has_socket_name(fd);
                match ty {
                    SocketType::DGRAM if named() => Some(DropClass::Bound),
                    SocketType::DGRAM => Some(DropClass::Datagram),
                    _ if crate::sys::is_listening(fd) => Some(DropClass::Listener),
                    SocketType::STREAM | SocketType::SEQPACKET
                        if !crate::sys::has_socket_peer(fd) && named() =>
                    {
                        Some(DropClass::Bound)
                    }
                    SocketType::STREAM | SocketType::SEQPACKET => Some(DropClass::Stream),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Closes every descriptor from 3 up of this class in the calling
    /// process. Async-signal-safe, and only for a forked child before exec
    /// (the [`crate::sys::child_hook::InChild`] proof).
    pub(crate) fn close_all(self, child: &crate::sys::child_hook::InChild) -> io::Result<()> {
        crate::sys::each_open_fd(&mut |fd| {
            if fd <= 2 {
                return;
            }
            let ours = self == DropClass::All || {
                // SAFETY: `fd` (above 2, so not -1) is a descriptor the walk
                // just found open in this process, and it stays open until
                // `of` returns: this forked child runs one thread, and the
                // only closes here are `close_all`'s own, each of a number
                // the walk has already passed (it yields each number once).
                let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
                DropClass::of(borrowed) == Some(self)
            };
            if ours {
                crate::sys::child_hook::close(fd, child);
            }
        })
    }
}

impl Default for Config {
    /// Four threads alternating fork+exec with a 1 ms hold and posix_spawn:
    /// on the examples measured here (see README, "Fork pressure") rate beats
    /// hold, since a descriptor open for microseconds is caught by a fork
    /// landing in that moment, and the mix reproduced the flock flake fastest
    /// (the listener flake showed in nearly every run at any short hold).
    fn default() -> Config {
        Config {
            threads: 4,
            hold: Duration::from_millis(1),
            path: SpawnPath::Mix,
            max_alive: 64,
            deadline: Duration::from_secs(600),
            drop: None,
        }
    }
}
