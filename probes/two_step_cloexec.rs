//! Checks whether a descriptor created without close-on-exec and flagged in a
//! second call leaks, for its whole life, into a child spawned in between.
//!
//! Method: the holder child is `/bin/cat`, spawned and known to have exec'd
//! (it echoed a byte); every descriptor it still has beyond stdio it
//! inherited, listed through `/proc/<pid>/fd` (Linux) or `proc_pidinfo`
//! (macOS). Each trial makes one call (socket, socketpair, accept, pipe, dup,
//! open; in turn), so the matrix table can say which calls are atomic here.
//!
//! `inherited` (deterministic): 1. make the descriptor without its flag;
//! 2. spawn the holder in the gap; 3. set `FD_CLOEXEC`; 4. a hit is the holder
//! having that descriptor's number. The fixes change step 1 (atomic flag),
//! step 2 (how the holder is spawned) or lock steps 1–3 against step 2.
//!
//! `posix-spawn` (statistical, the natural gap): 1. a creator thread loops
//! "make, set the flag, close" (or calls a std constructor); 2. this thread
//! spawns the holder through std's posix_spawn; 3. once cat echoed, the creator
//! stops; 4. a hit is the holder having a descriptor beyond stdio that the
//! parent did not already have open without close-on-exec before the trial.
//! The harness's race thread spawns `true` alongside, as a busy process would.
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
use std::time::Duration;

use fdwindow::cloexec::{
    Call, Flag, Holder, LOOKED_UP, Maker, SpawnHow, inheritable_fds, libc_has,
};
use fdwindow::errno::means_unsupported;
use fdwindow::harness::{Arm, Context, Fault, Probe, Settings, Trial};
use fdwindow::report::Table;
use fdwindow::scratch::Scratch;
use fdwindow::spawn_lock::SPAWN_LOCK;
use fdwindow::verdict::Role::{Control, Mitigation};
use fdwindow::verdict::Window::{self, Inherited, PosixSpawn};

const BOTH: &[Window] = &[Inherited, PosixSpawn];

static PROBE: Probe = Probe {
    hazard: "two-step-cloexec",
    about: "Checks whether a descriptor flagged close-on-exec in a second call leaks into a child spawned in between.",
    trials: 12,
    race: Duration::from_millis(70),
    arms: &[
        Arm {
            id: "two-step",
            role: Control,
            about: "Create without the flag (socket, socketpair, accept, pipe, F_DUPFD, open), then fcntl(F_SETFD, FD_CLOEXEC).",
            windows: BOTH,
            trial: two_step,
        },
        Arm {
            id: "atomic-flag",
            role: Mitigation,
            about: "Create close-on-exec in one call: SOCK_CLOEXEC, accept4, pipe2, F_DUPFD_CLOEXEC, O_CLOEXEC.",
            windows: BOTH,
            trial: atomic_flag,
        },
        Arm {
            id: "spawn-lock",
            role: Mitigation,
            about: "Two-step creation under the shared side of fdwindow::spawn_lock::SPAWN_LOCK, spawns under its exclusive side (Go's ForkLock).",
            windows: BOTH,
            trial: spawn_lock,
        },
        Arm {
            id: "close-range-in-child",
            role: Mitigation,
            about: "Two-step creation; the child calls close_range(3, ~0U, 0) in pre_exec (Linux 5.9+; forces fork+exec).",
            windows: &[Inherited],
            trial: close_range_in_child,
        },
        Arm {
            id: "closefrom-file-action",
            role: Mitigation,
            about: "Two-step creation; the child is spawned by posix_spawn with posix_spawn_file_actions_addclosefrom_np(3) (glibc 2.34+).",
            windows: &[Inherited],
            trial: closefrom_file_action,
        },
        Arm {
            id: "spawn-cloexec-default",
            role: Mitigation,
            about: "Two-step creation; the child is spawned by posix_spawn with POSIX_SPAWN_CLOEXEC_DEFAULT (macOS).",
            windows: &[Inherited],
            trial: spawn_cloexec_default,
        },
        Arm {
            id: "std-socket",
            role: Mitigation,
            about: "std's TcpListener::bind(127.0.0.1:0) raced against spawns: does std's socket creation leak here?",
            windows: &[PosixSpawn],
            trial: std_socket,
        },
        Arm {
            id: "std-accept",
            role: Mitigation,
            about: "std's UnixListener::accept raced against spawns: does std's accept leak here?",
            windows: &[PosixSpawn],
            trial: std_accept,
        },
        Arm {
            id: "std-pipe",
            role: Mitigation,
            about: "std::io::pipe raced against spawns: does std's pipe leak here?",
            windows: &[PosixSpawn],
            trial: std_pipe,
        },
        Arm {
            id: "std-socketpair",
            role: Mitigation,
            about: "std's UnixStream::pair raced against spawns: does std's socketpair leak here?",
            windows: &[PosixSpawn],
            trial: std_socketpair,
        },
    ],
    observe: Some(per_call_table),
};

