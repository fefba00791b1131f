//! What is known, encoded: for each hazard, arm and OS (and, where behaviour
//! changed, the kernel or libc release range), the verdict expected, why, and
//! where that is documented. [`check`] holds these claims against every
//! results file by the one table in DESIGN.md ("Results and the matrix"), so
//! the encoding cannot drift from the evidence: `fdwindow check` fails, naming
//! hazard, arm, window, claim and evidence, when a measurement disagrees, when
//! a deterministic control did not reproduce, when a claimed arm is missing
//! from a probe that ran, or when a measured arm on an OS with measured
//! claims has no claim; and it holds the tables' answers to theirs
//! ([`crate::evidence::answers`]) by the same rows.
//!
//! Claims about an OS with no results file are only as good as their source:
//! the macOS ones come from [`crate::evidence::reported`] and are marked so everywhere.

use std::fmt;

use crate::evidence::answers::{AnswerFinding, check_answers};
use crate::evidence::cited::*;
use crate::evidence::release::{Component, Range};
use crate::evidence::reported::REPORTED;
use crate::report::platform::Platform;
use crate::report::verdict::{Kind, Verdict, Window};
use crate::report::{ArmReport, ProbeReport, ResultsFile};

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
    /// The releases it holds for; `None` for every release.
    pub range: Option<Range>,
    /// Why, in one line.
    pub reason: &'static str,
    /// Where it is documented (man pages, kernel or libc source, issues).
    pub refs: &'static [&'static str],
    /// Whether the claim only repeats a public source (not yet measured here).
    pub reported: bool,
}

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
        range: None,
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
        range: None,
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
        range: None,
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
        range: None,
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
        range: None,
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
        range: None,
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
        range: None,
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
        range: None,
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
        range: None,
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
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "shutdown-rd",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Valid,
        or: None,
        reason: "SHUT_RD on a listener disconnects the shared socket itself, so every copy stops and queued connections are reset",
        refs: &[INET_SHUTDOWN, SHUTDOWN_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "shutdown-rd",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "SHUT_RD on a listener disconnects the shared socket itself, so every copy stops and queued connections are reset",
        refs: &[INET_SHUTDOWN, SHUTDOWN_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "shutdown-rdwr",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Valid,
        or: None,
        reason: "SHUT_RDWR includes RCV_SHUTDOWN, which stops the shared listening socket for every copy",
        refs: &[INET_SHUTDOWN, SHUTDOWN_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "shutdown-rdwr",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "SHUT_RDWR includes RCV_SHUTDOWN, which stops the shared listening socket for every copy",
        refs: &[INET_SHUTDOWN, SHUTDOWN_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "shutdown-wr",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Invalid,
        or: None,
        reason: "SHUT_WR alone returns 0 on a listener and changes nothing",
        refs: &[INET_SHUTDOWN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "shutdown-wr",
        window: Some(Window::Inherited),
        verdict: Verdict::Invalid,
        or: None,
        reason: "SHUT_WR alone returns 0 on a listener and changes nothing",
        refs: &[INET_SHUTDOWN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "drain-then-close",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Invalid,
        or: None,
        reason: "draining empties the queue once; the child's copy goes on listening and queues the next connection",
        refs: &[LISTEN_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "drain-then-close",
        window: Some(Window::Inherited),
        verdict: Verdict::Invalid,
        or: None,
        reason: "draining empties the queue once; the child's copy goes on listening and queues the next connection",
        refs: &[LISTEN_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "bound-unlistened",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Valid,
        or: None,
        reason: "a socket that never listened is not in the listener lookup: a SYN gets a reset in every copy",
        refs: &[LISTEN_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "listener-survival",
        arm: "bound-unlistened",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "a socket that never listened is not in the listener lookup: a SYN gets a reset in every copy",
        refs: &[LISTEN_MAN],
        reported: false,
        range: None,
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
        range: None,
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
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "unix-listener-survival",
        arm: "shutdown-rd",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Valid,
        or: None,
        reason: "SHUT_RD marks the shared socket RCV_SHUTDOWN, and unix_stream_connect refuses such a listener with ECONNREFUSED whichever copy holds it",
        refs: &[AF_UNIX_CONNECT, SHUTDOWN_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "unix-listener-survival",
        arm: "shutdown-rd",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "SHUT_RD marks the shared socket RCV_SHUTDOWN, and unix_stream_connect refuses such a listener with ECONNREFUSED whichever copy holds it",
        refs: &[AF_UNIX_CONNECT, SHUTDOWN_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "unix-listener-survival",
        arm: "shutdown-rdwr",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Valid,
        or: None,
        reason: "SHUT_RDWR includes RCV_SHUTDOWN on the shared socket, so every copy refuses with ECONNREFUSED (fdwindow_fix::listener::retire_unix does this, then unlinks the path)",
        refs: &[AF_UNIX_CONNECT, SHUTDOWN_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "unix-listener-survival",
        arm: "shutdown-rdwr",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "SHUT_RDWR includes RCV_SHUTDOWN on the shared socket, so every copy refuses with ECONNREFUSED (fdwindow_fix::listener::retire_unix does this, then unlinks the path)",
        refs: &[AF_UNIX_CONNECT, SHUTDOWN_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "unix-listener-survival",
        arm: "bound-unlistened",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Valid,
        or: None,
        reason: "a Unix-domain socket that never listened is not in TCP_LISTEN: a connect at its path gets ECONNREFUSED in every copy (fdwindow_fix::listener::UnixPlaceholder)",
        refs: &[AF_UNIX_CONNECT, UNIX_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "unix-listener-survival",
        arm: "bound-unlistened",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "a Unix-domain socket that never listened is not in TCP_LISTEN: a connect at its path gets ECONNREFUSED in every copy (fdwindow_fix::listener::UnixPlaceholder)",
        refs: &[AF_UNIX_CONNECT, UNIX_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "unix-listener-survival",
        arm: "unlink-then-close",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Valid,
        or: None,
        reason: "with the name unlinked nobody reaches the child's copy, but connect then fails with ENOENT, not ECONNREFUSED: a check that wants a refusal must accept both",
        refs: &[CONNECT_MAN, UNIX_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "unix-listener-survival",
        arm: "unlink-then-close",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "with the name unlinked nobody reaches the child's copy, but connect then fails with ENOENT, not ECONNREFUSED: a check that wants a refusal must accept both",
        refs: &[CONNECT_MAN, UNIX_MAN],
        reported: false,
        range: None,
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
        range: None,
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
        range: None,
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
        range: None,
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
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "pipe-eof",
        arm: "fix-spawn",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "fdwindow_fix::spawn flags every descriptor above stdio close-on-exec in the child before exec (close_range with CLOSE_RANGE_CLOEXEC, or a /proc/self/fd walk), so an inheritable write end does not reach the exec'd child",
        refs: &[CLOSE_RANGE_MAN, PIPE7_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "pipe-eof",
        arm: "fix-spawn-sham",
        window: Some(Window::Inherited),
        verdict: Verdict::Present,
        or: None,
        reason: "fix::spawn without its close-on-exec step passes the inheritable write end to the child for its life",
        refs: &[EXEC_MAN, PIPE7_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "pipe-eof",
        arm: "spawn-lock-sham",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Present,
        or: None,
        reason: "without the lock, the fork the writer waits for copies the open write end",
        refs: &[GO_FORKLOCK, PIPE7_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "pipe-eof",
        arm: "spawn-lock",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Valid,
        or: None,
        reason: "a fork under the lock's exclusive side cannot copy a write end that lives under its shared side",
        refs: &[GO_FORKLOCK, PIPE7_MAN],
        reported: false,
        range: None,
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
        range: None,
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
        range: None,
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
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "bind-zero-in-server",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Avoids,
        or: None,
        reason: "the server binds port 0 itself and reports the port it got: nothing is picked ahead, so nothing can be held",
        refs: &[BIND_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "bind-zero-in-server",
        window: Some(Window::Inherited),
        verdict: Verdict::Avoids,
        or: None,
        reason: "the server binds port 0 itself and reports the port it got: nothing is picked ahead, so nothing can be held",
        refs: &[BIND_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "pick-on-wildcard",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Invalid,
        or: None,
        reason: "picking on the wildcard address changes which address is probed, not whether a child's copy holds the port",
        refs: &[SOCKET7_REUSEADDR],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "pick-on-wildcard",
        window: Some(Window::Inherited),
        verdict: Verdict::Invalid,
        or: None,
        reason: "picking on the wildcard address changes which address is probed, not whether a child's copy holds the port",
        refs: &[SOCKET7_REUSEADDR],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "pick-unlistened",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Valid,
        or: None,
        reason: "with SO_REUSEADDR on both sockets, a bind succeeds while the other socket is only bound, not listening",
        refs: &[SOCKET7_REUSEADDR],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "pick-unlistened",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "with SO_REUSEADDR on both sockets, a bind succeeds while the other socket is only bound, not listening",
        refs: &[SOCKET7_REUSEADDR],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "udp-pick-then-drop",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a child's copy keeps the dropped UDP socket bound, so the server's bind of the picked port fails with EADDRINUSE",
        refs: &[BIND_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "udp-reuseaddr",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Valid,
        or: None,
        reason: "with SO_REUSEADDR on both, a UDP bind may share the address with the held copy; the datagram reaching the newer socket is measured, and any other socket setting SO_REUSEADDR could bind the port too",
        refs: &[SOCKET7_REUSEADDR, UDP7],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "udp-reuseaddr",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "with SO_REUSEADDR on both, a UDP bind may share the address with the held copy; the datagram reaching the newer socket is measured, and any other socket setting SO_REUSEADDR could bind the port too",
        refs: &[SOCKET7_REUSEADDR, UDP7],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "udp-bind-zero-in-server",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Avoids,
        or: None,
        reason: "the server binds UDP port 0 itself: nothing is picked ahead, so nothing can be held",
        refs: &[BIND_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "port-pick",
        arm: "udp-bind-zero-in-server",
        window: Some(Window::Inherited),
        verdict: Verdict::Avoids,
        or: None,
        reason: "the server binds UDP port 0 itself: nothing is picked ahead, so nothing can be held",
        refs: &[BIND_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "two-step-socket",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a child spawned between socket(AF_INET) and its close-on-exec flag copies the descriptor without the flag and keeps it across exec",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "two-step-socketpair",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a child spawned between socketpair and its close-on-exec flag copies the descriptor without the flag and keeps it across exec",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "two-step-accept",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a child spawned between accept and its close-on-exec flag copies the descriptor without the flag and keeps it across exec",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "two-step-pipe",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a child spawned between pipe and its close-on-exec flag copies the descriptor without the flag and keeps it across exec",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "two-step-dup",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a child spawned between fcntl(F_DUPFD) and its close-on-exec flag copies the descriptor without the flag and keeps it across exec",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "two-step-open",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a child spawned between open and its close-on-exec flag copies the descriptor without the flag and keeps it across exec",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "two-step-connect",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "a child spawned between socket(AF_UNIX) for connect and its close-on-exec flag copies the descriptor without the flag and keeps it across exec",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "spawn-lock-sham",
        window: Some(Window::PosixSpawn),
        verdict: Verdict::Present,
        or: None,
        reason: "without the lock, a posix_spawn child can start between creation and flag, as in the control's race",
        refs: &[GO_FORKLOCK],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "spawn-lock-sham",
        window: Some(Window::Inherited),
        verdict: Verdict::Present,
        or: None,
        reason: "without the lock, the spawn the creator waits for falls between its two steps",
        refs: &[GO_FORKLOCK],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "fix-spawn-sham",
        window: Some(Window::Inherited),
        verdict: Verdict::Present,
        or: None,
        reason: "fdwindow_fix::spawn with its close-on-exec step off is std's fork path with an empty pre_exec: the two-step descriptor survives exec",
        refs: &[FORK_MAN, EXEC_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "close-range-in-child-sham",
        window: Some(Window::Inherited),
        verdict: Verdict::Present,
        or: None,
        reason: "std's fork path with an empty pre_exec closes nothing: the two-step descriptor survives exec",
        refs: &[FORK_MAN, EXEC_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "closefrom-file-action-sham",
        window: Some(Window::Inherited),
        verdict: Verdict::Present,
        or: None,
        reason: "posix_spawn without the closefrom action keeps every descriptor without the flag",
        refs: &[EXEC_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "spawn-cloexec-default-sham",
        window: Some(Window::Inherited),
        verdict: Verdict::Present,
        or: None,
        reason: "posix_spawn without POSIX_SPAWN_CLOEXEC_DEFAULT keeps every descriptor without the flag",
        refs: &[EXEC_MAN],
        reported: false,
        range: None,
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
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "spawn-lock",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "creation and flag happen under the shared side of one lock, spawns under the exclusive side: no spawn falls in a gap",
        refs: &[GO_FORKLOCK],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "spawn-lock",
        window: Some(Window::PosixSpawn),
        verdict: Verdict::Valid,
        or: None,
        reason: "creation and flag happen under the shared side of one lock, spawns under the exclusive side: no spawn falls in a gap",
        refs: &[GO_FORKLOCK],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "close-range-in-child",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "close_range(3, ~0) in pre_exec closes every inherited descriptor above stdio before exec; it also closes std's exec-error pipe, so a failed exec goes unreported (fix::spawn uses CLOSE_RANGE_CLOEXEC instead)",
        refs: &[CLOSE_RANGE_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "closefrom-file-action",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "glibc 2.34's posix_spawn_file_actions_addclosefrom_np closes every descriptor from the given one in the child before exec",
        refs: &[CLOSEFROM_NP],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "fix-spawn",
        window: Some(Window::Inherited),
        verdict: Verdict::Valid,
        or: None,
        reason: "fdwindow_fix::spawn gives every descriptor above stdio close-on-exec in pre_exec (close_range with CLOSE_RANGE_CLOEXEC, or a /proc/self/fd walk), so the exec drops them",
        refs: &[CLOSE_RANGE_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "spawn-cloexec-default",
        window: Some(Window::Inherited),
        verdict: Verdict::Unsupported,
        or: None,
        reason: "POSIX_SPAWN_CLOEXEC_DEFAULT is an Apple extension; glibc has no such flag",
        refs: &[CLOSEFROM_NP],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-socket",
        window: Some(Window::PosixSpawn),
        verdict: Verdict::Valid,
        or: None,
        reason: "std creates sockets with SOCK_CLOEXEC on Linux",
        refs: &[STD_CLOEXEC],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-socket",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Valid,
        or: None,
        reason: "std creates sockets with SOCK_CLOEXEC on Linux",
        refs: &[STD_CLOEXEC],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-accept",
        window: Some(Window::PosixSpawn),
        verdict: Verdict::Valid,
        or: None,
        reason: "std accepts with accept4(SOCK_CLOEXEC) on Linux",
        refs: &[STD_CLOEXEC],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-accept",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Valid,
        or: None,
        reason: "std accepts with accept4(SOCK_CLOEXEC) on Linux",
        refs: &[STD_CLOEXEC],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-pipe",
        window: Some(Window::PosixSpawn),
        verdict: Verdict::Valid,
        or: None,
        reason: "std creates pipes with pipe2(O_CLOEXEC) on Linux",
        refs: &[STD_CLOEXEC],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-pipe",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Valid,
        or: None,
        reason: "std creates pipes with pipe2(O_CLOEXEC) on Linux",
        refs: &[STD_CLOEXEC],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-socketpair",
        window: Some(Window::PosixSpawn),
        verdict: Verdict::Valid,
        or: None,
        reason: "std creates socket pairs with SOCK_CLOEXEC on Linux",
        refs: &[STD_CLOEXEC],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-socketpair",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Valid,
        or: None,
        reason: "std creates socket pairs with SOCK_CLOEXEC on Linux",
        refs: &[STD_CLOEXEC],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-unix-connect",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Valid,
        or: None,
        reason: "std's UnixStream::connect creates its socket with SOCK_CLOEXEC on Linux",
        refs: &[STD_CLOEXEC, SOCKET_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-tcp-connect",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Valid,
        or: None,
        reason: "std's TcpStream::connect creates its socket with SOCK_CLOEXEC on Linux",
        refs: &[STD_CLOEXEC, SOCKET_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-file-open",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Valid,
        or: None,
        reason: "std's File::open passes O_CLOEXEC to open on Linux",
        refs: &[STD_FS_CLOEXEC, OPEN_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-dup",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Valid,
        or: None,
        reason: "std's try_clone duplicates with fcntl(F_DUPFD_CLOEXEC)",
        refs: &[STD_FS_CLOEXEC, FCNTL_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "atomic-flag-sham",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Present,
        or: None,
        reason: "the interposer strips SOCK_CLOEXEC before the call, so the child spawned during the park keeps the descriptor",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-socket-sham",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Present,
        or: None,
        reason: "the interposer strips std's SOCK_CLOEXEC before the call, so the child spawned during the park keeps the descriptor",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-accept-sham",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Present,
        or: None,
        reason: "the interposer strips accept4's SOCK_CLOEXEC before the call, so the child spawned during the park keeps the descriptor",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-pipe-sham",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Present,
        or: None,
        reason: "the interposer strips pipe2's O_CLOEXEC before the call, so the child spawned during the park keeps the descriptor",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-socketpair-sham",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Present,
        or: None,
        reason: "the interposer strips std's SOCK_CLOEXEC before the call, so the child spawned during the park keeps the descriptor",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-unix-connect-sham",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Present,
        or: None,
        reason: "the interposer strips std's SOCK_CLOEXEC before the call, so the child spawned during the park keeps the descriptor",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-tcp-connect-sham",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Present,
        or: None,
        reason: "the interposer strips std's SOCK_CLOEXEC before the call, so the child spawned during the park keeps the descriptor",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-file-open-sham",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Present,
        or: None,
        reason: "the interposer strips std's O_CLOEXEC before the call, so the child spawned during the park keeps the descriptor",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "two-step-cloexec",
        arm: "std-dup-sham",
        window: Some(Window::ParkedCall),
        verdict: Verdict::Present,
        or: None,
        reason: "the interposer strips F_DUPFD_CLOEXEC (made F_DUPFD) before the call, so the child spawned during the park keeps the descriptor",
        refs: &[EXEC_MAN, FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "write-then-exec",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "exec refuses a file that any process holds open for writing, and a fork's copy of the writer's descriptor is such a holder (Linux 6.11 and 6.12.0 dropped the check; its revert reached 6.12 stable: see the claims up to 6.12.117)",
        refs: &[EXECVE_ETXTBSY, ETXTBSY_COMMITS],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "write-then-exec",
        window: Some(Window::PosixSpawn),
        verdict: Verdict::Present,
        or: Some(Verdict::Absent),
        reason: "a posix_spawn child holds the copy only until its exec, so an exec of the script meets it rarely: the race may or may not show",
        refs: &[EXECVE_ETXTBSY],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "spawn-lock",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Valid,
        or: None,
        reason: "the file is written under the shared side of the spawn lock, so no fork can copy its write descriptor",
        refs: &[GO_FORKLOCK],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "retry-on-etxtbsy",
        window: Some(Window::PosixSpawn),
        verdict: Verdict::Valid,
        // The control may be absent here (its claim allows it), and a fix
        // against an absent control is not-needed.
        or: Some(Verdict::NotNeeded),
        reason: "a posix_spawn child holds the copy only until its exec, which a few bounded retries outlast; where the race never shows (its control absent) there is nothing to retry",
        refs: &[EXECVE_ETXTBSY],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "retry-on-etxtbsy-short-stall",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Valid,
        or: None,
        reason: "once the stalled child has exec'd its copy is gone, and the retry still has attempts left after a stall of half its budget",
        refs: &[EXECVE_ETXTBSY],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "retry-on-etxtbsy-short-stall-sham",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Present,
        or: None,
        reason: "a single attempt meets the child still parked with the copy",
        refs: &[EXECVE_ETXTBSY],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "retry-on-etxtbsy-long-stall",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Invalid,
        or: None,
        reason: "a child stalled before exec for longer than the retry's whole budget outlasts every attempt (seed 001: a pre-exec stall longer than a test's own timeout)",
        refs: &[EXECVE_ETXTBSY],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "spawn-lock-sham",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Present,
        or: None,
        reason: "without the lock, the fork the writer waits for copies the open write descriptor",
        refs: &[GO_FORKLOCK, EXECVE_ETXTBSY],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "write-then-exec",
        window: None,
        verdict: Verdict::Absent,
        or: Some(Verdict::Present),
        reason: ETXTBSY_GAP,
        refs: &[ETXTBSY_COMMITS],
        reported: false,
        range: Some(Range {
            of: Component::Kernel,
            since: Some((6, 11, 0)),
            until: Some((6, 12, 117)),
        }),
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "spawn-lock",
        window: Some(Window::ForkWindow),
        verdict: Verdict::NotNeeded,
        or: Some(Verdict::Valid),
        reason: ETXTBSY_GAP,
        refs: &[ETXTBSY_COMMITS],
        reported: false,
        range: Some(Range {
            of: Component::Kernel,
            since: Some((6, 11, 0)),
            until: Some((6, 12, 117)),
        }),
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "spawn-lock-sham",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Absent,
        or: Some(Verdict::Present),
        reason: ETXTBSY_GAP,
        refs: &[ETXTBSY_COMMITS],
        reported: false,
        range: Some(Range {
            of: Component::Kernel,
            since: Some((6, 11, 0)),
            until: Some((6, 12, 117)),
        }),
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "retry-on-etxtbsy-short-stall",
        window: Some(Window::ForkWindow),
        verdict: Verdict::NotNeeded,
        or: Some(Verdict::Valid),
        reason: ETXTBSY_GAP,
        refs: &[ETXTBSY_COMMITS],
        reported: false,
        range: Some(Range {
            of: Component::Kernel,
            since: Some((6, 11, 0)),
            until: Some((6, 12, 117)),
        }),
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "retry-on-etxtbsy-short-stall-sham",
        window: Some(Window::ForkWindow),
        verdict: Verdict::Absent,
        or: Some(Verdict::Present),
        reason: ETXTBSY_GAP,
        refs: &[ETXTBSY_COMMITS],
        reported: false,
        range: Some(Range {
            of: Component::Kernel,
            since: Some((6, 11, 0)),
            until: Some((6, 12, 117)),
        }),
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "retry-on-etxtbsy-long-stall",
        window: Some(Window::ForkWindow),
        verdict: Verdict::NotNeeded,
        or: Some(Verdict::Invalid),
        reason: ETXTBSY_GAP,
        refs: &[ETXTBSY_COMMITS],
        reported: false,
        range: Some(Range {
            of: Component::Kernel,
            since: Some((6, 11, 0)),
            until: Some((6, 12, 117)),
        }),
    },
    Claim {
        os: "linux",
        hazard: "etxtbsy",
        arm: "retry-on-etxtbsy",
        window: Some(Window::PosixSpawn),
        verdict: Verdict::NotNeeded,
        or: Some(Verdict::Valid),
        reason: ETXTBSY_GAP,
        refs: &[ETXTBSY_COMMITS],
        reported: false,
        range: Some(Range {
            of: Component::Kernel,
            since: Some((6, 11, 0)),
            until: Some((6, 12, 117)),
        }),
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
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "clock-collision",
        arm: "us-truncated",
        window: None,
        verdict: Verdict::Present,
        or: Some(Verdict::Absent),
        reason: "at microsecond granularity (macOS's CLOCK_REALTIME, simulated here) threads released together often read the same value; on a busy machine the threads rarely run at the same instant, and a run may see none",
        refs: &[CLOCK_GETTIME_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "clock-collision",
        arm: "process-sequence",
        window: None,
        verdict: Verdict::Avoids,
        or: None,
        reason: "a process-wide atomic counter gives every name in the process a different number, whatever the clock says",
        refs: &[CLOCK_GETTIME_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "clock-collision",
        arm: "tempfile",
        window: None,
        verdict: Verdict::Avoids,
        or: None,
        reason: "tempfile adds random characters, creates exclusively and retries on EEXIST",
        refs: &[TEMPFILE_SRC],
        reported: false,
        range: None,
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
        range: None,
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
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "holder-scan",
        arm: "run-isolated",
        window: None,
        verdict: Verdict::Avoids,
        or: None,
        reason: "in a process where no thread spawns, no copy of the listener exists to be counted",
        refs: &[FORK_MAN],
        reported: false,
        range: None,
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
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "holder-scan",
        arm: "file-scan-during-window",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "the fork copied the written file's descriptor before the fixture closed it, so /proc/*/fd still shows a holder",
        refs: &[FORK_MAN, PROC_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "holder-scan",
        arm: "file-exe-filter",
        window: None,
        verdict: Verdict::Invalid,
        or: None,
        reason: "the holder left is the pre-exec fork, whose /proc/PID/exe is still the parent's executable",
        refs: &[PROC_MAN, EXEC_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "holder-scan",
        arm: "file-run-isolated",
        window: None,
        verdict: Verdict::Avoids,
        or: None,
        reason: "in a process where no thread spawns, no copy of the file's descriptor exists to be counted",
        refs: &[FORK_MAN],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "holder-scan",
        arm: "file-scan-after-exec",
        window: None,
        verdict: Verdict::Valid,
        or: None,
        reason: "std opens files close-on-exec, so once every child has exec'd no copy is left",
        refs: &[EXEC_MAN],
        reported: false,
        range: None,
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
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "env-race",
        arm: "setenv-vs-libc-getenv",
        window: None,
        verdict: Verdict::Present,
        or: Some(Verdict::Absent),
        reason: "glibc 2.41 made getenv safe against a concurrent setenv in more cases (not all), so the race may or may not show",
        refs: &[GLIBC_GETENV],
        reported: false,
        range: Some(Range {
            of: Component::Libc,
            since: Some((2, 41, 0)),
            until: None,
        }),
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
        range: None,
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
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "env-race",
        arm: "std-env-only-sham",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "std's set_var takes std's lock, which does not make libc's getenv take its lock, so the reader races the writer as in the control (glibc before 2.41)",
        refs: &[STD_SET_VAR, GLIBC_GETENV],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "env-race",
        arm: "std-env-only-sham",
        window: None,
        verdict: Verdict::Present,
        or: Some(Verdict::Absent),
        reason: "as the control: glibc 2.41 made getenv safe against a concurrent setenv in more cases, so the race may or may not show",
        refs: &[GLIBC_GETENV],
        reported: false,
        range: Some(Range {
            of: Component::Libc,
            since: Some((2, 41, 0)),
            until: None,
        }),
    },
    Claim {
        os: "linux",
        hazard: "env-race",
        arm: "one-env-guard-sham",
        window: None,
        verdict: Verdict::Present,
        or: None,
        reason: "fdwindow_fix::env's guard, held by the writer alone, does not make libc's getenv take its lock, so the reader races the writer as in the control (glibc before 2.41)",
        refs: &[STD_SET_VAR, GLIBC_GETENV],
        reported: false,
        range: None,
    },
    Claim {
        os: "linux",
        hazard: "env-race",
        arm: "one-env-guard-sham",
        window: None,
        verdict: Verdict::Present,
        or: Some(Verdict::Absent),
        reason: "as the control: glibc 2.41 made getenv safe against a concurrent setenv in more cases, so the race may or may not show",
        refs: &[GLIBC_GETENV],
        reported: false,
        range: Some(Range {
            of: Component::Libc,
            since: Some((2, 41, 0)),
            until: None,
        }),
    },
    Claim {
        os: "linux",
        hazard: "env-race",
        arm: "pass-explicitly",
        window: None,
        verdict: Verdict::Avoids,
        or: None,
        reason: "with no environment change there is nothing to race",
        refs: &[STD_SET_VAR],
        reported: false,
        range: None,
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
        range: None,
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
        range: None,
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
        range: None,
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
        or: r.or,
        range: r.range,
        reason: r.source,
        refs: &[],
        reported: true,
    }))
}

/// The claim about one arm in one window on `platform`, if any: of those
/// for its OS whose release range holds there, a window-specific claim wins
/// over an every-window one.
pub fn claim_on(platform: &Platform, hazard: &str, arm: &str, window: Window) -> Option<Claim> {
    let matching = || {
        claims().filter(|c| {
            c.os == platform.os
                && c.hazard == hazard
                && c.arm == arm
                && c.range.is_none_or(|r| r.contains(platform))
        })
    };
    // The most specific first: a window over every window, then a release
    // range over every release.
    let rank = |c: &Claim| (c.window.is_none(), c.range.is_none());
    matching()
        .filter(|c| c.window.is_none_or(|w| w == window))
        .min_by_key(rank)
}

/// The claim about one arm in one window on an OS, ignoring release ranges
/// (for advice about an OS as a whole): the first that applies.
pub fn claim_for(os: &str, hazard: &str, arm: &str, window: Window) -> Option<Claim> {
    let rank = |c: &Claim| (c.window.is_none(), c.range.is_some());
    claims()
        .filter(|c| c.os == os && c.hazard == hazard && c.arm == arm)
        .filter(|c| c.window.is_none_or(|w| w == window))
        .min_by_key(rank)
}

/// Whether an OS's claims come from measurements here (so every measured
/// arm must have one), rather than only from public sources.
pub fn has_measured_claims(os: &str) -> bool {
    claims().any(|c| c.os == os && !c.reported)
}

/// Which row of the check table a cell fell under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finding {
    /// A different decided word than the claim.
    Contradiction,
    /// `inconclusive` in a deterministic cell: not reproduced or not decided.
    NotDecided,
    /// `unsupported` or `broken` where the claim does not allow it.
    NotAllowed,
    /// The probe ran that window, the claimed arm is missing from its report.
    WithoutEvidence,
    /// A measured arm on an OS with measured claims, and no claim.
    WithoutClaim,
    /// Passes: `inconclusive` in a statistical cell (or an emulated cell).
    Undecided,
    /// Passes: the claim's window (or probe) did not run.
    NotMeasured,
    /// Passes: a measured arm on an OS whose claims are only reported.
    News,
    /// A cell whose arm, window, role, control, sham or argument is not what
    /// its probe declares in this build (a file that judges a fix against
    /// another control, say).
    Undeclared,
    /// A cell the run's scope says it measured (or the race rule says it
    /// raced) that the file lacks or lists as left out.
    Missing,
    /// A fork-window or inherited cell of a report that records its scope,
    /// some of whose trials show no child holding the trial's descriptor,
    /// where its arm does not declare `no_copy` there.
    WithoutCopy,
}

impl Finding {
    /// Whether `fdwindow check` fails on it.
    pub fn fails(self) -> bool {
        match self {
            Finding::Contradiction
            | Finding::NotDecided
            | Finding::NotAllowed
            | Finding::WithoutEvidence
            | Finding::WithoutClaim
            | Finding::Undeclared
            | Finding::Missing
            | Finding::WithoutCopy => true,
            Finding::Undecided | Finding::NotMeasured | Finding::News => false,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Finding::Contradiction => "contradiction",
            Finding::NotDecided => "not reproduced or not decided",
            Finding::NotAllowed => "not allowed by the claim",
            Finding::WithoutEvidence => "claim without evidence",
            Finding::WithoutClaim => "arm without a claim",
            Finding::Undecided => "undecided",
            Finding::NotMeasured => "not measured",
            Finding::News => "news (no claim; the OS's claims are reported only)",
            Finding::Undeclared => "not as its probe declares",
            Finding::Missing => "missing from the run's scope",
            Finding::WithoutCopy => "a trial without the child's copy",
        }
    }
}

/// One cell the check has something to say about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contradiction {
    /// Which row of the table.
    pub finding: Finding,
    /// Platform id of the results file.
    pub platform: String,
    /// `hazard arm window` (window `every` for an every-window claim).
    pub cell: String,
    /// The claimed verdict and its reason, or `nothing`.
    pub claim: String,
    /// The measured verdict and counts, or `nothing`.
    pub evidence: String,
}

impl fmt::Display for Contradiction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} on {}: claimed {}, measured {}",
            self.finding.label(),
            self.cell,
            self.platform,
            self.claim,
            self.evidence
        )
    }
}

/// Every cell whose part differs from what its probe declares in this build
/// ([`crate::harness::declared`]: an unknown probe or arm, a window the arm
/// does not run in, or another role, control, sham or argument), each a
/// [`Finding::Undeclared`] failure; and, for a report that records its
/// scope, every cell in it that is missing ([`Finding::Missing`]) or whose
/// trials do not all show the child's copy ([`Finding::WithoutCopy`]), and
/// every probe its run wrote that the file lacks ([`Finding::Missing`]).
/// `fdwindow check` adds them to [`check`]'s, holding the files to the
/// probes compiled into it.
pub fn undeclared(files: &[ResultsFile], probes: &[&crate::harness::Probe]) -> Vec<Contradiction> {
    let mut found = Vec::new();
    for file in files {
        for (hazard, report) in &file.probes {
            let probe = probes.iter().find(|p| p.hazard == hazard);
            for cell in &report.arms {
                let declared = probe
                    .and_then(|p| Some((p, p.arms.iter().find(|a| a.id == cell.arm)?)))
                    .filter(|(_, a)| a.windows.contains(&cell.window))
                    .map(|(p, a)| crate::harness::declared(p, a, cell.window));
                let measured = crate::harness::Declared::of(cell);
                if declared == Some(measured) {
                    continue;
                }
                found.push(Contradiction {
                    finding: Finding::Undeclared,
                    platform: file.platform.id.clone(),
                    cell: format!("{hazard} {} {}", cell.arm, cell.window.id()),
                    claim: match (probe, declared) {
                        (None, _) => "no such probe in this build".to_owned(),
                        (Some(_), None) => "no such arm in this window in this build".to_owned(),
                        (Some(_), Some(part)) => part.to_string(),
                    },
                    evidence: measured.to_string(),
                });
            }
            if let (Some(probe), Some(scope)) = (probe, &report.scope) {
                let finding = |finding, claim: &'static str| {
                    move |(cell, why)| Contradiction {
                        finding,
                        platform: file.platform.id.clone(),
                        cell: format!("{hazard} {cell}"),
                        claim: claim.to_owned(),
                        evidence: why,
                    }
                };
                found.extend(
                    missing_from_scope(probe, report, scope)
                        .into_iter()
                        .map(finding(Finding::Missing, "in the run's scope")),
                );
                found.extend(without_copy(probe, report).into_iter().map(finding(
                    Finding::WithoutCopy,
                    "the window's child holds the trial's descriptor in every trial",
                )));
            }
        }
        // A probe the scope of another report says its run wrote, missing.
        let mut lost: Vec<(&str, &str)> = Vec::new();
        for (hazard, report) in &file.probes {
            let listed = report.scope.iter().flat_map(|s| &s.probes);
            for other in listed.filter(|h| !file.probes.contains_key(*h)) {
                let known = probes.iter().any(|p| p.hazard == other);
                if known && !lost.iter().any(|(h, _)| h == other) {
                    lost.push((other, hazard));
                }
            }
        }
        found.extend(lost.into_iter().map(|(lost, by)| Contradiction {
            finding: Finding::Missing,
            platform: file.platform.id.clone(),
            cell: format!("{lost} (every cell)"),
            claim: format!("in the run's scope (the run that wrote {by} ran it)"),
            evidence: "no report of the probe in the file".to_owned(),
        }));
    }
    found
}

/// The fork-window and inherited cells of `report` with confirmed trials
/// whose [`COPY_TALLY`](crate::report::tallies::COPY_TALLY) counts fewer children
/// holding the trial's descriptor than trials, where the arm does not
/// declare `no_copy` for the window: `(arm window, counts)`. A control or
/// sham that shows its hazard without the copy measured something else.
fn without_copy(probe: &crate::harness::Probe, report: &ProbeReport) -> Vec<(String, String)> {
    use crate::report::tallies::{COPY_HELD, COPY_TALLY};
    use crate::report::verdict::Outcome;
    let mut found = Vec::new();
    for cell in &report.arms {
        let Outcome::Observed {
            trials, tallies, ..
        } = &cell.outcome
        else {
            continue;
        };
        let waived = probe
            .arms
            .iter()
            .find(|a| a.id == cell.arm)
            .is_none_or(|a| a.no_copy.contains(&cell.window));
        if !cell.window.needs_a_holder() || *trials == 0 || waived {
            continue;
        }
        let held = tallies
            .get(COPY_TALLY)
            .and_then(|t| t.get(COPY_HELD))
            .copied()
            .unwrap_or(0);
        if held < *trials {
            found.push((
                format!("{} {}", cell.arm, cell.window.id()),
                format!("{COPY_TALLY} {COPY_HELD} in {held} of {trials} trials"),
            ));
        }
    }
    found
}

/// The cells of `report` that its scope says were measured, or that the
/// race rule races, and that the report lacks or lists as left out: `(arm
/// window, why)`. The race rule's answer depends on whether the parked-call
/// window ran, which the report's own parked-call cells say.
fn missing_from_scope(
    probe: &crate::harness::Probe,
    report: &ProbeReport,
    scope: &crate::report::Scope,
) -> Vec<(String, String)> {
    use crate::report::verdict::Outcome;
    let parked_ran = report.arms.iter().any(|a| {
        a.window == Window::ParkedCall && !matches!(a.outcome, Outcome::Unsupported { .. })
    });
    let mut missing = Vec::new();
    let asked = probe
        .arms
        .iter()
        .filter(|a| scope.only.is_empty() || scope.only.iter().any(|o| o == a.id));
    for arm in asked {
        for &window in arm.windows {
            let cell = format!("{} {}", arm.id, window.id());
            let races = !window.is_race()
                || crate::harness::races_with(probe, arm, scope.thorough, parked_ran);
            match (
                report.find(arm.id, window).is_some(),
                report.left_out(arm.id, window).is_some(),
            ) {
                (false, false) => missing.push((cell, "neither measured nor left out".to_owned())),
                (false, true) if races => {
                    missing.push((cell, "left out, but the race rule races it".to_owned()));
                }
                _ => {}
            }
        }
    }
    missing
}

/// What `fdwindow check` found, failures first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Cells that fail the check.
    pub failures: Vec<Contradiction>,
    /// Cells that pass but are listed: undecided, not measured, news.
    pub listed: Vec<Contradiction>,
    /// Cells that matched their claim.
    pub passed: usize,
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.failures {
            writeln!(f, "FAIL {c}")?;
        }
        for c in &self.listed {
            writeln!(f, "note {c}")?;
        }
        writeln!(
            f,
            "fdwindow check: {} cells agree with their claims, {} listed, {} failed",
            self.passed,
            self.listed.len(),
            self.failures.len()
        )
    }
}

fn claim_text(c: &Claim) -> String {
    let words = match c.or {
        Some(or) => format!("{} or {}", c.verdict.id(), or.id()),
        None => c.verdict.id().to_owned(),
    };
    let range = c.range.map_or_else(String::new, |r| format!(" [{r}]"));
    let source = if c.reported { ", reported" } else { "" };
    format!("{words}{range} ({}{source})", c.reason)
}

fn evidence(report: &ProbeReport, arm: &ArmReport) -> String {
    let j = report.judgement(arm);
    match arm.outcome.count() {
        Some(c) => format!("{} {}/{}", j.verdict.id(), c.hits, c.trials),
        None => j.verdict.id().to_owned(),
    }
}

/// The check-table row for one measured cell against its claim.
fn judge_cell(
    claim: Option<&Claim>,
    measured: Verdict,
    kind: Kind,
    measured_claims: bool,
) -> Option<Finding> {
    let Some(claim) = claim else {
        return Some(if measured_claims {
            Finding::WithoutClaim
        } else {
            Finding::News
        });
    };
    let allowed = |v: Verdict| v == claim.verdict || claim.or == Some(v);
    // An `emulated` cell never reaches here: `check` lists it as undecided.
    Some(match measured {
        v if allowed(v) => return None,
        Verdict::Inconclusive => match kind {
            Kind::Statistical => Finding::Undecided,
            Kind::Deterministic => Finding::NotDecided,
        },
        Verdict::Unsupported | Verdict::Broken => Finding::NotAllowed,
        Verdict::Present
        | Verdict::Absent
        | Verdict::Valid
        | Verdict::Invalid
        | Verdict::NotNeeded
        | Verdict::Avoids => Finding::Contradiction,
    })
}

/// Holds every claim against every results file by DESIGN.md's table.
pub fn check(files: &[ResultsFile]) -> CheckReport {
    let mut out = CheckReport::default();
    for file in files {
        let mut found = Findings {
            out: &mut out,
            platform: &file.platform.id,
        };
        check_cells(file, &mut found);
        check_file_answers(file, &mut found);
        check_claims_measured(file, &mut found);
    }
    out
}

/// Where [`check`]'s findings go: a failure or a listed note, each naming
/// the platform it was found on.
struct Findings<'a> {
    out: &'a mut CheckReport,
    platform: &'a str,
}

impl Findings<'_> {
    fn push(&mut self, finding: Finding, cell: String, claim: String, evidence: String) {
        let c = Contradiction {
            finding,
            platform: self.platform.to_owned(),
            cell,
            claim,
            evidence,
        };
        if finding.fails() {
            self.out.failures.push(c);
        } else {
            self.out.listed.push(c);
        }
    }

    fn pass(&mut self) {
        self.out.passed += 1;
    }
}

/// Every measured cell of `file` against its claim.
fn check_cells(file: &ResultsFile, found: &mut Findings<'_>) {
    let platform = &file.platform;
    let measured_claims = has_measured_claims(&platform.os);
    for (hazard, report) in &file.probes {
        for arm in &report.arms {
            let claim = claim_on(platform, hazard, &arm.arm, arm.window);
            // An `emulated` cell (a statistical or timed arm under QEMU's
            // TCG) measures the emulator: it passes as undecided whatever
            // it shows, and no claim is held against it.
            if arm.emulated {
                found.push(
                    Finding::Undecided,
                    format!("{hazard} {} {}", arm.arm, arm.window.id()),
                    claim
                        .as_ref()
                        .map_or_else(|| "nothing".to_owned(), claim_text),
                    format!("{} (emulated)", evidence(report, arm)),
                );
                continue;
            }
            let measured = report.judgement(arm).verdict;
            match judge_cell(claim.as_ref(), measured, arm.kind, measured_claims) {
                None => found.pass(),
                Some(finding) => found.push(
                    finding,
                    format!("{hazard} {} {}", arm.arm, arm.window.id()),
                    claim
                        .as_ref()
                        .map_or_else(|| "nothing".to_owned(), claim_text),
                    evidence(report, arm),
                ),
            }
        }
    }
}

/// Every answer of `file`'s tables against its claim, and every answer claim
/// against the table it speaks of.
fn check_file_answers(file: &ResultsFile, found: &mut Findings<'_>) {
    let measured_claims = has_measured_claims(&file.platform.os);
    for (finding, cell, claim, evidence) in check_answers(file) {
        let finding = match finding {
            AnswerFinding::Agrees => {
                found.pass();
                continue;
            }
            AnswerFinding::Contradiction => Finding::Contradiction,
            AnswerFinding::WithoutEvidence => Finding::WithoutEvidence,
            AnswerFinding::NotObserved => Finding::NotAllowed,
            AnswerFinding::WithoutClaim if measured_claims => Finding::WithoutClaim,
            AnswerFinding::WithoutClaim => Finding::News,
            AnswerFinding::NotMeasured => Finding::NotMeasured,
        };
        found.push(finding, cell, claim, evidence);
    }
}

/// Every claim for `file`'s platform against the report it speaks of: a
/// claimed arm missing from a window the probe ran is without evidence.
fn check_claims_measured(file: &ResultsFile, found: &mut Findings<'_>) {
    let platform = &file.platform;
    for claim in
        claims().filter(|c| c.os == platform.os && c.range.is_none_or(|r| r.contains(platform)))
    {
        let window = claim.window.map_or("every", Window::id);
        let cell = format!("{} {} {window}", claim.hazard, claim.arm);
        let Some(report) = file.probes.get(claim.hazard) else {
            found.push(
                Finding::NotMeasured,
                cell,
                claim_text(&claim),
                "probe not run".into(),
            );
            continue;
        };
        let ran = |w: Window| report.arms.iter().any(|a| a.window == w);
        let has = |w: Window| report.find(claim.arm, w).is_some();
        // A cell the run left out on purpose (a default run races no
        // mitigation a deterministic window decides) is not measured.
        let left_out = |w: Window| report.left_out(claim.arm, w).is_some();
        let missing = match claim.window {
            Some(w) if left_out(w) => {
                found.push(
                    Finding::NotMeasured,
                    cell,
                    claim_text(&claim),
                    "not measured in a default run (`--thorough`)".into(),
                );
                continue;
            }
            Some(w) if !ran(w) => {
                found.push(
                    Finding::NotMeasured,
                    cell,
                    claim_text(&claim),
                    "window not run".into(),
                );
                continue;
            }
            Some(w) => (!has(w)).then(|| w.id().to_owned()),
            // A claim for every window speaks of each window the probe
            // ran: an arm dropped from one of them is missing there, even
            // when another window still has it.
            None => {
                for w in Window::ALL.into_iter().filter(|&w| left_out(w)) {
                    found.push(
                        Finding::NotMeasured,
                        format!("{} {} {}", claim.hazard, claim.arm, w.id()),
                        claim_text(&claim),
                        "not measured in a default run (`--thorough`)".into(),
                    );
                }
                let mut gone: Vec<&str> = Window::ALL
                    .iter()
                    .filter(|&&w| ran(w) && !has(w) && !left_out(w))
                    .map(|w| w.id())
                    .collect();
                gone.dedup();
                (!gone.is_empty()).then(|| gone.join(", "))
            }
        };
        if let Some(windows) = missing {
            found.push(
                Finding::WithoutEvidence,
                cell,
                claim_text(&claim),
                format!("nothing: the arm is missing from the report in {windows}"),
            );
        }
    }
}

/// The failures of [`check`]: every measurement that disagrees with a claim,
/// every claimed arm missing, every unencoded measured arm.
pub fn contradictions(files: &[ResultsFile]) -> Vec<Contradiction> {
    check(files).failures
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
                    (a.os, a.hazard, a.arm, a.window, a.range)
                        != (b.os, b.hazard, b.arm, b.window, b.range),
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
    fn every_row_of_the_check_table() {
        let valid = claim_for(
            "linux",
            "flock-survival",
            "unlock-then-close",
            Window::ForkWindow,
        )
        .unwrap();
        let det = Kind::Deterministic;
        let stat = Kind::Statistical;
        // The claimed word passes; another decided word is a contradiction.
        assert_eq!(judge_cell(Some(&valid), Verdict::Valid, det, true), None);
        for v in [Verdict::Invalid, Verdict::NotNeeded, Verdict::Avoids] {
            assert_eq!(
                judge_cell(Some(&valid), v, det, true),
                Some(Finding::Contradiction)
            );
        }
        // Inconclusive: listed in a statistical cell, a failure in a deterministic one.
        assert_eq!(
            judge_cell(Some(&valid), Verdict::Inconclusive, stat, true),
            Some(Finding::Undecided)
        );
        assert_eq!(
            judge_cell(Some(&valid), Verdict::Inconclusive, det, true),
            Some(Finding::NotDecided)
        );
        // Unsupported or broken: only where the claim allows it.
        assert_eq!(
            judge_cell(Some(&valid), Verdict::Broken, det, true),
            Some(Finding::NotAllowed)
        );
        let unsupported = claim_for(
            "linux",
            "two-step-cloexec",
            "spawn-cloexec-default",
            Window::Inherited,
        )
        .unwrap();
        assert_eq!(
            judge_cell(Some(&unsupported), Verdict::Unsupported, det, true),
            None
        );
        // A claim allowing two words allows both.
        let rare = claim_for(
            "linux",
            "clock-collision",
            "pid-realtime-nanos",
            Window::InProcess,
        )
        .unwrap();
        assert_eq!(judge_cell(Some(&rare), Verdict::Absent, stat, true), None);
        assert_eq!(judge_cell(Some(&rare), Verdict::Present, stat, true), None);
        // No claim: a failure where the OS's claims are measured, news where reported only.
        assert_eq!(
            judge_cell(None, Verdict::Valid, det, true),
            Some(Finding::WithoutClaim)
        );
        assert_eq!(
            judge_cell(None, Verdict::Valid, det, false),
            Some(Finding::News)
        );
        assert!(Finding::WithoutEvidence.fails() && !Finding::NotMeasured.fails());
        assert!(has_measured_claims("linux") && !has_measured_claims("macos"));
    }

    /// A default run's report lacks the race cells a deterministic window
    /// decides: a claim on one is listed as not measured, never failed, and
    /// the same arm simply missing is still a claim without evidence.
    #[test]
    fn a_claim_on_a_cell_left_out_is_not_measured() {
        use crate::report::verdict::Role;
        use crate::report::{ArmReport, LeftOut, ProbeReport, SCHEMA_VERSION};
        let mut platform = Platform::detect();
        platform.os = "linux".into();
        let arm = |arm: &str, role: Role, window: Window, hits, trials| ArmReport {
            arm: arm.into(),
            role,
            window,
            kind: window.kind().unwrap(),
            emulated: false,
            about: "x".into(),
            against: (role != Role::Control).then(|| "close".into()),
            sham: None,
            avoids: None,
            outcome: crate::report::verdict::Outcome::observed(hits, trials),
        };
        let (det, race) = (Window::ForkWindow, Window::PosixSpawn);
        let mut report = ProbeReport {
            schema: SCHEMA_VERSION,
            hazard: "flock-survival".into(),
            about: "x".into(),
            fdwindow_version: "0".into(),
            platform: platform.clone(),
            started_at: "2026-01-01T00:00:00Z".into(),
            elapsed_ms: 1,
            arms: vec![
                arm("close", Role::Control, det, 7, 7),
                arm("close", Role::Control, race, 9, 300),
                arm("unlock-then-close", Role::Mitigation, det, 0, 7),
            ],
            tables: vec![],
            left_out: vec![LeftOut {
                arm: "unlock-then-close".into(),
                role: Role::Mitigation,
                window: race,
                against: Some("close".into()),
                why: "not measured in a default run".into(),
            }],
            scope: None,
        };
        let file = |report: &ProbeReport| ResultsFile {
            schema: SCHEMA_VERSION,
            platform: platform.clone(),
            probes: [("flock-survival".to_owned(), report.clone())].into(),
        };
        let cell = "flock-survival unlock-then-close posix-spawn";
        let out = check(&[file(&report)]);
        assert!(
            out.failures
                .iter()
                .all(|c| !c.cell.starts_with("flock-survival unlock-then-close")),
            "{out}"
        );
        let listed = out.listed.iter().find(|c| c.cell == cell).expect("listed");
        assert_eq!(listed.finding, Finding::NotMeasured, "{listed}");
        // Without the report's word that it was left out, the same gap fails.
        report.left_out.clear();
        let out = check(&[file(&report)]);
        let failed = out
            .failures
            .iter()
            .find(|c| c.cell.starts_with("flock-survival unlock-then-close"))
            .expect("a failure");
        assert_eq!(failed.finding, Finding::WithoutEvidence, "{failed}");
    }

    #[test]
    fn claims_pick_the_release_range_the_platform_is_in() {
        let mut p = Platform::detect();
        // The etxtbsy claims pick the range the kernel is in.
        p.os = "linux".into();
        p.kernel_release = "6.12.1".into();
        let c = claim_on(&p, "etxtbsy", "write-then-exec", Window::ForkWindow).unwrap();
        assert_eq!(c.verdict, Verdict::Absent);
        p.kernel_release = "6.18.0".into();
        let c = claim_on(&p, "etxtbsy", "write-then-exec", Window::ForkWindow).unwrap();
        assert_eq!(c.verdict, Verdict::Present);
        // macOS's Libc takes one lock in getenv and setenv from macOS 13.3:
        // the env-race control is claimed absent there, and nothing before.
        p.os = "macos".into();
        let env =
            |p: &Platform| claim_on(p, "env-race", "setenv-vs-libc-getenv", Window::InProcess);
        p.os_release = "13.3.1".into();
        assert_eq!(env(&p).map(|c| c.verdict), Some(Verdict::Absent));
        p.os_release = "13.2".into();
        assert_eq!(env(&p), None);
    }
}
