//! Reported facts: what cited public sources say about a platform that has not
//! been measured yet. The matrix shows them only for an OS with no results
//! file of its own, each marked `reported` with its source.

use crate::evidence::release::{Component, Range};
use crate::report::verdict::{Verdict, Window};

/// One claim from a public source about one arm in one window.
#[derive(Clone, Copy, Debug)]
pub struct Reported {
    /// The OS the source speaks of (`macos`).
    pub os: &'static str,
    /// Hazard id.
    pub hazard: &'static str,
    /// Arm id.
    pub arm: &'static str,
    /// Window kind.
    pub window: Window,
    /// The verdict the source supports.
    pub verdict: Verdict,
    /// A second verdict a run may show without contradiction, for a hazard
    /// that a run may not catch (a race: `absent` beside `present`).
    pub or: Option<Verdict>,
    /// The releases it holds for; `None` for every release.
    pub range: Option<Range>,
    /// Where it is said: a citation a reader can follow.
    pub source: &'static str,
}

const APPLE_FLOCK: &str = "Apple flock(2): locks made through dup(2) or fork(2) copies are one lock, \
    and an explicit unlock through any copy releases it \
    (developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man2/flock.2.html)";
const STD_FLOCK: &str = "rust-lang/rust library/std/src/sys/fs/unix.rs: File::lock/unlock call \
    flock(LOCK_EX/LOCK_UN) on macOS; with Apple flock(2) on explicit unlock";
const FS2_FLOCK: &str = "danburkert/fs2-rs src/unix.rs: lock_exclusive/unlock call libc::flock; \
    with Apple flock(2) on explicit unlock";
const SEED_CLOEXEC: &str = "shared/reference write-up 001 (macOS, Apple Silicon): the descriptors \
    were already close-on-exec and a pre-exec fork still held them; the window ends at exec";
const POSIX_FCNTL: &str = "POSIX.1-2017 fcntl(): all of a process's locks on a file are removed \
    when it closes any descriptor for that file (pubs.opengroup.org/onlinepubs/9699919799/functions/fcntl.html)";
const SEED_DROPPED_LISTENER: &str = "shared/reference write-up 001 (macOS, Apple Silicon), \
    HACK-1347: an unrelated test's pre_exec fork holds a copy of every descriptor until it execs, \
    so socket probes saw a dropped listener still accepting";
const XNU_SHUTDOWN: &str = "apple-oss-distributions/xnu bsd/kern/uipc_socket.c (1031c584): \
    soshutdown() returns ENOTCONN for a socket that is not connected, connecting or disconnecting, \
    which a listener never is, and changes nothing; field reports: NixOS/nix#8168, \
    lightpanda-io/browser#1782, FluidSynth/FluidSynth#1837 (platform-facts.md §2)";
const SEED_UNLISTENED: &str = "shared/reference write-up 001 (macOS): test_socket::bound_unlistened \
    binds a socket that never listens \"so every copy refuses connections\"; its regression test \
    an_inherited_copy_of_an_unlistened_socket_still_refuses_connections fails when listen() is \
    added after bind(); in xnu (xnu-11417.101.15 bsd/netinet/tcp_input.c) a SYN that finds a bound \
    socket whose tcpcb is TCPS_CLOSED is dropped without a reset, so the client gets no answer \
    rather than a refusal, and no copy ever completes the handshake";
const SEED_PEER_SHUTDOWN: &str = "shared/reference write-up 001 (macOS): the relay_exec framing \
    test (stream kind not stated) holds a cloned copy of the peer and shuts the peer down instead of \
    only dropping it; with the shutdown removed (cloned copy kept) the test sees no end of stream";
const SEED_PROBE_PORT: &str = "shared/reference write-up 001 (macOS): a fixture started a server \
    on a probe port it had bound and dropped; \"a fork's copy of the probe (or another test) kept \
    the port\" and the server exited without readiness (2/5 runs under fork pressure)";
