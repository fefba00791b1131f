//! Other Unixes: uname only. fdwindow measures Linux and macOS; elsewhere it
//! compiles and labels its results with what uname says.

use std::io;
use std::os::fd::{OwnedFd, RawFd};

pub const OS_ID: Option<&str> = None;

pub fn os_release() -> Option<String> {
    None
}

pub fn id_version(_os_release: &str, kernel_release: &str) -> String {
    kernel_release.to_owned()
}

/// A `struct sigaction` with `handler` (`SIG_DFL`, `SIG_IGN` or a function's
/// address), `mask` and `flags`: built field by field, nothing left unset.
/// The other Unixes' layouts differ, so the struct starts all-zero.
pub fn sigaction_of(
    handler: libc::sighandler_t,
    mask: super::SigSet,
    flags: libc::c_int,
) -> libc::sigaction {
    // SAFETY: all-zero is a valid `struct sigaction` (no handler, no flags),
    // whose named fields are then set.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = handler;
    action.sa_mask = *mask.as_ref();
    action.sa_flags = flags;
    action
}

/// No start time to name a process by here.
pub fn start_time_of(_pid: u32) -> io::Result<u64> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// Not wired up here.
pub fn load_average() -> Option<f64> {
    None
}

/// No portable way to ask; CPUID and the kernel command line still may tell.
pub fn hypervisor_present() -> bool {
    false
}

pub fn libc_name_version() -> (String, String) {
    ("libc".into(), String::new())
}

/// No open file description locks are known here.
pub const F_OFD_GETLK: Option<libc::c_int> = None;
/// See [`F_OFD_GETLK`].
pub const F_OFD_SETLK: Option<libc::c_int> = None;

/// No reader for this OS's TCP connection table.
pub fn tcp_state(
    _local: std::net::SocketAddr,
    _peer: std::net::SocketAddr,
) -> std::io::Result<Option<&'static str>> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "no reader for the TCP connection table on this OS",
    ))
}

/// `SO_REUSEPORT` is not wired up here (socket2 lacks it on some Unixes):
/// reported as `ENOPROTOOPT`, which the bind matrix shows in its cells.
pub fn set_reuse_port(_sock: &socket2::Socket) -> std::io::Result<()> {
    Err(std::io::Error::from_raw_os_error(libc::ENOPROTOOPT))
}

/// Not known here: reported unsupported rather than guessed.
pub const SOCK_CLOEXEC: Result<libc::c_int, &str> =
    Err("fdwindow does not know this OS's SOCK_CLOEXEC");

/// Not known here.
pub fn accept4_cloexec(
    _fd: std::os::fd::BorrowedFd<'_>,
) -> Result<io::Result<OwnedFd>, &'static str> {
    Err("fdwindow does not know this OS's accept4")
}

/// Not known here.
pub fn pipe2_cloexec() -> Result<io::Result<(OwnedFd, OwnedFd)>, &'static str> {
    Err("fdwindow does not know this OS's pipe2")
}

/// Not known here.
pub fn process_fds(_pid: libc::pid_t) -> io::Result<Vec<RawFd>> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "fdwindow cannot list another process's descriptors on this OS",
    ))
}

/// Not known here.
pub fn same_open_file_as(_pid: u32, _theirs: RawFd, _ours: RawFd) -> io::Result<bool> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "fdwindow cannot compare another process's descriptors on this OS",
    ))
}

/// POSIX requires only CLOCK_REALTIME; CLOCK_MONOTONIC is near universal.
/// Missing ones show as unsupported at run time.
pub const CLOCKS: &[(&str, libc::clockid_t)] = &[
    ("CLOCK_REALTIME", libc::CLOCK_REALTIME),
    ("CLOCK_MONOTONIC", libc::CLOCK_MONOTONIC),
];

/// The clock behind `std::time::Instant` on other Unixes.
pub const INSTANT_CLOCK: &str = "CLOCK_MONOTONIC";

/// No preload mechanism is assumed elsewhere; `fdwindow stress` says so.
pub const PRELOAD: Option<(&str, &str)> = None;
fn unsupported(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("{what} is not wired up on this OS"),
    )
}

/// Not wired up here: a bare errno, as this may run between fork and exec.
pub fn close_range_from(_first: std::os::fd::RawFd) -> std::io::Result<()> {
    Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
}

/// Not wired up here.
pub fn close_range_supported() -> std::io::Result<()> {
    Err(unsupported("close_range"))
}

/// Not wired up here.
pub fn vfork_supported() -> std::io::Result<()> {
    Err(unsupported("a vfork-style spawn"))
}

/// Not wired up here.
pub fn vfork_exec(
    _program: &std::ffi::CStr,
    _argv: &[*const libc::c_char],
    _envp: &[*const libc::c_char],
    _stdio: std::os::fd::RawFd,
) -> std::io::Result<libc::pid_t> {
    Err(unsupported("a vfork-style spawn"))
}

/// Not wired up here.
pub fn addclosefrom_supported() -> std::io::Result<()> {
    Err(unsupported("posix_spawn_file_actions_addclosefrom_np"))
}

/// Not wired up here.
pub fn addclosefrom(_spawner: &mut super::Spawner, _from: libc::c_int) -> std::io::Result<()> {
    Err(unsupported("posix_spawn_file_actions_addclosefrom_np"))
}

/// Not wired up here.
pub fn spawn_cloexec_default_flag() -> std::io::Result<libc::c_short> {
    Err(unsupported("POSIX_SPAWN_CLOEXEC_DEFAULT"))
}

/// No subreaper here: a killed group's orphans go to init, which reaps
/// them once they have died.
pub fn adopt_orphans() -> io::Result<()> {
    Ok(())
}

/// Not counted here: callers keep their smallest bound.
pub fn process_room() -> Option<u64> {
    None
}

/// No parent-death signal here: a VM of a killed `fdwindow vm` is left to its
/// process group's fate (it is killed on every path `fdwindow` survives).
pub fn die_with_parent(_cmd: &mut std::process::Command) {}

/// No portable parent-death watch here: a probe of a killed runner is left
/// to run to its end.
pub fn exit_with_parent(_parent: u32) -> io::Result<()> {
    Ok(())
}

/// No code of this OS's own runs between fork and exec here.
#[derive(Debug)]
pub enum ChildHook {}

impl ChildHook {
    /// Never called: there is no value to call it on.
    pub fn run(&self) -> std::io::Result<()> {
        match *self {}
    }
}

/// Not known here: enumerating descriptors without allocation needs an OS
/// interface fdwindow does not use on this OS.
pub fn each_open_fd(_f: &mut dyn FnMut(RawFd)) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// Not known here.
pub fn is_listening(_fd: std::os::fd::BorrowedFd<'_>) -> bool {
    false
}

/// Never made here: `spawn_isolated` is unsupported.
#[derive(Debug)]
pub enum SpawnedProcess {}

impl SpawnedProcess {
    pub fn id(&self) -> u32 {
        match *self {}
    }

    pub fn kill(&mut self) -> std::io::Result<()> {
        match *self {}
    }

    pub fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match *self {}
    }

    pub fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        match *self {}
    }
}

/// Not wired up here: neither close_range nor POSIX_SPAWN_CLOEXEC_DEFAULT is known.
pub fn spawn_isolated(
    _cmd: &super::IsolatedSpawn,
    _stdio: [super::SpawnStdio; 3],
) -> std::io::Result<super::Spawned> {
    Err(unsupported("fix::spawn"))
}
