//! The `parked-call` window: a creating thread is parked by an interposed libc
//! wrapper right after its call returned, a child is spawned and exec'd, then
//! the thread goes on.
//!
//! The interposer is `shims/parked_call.c`, preloaded into the probe process
//! (`LD_PRELOAD` on Linux, `DYLD_INSERT_LIBRARIES` on macOS). It wraps every
//! libc name that creates a descriptor (`socket`, `socketpair`, `accept`,
//! `accept4`, `pipe`, `pipe2`, the `open`/`openat`/`creat` family with its
//! `64` and fortified `__open*_2` names, `fcntl`/`fcntl64` for `F_DUPFD*`,
//! `dup`, `dup2`, `dup3`, and `recvmsg` receiving `SCM_RIGHTS`). Its control
//! functions come as one table (`fdwindow_parked_api`), found here with
//! `dlsym(RTLD_DEFAULT)` and checked once (ABI version and size); when it is absent
//! (the library was not preloaded: a static libc, a SIP-protected binary, a
//! loader that ignores the variable) every trial is `unsupported` with that
//! reason.
//!
//! One trial ([`trial`]):
//! 1. a creator thread arms itself (a thread-local flag in the shim: no other
//!    thread is affected) and runs the code under test;
//! 2. the first listed call that succeeds in that thread parks it, after the
//!    real call returned, with the new descriptors recorded;
//! 3. this thread spawns `/bin/cat` through std (`posix_spawn` on glibc and
//!    macOS) and waits until it echoed a byte, so it has exec'd;
//! 4. a hit is the exec'd child holding one of the parked descriptors
//!    (`/proc/<pid>/fd` on Linux, `proc_pidinfo` on macOS);
//! 5. the creator is released and finishes: any second step
//!    (`fcntl(F_SETFD)`, `ioctl(FIOCLEX)`) it makes comes after the spawn.
//!
//! A trial in which no call parked (the code made a raw syscall, or called a
//! name the shim does not wrap) is not confirmed, never a miss: the window was
//! not built, so the trial is excluded and counted in `broken_trials`, and a
//! cell left with fewer than 7 confirmed trials is `broken`. In [`Mode::Sham`] the shim strips the atomic close-on-exec request
//! (`SOCK_CLOEXEC`, `O_CLOEXEC`, `F_DUPFD_CLOEXEC`, the flag of `pipe2`,
//! `dup3` and `accept4`, `MSG_CMSG_CLOEXEC`) before the real call, so the same
//! code leaks: it proves the window sees a leak where the flag is missing. A
//! call that carried no such flag (macOS's `socket`, `accept`, `pipe` and
//! `socketpair` have none) leaves nothing to strip, and its sham trial is
//! `unsupported`: it would be the arm's own code.
//!
//! The matrix claims only what these calls cover: std's constructors and any
//! code that goes through these libc names.
//!
//! # References
//! - <https://man7.org/linux/man-pages/man3/dlsym.3.html>
//! - <https://man7.org/linux/man-pages/man8/ld.so.8.html> (`LD_PRELOAD`)
//! - <https://github.com/apple-oss-distributions/dyld/blob/main/include/mach-o/dyld-interposing.h>

use std::ffi::{CStr, c_int};
use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::RawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crate::error::{Error, Result, failed};
use crate::harness::{Context, Fault};
use crate::hazards::cloexec::{Call, Flag, Holder, Maker, SpawnHow};

/// The control ABI this code speaks (`FDW_PARKED_ABI` in the shim).
const ABI: c_int = 2;

/// How long the creator may take to reach its call, and the child to exec.
const DEADLINE: Duration = Duration::from_secs(30);

/// What the shim records about one park (`struct fdwindow_parked_info`).
#[repr(C)]
struct Info {
    nfds: c_int,
    fds: [c_int; 8],
    /// C `char[32]`; read as bytes (same size and alignment as `c_char`),
    /// so the name is found with a bounded search, never past the array.
    call: [u8; 32],
    stripped: c_int,
    timed_out: c_int,
}

impl Info {
    fn empty() -> Info {
        Info {
            nfds: 0,
            fds: [-1; 8],
            call: [0; 32],
            stripped: 0,
            timed_out: 0,
        }
    }
}