fn main() -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE)
}

/// Per (arm, window, call): trials and hits, for the per-call table.
type Record = BTreeMap<(&'static str, Window, &'static str), (u64, u64)>;
static RECORD: Mutex<Record> = Mutex::new(BTreeMap::new());

fn record() -> std::sync::MutexGuard<'static, Record> {
    RECORD
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The call for this arm's next trial: each in turn.
fn next_call(arm: &'static str, window: Window) -> Call {
    let done: u64 = record()
        .iter()
        .filter(|((a, w, _), _)| *a == arm && *w == window)
        .map(|(_, (trials, _))| trials)
        .sum();
    Call::ALL[(done % Call::ALL.len() as u64) as usize]
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
    Raw(Flag),
    /// A std constructor for this call.
    Std(Call),
}

fn two_step(t: &mut Trial<'_>) -> Result<bool, Fault> {
    arm_trial(t, "two-step", Flag::TwoStep, SpawnHow::Std, false)
}

fn atomic_flag(t: &mut Trial<'_>) -> Result<bool, Fault> {
    arm_trial(t, "atomic-flag", Flag::Atomic, SpawnHow::Std, false)
}

fn spawn_lock(t: &mut Trial<'_>) -> Result<bool, Fault> {
    arm_trial(t, "spawn-lock", Flag::TwoStep, SpawnHow::Std, true)
}

fn close_range_in_child(t: &mut Trial<'_>) -> Result<bool, Fault> {
    arm_trial(
        t,
        "close-range-in-child",
        Flag::TwoStep,
        SpawnHow::CloseRangeInChild,
        false,
    )
}

fn closefrom_file_action(t: &mut Trial<'_>) -> Result<bool, Fault> {
    arm_trial(
        t,
        "closefrom-file-action",
        Flag::TwoStep,
        SpawnHow::ClosefromFileAction,
        false,
    )
}

fn spawn_cloexec_default(t: &mut Trial<'_>) -> Result<bool, Fault> {
    arm_trial(
        t,
        "spawn-cloexec-default",
        Flag::TwoStep,
        SpawnHow::CloexecDefault,
        false,
    )
}

fn std_socket(t: &mut Trial<'_>) -> Result<bool, Fault> {
    race(t, "std-socket", Make::Std(Call::Socket), false)
}

fn std_accept(t: &mut Trial<'_>) -> Result<bool, Fault> {
    race(t, "std-accept", Make::Std(Call::Accept), false)
}

fn std_pipe(t: &mut Trial<'_>) -> Result<bool, Fault> {
    race(t, "std-pipe", Make::Std(Call::Pipe), false)
}

fn std_socketpair(t: &mut Trial<'_>) -> Result<bool, Fault> {
    race(t, "std-socketpair", Make::Std(Call::Socketpair), false)
}

fn arm_trial(
    t: &mut Trial<'_>,
    arm: &'static str,
    flag: Flag,
    how: SpawnHow,
    locked: bool,
) -> Result<bool, Fault> {
    match t.window() {
        Inherited => deterministic(t, arm, flag, how, locked),
        _ => race(t, arm, Make::Raw(flag), locked),
    }
}

