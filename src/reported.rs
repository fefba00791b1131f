//! Reported facts: what cited public sources say about a platform that has not
//! been measured yet. The matrix shows them only for an OS with no results
//! file of its own, each marked `reported` with its source.

use crate::verdict::{Verdict, Window};

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
    added after bind()";
const SEED_PEER_SHUTDOWN: &str = "shared/reference write-up 001 (macOS): the relay_exec framing \
    test (stream kind not stated) holds a cloned copy of the peer and shuts the peer down instead of \
    only dropping it; with the shutdown removed (cloned copy kept) the test sees no end of stream";
const SEED_PROBE_PORT: &str = "shared/reference write-up 001 (macOS): a fixture started a server \
    on a probe port it had bound and dropped; \"a fork's copy of the probe (or another test) kept \
    the port\" and the server exited without readiness (2/5 runs under fork pressure)";
const SEED_PUBLISH_ZERO: &str = "shared/reference write-up 001 (macOS): the fixture now lets the \
    server bind port 0 itself (--publish 0) and report the port; the failures stopped";

/// Every reported claim.
pub const REPORTED: &[Reported] = &[
    Reported {
        os: "macos",
        hazard: "flock-survival",
        arm: "close",
        window: Window::ForkWindow,
        verdict: Verdict::Present,
        source: APPLE_FLOCK,
    },
    Reported {
        os: "macos",
        hazard: "flock-survival",
        arm: "close",
        window: Window::Inherited,
        verdict: Verdict::Present,
        source: APPLE_FLOCK,
    },
    Reported {
        os: "macos",
        hazard: "flock-survival",
        arm: "unlock-then-close",
        window: Window::ForkWindow,
        verdict: Verdict::Valid,
        source: APPLE_FLOCK,
    },
    Reported {
        os: "macos",
        hazard: "flock-survival",
        arm: "unlock-then-close",
        window: Window::Inherited,
        verdict: Verdict::Valid,
        source: APPLE_FLOCK,
    },
    Reported {
        os: "macos",
        hazard: "flock-survival",
        arm: "std-unlock",
        window: Window::ForkWindow,
        verdict: Verdict::Valid,
        source: STD_FLOCK,
    },
    Reported {
        os: "macos",
        hazard: "flock-survival",
        arm: "fs2-unlock",
        window: Window::ForkWindow,
        verdict: Verdict::Valid,
        source: FS2_FLOCK,
    },
    Reported {
        os: "macos",
        hazard: "flock-survival",
        arm: "cloexec",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        source: SEED_CLOEXEC,
    },
    Reported {
        os: "macos",
        hazard: "posix-lock-drop",
        arm: "close-other-fd",
        window: Window::InProcess,
        verdict: Verdict::Present,
        source: POSIX_FCNTL,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "close",
        window: Window::ForkWindow,
        verdict: Verdict::Present,
        source: SEED_DROPPED_LISTENER,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "shutdown-rd",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "shutdown-rd",
        window: Window::Inherited,
        verdict: Verdict::Invalid,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "shutdown-rdwr",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "shutdown-rdwr",
        window: Window::Inherited,
        verdict: Verdict::Invalid,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "shutdown-wr",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "shutdown-wr",
        window: Window::Inherited,
        verdict: Verdict::Invalid,
        source: XNU_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "listener-survival",
        arm: "bound-unlistened",
        window: Window::Inherited,
        verdict: Verdict::Valid,
        source: SEED_UNLISTENED,
    },
    Reported {
        os: "macos",
        hazard: "peer-fin-with-clone",
        arm: "drop",
        window: Window::InProcess,
        verdict: Verdict::Present,
        source: SEED_PEER_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "peer-fin-with-clone",
        arm: "shutdown-write",
        window: Window::InProcess,
        verdict: Verdict::Valid,
        source: SEED_PEER_SHUTDOWN,
    },
    Reported {
        os: "macos",
        hazard: "port-pick",
        arm: "pick-then-drop",
        window: Window::ForkWindow,
        verdict: Verdict::Present,
        source: SEED_PROBE_PORT,
    },
    Reported {
        os: "macos",
        hazard: "port-pick",
        arm: "bind-zero-in-server",
        window: Window::ForkWindow,
        verdict: Verdict::Valid,
        source: SEED_PUBLISH_ZERO,
    },
];