/// The shim's control table (`struct fdwindow_parked_api`, ABI 2). Its
/// functions are plain (not `unsafe`) `extern "C" fn`s because each is sound
/// for every argument Rust can pass it: `arm` checks its mode and mask
/// (`EINVAL`), `disarm` and `release` take none, and `wait` writes only
/// through the `&mut Info` it is given (a reference: never null, always
/// writable, the layout above). The type is trusted once, in
/// [`Interposer::find`], after `abi` and `size` matched.
#[repr(C)]
#[derive(Debug)]
struct Api {
    abi: c_int,
    size: c_int,
    arm: extern "C" fn(c_int, c_int) -> c_int,
    disarm: extern "C" fn() -> c_int,
    wait: extern "C" fn(c_int, &mut Info) -> c_int,
    release: extern "C" fn(),
}

/// What the armed thread's call does in the shim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The call runs as the caller wrote it, then parks.
    Park,
    /// The atomic close-on-exec request is stripped, then the call parks.
    Sham,
}

impl Mode {
    fn code(self) -> c_int {
        match self {
            Mode::Park => 1,
            Mode::Sham => 2,
        }
    }
}

/// A family of creating calls: an arm parks only the family its trial is
/// about, so a setup call in the same thread (the client's `socket` before an
/// `accept`) neither parks nor loses its flag in a sham.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `socket`.
    Socket,
    /// `socketpair`.
    Socketpair,
    /// `accept`, `accept4`.
    Accept,
    /// `pipe`, `pipe2`.
    Pipe,
    /// `open`, `openat`, `creat`, their `64` and fortified `__open*_2` names.
    Open,
    /// `fcntl(F_DUPFD)`, `fcntl(F_DUPFD_CLOEXEC)`, `dup`, `dup2`, `dup3`.
    Dup,
    /// `recvmsg` that received descriptors (`SCM_RIGHTS`).
    Recvmsg,
}

impl Family {
    /// Every family the shim wraps.
    pub const ALL: [Family; 7] = [
        Family::Socket,
        Family::Socketpair,
        Family::Accept,
        Family::Pipe,
        Family::Open,
        Family::Dup,
        Family::Recvmsg,
    ];
}

impl Family {
    /// The shim's `FDW_*` bit.
    fn bit(self) -> c_int {
        match self {
            Family::Socket => 1,
            Family::Socketpair => 2,
            Family::Accept => 4,
            Family::Pipe => 8,
            Family::Open => 16,
            Family::Dup => 32,
            Family::Recvmsg => 64,
        }
    }
}

/// The shim's control functions, found in this process.
#[derive(Clone, Copy, Debug)]
pub struct Interposer {
    api: &'static Api,
}

/// Why the interposer is missing: the reason an `unsupported` cell shows.
pub const NOT_LOADED: &str = "the parked-call interposer is not loaded in this process: the loader did not \
     preload it (a static libc, a SIP-protected or setuid binary, or a run without the library)";

/// Whether any call parked in this process: if none ever did, a trial that
/// did not park says the interposer is not reached at all, not that its
/// code bypassed libc.
static EVER_PARKED: AtomicBool = AtomicBool::new(false);

/// What went wrong when this probe tried to preload the interposer
/// ([`preload_self`]), for the cells' reason.
static PRELOAD_FAILED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Why the interposer is not loaded, as precisely as this process knows: the
/// build's own reason when the embedded library is a stub, else what failed
/// when the probe tried to preload it, else [`NOT_LOADED`].
fn not_loaded_reason(built: io::Result<&[u8]>, preload_failed: Option<&String>) -> String {
    match (built, preload_failed) {
        (Err(e), _) => e.to_string(),
        (Ok(_), Some(why)) => why.clone(),
        (Ok(_), None) => NOT_LOADED.to_owned(),
    }
}

impl Interposer {
    /// The shim's control functions, or why they are unavailable.
    pub fn find() -> Result<Interposer> {
        let Some(table) = fdwindow_fix::sys::symbol(c"fdwindow_parked_api") else {
            // An ABI 1 shim exported only the functions, no table.
            return Err(Error::Failed(
                if fdwindow_fix::sys::has_function(c"fdwindow_parked_abi") {
                    format!("the parked-call interposer predates ABI {ABI} (no control table)")
                } else {
                    not_loaded_reason(
                        crate::cotenant::preload::Library::PARKED_CALL.bytes(),
                        PRELOAD_FAILED.get(),
                    )
                },
            ));
        };
        // SAFETY: `fdwindow_parked_api` is the shim's `const struct
        // fdwindow_parked_api`, a static object that lives as long as the
        // mapped library (never unloaded: it was preloaded), whose first two
        // members are `int abi, size` in every ABI; the rest of the layout is
        // used only after both matched below.
        let api: &'static Api = unsafe { table.cast::<Api>().as_ref() };
        let size = std::mem::size_of::<Api>();
        if api.abi != ABI || usize::try_from(api.size) != Ok(size) {
            return Err(failed!(
                "the parked-call interposer speaks ABI {} (table of {} bytes); this build needs {ABI} ({size} bytes)",
                api.abi,
                api.size
            ));
        }
        Ok(Interposer { api })
    }

