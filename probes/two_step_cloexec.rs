//! Checks whether a descriptor created without close-on-exec and flagged in a
//! second call leaks, for its whole life, into a child spawned in between.
//!
//! Method: the holder child is `/bin/cat`, spawned and known to have exec'd
//! (it echoed a byte); every descriptor it still has beyond stdio it
//! inherited, listed through `/proc/<pid>/fd` (Linux) or `proc_pidinfo`
//! (macOS). There is one control per creation call (`two-step-socket`,
//! `two-step-pipe`, …: the table [`CALLS`]), so each of std's constructors is
//! judged against the raw call it makes (TCP against TCP); the fixes make the
//! `socket` call and are judged against `two-step-socket`.
//!
//! `inherited` (deterministic): 1. make the descriptor without its flag;
//! 2. spawn the holder in the gap; 3. set `FD_CLOEXEC`; 4. a hit is the holder
//! having that descriptor's number. The fixes change step 1 (atomic flag),
//! step 2 (how the holder is spawned) or lock steps 1–3 against step 2. A fix
//! that also changes how the holder is spawned has a sham: the same spawn
//! path with the fix switched off. `spawn-lock` and its sham run
//! `fdwindow::hazards::spawn_lock::spawn_in_gap`: the creator parks between its two
//! steps until the spawner has either spawned (the sham: a hit every time) or
//! is waiting for the lock (the fix: the spawn can only come after the flag).
//!
//! `posix-spawn` (statistical, the natural gap): 1. a creator thread loops
//! "make, set the flag, close" (or calls a std constructor); 2. this thread
//! spawns the holder through std's posix_spawn; 3. once cat echoed, the creator
//! stops; 4. a hit is the holder having a descriptor beyond stdio that the
//! parent did not already have open without close-on-exec before the trial.
//! Each trial is that one holder spawn (the harness's race thread spawns
//! `true` alongside, as a busy process would, but the hit is the holder's).
//! (On macOS `std-accept`'s client comes from `UnixStream::connect`, itself
//! two-step there, so a hit in that arm may be the client's socket.)

use std::collections::BTreeMap;
use std::io;
use std::net::TcpListener;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fdwindow::harness::parked::{self, Mode, StdCall};
use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Settings, Trial};
use fdwindow::hazards::cloexec::{
    Call, Flag, Holder, LOOKED_UP, Maker, SpawnHow, inheritable_fds, libc_has,
};
use fdwindow::hazards::spawn_lock::{SPAWN_LOCK, spawn_in_gap};
use fdwindow::report::Table;
use fdwindow::report::verdict::Role::{Control, Mitigation, Sham};
use fdwindow::report::verdict::Window::{self, Inherited, ParkedCall, PosixSpawn};
use fdwindow_fix::base::errno::means_unsupported;
use fdwindow_fix::base::scratch::Scratch;

const BOTH: &[Window] = &[Inherited, PosixSpawn];
/// The controls run in every window that builds the gap.
const CONTROL_WINDOWS: &[Window] = &[Inherited, PosixSpawn, ParkedCall];
/// std's constructors raced and parked.
const STD_WINDOWS: &[Window] = &[PosixSpawn, ParkedCall];
/// Only the parked-call window.
const PARKED: &[Window] = &[ParkedCall];

/// Each creation call: its control arm and, where std has a constructor
/// raced here, that std arm. One table, so a new window (parked-call) can be
/// added to the same arms.
pub const CALLS: &[(Call, &str, Option<&str>)] = &[
    (Call::Socket, "two-step-socket", Some("std-socket")),
    (
        Call::Socketpair,
        "two-step-socketpair",
        Some("std-socketpair"),
    ),
    (Call::Accept, "two-step-accept", Some("std-accept")),
    (Call::Pipe, "two-step-pipe", Some("std-pipe")),
    (Call::Dup, "two-step-dup", None),
    (Call::Open, "two-step-open", None),
    (Call::Connect, "two-step-connect", None),
];

/// The call every fix makes, and so the control every fix is judged against.
const FIX_CALL: Call = Call::Socket;
const FIX_CONTROL: Option<&str> = Some("two-step-socket");

/// How long a trial waits for its spawner before the gap counts as unconfirmed.
const GAP_DEADLINE: Duration = Duration::from_secs(30);