const SEED_PUBLISH_ZERO: &str = "shared/reference write-up 001 (macOS): the fixture now lets the \
    server bind port 0 itself (--publish 0) and report the port; the failures stopped";
const SEED_TWO_STEP: &str = "shared/reference write-up 001, Findings 2 (macOS): with std's two-step pattern \
    (socket, then close-on-exec; gap widened to 500 us) 199 of 200 children spawned in the gap inherited the \
    socket, with either spawn path; 0 without the creator";
const SEED_UNIX_LISTENER: &str = "shared/reference write-up 001 (macOS, Apple Silicon), HACK-1347: \
    graph::dependency_slots and dependency_socket::quiescent_recovery fixtures, whose sockets are \
    Unix-domain listeners at paths, failed under fork pressure because \"a dropped listener must \
    refuse\"; they passed once each ran in a process of its own";
const XNU_UNP_CONNECT: &str = "apple-oss-distributions/xnu bsd/kern/uipc_usrreq.c (1031c584) unp_connect(): \
    for a stream socket, a peer without SO_ACCEPTCONN (one that never listened) is answered \
    ECONNREFUSED; with write-up 001's macOS bound_unlistened fixture, \"so every copy refuses connections\"";
const POSIX_CONNECT_ENOENT: &str = "POSIX.1-2024 connect(): ENOENT when the pathname names no \
    existing file (pubs.opengroup.org/onlinepubs/9799919799/functions/connect.html); unlink() \
    removes the name whatever still holds the socket";
const POSIX_PIPE_EOF: &str = "POSIX.1-2024 read(): on a pipe that no process has open for writing, \
    read returns 0 (end-of-file) (pubs.opengroup.org/onlinepubs/9799919799/functions/read.html); \
    fork() gives the child copies of every descriptor";
const POSIX_EXEC_CLOEXEC: &str = "POSIX.1-2024 exec: descriptors with FD_CLOEXEC are closed at exec \
    and only then (pubs.opengroup.org/onlinepubs/9799919799/functions/exec.html); write-up 001 \
    (macOS): descriptors already close-on-exec were still held by a pre-exec fork";
const RUST_95584: &str = "rust-lang/rust#95584 (open): Command::spawn() leaks file descriptors on unix platforms \
    that don't have pipe2(); n2 at -j250 exhausted its descriptors on macOS (evmar/n2#14). See also \
    rust-lang/cargo#6344: cargo test leaks fd 6 on macOS, an \"unfortunate inevitability because OSX doesn't \
    have atomic ... CLOEXEC APIs\"";
const N2_MUTEX: &str = "evmar/n2#14 (via rust-lang/rust#95584): the macOS descriptor leak went away when \
    spawns were put behind a mutex";
const MACOS_NO_ATOMIC: &str = "platform-facts.md section 3: macOS through 26 has no SOCK_CLOEXEC (gdnsd/gdnsd#180), \
    accept4 (rust-lang/socket2#105) or pipe2 (declared only from the macOS 27 SDK: rbenv/ruby-build#2641)";
const CLOEXEC_DEFAULT: &str = "Apple posix_spawnattr_setflags(3): with POSIX_SPAWN_CLOEXEC_DEFAULT only \
    descriptors named in the file actions survive into the child (python/cpython#109154; use macOS 10.8+)";
const NO_CLOSE_RANGE: &str = "close_range(2) is Linux 5.9+ and FreeBSD (man.archlinux.org/man/close_range.2); \
    macOS has none";
const NO_CLOSEFROM_NP: &str = "gnulib: posix_spawn_file_actions_addclosefrom_np is missing on macOS 14 \
    (gnu.org/software/gnulib/manual/html_node/posix_005fspawn_005ffile_005factions_005faddclosefrom_005fnp.html)";
const DARWIN_NO_ETXTBSY: &str = "w1ne/labwired-core#909 (PR description): on Darwin, exec of a file while \
    holding an open write descriptor to it runs cleanly; Linux answers Text file busy";