    /// Arms the calling thread: its next successful call of one of
    /// `families` parks.
    pub fn arm(&self, mode: Mode, families: &[Family]) -> io::Result<()> {
        let mask = families.iter().fold(0, |m, f| m | f.bit());
        let rc = (self.api.arm)(mode.code(), mask);
        if rc < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Disarms the calling thread; `true` when it parked since it armed.
    pub fn disarm(&self) -> bool {
        (self.api.disarm)() == 1
    }

    /// Waits up to `timeout` for the armed thread to park or disarm.
    pub fn wait(&self, timeout: Duration) -> Waited {
        let mut info = Info::empty();
        let ms = c_int::try_from(timeout.as_millis()).unwrap_or(c_int::MAX);
        match (self.api.wait)(ms, &mut info) {
            1 => {
                let n = usize::try_from(info.nfds).unwrap_or(0).min(info.fds.len());
                // The shim NUL-terminates `call` (it copies at most 31 bytes);
                // a name that filled the array is taken whole.
                let call = CStr::from_bytes_until_nul(&info.call)
                    .map_or_else(|_| info.call.to_vec(), |c| c.to_bytes().to_vec());
                Waited::Parked(Park {
                    call: String::from_utf8_lossy(&call).into_owned(),
                    fds: info.fds[..n].to_vec(),
                    stripped: info.stripped != 0,
                })
            }
            0 => Waited::NotParked,
            _ => Waited::TimedOut,
        }
    }

    /// Lets the parked thread go on (or cancels a trial that never parked).
    pub fn release(&self) {
        (self.api.release)()
    }
}

/// What [`Interposer::wait`] saw.
#[derive(Debug, PartialEq, Eq)]
pub enum Waited {
    /// The armed thread is parked in a call.
    Parked(Park),
    /// The armed thread disarmed without a parked call.
    NotParked,
    /// Neither happened in time.
    TimedOut,
}

/// One parked call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Park {
    /// The libc name the call came in by, e.g. `accept4`.
    pub call: String,
    /// The descriptors it made.
    pub fds: Vec<RawFd>,
    /// Whether the sham stripped an atomic flag from it.
    pub stripped: bool,
}

/// What one trial saw.
#[derive(Debug)]
pub struct Seen {
    /// The parked call.
    pub park: Park,
    /// The parked descriptors the exec'd child held.
    pub held: Vec<RawFd>,
}

impl Seen {
    /// A hit: the child held a descriptor the parked call made.
    pub fn hit(&self) -> bool {
        !self.held.is_empty()
    }
}