macro_rules! control {
    ($id:literal, $call:expr, $f:ident) => {
        Arm {
            id: $id,
            role: Control,
            about: concat!(
                "Create without the flag (",
                stringify!($call),
                "), then fcntl(F_SETFD, FD_CLOEXEC)."
            ),
            windows: CONTROL_WINDOWS,
            trial: $f,
            ..ARM
        }
    };
}

/// A std constructor: a mitigation judged against its call's control.
macro_rules! std_arm {
    ($id:literal, $about:literal, $windows:expr, $f:ident, $control:literal) => {
        Arm {
            id: $id,
            role: Mitigation,
            about: concat!(
                $about,
                ". In parked-call its code is std's own, so its sham (the same call with the flag stripped by the interposer) shows the window sees a missing flag."
            ),
            windows: $windows,
            trial: $f,
            against: Some($control),
            ..ARM
        }
    };
}

/// A parked-call sham: the mitigation's own code, its atomic flag stripped.
/// Where the call carries no flag (macOS's socket, accept, pipe, socketpair)
/// there is nothing to strip and the cell is `unsupported`
/// (`fdwindow::harness::parked::trial`).
macro_rules! sham {
    ($id:literal, $about:literal, $f:ident, $control:literal) => {
        Arm {
            id: $id,
            role: Sham,
            about: $about,
            windows: PARKED,
            trial: $f,
            against: Some($control),
            ..ARM
        }
    };
}