/// The deterministic window: the holder is spawned between creation and flag.
fn deterministic(
    t: &mut Trial<'_>,
    arm: &'static str,
    flag: Flag,
    how: SpawnHow,
    locked: bool,
) -> Result<bool, Fault> {
    let call = next_call(arm, t.window());
    let maker = Maker::new(call, &t.fresh_path("sock")).ctx("prepare the call")?;
    let (made, holder) = if locked {
        // 1. creation under the shared side; 2. the spawner announces itself
        // and asks for the exclusive side; 3. the flag, then the shared side
        // goes; only then can the spawn copy the descriptor table.
        let creating = SPAWN_LOCK.creating();
        let made = feature(maker.make(flag), call.atomic_form())?;
        std::thread::scope(|s| {
            let (tx, rx) = mpsc::channel();
            let spawner = s.spawn(move || {
                let _ = tx.send(());
                let _spawning = SPAWN_LOCK.spawning();
                Holder::spawn(how)
            });
            let _ = rx.recv();
            let flagged = made.set_cloexec().ctx("fcntl(F_SETFD, FD_CLOEXEC)");
            drop(creating);
            let holder = spawner
                .join()
                .map_err(|_| Fault::Broken("the spawner panicked".into()))?;
            flagged?;
            Ok((made, feature(holder, "spawn the holder")?))
        })?
    } else {
        let made = feature(maker.make(flag), call.atomic_form())?;
        let holder = feature(Holder::spawn(how), "spawn the holder")?;
        if flag == Flag::TwoStep {
            made.set_cloexec().ctx("fcntl(F_SETFD, FD_CLOEXEC)")?;
        }
        (made, holder)
    };
    let held = holder.fds().ctx("list the holder's descriptors")?;
    holder.release().ctx("release the holder")?;
    if made.raw_fds().iter().any(|&fd| fd <= 2) {
        // The holder's own stdio has these numbers: the check would be void.
        return Err(Fault::Broken(
            "a made descriptor took a stdio number: run with stdin, stdout and stderr open".into(),
        ));
    }
    let hit = made.raw_fds().iter().any(|fd| held.contains(fd));
    Ok(note(t, arm, call.id(), hit))
}

/// The natural gap: a creator thread loops while this thread spawns the holder.
fn race(t: &mut Trial<'_>, arm: &'static str, make: Make, locked: bool) -> Result<bool, Fault> {
    let call = match make {
        Make::Raw(_) => next_call(arm, t.window()),
        Make::Std(call) => call,
    };
    let path = t.fresh_path("sock");
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
            Make::Raw(_) => Creator {
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
            Make::Raw(flag) => {
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
            Make::Std(Call::Dup | Call::Open) => {
                unreachable!("no std-* arm races dup or open")
            }
        }
        Ok(())
    }
}

/// The matrix section per creation call: whether the atomic form exists here
/// (tried now), and what the arms of this run measured for that call.
fn per_call_table(scratch: &Scratch, _: Settings) -> Vec<Table> {
    let rec = record().clone();
    let cell = |arm: &str, window: Window, call: Call| {
        rec.get(&(arm_key(arm), window, call.id()))
            .map_or_else(|| "not run".to_owned(), |(t, h)| format!("{h}/{t}"))
    };
    let rows = Call::ALL
        .iter()
        .map(|&call| {
            let here =
                match Maker::new(call, &scratch.fresh("sock")).and_then(|m| m.make(Flag::Atomic)) {
                    Ok(made) => match made.raw_fds().iter().all(|&fd| {
                        // SAFETY: F_GETFD on a descriptor `made` owns.
                        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
                        flags >= 0 && flags & libc::FD_CLOEXEC != 0
                    }) {
                        true => "yes".to_owned(),
                        false => "broken: made without FD_CLOEXEC".to_owned(),
                    },
                    Err(e) if means_unsupported(&e) => format!("no: {e}"),
                    Err(e) => format!("broken: {e}"),
                };
            let std_arm = match call {
                Call::Socket => Some("std-socket"),
                Call::Socketpair => Some("std-socketpair"),
                Call::Accept => Some("std-accept"),
                Call::Pipe => Some("std-pipe"),
                Call::Dup | Call::Open => None,
            };
            vec![
                call.id().to_owned(),
                call.atomic_form().to_owned(),
                here,
                cell("two-step", Inherited, call),
                cell("atomic-flag", Inherited, call),
                call.std_wrapper().to_owned(),
                std_arm.map_or_else(|| "not raced".to_owned(), |arm| cell(arm, PosixSpawn, call)),
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
                FD_CLOEXEC checked); how often the holder inherited it in this run's inherited window made two-step \
                and atomically (hits/trials); and how often std's own constructor leaked into a child in the \
                posix-spawn race (the std-* arms)."
            .into(),
        columns: [
            "call",
            "atomic form",
            "atomic here",
            "two-step leaked (inherited)",
            "atomic leaked (inherited)",
            "std wrapper",
            "std leaked (posix-spawn)",
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
