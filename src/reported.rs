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
    (host_endpoint under fork pressure: 3/10 runs passed)";
const SEED_RUN_ISOLATED: &str = "shared/reference write-up 001, HACK-1347 (macOS): each exposed test \
    re-run alone in a child test process (run_isolated): host_endpoint under fork pressure and CPU \
    load 20/20 runs passed, against 3/10 before";

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
        hazard: "clock-collision",
        arm: "pid-realtime-nanos",
        window: Window::InProcess,
        verdict: Verdict::Present,
        source: MACOS_US_CLOCK,
    },
    Reported {
        os: "macos",
        hazard: "clock-collision",
        arm: "us-truncated",
        window: Window::InProcess,
        verdict: Verdict::Present,
        source: MACOS_US_TRUNCATED,
    },
    Reported {
        os: "macos",
        hazard: "clock-collision",
        arm: "process-sequence",
        window: Window::InProcess,
        verdict: Verdict::Valid,
        source: SEED_SEQUENCE,
    },
    Reported {
        os: "macos",
        hazard: "clock-collision",
        arm: "tempfile",
        window: Window::InProcess,
        verdict: Verdict::Valid,
        source: TEMPFILE_RETRY,
    },
    Reported {
        os: "macos",
        hazard: "holder-scan",
        arm: "scan-during-window",
        window: Window::ForkWindow,
        verdict: Verdict::Present,
        source: SEED_HOLDER_SCAN,
    },
    Reported {
        os: "macos",
        hazard: "holder-scan",
        arm: "exe-filter",
        window: Window::ForkWindow,
        verdict: Verdict::Invalid,
        source: SEED_HOLDER_SCAN,
    },
    Reported {
        os: "macos",
        hazard: "holder-scan",
        arm: "run-isolated",
        window: Window::ForkWindow,
        verdict: Verdict::Valid,
        source: SEED_RUN_ISOLATED,
    },
];