pub static PROBE: Probe = Probe {
    hazard: "two-step-cloexec",
    about: "Checks whether a descriptor flagged close-on-exec in a second call leaks into a child spawned in between.",
    trials: 10,
    race: Duration::from_millis(60),
    arms: &[
        control!(
            "two-step-socket",
            "socket(AF_INET, SOCK_STREAM)",
            two_step_socket
        ),
        control!(
            "two-step-socketpair",
            "socketpair(AF_UNIX)",
            two_step_socketpair
        ),
        control!(
            "two-step-accept",
            "accept on a Unix listener",
            two_step_accept
        ),
        control!("two-step-pipe", "pipe", two_step_pipe),
        control!("two-step-dup", "fcntl(F_DUPFD)", two_step_dup),
        control!("two-step-open", "open(/dev/null)", two_step_open),
        control!(
            "two-step-connect",
            "socket(AF_UNIX), connect",
            two_step_connect
        ),
        Arm {
            id: "atomic-flag",
            role: Mitigation,
            about: "socket(SOCK_CLOEXEC): the flag in the creating call. In inherited and posix-spawn the code differs from its control in nothing else, so no sham there; in parked-call its sham (the interposer strips the flag) shows the window sees a missing flag.",
            windows: CONTROL_WINDOWS,
            trial: atomic_flag,
            against: FIX_CONTROL,
            no_copy: &[Inherited],
            ..ARM
        },
        Arm {
            id: "spawn-lock",
            role: Mitigation,
            about: "Two-step creation under the shared side of fdwindow::hazards::spawn_lock::SPAWN_LOCK, spawns under its exclusive side (Go's ForkLock). Inherited: the creator parks between its steps until the spawner waits for the lock. Sham-tested in both windows.",
            windows: BOTH,
            trial: spawn_lock,
            against: FIX_CONTROL,
            no_copy: &[Inherited],
            ..ARM
        },
        Arm {
            id: "spawn-lock-sham",
            role: Sham,
            about: "spawn-lock's code with the lock switched off. Inherited: the creator parks between its steps until the spawner has spawned. Posix-spawn: the same creator loop and spawner with neither side taking the lock, which is the control's race code (the lock is all spawn-lock changes there), run as its own arm in spawn-lock's block.",
            windows: BOTH,
            trial: spawn_lock_sham,
            against: FIX_CONTROL,
            ..ARM
        },
        Arm {
            id: "close-range-in-child",
            role: Mitigation,
            about: "Two-step creation; the child calls close_range(3, ~0U, 0) in pre_exec (Linux 5.9+; forces fork+exec). Sham-tested: the fork path differs from std's posix_spawn.",
            windows: &[Inherited],
            trial: close_range_in_child,
            against: FIX_CONTROL,
            no_copy: &[Inherited],
            ..ARM
        },
        Arm {
            id: "close-range-in-child-sham",
            role: Sham,
            about: "The same fork path with a pre_exec that does nothing.",
            windows: &[Inherited],
            trial: close_range_in_child_sham,
            against: FIX_CONTROL,
            ..ARM
        },
        Arm {
            id: "closefrom-file-action",
            role: Mitigation,
            about: "Two-step creation; the child is spawned by posix_spawn with posix_spawn_file_actions_addclosefrom_np(3) (glibc 2.34+). Sham-tested: it calls posix_spawn itself, not through std.",
            windows: &[Inherited],
            trial: closefrom_file_action,
            against: FIX_CONTROL,
            no_copy: &[Inherited],
            ..ARM
        },
        Arm {
            id: "closefrom-file-action-sham",
            role: Sham,
            about: "The same direct posix_spawn without the closefrom action.",
            windows: &[Inherited],
            trial: closefrom_file_action_sham,
            against: FIX_CONTROL,
            ..ARM
        },
        Arm {
            id: "spawn-cloexec-default",
            role: Mitigation,
            about: "Two-step creation; the child is spawned by posix_spawn with POSIX_SPAWN_CLOEXEC_DEFAULT (macOS). Sham-tested: it calls posix_spawn itself.",
            windows: &[Inherited],
            trial: spawn_cloexec_default,
            against: FIX_CONTROL,
            no_copy: &[Inherited],
            ..ARM
        },
        Arm {
            id: "spawn-cloexec-default-sham",
            role: Sham,
            about: "The same direct posix_spawn without POSIX_SPAWN_CLOEXEC_DEFAULT.",
            windows: &[Inherited],
            trial: spawn_cloexec_default_sham,
            against: FIX_CONTROL,
            ..ARM
        },
        Arm {
            id: "fix-spawn",
            role: Mitigation,
            about: "Two-step creation; the child is spawned by fdwindow_fix::spawn (Linux: close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) in pre_exec, 5.11+, else a /proc/self/fd walk; macOS: posix_spawn with POSIX_SPAWN_CLOEXEC_DEFAULT). Sham-tested: its spawn path differs from std's.",
            windows: &[Inherited],
            trial: fix_spawn,
            against: FIX_CONTROL,
            no_copy: &[Inherited],
            ..ARM
        },
        Arm {
            id: "fix-spawn-sham",
            role: Sham,
            about: "The same fdwindow_fix::spawn with its close-on-exec step switched off.",
            windows: &[Inherited],
            trial: fix_spawn_sham,
            against: FIX_CONTROL,
            ..ARM
        },
        std_arm!(
            "std-socket",
            "std's TcpListener::bind(127.0.0.1:0): raced against spawns, and parked right after its socket call",
            STD_WINDOWS,
            std_socket,
            "two-step-socket"
        ),
        std_arm!(
            "std-accept",
            "std's UnixListener::accept: raced against spawns, and parked right after its accept call",
            STD_WINDOWS,
            std_accept,
            "two-step-accept"
        ),
        std_arm!(
            "std-pipe",
            "std::io::pipe: raced against spawns, and parked right after its pipe call",
            STD_WINDOWS,
            std_pipe,
            "two-step-pipe"
        ),
        std_arm!(
            "std-socketpair",
            "std's UnixStream::pair: raced against spawns, and parked right after its socketpair call",
            STD_WINDOWS,
            std_socketpair,
            "two-step-socketpair"
        ),
        std_arm!(
            "std-unix-connect",
            "std's UnixStream::connect, parked right after its socket call",
            PARKED,
            std_unix_connect,
            "two-step-connect"
        ),
        std_arm!(
            "std-tcp-connect",
            "std's TcpStream::connect to 127.0.0.1, parked right after its socket call",
            PARKED,
            std_tcp_connect,
            "two-step-socket"
        ),
        std_arm!(
            "std-file-open",
            "std's File::open(/dev/null), parked right after its open call",
            PARKED,
            std_file_open,
            "two-step-open"
        ),
        std_arm!(
            "std-dup",
            "std's File::try_clone, parked right after its fcntl(F_DUPFD_CLOEXEC) call",
            PARKED,
            std_dup,
            "two-step-dup"
        ),
        sham!(
            "atomic-flag-sham",
            "atomic-flag with the interposer stripping SOCK_CLOEXEC from its socket call (Linux; macOS has no SOCK_CLOEXEC).",
            atomic_flag_sham,
            "two-step-socket"
        ),
        sham!(
            "std-socket-sham",
            "std-socket with the interposer stripping SOCK_CLOEXEC from std's socket call (Linux; on macOS std's socket call has no flag to strip, so no sham there).",
            std_socket_sham,
            "two-step-socket"
        ),
        sham!(
            "std-accept-sham",
            "std-accept with the interposer stripping accept4's SOCK_CLOEXEC (Linux; macOS's accept has no flag to strip, so no sham there).",
            std_accept_sham,
            "two-step-accept"
        ),
        sham!(
            "std-pipe-sham",
            "std-pipe with the interposer stripping pipe2's O_CLOEXEC (Linux; macOS's pipe has no flag to strip, so no sham there).",
            std_pipe_sham,
            "two-step-pipe"
        ),
        sham!(
            "std-socketpair-sham",
            "std-socketpair with the interposer stripping SOCK_CLOEXEC from std's socketpair call (Linux; on macOS it has no flag to strip, so no sham there).",
            std_socketpair_sham,
            "two-step-socketpair"
        ),
        sham!(
            "std-unix-connect-sham",
            "std-unix-connect with the interposer stripping SOCK_CLOEXEC from std's socket call (Linux; on macOS it has no flag to strip, so no sham there).",
            std_unix_connect_sham,
            "two-step-connect"
        ),
        sham!(
            "std-tcp-connect-sham",
            "std-tcp-connect with the interposer stripping SOCK_CLOEXEC from std's socket call (Linux; on macOS it has no flag to strip, so no sham there).",
            std_tcp_connect_sham,
            "two-step-socket"
        ),
        sham!(
            "std-file-open-sham",
            "std-file-open with the interposer stripping O_CLOEXEC from std's open call (also on macOS, where it and std-dup-sham are the shams that test the window).",
            std_file_open_sham,
            "two-step-open"
        ),
        sham!(
            "std-dup-sham",
            "std-dup with the interposer turning F_DUPFD_CLOEXEC into F_DUPFD.",
            std_dup_sham,
            "two-step-dup"
        ),
    ],
    observe: Some(per_call_table),
};