/// Releases the parked thread on every way out, a panic included, so the
/// scope's join cannot wait for the shim's own bound.
struct ReleaseOnDrop(Interposer);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// Runs `make` on a creator thread armed in `mode`, parks its first call of
/// `family`, spawns an exec'd child in the gap, and says what the child held.
/// Whatever `make` does after the call (its second step) runs after the
/// child's check. `make`'s value is dropped on the creator thread.
///
/// `Fault::Unsupported` when the interposer is not loaded or `make` reports
/// `ErrorKind::Unsupported`; `Fault::NotConfirmed` (the trial is excluded and
/// counted in the cell's `broken_trials`, never a miss) when no call parked
/// or the deadline expired; `Fault::Broken` when a step failed.
pub fn trial<T>(
    mode: Mode,
    family: Family,
    make: impl FnOnce() -> io::Result<T> + Send,
) -> Result<Seen, Fault> {
    let lot = Interposer::find().map_err(|e| Fault::Unsupported(e.to_string()))?;
    std::thread::scope(|s| {
        let (armed_tx, armed_rx) = mpsc::channel();
        let creator = s.spawn(move || {
            if let Err(e) = lot.arm(mode, &[family]) {
                let _ = armed_tx.send(Err(e));
                return (None, false);
            }
            let _ = armed_tx.send(Ok(()));
            // The value (and its descriptors) lives until after disarm.
            let made = make().map(drop);
            (Some(made), lot.disarm())
        });
        let release = ReleaseOnDrop(lot);
        let waited = match armed_rx.recv() {
            Ok(Ok(())) => lot.wait(DEADLINE),
            Ok(Err(e)) => return Err(Fault::Broken(format!("arm the creator thread: {e}"))),
            Err(_) => return Err(Fault::Broken("the creator thread ended unarmed".into())),
        };
        let checked = match waited {
            Waited::Parked(park) => {
                EVER_PARKED.store(true, Ordering::Relaxed);
                check_child(park)
            }
            Waited::NotParked => Err(Fault::NotConfirmed(
                if EVER_PARKED.load(Ordering::Relaxed) {
                    "no call parked: the code made no call of its family through the interposed libc names (a raw syscall?)".into()
                } else {
                    "no call has parked in this process: the interposer is loaded but libc's calls do not reach it (on macOS, dyld refuses interposing in some binaries), or the code made a raw syscall".into()
                },
            )),
            Waited::TimedOut => Err(Fault::NotConfirmed(format!(
                "no call parked within {} s",
                DEADLINE.as_secs()
            ))),
        };
        drop(release);
        let (made, parked) = creator
            .join()
            .map_err(|_| Fault::Broken("the creator thread panicked".into()))?;
        match made {
            Some(Err(e)) if e.kind() == io::ErrorKind::Unsupported => {
                return Err(Fault::Unsupported(e.to_string()));
            }
            Some(Err(e)) => return Err(Fault::Broken(format!("the code under test: {e}"))),
            Some(Ok(())) | None => {}
        }
        let seen = checked?;
        if !parked {
            return Err(Fault::Broken("the creator did not record its park".into()));
        }
        if mode == Mode::Sham && !seen.park.stripped {
            // No flag to strip (macOS's socket, accept, pipe and socketpair
            // take none): the "sham" ran the arm's own code, so it would
            // prove nothing about the window.
            return Err(Fault::Unsupported(format!(
                "no sham here: {} was made without an atomic close-on-exec flag to strip",
                seen.park.call
            )));
        }
        Ok(seen)
    })
}

/// Steps 3–4: an exec'd child, spawned while the creator is parked.
fn check_child(park: Park) -> Result<Seen, Fault> {
    if park.fds.iter().any(|&fd| fd <= 2) {
        // The child's own stdio has these numbers: the check would be void.
        return Err(Fault::Broken(
            "a parked descriptor took a stdio number: run with stdin, stdout and stderr open"
                .into(),
        ));
    }
    let holder = Holder::spawn(SpawnHow::Std).ctx("spawn the child during the park")?;
    let listed = holder.fds().ctx("list the child's descriptors");
    holder.release().ctx("release the child")?;
    let listed = listed?;
    let held = park
        .fds
        .iter()
        .copied()
        .filter(|fd| listed.contains(fd))
        .collect();
    Ok(Seen { park, held })
}

/// A std constructor whose creating call the parked-call window checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StdCall {
    /// `TcpListener::bind` (`socket`).
    Socket,
    /// `UnixListener::accept` (`accept4` on Linux, `accept` on macOS).
    Accept,
    /// `std::io::pipe` (`pipe2` on Linux, `pipe` on macOS).
    Pipe,
    /// `UnixStream::pair` (`socketpair`).
    Socketpair,
    /// `UnixStream::connect` (`socket`).
    UnixConnect,
    /// `TcpStream::connect` (`socket`).
    TcpConnect,
    /// `File::open` (`open64` on glibc, `open` on macOS).
    FileOpen,
    /// `File::try_clone` (`fcntl(F_DUPFD_CLOEXEC)`).
    Dup,
}

impl StdCall {
    /// Every std constructor the window checks, in matrix order.
    pub const ALL: [StdCall; 8] = [
        StdCall::Socket,
        StdCall::Accept,
        StdCall::Pipe,
        StdCall::Socketpair,
        StdCall::UnixConnect,
        StdCall::TcpConnect,
        StdCall::FileOpen,
        StdCall::Dup,
    ];

