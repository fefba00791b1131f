//! What is known, encoded: for each hazard, arm and OS, the verdict expected,
//! why, and where that is documented. [`contradictions`] holds these claims
//! against every measured results file, so the encoding cannot drift from the
//! evidence: a measurement that disagrees fails the test suite, naming the
//! cell, the claim and the evidence.
//!
//! Claims about an OS with no results file are only as good as their source:
//! the macOS ones come from [`crate::reported`] and are marked so everywhere.

use crate::matrix::arm_verdict;
use crate::report::ResultsFile;
use crate::reported::REPORTED;
use crate::verdict::{Verdict, Window};

/// One encoded claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    /// `linux` or `macos`.
    pub os: &'static str,
    /// Hazard id.
    pub hazard: &'static str,
    /// Arm id.
    pub arm: &'static str,
    /// The window it speaks of; `None` for every window the arm runs in.
    pub window: Option<Window>,
    /// The verdict expected.
    pub verdict: Verdict,
    /// A second verdict the evidence may show without contradiction, for a
    /// hazard too rare to show in every run (e.g. `absent` beside `present`).
    pub or: Option<Verdict>,
    /// Why, in one line.
    pub reason: &'static str,
    /// Where it is documented (man pages, kernel or libc source, issues).
    pub refs: &'static [&'static str],
    /// Whether the claim only repeats a public source (not yet measured here).
    pub reported: bool,
}

const FLOCK_MAN: &str = "flock(2): https://man7.org/linux/man-pages/man2/flock.2.html";
const FCNTL_MAN: &str = "fcntl(2), Advisory record locking / Open file description locks: https://man7.org/linux/man-pages/man2/fcntl.2.html";
const FORK_MAN: &str = "fork(2): the child inherits copies of the parent's descriptors: https://man7.org/linux/man-pages/man2/fork.2.html";
const EXEC_MAN: &str = "execve(2): close-on-exec descriptors are closed at exec, others stay open: https://man7.org/linux/man-pages/man2/execve.2.html";
const STD_LOCK: &str =
    "rust-lang/rust library/std/src/sys/fs/unix.rs: File::lock/unlock are flock(LOCK_EX/LOCK_UN)";
const FS2_LOCK: &str = "danburkert/fs2-rs src/unix.rs: lock_exclusive/unlock are libc::flock";

const LISTEN_MAN: &str = "listen(2): the kernel completes handshakes into the backlog by itself: https://man7.org/linux/man-pages/man2/listen.2.html";
const SHUTDOWN_MAN: &str = "shutdown(2): acts on the socket, not the descriptor: https://man7.org/linux/man-pages/man2/shutdown.2.html";
const INET_SHUTDOWN: &str = "Linux net/ipv4/af_inet.c inet_shutdown(): a TCP_LISTEN socket is disconnected (tcp_disconnect → inet_csk_listen_stop) only when RCV_SHUTDOWN is asked";
const CLOSE_MAN: &str = "close(2): https://man7.org/linux/man-pages/man2/close.2.html";
const BIND_MAN: &str = "bind(2): https://man7.org/linux/man-pages/man2/bind.2.html";
const SOCKET_MAN: &str =
    "socket(2) SOCK_CLOEXEC, accept4(2): https://man7.org/linux/man-pages/man2/socket.2.html";
const PIPE_MAN: &str = "pipe2(2) O_CLOEXEC: https://man7.org/linux/man-pages/man2/pipe.2.html";
const GO_FORKLOCK: &str = "golang/go src/syscall/exec_unix.go: ForkLock, a RWMutex held for reading around create+CloseOnExec and for writing around fork";
const CLOSE_RANGE_MAN: &str =
    "close_range(2), Linux 5.9: https://man7.org/linux/man-pages/man2/close_range.2.html";