/// Runs this probe with `args` (those after `fdwindow probe two-step-cloexec`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    // The parked-call window needs the interposer in this process: this
    // re-executes the probe once with it preloaded (see fdwindow::harness::parked).
    parked::preload_self();
    fdwindow::harness::main(&PROBE, args)
}

/// Per (arm, window, call): trials and hits, for the per-call table.
type Record = BTreeMap<(&'static str, Window, &'static str), (u64, u64)>;
static RECORD: Mutex<Record> = Mutex::new(BTreeMap::new());

fn record() -> std::sync::MutexGuard<'static, Record> {
    RECORD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn note(t: &mut Trial<'_>, arm: &'static str, call: &'static str, hit: bool) -> bool {
    let mut rec = record();
    let entry = rec.entry((arm, t.window(), call)).or_default();
    entry.0 += 1;
    entry.1 += u64::from(hit);
    drop(rec);
    t.tally("call", call);
    hit
}

/// `ErrorKind::Unsupported` (the OS lacks the call) and ENOSYS/EINVAL/
/// EOPNOTSUPP/ENOTSUP read as unsupported; anything else as broken.
fn feature<T>(r: io::Result<T>, step: &str) -> Result<T, Fault> {
    match r {
        Err(e) if means_unsupported(&e) => Err(Fault::Unsupported(format!("{step}: {e}"))),
        r => r.ctx(step),
    }
}

/// What the creator makes in each round.
#[derive(Clone, Copy, Debug)]
enum Make {
    /// The raw call, two-step or atomic.
    Raw(Call, Flag),
    /// A std constructor for this call.
    Std(Call),
}

fn two_step_socket(t: &mut Trial<'_>) -> Result<bool, Fault> {
    control(t, "two-step-socket", Call::Socket)
}

fn two_step_socketpair(t: &mut Trial<'_>) -> Result<bool, Fault> {
    control(t, "two-step-socketpair", Call::Socketpair)
}

fn two_step_accept(t: &mut Trial<'_>) -> Result<bool, Fault> {
    control(t, "two-step-accept", Call::Accept)
}

fn two_step_pipe(t: &mut Trial<'_>) -> Result<bool, Fault> {
    control(t, "two-step-pipe", Call::Pipe)
}

fn two_step_dup(t: &mut Trial<'_>) -> Result<bool, Fault> {
    control(t, "two-step-dup", Call::Dup)
}

fn two_step_open(t: &mut Trial<'_>) -> Result<bool, Fault> {
    control(t, "two-step-open", Call::Open)
}

fn two_step_connect(t: &mut Trial<'_>) -> Result<bool, Fault> {
    control(t, "two-step-connect", Call::Connect)
}