const MACOS_US_CLOCK: &str = "shared/reference write-up 001, HACK-1348 (macOS): scratch folders named \
    <prefix>-<pid>-<nanos> and created exclusively failed with File exists (os error 17) in parallel \
    tests; Apple Libc builds CLOCK_REALTIME from gettimeofday(), in whole microseconds (Libc-1158.1.2 \
    gen/clock_gettime.c, quoted in mono/mono#21137), and consecutive reads can be equal (pytorch/pytorch#37280)";
const MACOS_US_TRUNCATED: &str = "Apple Libc CLOCK_REALTIME is already whole microseconds (Libc-1158.1.2 \
    gen/clock_gettime.c, quoted in mono/mono#21137), so truncating to µs changes nothing there: \
    us-truncated is pid-realtime-nanos, witnessed colliding in write-up 001, HACK-1348";
const SEED_SEQUENCE: &str = "shared/reference write-up 001, HACK-1348 (macOS): a process-unique sequence \
    appended to every pid+timestamp scratch name, with the regression test \
    parallel_fixtures_reading_one_clock_tick_create_distinct_directories";
const TEMPFILE_RETRY: &str = "Stebalien/tempfile src/util.rs (commit 6e995724): 6 random characters per \
    name, exclusive create, retry on AlreadyExists up to 65536 times; no clock in the name";
const SEED_HOLDER_SCAN: &str = "shared/reference write-up 001, HACK-1347 (macOS): endpoint discovery \
    scanned every same-user process running the selected executable; the test binary was both scanner \
    and selected executable, so a co-tenant test's pre-exec fork was a second holder of the listener \
    (host_endpoint under fork pressure: 3/10 runs passed); the mechanism in xnu: fdt_fork \
    (bsd/kern/kern_descrip.c) copies every descriptor, and proc_pidpath keeps the parent's executable \
    until exec_resettextvp (bsd/kern/kern_exec.c)";
const XNU_PRE_EXEC_HOLDER: &str = "apple-oss-distributions/xnu (xnu-11417.101.15) bsd/kern/kern_descrip.c \
    fdt_fork copies every descriptor into the child; bsd/kern/kern_exec.c closes the close-on-exec ones \
    only in exec (fdt_exec, from exec_mach_imgact) and sets the executable that proc_pidpath reports \
    after that (exec_resettextvp): before exec a fork holds every copy and reports the parent's executable";
const SEED_LSOF_RELEASE: &str = "shared/reference write-up 001, HACK-1347 (macOS): the lsof release checks \
    (lock_absent_disks_within) saw the fork's copy of a disk handle the fixture had just written or read";
const XNU_AFTER_EXEC: &str = "apple-oss-distributions/xnu (xnu-11417.101.15) bsd/kern/kern_exec.c: fdt_exec \
    (bsd/kern/kern_descrip.c, `for (int i = fdp->fd_afterlast; i-- > 0;)`) closes every FP_CLOEXEC \
    descriptor before exec_resettextvp changes the executable proc_pidpath reports, so a child no \
    longer on the parent's executable holds no close-on-exec copy; std opens files and makes \
    listeners close-on-exec";
const XNU_IN_PCBBIND: &str = "apple-oss-distributions/xnu (xnu-11417.101.15) bsd/netinet/in_pcb.c \
    in_pcbbind: a bind looks the exact local address and port up (in_pcblookup_local_and_cleanup, \
    line 1087) and answers EADDRINUSE when the socket found lacks SO_REUSEPORT (`(reuseport & \
    t->inp_socket->so_options) == 0`, line 1090), whatever that socket's state: a child's copy of a \
    bound socket that never listened still blocks std's later SO_REUSEADDR bind of the same port";
const SEED_RUN_ISOLATED: &str = "shared/reference write-up 001, HACK-1347 (macOS): each exposed test \
    re-run alone in a child test process (run_isolated): host_endpoint under fork pressure and CPU \
    load 20/20 runs passed, against 3/10 before";