const CLOSEFROM_NP: &str = "posix_spawn_file_actions_addclosefrom_np, glibc 2.34: https://www.gnu.org/software/gnulib/manual/html_node/posix_005fspawn_005ffile_005factions_005faddclosefrom_005fnp.html";
const STD_CLOEXEC: &str = "rust-lang/rust library/std/src/sys/net/connection/socket/unix.rs and sys/pal/unix/pipe.rs: SOCK_CLOEXEC, accept4, pipe2 on Linux";
const EXECVE_ETXTBSY: &str = "execve(2) ETXTBSY: the file is open for writing by one or more processes: https://man7.org/linux/man-pages/man2/execve.2.html";
const ETXTBSY_COMMITS: &str = "Linux 2a010c412853 (\"fs: don't block i_writecount during exec\", 6.11), reverted by 3b832035387f (6.13)";
const CLOCK_GETTIME_MAN: &str =
    "clock_gettime(2), clock_getres: https://man7.org/linux/man-pages/man2/clock_gettime.2.html";
const TEMPFILE_SRC: &str =
    "Stebalien/tempfile src/util.rs: random names, exclusive create, retry on AlreadyExists";
const PROC_MAN: &str =
    "proc_pid_fd(5), proc_pid_exe(5): https://man7.org/linux/man-pages/man5/proc_pid_fd.5.html";
const STD_SET_VAR: &str = "std::env::set_var docs: no other thread may read the environment outside std::env: https://doc.rust-lang.org/std/env/fn.set_var.html";
const GLIBC_GETENV: &str = "glibc commit \"stdlib: Make getenv thread-safe in more cases\" (2024-11, glibc 2.41): https://sourceware.org/pipermail/libc-alpha/2024-November/161640.html";
const UNIX_MAN: &str = "unix(7): a socket bound to a pathname lives as a file until unlinked; connect to a stream socket: https://man7.org/linux/man-pages/man7/unix.7.html";
const AF_UNIX_CONNECT: &str = "Linux net/unix/af_unix.c unix_stream_connect(): ECONNREFUSED unless the peer is in TCP_LISTEN and lacks RCV_SHUTDOWN; unix_shutdown() sets sk_shutdown on the shared socket";
const CONNECT_MAN: &str = "connect(2) ENOENT / ECONNREFUSED, and unlink(2): https://man7.org/linux/man-pages/man2/connect.2.html";
const PIPE7_MAN: &str = "pipe(7): a read sees end-of-file only once every descriptor for the write end is closed: https://man7.org/linux/man-pages/man7/pipe.7.html";
const SOCKET7_REUSEADDR: &str = "socket(7) SO_REUSEADDR: a bind may reuse the address unless a socket is listening on it: https://man7.org/linux/man-pages/man7/socket.7.html";