fn control(t: &mut Trial<'_>, arm: &'static str, call: Call) -> Result<bool, Fault> {
    arm_trial(t, arm, call, Flag::TwoStep, SpawnHow::Std, Lock::None)
}

fn atomic_flag(t: &mut Trial<'_>) -> Result<bool, Fault> {
    arm_trial(
        t,
        "atomic-flag",
        FIX_CALL,
        Flag::Atomic,
        SpawnHow::Std,
        Lock::None,
    )
}

fn spawn_lock(t: &mut Trial<'_>) -> Result<bool, Fault> {
    arm_trial(
        t,
        "spawn-lock",
        FIX_CALL,
        Flag::TwoStep,
        SpawnHow::Std,
        Lock::On,
    )
}

fn spawn_lock_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    arm_trial(
        t,
        "spawn-lock-sham",
        FIX_CALL,
        Flag::TwoStep,
        SpawnHow::Std,
        Lock::Sham,
    )
}

fn close_range_in_child(t: &mut Trial<'_>) -> Result<bool, Fault> {
    fix(t, "close-range-in-child", SpawnHow::CloseRangeInChild)
}

fn close_range_in_child_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    fix(t, "close-range-in-child-sham", SpawnHow::ForkNoop)
}

fn closefrom_file_action(t: &mut Trial<'_>) -> Result<bool, Fault> {
    fix(t, "closefrom-file-action", SpawnHow::ClosefromFileAction)
}

fn closefrom_file_action_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    fix(t, "closefrom-file-action-sham", SpawnHow::RawPlain)
}

fn spawn_cloexec_default(t: &mut Trial<'_>) -> Result<bool, Fault> {
    fix(t, "spawn-cloexec-default", SpawnHow::CloexecDefault)
}

fn spawn_cloexec_default_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    fix(t, "spawn-cloexec-default-sham", SpawnHow::RawPlain)
}

/// A fix (or its sham) that changes how the holder is spawned.
fn fix(t: &mut Trial<'_>, arm: &'static str, how: SpawnHow) -> Result<bool, Fault> {
    arm_trial(t, arm, FIX_CALL, Flag::TwoStep, how, Lock::None)
}

fn fix_spawn(t: &mut Trial<'_>) -> Result<bool, Fault> {
    fix(t, "fix-spawn", SpawnHow::Fix)
}

fn fix_spawn_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    fix(t, "fix-spawn-sham", SpawnHow::FixSham)
}

fn std_socket(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-socket", StdCall::Socket, Mode::Park)
}

fn std_accept(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-accept", StdCall::Accept, Mode::Park)
}

fn std_pipe(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-pipe", StdCall::Pipe, Mode::Park)
}

fn std_socketpair(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-socketpair", StdCall::Socketpair, Mode::Park)
}

fn std_unix_connect(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-unix-connect", StdCall::UnixConnect, Mode::Park)
}

fn std_tcp_connect(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-tcp-connect", StdCall::TcpConnect, Mode::Park)
}

fn std_file_open(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-file-open", StdCall::FileOpen, Mode::Park)
}

fn std_dup(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-dup", StdCall::Dup, Mode::Park)
}

fn atomic_flag_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    parked_raw(t, "atomic-flag-sham", FIX_CALL, Flag::Atomic, Mode::Sham)
}

fn std_socket_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-socket-sham", StdCall::Socket, Mode::Sham)
}

fn std_accept_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-accept-sham", StdCall::Accept, Mode::Sham)
}

fn std_pipe_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-pipe-sham", StdCall::Pipe, Mode::Sham)
}

fn std_socketpair_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-socketpair-sham", StdCall::Socketpair, Mode::Sham)
}

fn std_unix_connect_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-unix-connect-sham", StdCall::UnixConnect, Mode::Sham)
}

fn std_tcp_connect_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-tcp-connect-sham", StdCall::TcpConnect, Mode::Sham)
}

fn std_file_open_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-file-open-sham", StdCall::FileOpen, Mode::Sham)
}

fn std_dup_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    std_trial(t, "std-dup-sham", StdCall::Dup, Mode::Sham)
}

/// The arm that measures a std constructor.
fn std_arm(call: StdCall) -> &'static str {
    match call {
        StdCall::Socket => "std-socket",
        StdCall::Accept => "std-accept",
        StdCall::Pipe => "std-pipe",
        StdCall::Socketpair => "std-socketpair",
        StdCall::UnixConnect => "std-unix-connect",
        StdCall::TcpConnect => "std-tcp-connect",
        StdCall::FileOpen => "std-file-open",
        StdCall::Dup => "std-dup",
    }
}