    /// The std function.
    pub fn wrapper(self) -> &'static str {
        match self {
            StdCall::Socket => "TcpListener::bind",
            StdCall::Accept => "UnixListener::accept",
            StdCall::Pipe => "std::io::pipe",
            StdCall::Socketpair => "UnixStream::pair",
            StdCall::UnixConnect => "UnixStream::connect",
            StdCall::TcpConnect => "TcpStream::connect",
            StdCall::FileOpen => "File::open",
            StdCall::Dup => "File::try_clone",
        }
    }

    /// The call family it creates its descriptor with.
    pub fn family(self) -> Family {
        match self {
            StdCall::Socket | StdCall::UnixConnect | StdCall::TcpConnect => Family::Socket,
            StdCall::Accept => Family::Accept,
            StdCall::Pipe => Family::Pipe,
            StdCall::Socketpair => Family::Socketpair,
            StdCall::FileOpen => Family::Open,
            StdCall::Dup => Family::Dup,
        }
    }
}

/// Runs one parked-call trial of a std constructor: what it needs (a listener
/// to accept from or connect to, a file to clone) is made on this thread
/// first, unarmed; only the constructor runs armed. `scratch` is a fresh path
/// for a Unix socket.
pub fn std_trial(mode: Mode, call: StdCall, scratch: &Path) -> Result<Seen, Fault> {
    let local = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    match call {
        StdCall::Socket => trial(mode, call.family(), || TcpListener::bind(local)),
        StdCall::Accept => {
            let listener = UnixListener::bind(scratch).ctx("bind the listener")?;
            // Queued in the backlog before the creator arms.
            let _client = UnixStream::connect(scratch).ctx("connect the client")?;
            trial(mode, call.family(), || listener.accept())
        }
        StdCall::Pipe => trial(mode, call.family(), io::pipe),
        StdCall::Socketpair => trial(mode, call.family(), UnixStream::pair),
        StdCall::UnixConnect => {
            let _listener = UnixListener::bind(scratch).ctx("bind the listener")?;
            trial(mode, call.family(), || UnixStream::connect(scratch))
        }
        StdCall::TcpConnect => {
            let listener = TcpListener::bind(local).ctx("bind the listener")?;
            let to = listener.local_addr().ctx("the listener's address")?;
            trial(mode, call.family(), || TcpStream::connect(to))
        }
        StdCall::FileOpen => trial(mode, call.family(), || File::open("/dev/null")),
        StdCall::Dup => {
            let file = File::open("/dev/null").ctx("open the file to clone")?;
            trial(mode, call.family(), || file.try_clone())
        }
    }
}

/// The family a raw creation call belongs to.
pub fn family_of(call: Call) -> Family {
    match call {
        Call::Socket | Call::Connect => Family::Socket,
        Call::Socketpair => Family::Socketpair,
        Call::Accept => Family::Accept,
        Call::Pipe => Family::Pipe,
        Call::Dup => Family::Dup,
        Call::Open => Family::Open,
    }
}

/// Runs one parked-call trial of a raw creation call: two-step (the flag is
/// set after the park, so the child must hold the descriptor) or atomic.
/// `scratch` is a fresh path for the `accept` listener.
pub fn raw_trial(mode: Mode, call: Call, flag: Flag, scratch: &Path) -> Result<Seen, Fault> {
    let maker = Maker::new(call, scratch).ctx("prepare the call")?;
    trial(mode, family_of(call), || {
        let made = maker.make(flag)?;
        if flag == Flag::TwoStep {
            made.set_cloexec()?;
        }
        Ok(made)
    })
}

/// Set in the environment of the re-executed probe: the private directory
/// that holds the written interposer, removed by the new image at start.
const REEXEC_VAR: &str = "FDWINDOW_PARKED_REEXEC";