/// The Linux claims. Each is held against every Linux results file.
const LINUX: &[Claim] = &[
    Claim {
        os: "linux",
        hazard: "flock-survival",
        arm: "close",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a flock belongs to the open file description; a child's copy keeps it until the child closes it (at exec for close-on-exec copies, at exit otherwise)",
        refs: &[FLOCK_MAN, FORK_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "flock-survival",
        arm: "unlock-then-close",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "LOCK_UN through any copy releases the lock for every copy",
        refs: &[FLOCK_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "flock-survival",
        arm: "std-unlock",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "std's File::unlock is flock(LOCK_UN)",
        refs: &[STD_LOCK, FLOCK_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "flock-survival",
        arm: "fs2-unlock",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "fs2's FileExt::unlock is flock(LOCK_UN)",
        refs: &[FS2_LOCK, FLOCK_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "flock-survival",
        arm: "cloexec",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Invalid,
        or: None,
        reason: "close-on-exec takes effect at exec; a child between fork and exec still holds the copy",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "flock-survival",
        arm: "cloexec",
        window: Some(Window::PosixSpawn),
        verdict: Verdict::Invalid,
        or: None,
        reason: "posix_spawn's child copies the descriptor table before it execs; the copy lives until exec",
        refs: &[
            EXEC_MAN,
            "glibc sysdeps/unix/sysv/linux/spawni.c: clone(CLONE_VM|CLONE_VFORK) without CLONE_FILES",
        ],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "flock-survival",
        arm: "cloexec",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "once the child has exec'd, a close-on-exec copy is gone",
        refs: &[EXEC_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "ofd-lock-survival",
        arm: "close",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "OFD locks are owned by the open file description and inherited across fork like flocks",
        refs: &[FCNTL_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "ofd-lock-survival",
        arm: "unlock-then-close",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "F_UNLCK through any descriptor of the open file description releases it for every copy",
        refs: &[FCNTL_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "close",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a listening socket lives while any copy of its descriptor does, and the kernel keeps completing handshakes into its backlog",
        refs: &[LISTEN_MAN, FORK_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "shutdown-rd",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "SHUT_RD on a listener disconnects the shared socket itself, so every copy stops and queued connections are reset",
        refs: &[INET_SHUTDOWN, SHUTDOWN_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "shutdown-rdwr",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "SHUT_RDWR includes RCV_SHUTDOWN, which stops the shared listening socket for every copy",
        refs: &[INET_SHUTDOWN, SHUTDOWN_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "shutdown-wr",
        window: None,
        verdict: Verdict::Invalid,
        or: None,
        reason: "SHUT_WR alone returns 0 on a listener and changes nothing",
        refs: &[INET_SHUTDOWN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "drain-then-close",
        window: None,
        verdict: Verdict::Invalid,
        or: None,
        reason: "draining empties the queue once; the child's copy goes on listening and queues the next connection",
        refs: &[LISTEN_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "bound-unlistened",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "a socket that never listened is not in the listener lookup: a SYN gets a reset in every copy",
        refs: &[LISTEN_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "unix-listener-survival",
        arm: "close",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a Unix-domain listener lives while any copy of its descriptor does, and a connect at its path (the file stays after close) is queued on it",
        refs: &[UNIX_MAN, LISTEN_MAN, FORK_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "unix-listener-survival",
        arm: "close",
        window: Some(Window::PosixSpawn),
        verdict: Verdict::Present,
        or: Some(Verdict::Absent),
        reason: "a posix_spawn child holds the listener only between its clone and its exec; how often a close lands in that gap varies from run to run",
        refs: &[UNIX_MAN, EXEC_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "unix-listener-survival",
        arm: "shutdown-rd",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "SHUT_RD marks the shared socket RCV_SHUTDOWN, and unix_stream_connect refuses such a listener with ECONNREFUSED whichever copy holds it",
        refs: &[AF_UNIX_CONNECT, SHUTDOWN_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "unix-listener-survival",
        arm: "shutdown-rdwr",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "SHUT_RDWR includes RCV_SHUTDOWN on the shared socket, so every copy refuses with ECONNREFUSED (fdwindow::fix::listener::retire_unix does this, then unlinks the path)",
        refs: &[AF_UNIX_CONNECT, SHUTDOWN_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "unix-listener-survival",
        arm: "bound-unlistened",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "a Unix-domain socket that never listened is not in TCP_LISTEN: a connect at its path gets ECONNREFUSED in every copy (fdwindow::fix::listener::UnixPlaceholder)",
        refs: &[AF_UNIX_CONNECT, UNIX_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "unix-listener-survival",
        arm: "unlink-then-close",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "with the name unlinked nobody reaches the child's copy, but connect then fails with ENOENT, not ECONNREFUSED: a check that wants a refusal must accept both",
        refs: &[CONNECT_MAN, UNIX_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "pipe-eof",
        arm: "drop-writer",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a pipe reads end-of-file only when every copy of its write end is closed; a child's copy keeps it open until exec (close-on-exec) or exit",
        refs: &[PIPE7_MAN, FORK_MAN, EXEC_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "pipe-eof",
        arm: "drop-writer",
        window: Some(Window::PosixSpawn),
        verdict: Verdict::Present,
        or: Some(Verdict::Absent),
        reason: "a posix_spawn child holds the write end only between its clone and its exec, microseconds, so a run may or may not catch it",
        refs: &[PIPE7_MAN, EXEC_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "pipe-eof",
        arm: "cloexec-writer",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Invalid,
        or: None,
        reason: "close-on-exec acts at exec; a child between fork and exec still holds the write end",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "pipe-eof",
        arm: "cloexec-writer",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "once the child has exec'd, a close-on-exec write end is gone from it",
        refs: &[EXEC_MAN, PIPE_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "pipe-eof",
        arm: "spawn-lock",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "a fork under the lock's exclusive side cannot copy a write end that lives under its shared side",
        refs: &[GO_FORKLOCK, PIPE7_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "peer-fin-with-clone",
        arm: "drop",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "close drops one reference; the FIN goes only when the last descriptor for the socket closes",
        refs: &[SHUTDOWN_MAN, CLOSE_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "peer-fin-with-clone",
        arm: "shutdown-write",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "SHUT_WR sends the FIN on the socket itself, however many descriptors refer to it",
        refs: &[SHUTDOWN_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "pick-then-drop",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "the probe socket stays bound while a child's copy lives, so the later bind of its port fails with EADDRINUSE",
        refs: &[BIND_MAN, FORK_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "bind-zero-in-server",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "the server binds port 0 itself and reports the port it got: nothing is picked ahead, so nothing can be held",
        refs: &[BIND_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "pick-on-wildcard",
        window: None,
        verdict: Verdict::Invalid,
        or: None,
        reason: "picking on the wildcard address changes which address is probed, not whether a child's copy holds the port",
        refs: &[SOCKET7_REUSEADDR],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "pick-unlistened",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "with SO_REUSEADDR on both sockets, a bind succeeds while the other socket is only bound, not listening",
        refs: &[SOCKET7_REUSEADDR],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "two-step",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a child spawned between the creation and the close-on-exec flag copies the descriptor without the flag and keeps it across exec",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "atomic-flag",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "SOCK_CLOEXEC, accept4, pipe2, F_DUPFD_CLOEXEC and O_CLOEXEC set the flag in the creating call: there is no gap",
        refs: &[SOCKET_MAN, PIPE_MAN, FCNTL_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "spawn-lock",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "creation and flag happen under the shared side of one lock, spawns under the exclusive side: no spawn falls in a gap",
        refs: &[GO_FORKLOCK],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "close-range-in-child",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "close_range(3, ~0) in pre_exec closes every inherited descriptor above stdio before exec",
        refs: &[CLOSE_RANGE_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "closefrom-file-action",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "glibc 2.34's posix_spawn_file_actions_addclosefrom_np closes every descriptor from the given one in the child before exec",
        refs: &[CLOSEFROM_NP],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "spawn-cloexec-default",
        window: None,
        verdict: Verdict::Unsupported,
        or: None,
        reason: "POSIX_SPAWN_CLOEXEC_DEFAULT is an Apple extension; glibc has no such flag",
        refs: &[CLOSEFROM_NP],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-socket",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "std creates sockets with SOCK_CLOEXEC on Linux",
        refs: &[STD_CLOEXEC],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-accept",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "std accepts with accept4(SOCK_CLOEXEC) on Linux",
        refs: &[STD_CLOEXEC],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-pipe",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "std creates pipes with pipe2(O_CLOEXEC) on Linux",
        refs: &[STD_CLOEXEC],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-socketpair",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "std creates socket pairs with SOCK_CLOEXEC on Linux",
        refs: &[STD_CLOEXEC],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "write-then-exec",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "exec refuses a file that any process holds open for writing, and a fork's copy of the writer's descriptor is such a holder (Linux 6.11 and 6.12 briefly dropped the check; it was restored for 6.13)",
        refs: &[EXECVE_ETXTBSY, ETXTBSY_COMMITS],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "spawn-lock",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "the file is written under the shared side of the spawn lock, so no fork can copy its write descriptor",
        refs: &[GO_FORKLOCK],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "retry-on-etxtbsy",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "a posix_spawn child holds the copy only until its exec, which a few bounded retries outlast; a child stalled longer before exec (a slow pre_exec) would outlast the retries",
        refs: &[EXECVE_ETXTBSY],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "clock-collision",
        arm: "pid-realtime-nanos",
        window: None,
        verdict: Verdict::Absent,
        or: Some(Verdict::Present),
        reason: "CLOCK_REALTIME has 1 ns resolution here, so threads released together rarely read the same value; a rare collision does occur (1 round in 400 was seen once)",
        refs: &[CLOCK_GETTIME_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "clock-collision",
        arm: "us-truncated",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "at microsecond granularity (macOS's CLOCK_REALTIME, simulated here) threads released together read the same value",
        refs: &[CLOCK_GETTIME_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "clock-collision",
        arm: "process-sequence",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "a process-wide atomic counter gives every name in the process a different number, whatever the clock says",
        refs: &[CLOCK_GETTIME_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "clock-collision",
        arm: "tempfile",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "tempfile adds random characters, creates exclusively and retries on EEXIST",
        refs: &[TEMPFILE_SRC],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "holder-scan",
        arm: "scan-during-window",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a child between fork and exec holds a copy of the listener, so /proc/*/fd shows a second holder",
        refs: &[FORK_MAN, PROC_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "holder-scan",
        arm: "exe-filter",
        window: None,
        verdict: Verdict::Invalid,
        or: None,
        reason: "before exec the child still runs the parent's executable, so /proc/PID/exe matches the filter",
        refs: &[PROC_MAN, EXEC_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "holder-scan",
        arm: "run-isolated",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "in a process where no thread spawns, no copy of the listener exists to be counted",
        refs: &[FORK_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "holder-scan",
        arm: "scan-after-exec",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "once every child has exec'd, its close-on-exec copies are gone",
        refs: &[EXEC_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "env-race",
        arm: "setenv-vs-libc-getenv",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "glibc before 2.41 does not make getenv safe against a concurrent setenv: the environment array can move or be freed under the reader (measured on glibc 2.36)",
        refs: &[STD_SET_VAR, GLIBC_GETENV],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "env-race",
        arm: "std-env-only",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "std::env::var and set_var both take std's environment lock",
        refs: &[STD_SET_VAR],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "env-race",
        arm: "one-env-guard",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "one guard owns every change, so no read races a write",
        refs: &[STD_SET_VAR],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "env-race",
        arm: "pass-explicitly",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "with no environment change there is nothing to race",
        refs: &[STD_SET_VAR],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "posix-lock-drop",
        arm: "close-other-fd",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a process's POSIX record locks on a file are all released when it closes any descriptor for that file",
        refs: &[
            FCNTL_MAN,
            "POSIX.1-2017 fcntl(): https://pubs.opengroup.org/onlinepubs/9699919799/functions/fcntl.html",
        ],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "posix-lock-drop",
        arm: "flock",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "a flock belongs to the open file description that took it; closing another one leaves it",
        refs: &[FLOCK_MAN],
        reported: false,
    },
    Claim {
        os: "linux",
        hazard: "posix-lock-drop",
        arm: "ofd-lock",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "an OFD lock is released only with its own open file description",
        refs: &[FCNTL_MAN],
        reported: false,
    },
];

/// Every claim: the Linux ones and the reported macOS facts.
pub fn claims() -> impl Iterator<Item = Claim> {
    LINUX.iter().copied().chain(REPORTED.iter().map(|r| Claim {
        os: r.os,
        hazard: r.hazard,
        arm: r.arm,
        window: Some(r.window),
        verdict: r.verdict,
        or: None,
        reason: r.source,
        refs: &[],
        reported: true,
    }))
}

/// The claim about one arm in one window on one OS, if any: a window-specific
/// claim wins over an every-window one.
pub fn claim_for(os: &str, hazard: &str, arm: &str, window: Window) -> Option<Claim> {
    let matching = || claims().filter(|c| c.os == os && c.hazard == hazard && c.arm == arm);
    matching()
        .find(|c| c.window == Some(window))
        .or_else(|| matching().find(|c| c.window.is_none()))
}

/// A measurement that disagrees with a claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contradiction {
    /// Platform id of the results file.
    pub platform: String,
    /// `hazard arm window`.
    pub cell: String,
    /// The claimed verdict and its reason.
    pub claim: String,
    /// The measured verdict and counts.
    pub evidence: String,
}

impl std::fmt::Display for Contradiction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} on {}: claimed {}, measured {}",
            self.cell, self.platform, self.claim, self.evidence
        )
    }
}

/// Whether a measured verdict is consistent with a claimed one. Too few
/// trials contradict nothing; anything else must match.
fn consistent(claim: &Claim, measured: Verdict) -> bool {
    measured == claim.verdict || claim.or == Some(measured) || measured == Verdict::Inconclusive
}

/// Every disagreement between the claims and the measurements in `files`,
/// and every measured arm that no claim covers (an unencoded result).
pub fn contradictions(files: &[ResultsFile]) -> Vec<Contradiction> {
    let mut found = Vec::new();
    for file in files {
        let os = file.platform.os.as_str();
        let has_claims = claims().any(|c| c.os == os);
        for (hazard, report) in &file.probes {
            for arm in &report.arms {
                let cell = format!("{hazard} {} {}", arm.arm, arm.window.id());
                let measured = arm_verdict(report, arm);
                let evidence = match arm.outcome.count() {
                    Some(c) => format!("{} {}/{}", measured.id(), c.hits, c.trials),
                    None => measured.id().to_owned(),
                };
                match claim_for(os, hazard, &arm.arm, arm.window) {
                    Some(claim) if !consistent(&claim, measured) => found.push(Contradiction {
                        platform: file.platform.id.clone(),
                        cell,
                        claim: format!("{} ({})", claim.verdict.id(), claim.reason),
                        evidence,
                    }),
                    Some(_) => {}
                    // An OS whose behaviour is encoded must have every measured arm encoded.
                    None if has_claims => found.push(Contradiction {
                        platform: file.platform.id.clone(),
                        cell,
                        claim: "nothing: no claim encodes this arm".into(),
                        evidence,
                    }),
                    None => {}
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_unique() {
        let all: Vec<Claim> = claims().collect();
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert!(
                    (a.os, a.hazard, a.arm, a.window) != (b.os, b.hazard, b.arm, b.window),
                    "{a:?} twice"
                );
            }
        }
    }

    #[test]
    fn window_specific_claims_win() {
        let c = claim_for("linux", "flock-survival", "cloexec", Window::Inherited).unwrap();
        assert_eq!(c.verdict, Verdict::Valid);
        let c = claim_for("linux", "flock-survival", "close", Window::Inherited).unwrap();
        assert_eq!(c.verdict, Verdict::Present);
        assert!(claim_for("linux", "flock-survival", "nope", Window::Inherited).is_none());
    }

    #[test]
    fn inconclusive_contradicts_nothing() {
        let valid = claim_for(
            "linux",
            "flock-survival",
            "unlock-then-close",
            Window::ForkWindow,
        )
        .unwrap();
        assert!(consistent(&valid, Verdict::Inconclusive));
        assert!(!consistent(&valid, Verdict::Invalid));
        assert!(!consistent(&valid, Verdict::Broken));
        let present = claim_for("linux", "flock-survival", "close", Window::ForkWindow).unwrap();
        assert!(!consistent(&present, Verdict::Absent));
        // A rare hazard may show or not.
        let rare = claim_for(
            "linux",
            "clock-collision",
            "pid-realtime-nanos",
            Window::InProcess,
        )
        .unwrap();
        assert!(consistent(&rare, Verdict::Absent) && consistent(&rare, Verdict::Present));
    }
}