/// The control call a std constructor is judged against (the record's key).
fn control_call(call: StdCall) -> Call {
    match call {
        StdCall::Socket | StdCall::TcpConnect => Call::Socket,
        StdCall::Accept => Call::Accept,
        StdCall::Pipe => Call::Pipe,
        StdCall::Socketpair => Call::Socketpair,
        StdCall::UnixConnect => Call::Connect,
        StdCall::FileOpen => Call::Open,
        StdCall::Dup => Call::Dup,
    }
}

/// A std constructor in its window: raced, or parked by the interposer.
fn std_trial(
    t: &mut Trial<'_>,
    arm: &'static str,
    call: StdCall,
    mode: Mode,
) -> Result<bool, Fault> {
    match t.window() {
        ParkedCall => {
            let seen = parked::std_trial(mode, call, &t.socket_path("sock")?)?;
            Ok(parked_note(t, arm, control_call(call), &seen))
        }
        PosixSpawn => race(t, arm, Make::Std(control_call(call)), false),
        other => Err(Fault::Broken(format!(
            "this probe builds no {} window yet",
            other.id()
        ))),
    }
}

/// A raw call (a control's two steps, or the atomic flag) parked right after
/// its creating call.
fn parked_raw(
    t: &mut Trial<'_>,
    arm: &'static str,
    call: Call,
    flag: Flag,
    mode: Mode,
) -> Result<bool, Fault> {
    let seen = parked::raw_trial(mode, call, flag, &t.socket_path("sock")?)?;
    Ok(parked_note(t, arm, call, &seen))
}

/// Records a parked trial: the libc name it parked in, whether a sham had a
/// flag to strip, and the hit.
fn parked_note(t: &mut Trial<'_>, arm: &'static str, call: Call, seen: &parked::Seen) -> bool {
    t.tally("parked-in", &seen.park.call);
    if arm.ends_with("-sham") {
        t.tally(
            "flag-stripped",
            if seen.park.stripped {
                "yes"
            } else {
                "no: none asked for"
            },
        );
    }
    note(t, arm, call.id(), seen.hit())
}

/// The spawn lock: not used, used, or its sham (the same choreography as
/// `On` with the lock switched off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lock {
    None,
    On,
    Sham,
}

fn arm_trial(
    t: &mut Trial<'_>,
    arm: &'static str,
    call: Call,
    flag: Flag,
    how: SpawnHow,
    lock: Lock,
) -> Result<bool, Fault> {
    match t.window() {
        Inherited => deterministic(t, arm, call, flag, how, lock),
        ParkedCall => parked_raw(t, arm, call, flag, Mode::Park),
        PosixSpawn => race(t, arm, Make::Raw(call, flag), lock == Lock::On),
        other => Err(Fault::Broken(format!(
            "this probe builds no {} window yet",
            other.id()
        ))),
    }
}

/// The deterministic window: the holder is spawned between creation and flag.
fn deterministic(
    t: &mut Trial<'_>,
    arm: &'static str,
    call: Call,
    flag: Flag,
    how: SpawnHow,
    lock: Lock,
) -> Result<bool, Fault> {
    // This trial opens its window itself: the holder it spawns between
    // creation and flag is the child its hit is about.
    t.own_spawn();
    let maker = Maker::new(call, &t.socket_path("sock")?).ctx("prepare the call")?;
    let (made, holder) = match lock {
        Lock::On | Lock::Sham => {
            let (made, holder, _gap) = spawn_in_gap(
                &SPAWN_LOCK,
                lock == Lock::On,
                Instant::now() + GAP_DEADLINE,
                || maker.make(flag),
                |made| made.set_cloexec(),
                || Holder::spawn(how),
            )
            .map_err(|e| match e.kind() {
                io::ErrorKind::TimedOut => Fault::NotConfirmed(e.to_string()),
                io::ErrorKind::Unsupported => Fault::Unsupported(e.to_string()),
                _ => Fault::Broken(format!("the spawn-lock gap: {e}")),
            })?;
            (made, holder)
        }
        Lock::None => {
            let made = feature(maker.make(flag), call.atomic_form())?;
            let holder = feature(Holder::spawn(how), "spawn the holder")?;
            if flag == Flag::TwoStep {
                made.set_cloexec().ctx("fcntl(F_SETFD, FD_CLOEXEC)")?;
            }
            (made, holder)
        }
    };
    // By identity, not by number: the holder's own stdio, or anything cat
    // opened, may share a number with a made descriptor.
    let hit = t.child_holds(holder.pid() as u32, &made.raw_fds())?;
    holder.release().ctx("release the holder")?;
    Ok(note(t, arm, call.id(), hit))
}