/// Makes sure the interposer is loaded in this process, for a probe that
/// runs parked-call arms. Call it first thing in `main`, before any thread
/// starts.
///
/// How: when the interposer is not loaded, the probe writes it to a private
/// file and re-executes itself (same pid, same arguments) with the loader's
/// preload variable naming it (`LD_PRELOAD`, `DYLD_INSERT_LIBRARIES`) and
/// [`REEXEC_VAR`] naming the file's directory. The new image finds the
/// interposer loaded, removes the file (the loader has mapped it; the mapping
/// outlives the name) and takes both variables out of its environment, so
/// no child it spawns (holders, the race's `true`) inherits the library.
/// When the loader ignored the variable (a static libc, a SIP-protected or
/// setuid binary), the probe runs on without it and every parked-call trial
/// says `unsupported` ([`NOT_LOADED`]). Only one re-exec is ever tried.
///
/// Its other windows are unaffected: in a thread that is not armed each
/// wrapper reads one thread-local flag and makes the real call.
pub fn preload_self() {
    let reexecuted = std::env::var_os(REEXEC_VAR);
    if let Some(dir) = &reexecuted {
        // The written library's private directory: its bytes are mapped now.
        let _ = std::fs::remove_dir_all(dir);
        let previous = std::env::var_os(PREVIOUS_VAR).filter(|v| !v.is_empty());
        // Both of ours go; the preload variable gets its value from before.
        let restore = preload_variable().map(|var| (var, previous));
        for (var, value) in [(REEXEC_VAR, None), (PREVIOUS_VAR, None)]
            .into_iter()
            .chain(restore)
        {
            match value {
                // SAFETY: called first in main, before this process starts
                // any thread: nothing can read the environment meanwhile.
                Some(v) => unsafe { std::env::set_var(var, v) },
                // SAFETY: as above, no other thread exists yet.
                None => unsafe { std::env::remove_var(var) },
            }
        }
        return;
    }
    if Interposer::find().is_ok() {
        // Preloaded by whoever started the probe.
        return;
    }
    if let Err(e) = reexec_with_library() {
        crate::base::out::note!("note: parked-call arms will be unsupported: {e}");
        let _ = PRELOAD_FAILED.set(format!(
            "the parked-call interposer could not be preloaded: {e}"
        ));
    }
}

/// Keeps the preload variable's value from before the re-exec, restored in
/// the new image.
const PREVIOUS_VAR: &str = "FDWINDOW_PARKED_PREVIOUS";

/// Writes the interposer and execs this program again with it preloaded;
/// returns only on failure, having removed what it wrote.
fn reexec_with_library() -> io::Result<()> {
    use std::os::unix::process::CommandExt;
    let var = preload_variable()
        .ok_or_else(|| io::Error::new(io::ErrorKind::Unsupported, "no preload mechanism"))?;
    let exe = std::env::current_exe()?;
    let (library, dir) = write_library()?;
    // dyld halts a process whose inserted library cannot load, before main
    // (no results, the library's folder left behind): try it here first.
    if let Err(why) = fdwindow_fix::sys::try_load(&library) {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(io::Error::other(format!("the loader refused it: {why}")));
    }
    let mut value = library.into_os_string();
    let previous = std::env::var_os(var).unwrap_or_default();
    if !previous.is_empty() {
        value.push(":");
        value.push(&previous);
    }
    let err = std::process::Command::new(&exe)
        .args(std::env::args_os().skip(1))
        .env(var, value)
        .env(PREVIOUS_VAR, previous)
        .env(REEXEC_VAR, &dir)
        .exec();
    let _ = std::fs::remove_dir_all(&dir);
    Err(err)
}

/// The loader's preload variable here.
fn preload_variable() -> Option<&'static str> {
    crate::cotenant::preload::variable()
}

/// Writes the embedded interposer ([`crate::cotenant::preload::Library::PARKED_CALL`])
/// to a private file; returns it and the directory to remove. The directory
/// outlives this process image on purpose: the re-executed image removes it
/// ([`preload_self`]), and a failed exec removes it at once.
fn write_library() -> io::Result<(std::path::PathBuf, std::path::PathBuf)> {
    let written = crate::cotenant::preload::Library::PARKED_CALL.write()?;
    let found = (written.path().to_owned(), written.dir().to_owned());
    // Not dropped: dropping would remove the file before the exec opens it.
    std::mem::forget(written);
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_names_the_builds_own_reason_for_a_missing_interposer() {
        // A build whose parked-call shim did not compile (build.rs keeps the
        // compiler's error per shim): the cells say that, not "not preloaded".
        let built = Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "fdwindow was built without its parked_call library: the C compiler for \
             aarch64-apple-darwin cannot build shims/parked_call.c: error: unknown type",
        ));
        let why = not_loaded_reason(built, None);
        assert!(why.contains("cannot build shims/parked_call.c"), "{why}");
        // A failed preload is said as such; a library that was built and
        // simply not preloaded gets the loader's list of reasons.
        let failed = "the parked-call interposer could not be preloaded: EACCES".to_owned();
        assert_eq!(not_loaded_reason(Ok(b"\x7fELF"), Some(&failed)), failed);
        assert_eq!(not_loaded_reason(Ok(b"\x7fELF"), None), NOT_LOADED);
    }
}