const STD_APPLE_TWO_STEP: &str = "rust-lang/rust library/std/src/sys/net/connection/socket/unix.rs \
    (Socket::new, new_pair, accept) and library/std/src/sys/pipe/unix.rs: Apple targets are not among \
    the SOCK_CLOEXEC, accept4 and pipe2 platforms, so std calls socket, socketpair, accept or pipe with \
    no flag and sets close-on-exec after it returns: a child spawned in between holds the descriptor";
const STD_APPLE_ATOMIC: &str = "rust-lang/rust library/std/src/sys/fs/unix.rs (File::open passes \
    O_CLOEXEC) and library/std/src/os/fd/owned.rs (try_clone_to_owned: fcntl(F_DUPFD_CLOEXEC)): the \
    flag is in the creating call on every unix, macOS included";
const PARKED_CONTROL: &str = "the control creates without the flag and sets it after the park; POSIX.1-2024 \
    exec closes only FD_CLOEXEC descriptors (pubs.opengroup.org/onlinepubs/9799919799/functions/exec.html), \
    so the child exec'd during the park holds the descriptor";
const PARKED_STRIP: &str = "shims/parked_call.c strips O_CLOEXEC from open and turns F_DUPFD_CLOEXEC into \
    F_DUPFD before the real call, so the child exec'd during the park keeps the descriptor (POSIX.1-2024 exec)";
const PARKED_NO_FLAG: &str = "macOS's socket, socketpair, accept and pipe take no close-on-exec flag \
    (platform-facts.md section 3), so the interposer has nothing to strip and the sham trial is \
    unsupported (fdwindow::harness::parked::trial): it would run the arm's own code";
const LIBC_ENVIRON_LOCK: &str = "apple-oss-distributions/Libc from Libc-1507.100.9 (macOS 13.3): \
    stdlib/FreeBSD/getenv.c takes environ_lock_np around its lookup, and setenv.c and unsetenv take the \
    same lock, so a reader never sees the environment array mid-change; the probe's target is never \
    unset, so no read can be torn";

/// A macOS claim on the two-step-cloexec probe's parked-call window.
const fn parked(arm: &'static str, verdict: Verdict, source: &'static str) -> Reported {
    Reported {
        os: "macos",
        hazard: "two-step-cloexec",
        arm,
        window: Window::ParkedCall,
        verdict,
        or: None,
        range: None,
        source,
    }
}