/// The natural gap: a creator thread loops while this thread spawns the holder.
fn race(t: &mut Trial<'_>, arm: &'static str, make: Make, locked: bool) -> Result<bool, Fault> {
    // The hit is about the holder this trial spawns: that spawn is the trial.
    t.own_spawn();
    let call = match make {
        Make::Raw(call, _) | Make::Std(call) => call,
    };
    let path = t.socket_path("sock")?;
    let creator = Creator::new(make, call, path).ctx("prepare the call")?;
    let baseline = inheritable_fds().ctx("list this process's inheritable descriptors")?;
    let stop = AtomicBool::new(false);
    let (holder, rounds) = std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        let looping = s.spawn(|| creator.run(locked, &stop, tx));
        // Stops the creator on every way out of this scope, a panic included,
        // so the scope's join cannot wait forever.
        let _stop = StopOnDrop(&stop);
        // Spawn only once the creator is looping (or has failed).
        let started = rx.recv().is_ok();
        let holder = if started {
            let _spawning = locked.then(|| SPAWN_LOCK.spawning());
            Some(Holder::spawn(SpawnHow::Std))
        } else {
            None
        };
        stop.store(true, Ordering::Relaxed);
        let rounds = looping
            .join()
            .map_err(|_| Fault::Broken("the creator panicked".into()))?;
        Ok::<_, Fault>((holder, rounds))
    })?;
    let rounds = feature(rounds, call.atomic_form())?;
    let holder =
        holder.ok_or_else(|| Fault::Broken("the creator stopped before its first round".into()))?;
    let holder = feature(holder, "spawn the holder")?;
    let held = holder.fds().ctx("list the holder's descriptors")?;
    holder.release().ctx("release the holder")?;
    let leaked = held
        .iter()
        .filter(|fd| **fd > 2 && !baseline.contains(fd))
        .count();
    t.tally("creator-rounds", bucket(rounds));
    if leaked > 0 {
        t.tally("leaked-descriptors", &leaked.to_string());
    }
    Ok(note(t, arm, call.id(), leaked > 0))
}

struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A coarse bucket for how many rounds the creator made during one spawn.
fn bucket(rounds: u64) -> &'static str {
    match rounds {
        0..=9 => "<10",
        10..=99 => "10-99",
        100..=999 => "100-999",
        _ => ">=1000",
    }
}

/// The creator thread's state: what it makes, and what that needs.
struct Creator {
    make: Make,
    maker: Option<Maker>,
    listener: Option<(UnixListener, PathBuf)>,
}

impl Creator {
    fn new(make: Make, call: Call, path: PathBuf) -> io::Result<Creator> {
        Ok(match make {
            Make::Raw(..) => Creator {
                make,
                maker: Some(Maker::new(call, &path)?),
                listener: None,
            },
            Make::Std(Call::Accept) => Creator {
                make,
                maker: None,
                listener: Some((UnixListener::bind(&path)?, path)),
            },
            Make::Std(_) => Creator {
                make,
                maker: None,
                listener: None,
            },
        })
    }

    /// Loops until `stop`; says on `started` after the first round.
    fn run(&self, locked: bool, stop: &AtomicBool, started: mpsc::Sender<()>) -> io::Result<u64> {
        let mut rounds = 0u64;
        while !stop.load(Ordering::Relaxed) {
            {
                let _creating = locked.then(|| SPAWN_LOCK.creating());
                self.round()?;
            }
            rounds += 1;
            if rounds == 1 {
                let _ = started.send(());
            }
        }
        Ok(rounds)
    }

    /// One creation, its flag, and its close.
    fn round(&self) -> io::Result<()> {
        match self.make {
            Make::Raw(_, flag) => {
                let made = self.maker.as_ref().expect("raw maker").make(flag)?;
                if flag == Flag::TwoStep {
                    made.set_cloexec()?;
                }
            }
            Make::Std(Call::Socket) => drop(TcpListener::bind(("127.0.0.1", 0))?),
            Make::Std(Call::Accept) => {
                let (listener, path) = self.listener.as_ref().expect("listener");
                let _client = UnixStream::connect(path)?;
                drop(listener.accept()?);
            }
            Make::Std(Call::Pipe) => drop(io::pipe()?),
            Make::Std(Call::Socketpair) => drop(UnixStream::pair()?),
            Make::Std(Call::Dup | Call::Open | Call::Connect) => {
                unreachable!("no std-* arm races dup, open or connect")
            }
        }
        Ok(())
    }
}

/// The matrix section per creation call: whether the atomic form exists here
/// (tried now), and what its control and std arm measured in this run.
fn per_call_table(_: &Scratch, _: Settings) -> Vec<Table> {
    let rec = record().clone();
    let cell = |arm: &str, window: Window, call: Call| {
        rec.get(&(arm_key(arm), window, call.id()))
            .map_or_else(|| "not run".to_owned(), |(t, h)| format!("{h}/{t}"))
    };
    // Every std constructor whose creating call is `call`, parked right
    // after it: the column a default run fills (the race runs only in
    // --thorough where parked-call covers std's arms).
    let parked_std = |call: Call| {
        let cells: Vec<String> = StdCall::ALL
            .into_iter()
            .filter(|&s| control_call(s) == call)
            .map(|s| format!("{} {}", s.wrapper(), cell(std_arm(s), ParkedCall, call)))
            .collect();
        if cells.is_empty() {
            "no std constructor".to_owned()
        } else {
            cells.join("; ")
        }
    };
    let rows = CALLS
        .iter()
        .map(|&(call, control, std_arm)| {
            // The socket folder lives until the descriptors are checked.
            let made = fdwindow_fix::base::sockets::SocketDir::new().and_then(|dir| {
                let made = Maker::new(call, &dir.path("sock")?)?.make(Flag::Atomic)?;
                Ok((dir, made))
            });
            let here = match made {
                Ok((_dir, made)) => match made.raw_fds().iter().all(|&fd| {
                    fdwindow::hazards::cloexec::fd_flags(fd)
                        .is_some_and(|f| f & libc::FD_CLOEXEC != 0)
                }) {
                    true => "yes".to_owned(),
                    false => "broken: made without FD_CLOEXEC".to_owned(),
                },
                Err(e) if means_unsupported(&e) => format!("no: {e}"),
                Err(e) => format!("broken: {e}"),
            };
            vec![
                call.id().to_owned(),
                call.atomic_form().to_owned(),
                here,
                format!("`{control}`"),
                cell(control, Inherited, call),
                cell(control, PosixSpawn, call),
                call.std_wrapper().to_owned(),
                std_arm.map_or_else(
                    || "not raced".to_owned(),
                    |arm| match cell(arm, PosixSpawn, call) {
                        // The race leaves fixes that parked-call decides out
                        // of a default run.
                        c if c == "not run" => "not run (`--thorough` races it)".to_owned(),
                        c => c,
                    },
                ),
                parked_std(call),
            ]
        })
        .collect();
    let looked_up = Table {
        id: "looked-up".into(),
        about:
            "C library functions behind the atomic forms and spawn-time closing, each looked up \
                in this process's C library at run time (dlsym), not taken from the headers the \
                probe was built with."
                .into(),
        columns: ["function", "in this C library"].map(String::from).to_vec(),
        rows: LOOKED_UP
            .iter()
            .map(|name| {
                vec![
                    name.to_string_lossy().into_owned(),
                    if libc_has(name) { "yes" } else { "no" }.to_owned(),
                ]
            })
            .collect(),
        problem: None,
    };
    vec![looked_up, Table {
        id: "per-call".into(),
        about: "Per creation call: its atomic close-on-exec form and whether this OS has it (one call made now, \
                FD_CLOEXEC checked); its control arm and how often the holder inherited the two-step descriptor in \
                this run (inherited: deterministic; posix-spawn: per holder spawn); and how often std's own \
                constructor leaked into a holder in the posix-spawn race and when parked right after \
                its creating call (the std-* arms)."
            .into(),
        columns: [
            "call",
            "atomic form",
            "atomic here",
            "control",
            "two-step leaked (inherited)",
            "two-step leaked (posix-spawn)",
            "std wrapper",
            "std leaked (posix-spawn)",
            "std leaked (parked-call)",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        problem: None,
    }]
}

/// The record's keys are the arms' static ids.
fn arm_key(arm: &str) -> &'static str {
    PROBE.arms.iter().find(|a| a.id == arm).map_or("", |a| a.id)
}