/// Every reported claim.
pub const REPORTED: &[Reported] = &[
    Reported {
        os: "macos",
        hazard: "flock-survival",
        arm: "close",
        window: Window::ForkWindow,
        verdict: Verdict::Present,
        or: None,
        range: None,
        source: APPLE_FLOCK,
    },
    Reported {
        os: "macos",
        hazard: "flock-survival",
        arm: "close",
        window: Window::Inherited,
        verdict: Verdict::Present,
        or: None,
        range: None,
        source: APPLE_FLOCK,
    },
    Reported {
        os: "macos",
        hazard: "flock-survival",
        arm: "unlock-then-close",
        window: Window::ForkWindow,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: APPLE_FLOCK,
    },
    Reported {
        os: "macos",
        hazard: "flock-survival",
        arm: "unlock-then-close",
        window: Window::Inherited,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: APPLE_FLOCK,
    },
    Reported {
        os: "macos",
        hazard: "flock-survival",
        arm: "std-unlock",
        window: Window::ForkWindow,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: STD_FLOCK,
    },
    Reported {
        os: "macos",
        hazard: "flock-survival",
        arm: "fs2-unlock",
        window: Window::ForkWindow,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: FS2_FLOCK,
    },
    Reported {
        os: "macos",
        hazard: "flock-survival",
        arm: "cloexec",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: SEED_CLOEXEC,
    },
    Reported {
        os: "macos",
        hazard: "posix-lock-drop",
        arm: "close-other-fd",
        window: Window::InProcess,
        verdict: Verdict::Present,
        or: None,
        range: None,
        source: POSIX_FCNTL,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "close",
        window: Window::ForkWindow,
        verdict: Verdict::Present,
        or: None,
        range: None,
        source: SEED_DROPPED_LISTENER,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "shutdown-rd",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "shutdown-rd",
        window: Window::Inherited,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "shutdown-rdwr",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "shutdown-rdwr",
        window: Window::Inherited,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "shutdown-wr",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "shutdown-wr",
        window: Window::Inherited,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "bound-unlistened",
        window: Window::Inherited,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: SEED_UNLISTENED,
    },
    Reported {
        os: "macos",
        hazard: "unix-listener-survival",
        arm: "close",
        window: Window::ForkWindow,
        verdict: Verdict::Present,
        or: None,
        range: None,
        source: SEED_UNIX_LISTENER,
    },
    Reported {
        os: "macos",
        hazard: "unix-listener-survival",
        arm: "shutdown-rd",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "unix-listener-survival",
        arm: "shutdown-rd",
        window: Window::Inherited,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "unix-listener-survival",
        arm: "shutdown-rdwr",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "unix-listener-survival",
        arm: "shutdown-rdwr",
        window: Window::Inherited,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "unix-listener-survival",
        arm: "bound-unlistened",
        window: Window::ForkWindow,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: XNU_UNP_CONNECT,
    },
    Reported {
        os: "macos",
        hazard: "unix-listener-survival",
        arm: "unlink-then-close",
        window: Window::ForkWindow,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: POSIX_CONNECT_ENOENT,
    },
    Reported {
        os: "macos",
        hazard: "pipe-eof",
        arm: "drop-writer",
        window: Window::ForkWindow,
        verdict: Verdict::Present,
        or: None,
        range: None,
        source: POSIX_PIPE_EOF,
    },
    Reported {
        os: "macos",
        hazard: "unix-listener-survival",
        arm: "bound-unlistened",
        window: Window::Inherited,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: XNU_UNP_CONNECT,
    },
    Reported {
        os: "macos",
        hazard: "unix-listener-survival",
        arm: "unlink-then-close",
        window: Window::Inherited,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: POSIX_CONNECT_ENOENT,
    },
    Reported {
        os: "macos",
        hazard: "pipe-eof",
        arm: "drop-writer",
        window: Window::Inherited,
        verdict: Verdict::Present,
        or: None,
        range: None,
        source: POSIX_PIPE_EOF,
    },
    Reported {
        os: "macos",
        hazard: "pipe-eof",
        arm: "cloexec-writer",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: POSIX_EXEC_CLOEXEC,
    },
    Reported {
        os: "macos",
        hazard: "pipe-eof",
        arm: "cloexec-writer",
        window: Window::Inherited,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: POSIX_EXEC_CLOEXEC,
    },
    Reported {
        os: "macos",
        hazard: "pipe-eof",
        arm: "fix-spawn",
        window: Window::Inherited,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: CLOEXEC_DEFAULT,
    },
    Reported {
        os: "macos",
        hazard: "peer-fin-with-clone",
        arm: "drop",
        window: Window::InProcess,
        verdict: Verdict::Present,
        or: None,
        range: None,
        source: SEED_PEER_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "peer-fin-with-clone",
        arm: "shutdown-write",
        window: Window::InProcess,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: SEED_PEER_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "port-pick",
        arm: "pick-then-drop",
        window: Window::ForkWindow,
        verdict: Verdict::Present,
        or: None,
        range: None,
        source: SEED_PROBE_PORT,
    },
    Reported {
        os: "macos",
        hazard: "port-pick",
        arm: "bind-zero-in-server",
        window: Window::ForkWindow,
        verdict: Verdict::Avoids,
        or: None,
        range: None,
        source: SEED_PUBLISH_ZERO,
    },
    Reported {
        os: "macos",
        hazard: "two-step-cloexec",
        arm: "two-step-socket",
        window: Window::Inherited,
        verdict: Verdict::Present,
        or: None,
        range: None,
        source: SEED_TWO_STEP,
    },
    Reported {
        os: "macos",
        hazard: "two-step-cloexec",
        arm: "two-step-socket",
        window: Window::PosixSpawn,
        verdict: Verdict::Present,
        or: None,
        range: None,
        source: RUST_95584,
    },
    Reported {
        os: "macos",
        hazard: "two-step-cloexec",
        arm: "atomic-flag",
        window: Window::Inherited,
        verdict: Verdict::Unsupported,
        or: None,
        range: None,
        source: MACOS_NO_ATOMIC,
    },
    Reported {
        os: "macos",
        hazard: "two-step-cloexec",
        arm: "atomic-flag",
        window: Window::PosixSpawn,
        verdict: Verdict::Unsupported,
        or: None,
        range: None,
        source: MACOS_NO_ATOMIC,
    },
    Reported {
        os: "macos",
        hazard: "two-step-cloexec",
        arm: "spawn-lock",
        window: Window::PosixSpawn,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: N2_MUTEX,
    },
    Reported {
        os: "macos",
        hazard: "two-step-cloexec",
        arm: "close-range-in-child",
        window: Window::Inherited,
        verdict: Verdict::Unsupported,
        or: None,
        range: None,
        source: NO_CLOSE_RANGE,
    },
    Reported {
        os: "macos",
        hazard: "two-step-cloexec",
        arm: "closefrom-file-action",
        window: Window::Inherited,
        verdict: Verdict::Unsupported,
        or: None,
        range: None,
        source: NO_CLOSEFROM_NP,
    },
    Reported {
        os: "macos",
        hazard: "two-step-cloexec",
        arm: "spawn-cloexec-default",
        window: Window::Inherited,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: CLOEXEC_DEFAULT,
    },
    Reported {
        os: "macos",
        hazard: "two-step-cloexec",
        arm: "std-pipe",
        window: Window::PosixSpawn,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: RUST_95584,
    },
    Reported {
        os: "macos",
        hazard: "etxtbsy",
        arm: "write-then-exec",
        window: Window::ForkWindow,
        verdict: Verdict::Absent,
        or: None,
        range: None,
        source: DARWIN_NO_ETXTBSY,
    },
    Reported {
        os: "macos",
        hazard: "clock-collision",
        arm: "pid-realtime-nanos",
        window: Window::InProcess,
        verdict: Verdict::Present,
        // Threads released together collide only when they read the clock
        // within one microsecond: a run on a busy machine may see none.
        or: Some(Verdict::Absent),
        range: None,
        source: MACOS_US_CLOCK,
    },
    Reported {
        os: "macos",
        hazard: "clock-collision",
        arm: "us-truncated",
        window: Window::InProcess,
        verdict: Verdict::Present,
        // Threads released together collide only when they read the clock
        // within one microsecond: a run on a busy machine may see none.
        or: Some(Verdict::Absent),
        range: None,
        source: MACOS_US_TRUNCATED,
    },
    Reported {
        os: "macos",
        hazard: "clock-collision",
        arm: "process-sequence",
        window: Window::InProcess,
        verdict: Verdict::Avoids,
        or: None,
        range: None,
        source: SEED_SEQUENCE,
    },
    Reported {
        os: "macos",
        hazard: "clock-collision",
        arm: "tempfile",
        window: Window::InProcess,
        verdict: Verdict::Avoids,
        or: None,
        range: None,
        source: TEMPFILE_RETRY,
    },
    Reported {
        os: "macos",
        hazard: "holder-scan",
        arm: "scan-during-window",
        window: Window::ForkWindow,
        verdict: Verdict::Present,
        or: None,
        range: None,
        source: SEED_HOLDER_SCAN,
    },
    Reported {
        os: "macos",
        hazard: "holder-scan",
        arm: "exe-filter",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: SEED_HOLDER_SCAN,
    },
    Reported {
        os: "macos",
        hazard: "holder-scan",
        arm: "run-isolated",
        window: Window::ForkWindow,
        verdict: Verdict::Avoids,
        or: None,
        range: None,
        source: SEED_RUN_ISOLATED,
    },
    Reported {
        os: "macos",
        hazard: "holder-scan",
        arm: "scan-after-exec",
        window: Window::ForkWindow,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: XNU_AFTER_EXEC,
    },
    Reported {
        os: "macos",
        hazard: "holder-scan",
        arm: "file-scan-during-window",
        window: Window::ForkWindow,
        verdict: Verdict::Present,
        or: None,
        range: None,
        source: SEED_LSOF_RELEASE,
    },
    Reported {
        os: "macos",
        hazard: "holder-scan",
        arm: "file-exe-filter",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: XNU_PRE_EXEC_HOLDER,
    },
    Reported {
        os: "macos",
        hazard: "holder-scan",
        arm: "file-run-isolated",
        window: Window::ForkWindow,
        verdict: Verdict::Avoids,
        or: None,
        range: None,
        source: SEED_RUN_ISOLATED,
    },
    Reported {
        os: "macos",
        hazard: "holder-scan",
        arm: "file-scan-after-exec",
        window: Window::ForkWindow,
        verdict: Verdict::Valid,
        or: None,
        range: None,
        source: XNU_AFTER_EXEC,
    },
    Reported {
        os: "macos",
        hazard: "port-pick",
        arm: "pick-unlistened",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: XNU_IN_PCBBIND,
    },
    Reported {
        os: "macos",
        hazard: "port-pick",
        arm: "pick-unlistened",
        window: Window::Inherited,
        verdict: Verdict::Invalid,
        or: None,
        range: None,
        source: XNU_IN_PCBBIND,
    },
    parked("two-step-socket", Verdict::Present, PARKED_CONTROL),
    parked("two-step-socketpair", Verdict::Present, PARKED_CONTROL),
    parked("two-step-accept", Verdict::Present, PARKED_CONTROL),
    parked("two-step-pipe", Verdict::Present, PARKED_CONTROL),
    parked("two-step-dup", Verdict::Present, PARKED_CONTROL),
    parked("two-step-open", Verdict::Present, PARKED_CONTROL),
    parked("two-step-connect", Verdict::Present, PARKED_CONTROL),
    parked("atomic-flag", Verdict::Unsupported, MACOS_NO_ATOMIC),
    parked("atomic-flag-sham", Verdict::Unsupported, MACOS_NO_ATOMIC),
    parked("std-socket", Verdict::Invalid, STD_APPLE_TWO_STEP),
    parked("std-accept", Verdict::Invalid, STD_APPLE_TWO_STEP),
    parked("std-pipe", Verdict::Invalid, STD_APPLE_TWO_STEP),
    parked("std-socketpair", Verdict::Invalid, STD_APPLE_TWO_STEP),
    parked("std-unix-connect", Verdict::Invalid, STD_APPLE_TWO_STEP),
    parked("std-tcp-connect", Verdict::Invalid, STD_APPLE_TWO_STEP),
    parked("std-file-open", Verdict::Valid, STD_APPLE_ATOMIC),
    parked("std-dup", Verdict::Valid, STD_APPLE_ATOMIC),
    parked("std-socket-sham", Verdict::Unsupported, PARKED_NO_FLAG),
    parked("std-accept-sham", Verdict::Unsupported, PARKED_NO_FLAG),
    parked("std-pipe-sham", Verdict::Unsupported, PARKED_NO_FLAG),
    parked("std-socketpair-sham", Verdict::Unsupported, PARKED_NO_FLAG),
    parked(
        "std-unix-connect-sham",
        Verdict::Unsupported,
        PARKED_NO_FLAG,
    ),
    parked("std-tcp-connect-sham", Verdict::Unsupported, PARKED_NO_FLAG),
    parked("std-file-open-sham", Verdict::Present, PARKED_STRIP),
    parked("std-dup-sham", Verdict::Present, PARKED_STRIP),
    Reported {
        os: "macos",
        hazard: "env-race",
        arm: "setenv-vs-libc-getenv",
        window: Window::InProcess,
        verdict: Verdict::Absent,
        or: None,
        range: Some(Range {
            of: Component::Os,
            since: Some((13, 3, 0)),
            until: None,
        }),
        source: LIBC_ENVIRON_LOCK,
    },
];
