//! The harness stage: takes in a probe's declaration (its hazard, arms and
//! one trial function each) and the windows the base builds; gives out one
//! [`ProbeReport`] per run, as JSON on stdout, every arm's outcome counted
//! per window. [`parked`] adds the parked-call window, built with the
//! interposer the co-tenant's `preload` embeds.
//!
//! The shared harness: a probe is a [`Probe`] declaration; [`main`] runs it and
//! prints its [`ProbeReport`](crate::report::ProbeReport) as JSON on stdout.
//!
//! The harness owns the bookkeeping every probe needs: parsing the command
//! line, the scratch folder, opening and closing each trial's window, counting
//! hits, stopping an arm at its first `unsupported` or `broken` trial,
//! excluding (and counting) trials whose window was not confirmed, and
//! stopping everything cleanly on SIGINT or SIGTERM. A probe supplies only
//! what differs: its arms and one trial function each.
//!
//! In a race window (`posix-spawn`) the unit is a spawn, not a loop
//! iteration: hits cluster on one spawn, and a faster loop must not make more
//! "trials" of the same spawns. Every spawn the race thread starts while an
//! arm's loop runs is one trial; a spawn is a hit when an iteration showed
//! the hazard while that spawn was running (its child not yet reaped) at the
//! iteration's end, where trials look. The arms of a race window run in
//! interleaved blocks (control, mitigations, control, …), so drift in the
//! machine's load falls on all of them alike.
//!
//! A default run races the controls (a rate: how often the hazard bites a
//! busy process) and only the mitigations that no deterministic window
//! decides; a thorough run races every mitigation, each until the report's
//! own judgement decides it or its budget is spent. Every arm stops once its
//! verdict is decided: trials beyond that are waste. In a race window a fix
//! whose verdict rests on its control's count races every block the control
//! does, so the two always share their blocks.

pub mod parked;

use std::io;
use std::os::fd::RawFd;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;

use crate::base::out;
use crate::report::platform::Platform;
use crate::report::stats::MAX_TRIALS;
use crate::report::verdict::{
    Judgement, Kind, MIN_DETERMINISTIC_TRIALS, Outcome, Role, Tallies, Verdict, Window,
};
use crate::report::{ArmReport, LeftOut, ProbeReport, SCHEMA_VERSION, Scope, Table, utc_now};
use fdwindow_fix::base::child::{HeldChild, InheritingChild, SpawnRace};
use fdwindow_fix::base::holder::CopyHolder;
use fdwindow_fix::base::scratch::Scratch;
use fdwindow_fix::pressure::HoldBy;

/// A probe: one hazard and the arms that meet it.
#[derive(Debug)]
pub struct Probe {
    /// The hazard id, e.g. `flock-survival`.
    pub hazard: &'static str,
    /// One sentence: "Checks whether …".
    pub about: &'static str,
    /// The most trials per arm in a deterministic window (fork-window,
    /// inherited, parked-call) and in-process: enough to decide (7-10), no
    /// more. A deterministic cell stops at 7 once its verdict is decided ([`run`]).
    pub trials: u64,
    /// Time per arm in the posix-spawn race, split into interleaved blocks.
    pub race: Duration,
    /// Controls first; each mitigation and sham is judged against the control
    /// its `against` names (by default the first control in its window).
    pub arms: &'static [Arm],
    /// For an observation probe: measures and returns its tables.
    pub observe: Option<fn(&Scratch, Settings) -> Vec<Table>>,
}

/// One way of writing the code that meets the hazard. Declare the fields that
/// matter and take the rest from [`ARM`]: `Arm { id, role, about, windows,
/// trial, ..ARM }`.
#[derive(Debug)]
pub struct Arm {
    /// The arm id, e.g. `unlock-then-close`; a sham is `<mitigation>-sham`.
    pub id: &'static str,
    /// Control, mitigation or sham.
    pub role: Role,
    /// One sentence: what the arm's code does. For a mitigation, say here
    /// why it has a sham or is `avoids` (DESIGN.md: decided per arm).
    pub about: &'static str,
    /// The windows it runs in.
    pub windows: &'static [Window],
    /// One trial: `Ok(true)` when the hazard showed.
    pub trial: fn(&mut Trial<'_>) -> Result<bool, Fault>,
    /// For a mitigation or sham: the control it is judged against; `None`
    /// means the first control declared in the same window.
    pub against: Option<&'static str>,
    /// Deterministic or statistical: required in `in-process`, where no
    /// window says; elsewhere the window decides and this must agree with it.
    pub kind: Option<Kind>,
    /// For a mitigation that removes the hazardous step altogether: the
    /// one-line argument why no trial can test it. Its trials still run (a
    /// hit makes it `invalid`), but it is shown as `avoids`, never `valid`.
    pub avoids: Option<&'static str>,
    /// Whether its outcome depends on durations (a stall against a retry's
    /// budget): under emulation such an arm measures the emulator's clock,
    /// and is flagged `emulated` like a statistical one.
    pub timed: bool,
    /// For a mitigation whose point is that the child holds no copy (an
    /// inheritable descriptor made close-on-exec, a port never picked): the
    /// windows where a trial still counts when the window's child holds none
    /// of its descriptor. Elsewhere, and for every control and sham, such a
    /// trial is unconfirmed ([`NO_COPY`]), and `fdwindow check` fails a cell
    /// whose [`COPY_TALLY`] shows fewer copies than trials.
    pub no_copy: &'static [Window],
}

/// The defaults for an [`Arm`] declaration's optional fields. Its `id` is
/// empty, which [`check`] refuses: every arm names itself and its trial.
pub const ARM: Arm = Arm {
    id: "",
    role: Role::Control,
    about: "",
    windows: &[],
    trial: undeclared,
    against: None,
    kind: None,
    avoids: None,
    timed: false,
    no_copy: &[],
};

fn undeclared(_: &mut Trial<'_>) -> Result<bool, Fault> {
    Err(Fault::Broken("the arm declares no trial".into()))
}

/// Why a trial could not say whether the hazard showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The OS lacks the call or flag: the arm is `unsupported`.
    Unsupported(String),
    /// Setup failed: the arm is `broken`.
    Broken(String),
    /// This trial's window could not be confirmed (the child was not seen
    /// holding the copy, a thread was not seen parked, a deadline expired):
    /// the trial is excluded and counted in `broken_trials`.
    NotConfirmed(String),
}

/// Attaches the failing step to an `io::Error`.
pub trait Context<T> {
    /// Any error means setup failed.
    fn ctx(self, step: &str) -> Result<T, Fault>;
    /// `ENOSYS`, `EINVAL`, `EOPNOTSUPP` and `ENOTSUP` (45 on macOS) mean the OS
    /// lacks the feature ([`fdwindow_fix::base::errno::UNSUPPORTED`]); other errors mean setup failed.
    fn ctx_feature(self, step: &str) -> Result<T, Fault>;
}

impl<T> Context<T> for io::Result<T> {
    fn ctx(self, step: &str) -> Result<T, Fault> {
        self.map_err(|e| Fault::Broken(format!("{step}: {e}")))
    }

    fn ctx_feature(self, step: &str) -> Result<T, Fault> {
        self.map_err(|e| match e.raw_os_error() {
            Some(n) if fdwindow_fix::base::errno::UNSUPPORTED.contains(&n) => {
                Fault::Unsupported(format!("{step}: {e}"))
            }
            _ => Fault::Broken(format!("{step}: {e}")),
        })
    }
}

/// What a trial function gets: its window, fresh scratch paths, and a place to
/// tally extra measurements.
#[derive(Debug)]
pub struct Trial<'a> {
    window: Window,
    scratch: &'a Scratch,
    /// With `--hold-by pass`: the fork window passes the trial's descriptor
    /// here instead of forking a child.
    holder: Option<&'a CopyHolder>,
    tallies: &'a mut Tallies,
    /// Set by [`Trial::own_spawn`]: this trial spawned (and checked) its own
    /// child, which is then the race window's unit instead of the race
    /// thread's spawns.
    own_spawn: bool,
    /// Set by [`Trial::during_window`] once a child held the window open: a
    /// fork-window or inherited trial that never opened one is unconfirmed.
    opened: bool,
    /// Whether the arm declares `no_copy` for this window: a child holding
    /// none of the trial's descriptor does not leave the trial unconfirmed.
    copy_waived: bool,
    /// Paths handed out, removed when the trial ends: tens of thousands of
    /// race trials must not pile up files for the scratch folder's removal.
    paths: std::cell::RefCell<Vec<std::path::PathBuf>>,
    /// Short folders for Unix-domain socket paths, removed when the trial ends.
    socket_dirs: std::cell::RefCell<Vec<fdwindow_fix::base::sockets::SocketDir>>,
}

impl Trial<'_> {
    /// The window this trial runs in.
    pub fn window(&self) -> Window {
        self.window
    }

    /// A scratch path no other trial uses; whatever is created there is
    /// removed when the trial ends.
    pub fn fresh_path(&self, stem: &str) -> std::path::PathBuf {
        let path = self.scratch.fresh(stem);
        self.paths.borrow_mut().push(path.clone());
        path
    }

    /// A path for a Unix-domain socket that no other trial uses, short enough
    /// for every OS's `sun_path` (macOS allows 103 bytes where the scratch
    /// folder under a long `TMPDIR` would not fit: see
    /// [`fdwindow_fix::base::sockets::SocketDir`]); removed with its folder when the trial ends.
    pub fn socket_path(&self, stem: &str) -> Result<std::path::PathBuf, Fault> {
        let dir = fdwindow_fix::base::sockets::SocketDir::new().ctx("make the socket folder")?;
        let path = dir.path(stem).ctx("build the socket path")?;
        self.socket_dirs.borrow_mut().push(dir);
        Ok(path)
    }

    /// Says that this trial spawned the one child its hit is about (e.g. a
    /// holder whose descriptors are listed): in a race window that spawn, not
    /// the race thread's, is the trial; in a fork-window or inherited trial
    /// it is the window, which the trial opened itself. Call it in every
    /// trial of the arm.
    pub fn own_spawn(&mut self) {
        self.own_spawn = true;
    }

    /// Counts one trial's value of a named quantity (e.g. `"client" = "reset"`).
    pub fn tally(&mut self, quantity: &str, value: &str) {
        *self
            .tallies
            .entry(quantity.to_owned())
            .or_default()
            .entry(value.to_owned())
            .or_default() += 1;
    }

    /// Runs `act` while a child holds copies of this process's descriptors, as
    /// the window kind says: a child parked between fork and exec, an exec'd
    /// child holding those without close-on-exec, or (posix-spawn) the race
    /// thread already running. `fd` is the trial's own descriptor, the one
    /// the hazard is about, open when this is called: in a fork-window or
    /// inherited trial the child must hold the same open file
    /// ([`fdwindow_fix::sys::same_open_file`]), or the trial is unconfirmed
    /// (unless the arm declares `no_copy` here); each such trial tallies
    /// [`COPY_TALLY`]. Create what the child must copy before calling.
    pub fn during_window<T>(
        &mut self,
        fd: RawFd,
        act: impl FnOnce() -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        self.open_window(Some(fd), act)
    }

    /// [`Trial::during_window`] for a trial with no descriptor of its own
    /// for the child to copy (a fix whose point is that there is none, such
    /// as a port the server binds itself): the child holds none, so the arm
    /// must declare `no_copy` for the window.
    pub fn during_bare_window<T>(
        &mut self,
        act: impl FnOnce() -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        self.open_window(None, act)
    }

    fn open_window<T>(
        &mut self,
        fd: Option<RawFd>,
        act: impl FnOnce() -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        match (self.window, self.holder) {
            (Window::ForkWindow, Some(holder)) => self.passed_copy_window(holder, fd, act),
            (Window::ForkWindow, None) => {
                let held = HeldChild::hold()
                    .map_err(|e| holder_fault("hold a child in the fork window", e))?;
                self.opened = true;
                // On an error the child is let go and reaped by its drop.
                self.check_copy(held.pid(), fd)?;
                let result = act();
                held.release().ctx("release the held child")?;
                result
            }
            (Window::Inherited, _) => {
                let child = InheritingChild::spawn()
                    .map_err(|e| holder_fault("spawn the inheriting child", e))?;
                self.opened = true;
                self.check_copy(child.pid(), fd)?;
                let result = act();
                child.release().ctx("release the inheriting child")?;
                result
            }
            // The parked-call window is built by its own probe around the
            // creating call; there is nothing to open here.
            (Window::PosixSpawn | Window::ParkedCall | Window::InProcess, _) => act(),
        }
    }

    /// The fork window held by a copy of `fd` passed to `holder` (`--hold-by
    /// pass`), checked as a forked child's copy is, though at its own number.
    fn passed_copy_window<T>(
        &mut self,
        holder: &CopyHolder,
        fd: Option<RawFd>,
        act: impl FnOnce() -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        // SAFETY: the caller's descriptor, open for this call.
        let borrow = |fd| unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let theirs = fd
            .map(|fd| holder.hold(borrow(fd)))
            .transpose()
            .map_err(|e| holder_fault("pass the copy to the holder", e))?;
        self.opened = true;
        let copied = match (fd, theirs) {
            (Some(ours), Some(theirs)) => {
                fdwindow_fix::sys::same_open_file_as(holder.pid(), theirs, ours)
                    .map_err(|e| copy_fault(ours, e))
            }
            _ => Ok(false),
        };
        let result = copied.and_then(|copied| {
            self.tally(COPY_TALLY, if copied { COPY_HELD } else { COPY_NONE });
            self.confirm_copy(copied)?;
            act()
        });
        // Every path lets the holder close its copy before the next trial.
        holder.release().ctx("let the holder close its copies")?;
        result
    }

    /// For a trial that spawned its own child ([`Trial::own_spawn`]) while
    /// its `fds` are open: whether child `pid` holds the same open file as
    /// any of them, tallied once as [`COPY_TALLY`]. A child holding none
    /// does not refuse the trial, as in [`Trial::during_window`]: here the
    /// copy is what the trial measures, compared by identity, not number.
    pub fn child_holds(&mut self, pid: u32, fds: &[RawFd]) -> Result<bool, Fault> {
        let mut copied = false;
        for &fd in fds {
            copied |= same_open_file(pid, fd)?;
        }
        self.tally(COPY_TALLY, if copied { COPY_HELD } else { COPY_NONE });
        Ok(copied)
    }

    /// For a trial that opens its window by hand ([`Trial::own_spawn`]) and
    /// needs the copy to mean anything: the check [`Trial::during_window`]
    /// makes, that child `pid` holds the trial's `fd`.
    pub fn require_copy(&mut self, pid: u32, fd: RawFd) -> Result<(), Fault> {
        self.check_copy(pid, Some(fd))
    }

    /// Tallies whether the window's child `pid` holds the trial's `fd` (the
    /// same open file), and refuses the trial when it must and does not.
    fn check_copy(&mut self, pid: u32, fd: Option<RawFd>) -> Result<(), Fault> {
        // No descriptor of its own: the child holds none, tallied as such.
        let copied = self.child_holds(pid, fd.as_slice())?;
        self.confirm_copy(copied)
    }

    /// Refuses the trial when the window holds no copy and the arm needs one.
    fn confirm_copy(&self, copied: bool) -> Result<(), Fault> {
        if copied || self.copy_waived {
            Ok(())
        } else {
            Err(Fault::NotConfirmed(NO_COPY.into()))
        }
    }
}

/// [`fdwindow_fix::sys::same_open_file`], its failure a fault: unsupported
/// where the OS cannot tell, else the trial is unconfirmed.
fn same_open_file(pid: u32, fd: RawFd) -> Result<bool, Fault> {
    fdwindow_fix::sys::same_open_file(pid, fd).map_err(|e| copy_fault(fd, e))
}

/// A failed comparison of a copy of `fd`, as a fault.
fn copy_fault(fd: RawFd, e: io::Error) -> Fault {
    let why = format!("compare the child's copy of descriptor {fd}: {e}");
    match e.kind() {
        io::ErrorKind::Unsupported => Fault::Unsupported(why),
        _ => Fault::NotConfirmed(why),
    }
}

/// The tally of a fork-window or inherited trial that opened its window, or
/// asked of its own child ([`Trial::child_holds`]): whether the child held
/// the trial's descriptor ([`COPY_HELD`]) or none ([`COPY_NONE`]).
pub const COPY_TALLY: &str = "child-copy";
/// [`COPY_TALLY`]'s value when the child held the same open file.
pub const COPY_HELD: &str = "held";
/// [`COPY_TALLY`]'s value when it did not.
pub const COPY_NONE: &str = "none";

/// Why a trial whose window's child held no copy of its descriptor is
/// unconfirmed (where its arm does not declare `no_copy`).
pub const NO_COPY: &str = "the window's child held no copy of the trial's descriptor";

/// Why a fork-window or inherited trial that never opened its window is
/// unconfirmed.
pub const NEVER_OPENED: &str =
    "the trial never opened its window: no child held its descriptors (Trial::during_window)";

/// A window's holder that failed to start: a child that never reached the
/// window (or never echoed its exec) in time leaves the trial unconfirmed,
/// which is not a setup failure; any other error is.
fn holder_fault(what: &str, e: io::Error) -> Fault {
    if e.kind() == io::ErrorKind::TimedOut {
        Fault::NotConfirmed(format!("{what}: {e}"))
    } else {
        Fault::Broken(format!("{what}: {e}"))
    }
}

// The process's interrupt flag lives in the base, where the fix helpers
// that stop at an interrupt can reach it; the harness is where probes and
// the CLI look for it.
pub use fdwindow_fix::base::interrupts::{catch_interrupts, interrupted};

/// Trial settings; the defaults come from the probe's declaration.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// The most trials per arm in a deterministic or in-process window.
    pub trials: u64,
    /// Time per arm in the posix-spawn race, over all its blocks.
    pub race: Duration,
    /// Also measure what only a thorough run measures (`--thorough`): the
    /// spawn cost swept over `RLIMIT_NOFILE`, and every mitigation in the
    /// race windows ([`races`]), each raced until its verdict is decided or
    /// [`THOROUGH_RACE_ROUNDS`] blocks have run.
    pub thorough: bool,
    /// When to stop starting race rounds (a round is one block of each
    /// racing arm, so the last may end a round's length after it), so the
    /// probe reports before its runner's timeout kills it (`--deadline-ms`,
    /// from the probe's start).
    pub deadline: Option<Instant>,
    /// How the fork window holds the trial's descriptor (`--hold-by`):
    /// [`HoldBy::Fork`], a child parked between fork and exec, the window
    /// itself; [`HoldBy::Pass`], a copy passed to one holder process, as
    /// `fdwindow audit` holds a close (to compare the two: `fdwindow run`
    /// never asks for it, and the report's scope says it).
    pub hold_by: HoldBy,
}

/// How many interleaved blocks (rounds) a race window's arms run in by
/// default: every control races this many, and no arm more in a default run.
pub const RACE_BLOCKS: u32 = 4;

/// The most rounds a thorough run gives one arm in a race window (its
/// budget: 16 times a default run's time per arm), when the Fisher rule has
/// not decided it sooner.
pub const THOROUGH_RACE_ROUNDS: u32 = 64;

#[derive(Parser, Debug)]
#[command(about = "An fdwindow probe: prints its report as JSON on stdout.")]
struct ProbeArgs {
    /// Most trials per arm in a deterministic window (fork-window, inherited, parked-call,
    /// in-process); a deterministic cell stops at 7 once its verdict is decided.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    trials: Option<u64>,
    /// Milliseconds per arm in the posix-spawn race.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    race_ms: Option<u64>,
    /// Run only these arms (repeatable).
    #[arg(long = "arm", value_name = "ARM")]
    arms: Vec<String>,
    /// Also make the slow observations a default run leaves out, and race
    /// every mitigation, not only those no deterministic window tests.
    #[arg(long)]
    thorough: bool,
    /// Start no race round (one block of each racing arm) later than this
    /// many milliseconds after the probe started (the runner passes most of
    /// its timeout).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    deadline_ms: Option<u64>,
    /// How the fork window holds each trial's descriptor: fork (a child
    /// parked between fork and exec) or pass (a copy passed to one holder
    /// process, the way `fdwindow audit` holds a close; for comparing them).
    #[arg(long, value_name = "HOW", default_value = "fork", value_parser = ["fork", "pass"])]
    hold_by: String,
}

/// Checks a probe's declaration: unique, non-empty ids; a kind for every
/// in-process arm and none elsewhere; every mitigation and sham has a control
/// in each of its windows; a sham is `<mitigation>-sham` of a declared
/// mitigation; controls name no control and make no argument.
pub fn check(probe: &Probe) -> Result<(), String> {
    for (i, arm) in probe.arms.iter().enumerate() {
        let bad = |why: &str| Err(format!("{} arm {:?}: {why}", probe.hazard, arm.id));
        if arm.id.is_empty() || arm.windows.is_empty() {
            return bad("needs an id and at least one window");
        }
        if probe.arms[..i].iter().any(|a| a.id == arm.id) {
            return bad("declared twice");
        }
        for &w in arm.windows {
            match (w.kind(), arm.kind) {
                (None, None) => return bad("an in-process arm must declare its kind"),
                (Some(k), Some(declared)) if k != declared => {
                    return bad(&format!(
                        "declares {} but {} is {}",
                        declared.id(),
                        w.id(),
                        k.id()
                    ));
                }
                (None, Some(declared))
                    if crate::report::in_process_kind(probe.hazard) != Some(declared) =>
                {
                    return bad(&format!(
                        "declares {} in-process, but report::IN_PROCESS_KINDS says {}",
                        declared.id(),
                        crate::report::in_process_kind(probe.hazard)
                            .map_or("nothing for this hazard", Kind::id)
                    ));
                }
                _ => {}
            }
            if arm.role != Role::Control && control_for(probe, arm, w).is_none() {
                return bad(&format!("no control to judge it against in {}", w.id()));
            }
        }
        if !arm.no_copy.is_empty() && arm.role != Role::Mitigation {
            return bad(
                "only a mitigation may declare no_copy: a control or sham must show the copy",
            );
        }
        if let Some(w) = arm
            .no_copy
            .iter()
            .find(|w| !w.needs_a_holder() || !arm.windows.contains(w))
        {
            return bad(&format!(
                "declares no_copy in {}, which is not a fork-window or inherited window it runs in",
                w.id()
            ));
        }
        match arm.role {
            Role::Control if arm.against.is_some() || arm.avoids.is_some() => {
                return bad("a control has no control and no avoids argument");
            }
            Role::Sham => {
                let fixed = arm.id.strip_suffix("-sham");
                if !fixed.is_some_and(|m| {
                    probe
                        .arms
                        .iter()
                        .any(|a| a.id == m && a.role == Role::Mitigation)
                }) {
                    return bad("a sham is named <mitigation>-sham after a declared mitigation");
                }
                if arm.avoids.is_some() {
                    return bad("a sham makes no avoids argument");
                }
            }
            Role::Control | Role::Mitigation => {}
        }
        let shammed: Vec<bool> = arm
            .windows
            .iter()
            .map(|&w| sham_of(probe, arm, w).is_some())
            .collect();
        if arm.avoids.is_some() && shammed.contains(&true) {
            return bad("an avoids arm has no sham: no trial can test it");
        }
        // Whether a fix's code differs from its control in more than the fix
        // is decided per arm, so a sham-tested fix has its sham in every
        // window it runs in; otherwise one window would judge it without the
        // evidence another says it needs. A sham that tests its window rather
        // than the code is set apart (`Window::sham_tests_the_window`).
        let elsewhere: Vec<(Window, bool)> = arm
            .windows
            .iter()
            .copied()
            .zip(shammed.iter().copied())
            .filter(|&(w, _)| !w.sham_tests_the_window())
            .collect();
        if elsewhere.iter().any(|&(_, s)| s) && elsewhere.iter().any(|&(_, s)| !s) {
            let missing: Vec<&str> = elsewhere
                .iter()
                .filter(|&&(_, s)| !s)
                .map(|(w, _)| w.id())
                .collect();
            return bad(&format!(
                "has a sham in some windows but not in {}: a sham-tested fix has its sham wherever it runs",
                missing.join(", ")
            ));
        }
    }
    Ok(())
}

/// The control `arm` is judged against in `window`: the one it names, or the
/// first control declared there.
fn control_for(probe: &Probe, arm: &Arm, window: Window) -> Option<&'static str> {
    probe
        .arms
        .iter()
        .filter(|a| a.role == Role::Control && a.windows.contains(&window))
        .find(|a| arm.against.is_none_or(|named| named == a.id))
        .map(|a| a.id)
}

/// The sham of mitigation `arm` in `window`, if it declares one there.
fn sham_of(probe: &Probe, arm: &Arm, window: Window) -> Option<&'static str> {
    if arm.role != Role::Mitigation {
        return None;
    }
    probe
        .arms
        .iter()
        .find(|a| {
            a.role == Role::Sham
                && a.windows.contains(&window)
                && a.id.strip_suffix("-sham") == Some(arm.id)
        })
        .map(|a| a.id)
}

/// The variable through which `fdwindow run` gives each probe its own pid:
/// the probe ends, with every child in its process group, when that runner
/// dies ([`fdwindow_fix::sys::exit_with_parent`]; on Linux the runner's
/// parent-death signal does it, and this variable is not needed).
pub const PARENT_ENV: &str = "FDWINDOW_RUNNER_PID";

/// Watches the runner that [`PARENT_ENV`] names, when it is this process's
/// parent (a child that inherited the variable has another parent).
fn follow_runner() {
    let Some(runner) = std::env::var(PARENT_ENV)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
    else {
        return;
    };
    // Where the watch cannot be set up, the probe runs as before: the
    // runner's timeout ends it while the runner lives.
    let _ = fdwindow_fix::sys::exit_with_parent(runner);
}

/// `fdwindow probe HAZARD`: this program again, running one probe in a
/// process of its own (the runner's way to keep one probe's descriptors and
/// children from another's measurement; a probe's own helpers re-execute it
/// the same way). Arguments follow.
pub fn probe_command(hazard: &str) -> std::io::Result<std::process::Command> {
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["probe", hazard]);
    Ok(cmd)
}

/// A probe's `main` (`fdwindow probe HAZARD ARGS`): parses `args`, runs the
/// probe, prints the report. Exit status 2 on bad input, 130 when
/// interrupted, 141 when stdout or stderr was closed by its reader, 1 after
/// another failed write (every line goes through [`crate::base::out`]).
pub fn main(probe: &Probe, args: Vec<String>) -> ExitCode {
    let name = format!("fdwindow probe {}", probe.hazard);
    let args = match out::parse_args_from::<ProbeArgs, _, _>(std::iter::once(name).chain(args)) {
        Ok(args) => args,
        Err(status) => return status,
    };
    if let Err(e) = check(probe) {
        out::note!("error: bad probe declaration: {e}");
        return out::status(ExitCode::FAILURE);
    }
    if let Some(unknown) = args
        .arms
        .iter()
        .find(|a| !probe.arms.iter().any(|arm| arm.id == *a))
    {
        let known: Vec<_> = probe.arms.iter().map(|a| a.id).collect();
        out::note!(
            "error: {} has no arm {unknown:?}; its arms: {}",
            probe.hazard,
            known.join(", ")
        );
        return out::status(ExitCode::from(2));
    }
    let settings = Settings {
        trials: args.trials.unwrap_or(probe.trials),
        race: args.race_ms.map_or(probe.race, Duration::from_millis),
        thorough: args.thorough,
        deadline: args
            .deadline_ms
            .map(|ms| Instant::now() + Duration::from_millis(ms)),
        hold_by: match args.hold_by.as_str() {
            "pass" => HoldBy::Pass,
            _ => HoldBy::Fork,
        },
    };
    catch_interrupts();
    follow_runner();
    let status = match run(probe, settings, &args.arms) {
        Ok(report) => match serde_json::to_string_pretty(&report) {
            Ok(json) => {
                out::stdout(&(json + "\n"));
                ExitCode::SUCCESS
            }
            Err(e) => {
                out::note!("error: writing the report: {e}");
                ExitCode::FAILURE
            }
        },
        Err(RunError::Interrupted) => {
            out::note!(
                "{}: interrupted; children reaped, scratch removed",
                probe.hazard
            );
            fdwindow_fix::base::interrupts::exit_code()
        }
        Err(RunError::Setup(e)) => {
            out::note!("error: {}: {e}", probe.hazard);
            ExitCode::FAILURE
        }
    };
    out::status(status)
}

/// Why a whole probe run stopped.
#[derive(Debug)]
pub enum RunError {
    /// SIGINT or SIGTERM.
    Interrupted,
    /// The scratch folder could not be made.
    Setup(io::Error),
}

/// Whether a deterministic window also tests `arm` here (fork-window,
/// inherited, a deterministic in-process cell, or parked-call when this
/// process has the interposer): such a window decides its verdict in a
/// handful of trials, so a default run leaves it out of the race windows.
/// Without the interposer the parked-call cells are `unsupported`, so std's
/// constructors race instead of going unmeasured.
pub fn covered(arm: &Arm) -> bool {
    covered_with(arm, parked::Interposer::find().is_ok())
}

/// [`covered`], given whether the parked-call window can run here.
fn covered_with(arm: &Arm, parked_call_runs: bool) -> bool {
    arm.windows.iter().any(|&w| {
        !w.is_race()
            && w.kind().or(arm.kind) == Some(Kind::Deterministic)
            && (w != Window::ParkedCall || parked_call_runs)
    })
}

/// Whether `arm` runs in the race windows it declares: in a thorough run
/// every arm does; in a default run the controls (their natural rate: how
/// often the hazard bites a busy process) and the mitigations that no
/// deterministic window covers ([`covered`]), with their shams.
pub fn races(probe: &Probe, arm: &Arm, thorough: bool) -> bool {
    races_with(probe, arm, thorough, parked::Interposer::find().is_ok())
}

/// [`races`], given whether the parked-call window can run (in this
/// process, or in the run a report comes from: `fdwindow check` reads it
/// from the report's own parked-call cells).
pub fn races_with(probe: &Probe, arm: &Arm, thorough: bool, parked_call_runs: bool) -> bool {
    if thorough {
        return true;
    }
    let covered = |a: &Arm| covered_with(a, parked_call_runs);
    match arm.role {
        Role::Control => true,
        Role::Mitigation => !covered(arm),
        Role::Sham => arm.id.strip_suffix("-sham").is_none_or(|fixed| {
            probe
                .arms
                .iter()
                .filter(|a| a.id == fixed && a.role == Role::Mitigation)
                .all(|a| !covered(a))
        }),
    }
}

/// Why a default run leaves a cell out ([`races`]), as its report says.
pub const THOROUGH_ONLY: &str =
    "not measured in a default run (`--thorough`): a deterministic window decides this arm";

type Cells<'p> = Vec<(&'p Arm, Window, Cell)>;

/// Runs every arm (or those named in `only`) in every window it declares:
/// the deterministic and in-process cells arm by arm (controls, then shams,
/// then mitigations, each stopped once the report's judgement has what it
/// needs), then each race window's arms in interleaved rounds ([`races`]
/// says which arms race).
pub fn run(probe: &Probe, settings: Settings, only: &[String]) -> Result<ProbeReport, RunError> {
    let started = Instant::now();
    let started_at = utc_now();
    let platform = Platform::detect();
    let scratch = Scratch::new(probe.hazard).map_err(RunError::Setup)?;
    // Forked before any trial's descriptor exists, so it holds none of theirs.
    let holder = match settings.hold_by {
        HoldBy::Pass => Some(CopyHolder::start().map_err(RunError::Setup)?),
        HoldBy::Fork => None,
    };
    let ground = Ground {
        scratch: &scratch,
        holder: holder.as_ref(),
    };
    let chosen: Vec<&Arm> = probe
        .arms
        .iter()
        .filter(|a| only.is_empty() || only.iter().any(|o| o == a.id))
        .collect();
    let mut cells: Cells<'_> = Vec::new();
    let mut left_out = Vec::new();
    for arm in &chosen {
        for &window in arm.windows {
            if window.is_race() && !races(probe, arm, settings.thorough) {
                left_out.push(LeftOut {
                    arm: arm.id.to_owned(),
                    role: arm.role,
                    window,
                    against: match arm.role {
                        Role::Control => None,
                        Role::Mitigation | Role::Sham => {
                            control_for(probe, arm, window).map(str::to_owned)
                        }
                    },
                    why: THOROUGH_ONLY.to_owned(),
                });
            } else {
                cells.push((arm, window, Cell::default()));
            }
        }
    }
    // Controls first, so a mitigation is judged against its control's final
    // count; then shams, whose verdict a sham-tested mitigation's needs.
    let mut order: Vec<usize> = (0..cells.len())
        .filter(|&i| !cells[i].1.is_race())
        .collect();
    order.sort_by_key(|&i| match cells[i].0.role {
        Role::Control => 0,
        Role::Sham => 1,
        Role::Mitigation => 2,
    });
    let cap = settings.trials;
    let floor = cap.min(MIN_DETERMINISTIC_TRIALS);
    for i in order {
        let (arm, window, cell) = &mut cells[i];
        run_block(arm, *window, floor, cap, None, None, &ground, cell)?;
        while cells[i].2.trials < cap
            && cells[i].2.fault.is_none()
            && !cells[i].2.gave_up
            && !settled(probe, &cells, i, &platform)
        {
            let (arm, window, cell) = &mut cells[i];
            run_block(arm, *window, 1, cap, None, None, &ground, cell)?;
        }
    }
    for race_window in Window::ALL.into_iter().filter(|w| w.is_race()) {
        let block = settings.race / RACE_BLOCKS;
        let max_rounds = if settings.thorough {
            THOROUGH_RACE_ROUNDS
        } else {
            RACE_BLOCKS
        };
        let active: Vec<usize> = (0..cells.len())
            .filter(|&i| cells[i].1 == race_window)
            .collect();
        let race_cap = u64::from(max_rounds) * MIN_DETERMINISTIC_TRIALS;
        let cells = std::cell::RefCell::new(&mut cells);
        race_rounds(
            active,
            max_rounds,
            settings.deadline,
            |i| {
                let mut cells = cells.borrow_mut();
                let (arm, window, cell) = &mut cells[i];
                if cell.fault.is_some() {
                    return Ok(());
                }
                let end = Instant::now() + block;
                // The race thread ends by itself a minute after the block,
                // should this thread never stop it.
                match SpawnRace::start(end + Duration::from_secs(60)) {
                    Ok(race) => run_block(
                        arm,
                        *window,
                        1,
                        race_cap,
                        Some(end),
                        Some(race),
                        &ground,
                        cell,
                    ),
                    Err(e) => {
                        cell.fault = Some(Fault::Broken(format!("start the spawn race: {e}")));
                        Ok(())
                    }
                }
            },
            |active, rounds| still_racing(probe, &cells.borrow(), active, rounds, &platform),
        )?;
    }
    if interrupted() {
        return Err(RunError::Interrupted);
    }
    let arms = cells
        .iter()
        .map(|(arm, window, cell)| arm_report(probe, arm, *window, cell, &platform))
        .collect();
    let tables = probe
        .observe
        .map_or_else(Vec::new, |observe| observe(&scratch, settings));
    if interrupted() {
        return Err(RunError::Interrupted);
    }
    Ok(ProbeReport {
        schema: SCHEMA_VERSION,
        hazard: probe.hazard.to_owned(),
        about: probe.about.to_owned(),
        fdwindow_version: env!("CARGO_PKG_VERSION").to_owned(),
        platform,
        started_at,
        elapsed_ms: started.elapsed().as_millis() as u64,
        arms,
        tables,
        left_out,
        scope: Some(Scope {
            only: only.to_vec(),
            thorough: settings.thorough,
            trials: settings.trials,
            race_ms: u64::try_from(settings.race.as_millis()).unwrap_or(u64::MAX),
            // The runner names the run's other probes when it files this.
            probes: Vec::new(),
            held_by: (settings.hold_by == HoldBy::Pass).then(|| HoldBy::Pass.id().to_owned()),
        }),
    })
}

/// One cell as its report shows it.
fn arm_report(
    probe: &Probe,
    arm: &Arm,
    window: Window,
    cell: &Cell,
    platform: &Platform,
) -> ArmReport {
    let kind = window.kind().or(arm.kind).unwrap_or(Kind::Statistical);
    let part = declared(probe, arm, window);
    ArmReport {
        arm: arm.id.to_owned(),
        role: part.role,
        window,
        kind,
        emulated: crate::report::verdict::emulated(platform, kind, arm.timed),
        about: arm.about.to_owned(),
        against: part.against.map(str::to_owned),
        sham: part.sham.map(str::to_owned),
        avoids: part.avoids.map(str::to_owned),
        outcome: cell.outcome(),
    }
}

/// An arm's part in one window: what its report says of its role, its
/// control, its sham and its argument ([`declared`] gives what this build
/// declares; `fdwindow check` compares a report's against it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Declared<'a> {
    /// Control, mitigation or sham.
    pub role: Role,
    /// The control it is judged against (none for a control).
    pub against: Option<&'a str>,
    /// Its sham in this window, if it has one.
    pub sham: Option<&'a str>,
    /// Its `avoids` argument, if it declares one.
    pub avoids: Option<&'a str>,
}

impl<'a> Declared<'a> {
    /// The part a report's cell says it plays.
    pub fn of(cell: &'a ArmReport) -> Declared<'a> {
        Declared {
            role: cell.role,
            against: cell.against.as_deref(),
            sham: cell.sham.as_deref(),
            avoids: cell.avoids.as_deref(),
        }
    }
}

impl std::fmt::Display for Declared<'_> {
    /// `mitigation vs close, sham unlock-sham, avoids`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.role.id())?;
        if let Some(control) = self.against {
            write!(f, " vs {control}")?;
        }
        if let Some(sham) = self.sham {
            write!(f, ", sham {sham}")?;
        }
        if self.avoids.is_some() {
            f.write_str(", avoids")?;
        }
        Ok(())
    }
}

/// `arm`'s part in `window`: the one rule [`arm_report`] writes reports by,
/// and `fdwindow check` holds results files to, so a file cannot judge a fix
/// against another control than its probe names.
pub fn declared(probe: &Probe, arm: &Arm, window: Window) -> Declared<'static> {
    Declared {
        role: arm.role,
        against: match arm.role {
            Role::Control => None,
            Role::Mitigation | Role::Sham => control_for(probe, arm, window),
        },
        sham: sham_of(probe, arm, window),
        avoids: arm.avoids,
    }
}

/// The judgement on cell `i` as the cells stand now: the report's own
/// [`ProbeReport::judgement`] on a report of these counts, so a run stops an
/// arm by the very rule that later judges it.
fn judge_now(probe: &Probe, cells: &Cells<'_>, i: usize, platform: &Platform) -> Judgement {
    let report = ProbeReport {
        schema: SCHEMA_VERSION,
        hazard: probe.hazard.to_owned(),
        about: String::new(),
        fdwindow_version: String::new(),
        platform: platform.clone(),
        started_at: String::new(),
        elapsed_ms: 0,
        arms: cells
            .iter()
            .map(|(arm, window, cell)| arm_report(probe, arm, *window, cell, platform))
            .collect(),
        tables: Vec::new(),
        left_out: Vec::new(),
        scope: None,
    };
    report.judgement(&report.arms[i])
}

/// Whether a trial-counted cell (not a race) has what its verdict needs, so
/// further trials are waste: a deterministic control once it is all hits or
/// none (7/7 against a fix's 0/7 is p = 2.9e-4); a deterministic mitigation
/// or sham once the report's judgement is decided. A statistical control
/// runs all its trials: its rate is the measurement its fixes are judged
/// against. A statistical mitigation or sham stops early only at a hit
/// (`invalid`, `present`: no later trial can undo it); its `valid` or
/// `absent` rests on 0 hits, which every further trial could still break,
/// so it runs all its trials too.
fn settled(probe: &Probe, cells: &Cells<'_>, i: usize, platform: &Platform) -> bool {
    let (arm, window, cell) = &cells[i];
    let deterministic = window.kind().or(arm.kind) == Some(Kind::Deterministic);
    match arm.role {
        Role::Control => deterministic && (cell.hits == 0 || cell.hits == cell.trials),
        Role::Mitigation | Role::Sham => {
            let verdict = judge_now(probe, cells, i, platform).verdict;
            verdict.is_decided()
                && (deterministic || matches!(verdict, Verdict::Invalid | Verdict::Present))
        }
    }
}

/// Which of a race window's cells (`window`) race another round after
/// `rounds` rounds: a control for a default run's [`RACE_BLOCKS`] rounds,
/// and after that while any arm judged against it is undecided; a sham while
/// the report's judgement has not decided it (its verdict rests on its own
/// count alone); a mitigation while undecided, and also in every round its
/// control races unless a hit has made it `invalid` (or it `avoids`): a
/// verdict that rests on the control's count (`valid`, `not-needed`) must
/// rest on blocks the fix shared, so load drift in rounds it sat out cannot
/// decide it (DESIGN.md: interleaved blocks). A faulted cell stops.
fn still_racing(
    probe: &Probe,
    cells: &Cells<'_>,
    window: &[usize],
    rounds: u32,
    platform: &Platform,
) -> Vec<usize> {
    let verdicts: Vec<(usize, Verdict)> = window
        .iter()
        .copied()
        .filter(|&i| cells[i].2.fault.is_none() && cells[i].0.role != Role::Control)
        .map(|i| (i, judge_now(probe, cells, i, platform).verdict))
        .collect();
    let verdict_of = |i: usize| verdicts.iter().find(|&&(j, _)| j == i).map(|&(_, v)| v);
    let against = |i: usize| control_for(probe, cells[i].0, cells[i].1);
    let racing_controls: Vec<&str> = window
        .iter()
        .copied()
        .filter(|&i| {
            let (arm, _, cell) = &cells[i];
            arm.role == Role::Control
                && cell.fault.is_none()
                && (rounds < RACE_BLOCKS
                    || verdicts
                        .iter()
                        .any(|&(j, v)| !v.is_decided() && against(j) == Some(arm.id)))
        })
        .map(|i| cells[i].0.id)
        .collect();
    window
        .iter()
        .copied()
        .filter(|&i| {
            let (arm, _, cell) = &cells[i];
            if cell.fault.is_some() {
                return false;
            }
            match (arm.role, verdict_of(i)) {
                (Role::Control, _) => racing_controls.contains(&arm.id),
                (Role::Sham, Some(v)) => !v.is_decided(),
                (Role::Mitigation, Some(v)) => {
                    !v.is_decided()
                        || (!matches!(v, Verdict::Invalid | Verdict::Avoids)
                            && against(i).is_some_and(|c| racing_controls.contains(&c)))
                }
                (Role::Sham | Role::Mitigation, None) => false,
            }
        })
        .collect()
}

/// Runs a race window's cells (`window`) in interleaved rounds, one block
/// of each racing cell per round in declaration order, so control and
/// mitigations share the machine's conditions; after each round `keep`
/// says which of the window's cells race the next. Stops when none does,
/// after `max_rounds` (the per-arm budget), or once `deadline` has passed.
/// Returns the rounds run.
fn race_rounds<E>(
    window: Vec<usize>,
    max_rounds: u32,
    deadline: Option<Instant>,
    mut block: impl FnMut(usize) -> Result<(), E>,
    mut keep: impl FnMut(&[usize], u32) -> Vec<usize>,
) -> Result<u32, E> {
    let mut active = window.clone();
    let mut rounds = 0;
    while !active.is_empty() && rounds < max_rounds && deadline.is_none_or(|d| Instant::now() < d) {
        for &i in &active {
            block(i)?;
        }
        rounds += 1;
        active = keep(&window, rounds);
    }
    Ok(rounds)
}

/// One cell's counts so far, over all its blocks.
#[derive(Debug, Default)]
struct Cell {
    trials: u64,
    hits: u64,
    broken_trials: u64,
    iterations: u64,
    tallies: Tallies,
    fault: Option<Fault>,
    /// Too many unconfirmed trials: no more are tried.
    gave_up: bool,
    /// Time spent in its blocks, reported as the tally `time-ms`.
    elapsed: Duration,
}

/// The tally that holds a cell's own time, in milliseconds (`total`): where
/// a run spends its time, per arm and window.
pub const TIME_TALLY: &str = "time-ms";

impl Cell {
    fn outcome(&self) -> Outcome {
        match &self.fault {
            Some(Fault::Unsupported(reason)) => Outcome::Unsupported {
                reason: reason.clone(),
            },
            Some(Fault::Broken(error) | Fault::NotConfirmed(error)) => Outcome::Broken {
                error: error.clone(),
            },
            None => {
                let mut tallies = self.tallies.clone();
                if self.iterations != self.trials {
                    tallies
                        .entry("loop-iterations".into())
                        .or_default()
                        .insert("total".into(), self.iterations);
                }
                tallies
                    .entry(TIME_TALLY.into())
                    .or_default()
                    .insert("total".into(), self.elapsed.as_millis() as u64);
                Outcome::Observed {
                    trials: self.trials,
                    hits: self.hits,
                    broken_trials: self.broken_trials,
                    tallies,
                }
            }
        }
    }
}

/// Which spawns of the race a hit marks: those in progress when the trial
/// ended (else the latest), numbered from 1 in start order.
#[derive(Debug, Default)]
struct SpawnHits {
    /// The highest spawn number already counted as a hit.
    last_hit: u64,
    hits: u64,
}

impl SpawnHits {
    /// Marks spawns `first..=last` (clipped to those started in this block,
    /// `1..=started`) as hits, counting each spawn once.
    fn mark(&mut self, first: u64, last: u64, started: u64) {
        let last = last.min(started);
        let first = first.max(self.last_hit + 1).max(1);
        if first <= last {
            self.hits += last - first + 1;
            self.last_hit = last;
        }
    }
}

/// Runs one arm in one window until it has `trials` more confirmed trials
/// (no race) or until `deadline` (a race block, at least one spawn), adding
/// to `cell`; `cap` (the cell's most trials) bounds its unconfirmed ones.
#[allow(clippy::too_many_arguments)]
fn run_block(
    arm: &Arm,
    window: Window,
    trials: u64,
    cap: u64,
    deadline: Option<Instant>,
    race: Option<SpawnRace>,
    ground: &Ground<'_>,
    cell: &mut Cell,
) -> Result<(), RunError> {
    let began = Instant::now();
    let result = block_trials(arm, window, trials, cap, deadline, race, ground, cell);
    cell.elapsed += began.elapsed();
    result
}

/// What every trial of a run shares: the scratch folder and, with
/// `--hold-by pass`, the holder of passed copies.
#[derive(Debug)]
struct Ground<'a> {
    scratch: &'a Scratch,
    holder: Option<&'a CopyHolder>,
}

/// [`run_block`]'s trials.
#[allow(clippy::too_many_arguments)]
fn block_trials(
    arm: &Arm,
    window: Window,
    trials: u64,
    cap: u64,
    deadline: Option<Instant>,
    race: Option<SpawnRace>,
    ground: &Ground<'_>,
    cell: &mut Cell,
) -> Result<(), RunError> {
    let mut own_spawns = None::<bool>;
    let mut spawn_hits = SpawnHits::default();
    let mut confirmed = 0u64;
    // Unconfirmed trials are retried, but boundedly over the whole cell: a
    // window that never confirms leaves the cell broken, not looping.
    let max_unconfirmed = cap.max(MIN_DETERMINISTIC_TRIALS) * 2;
    loop {
        if cell.gave_up {
            break;
        }
        if interrupted() {
            return Err(RunError::Interrupted);
        }
        let enough = match (&race, deadline) {
            (Some(race), Some(end)) => {
                Instant::now() >= end && (race.started() > 0 || own_spawns == Some(true))
            }
            _ => confirmed >= trials,
        };
        if enough || cell.trials >= MAX_TRIALS / 2 {
            break;
        }
        if let Some(race) = &race
            && !race.is_running()
        {
            break;
        }
        let finished_before = race.as_ref().map_or(0, SpawnRace::finished);
        let mut trial = Trial {
            window,
            scratch: ground.scratch,
            holder: ground.holder,
            tallies: &mut cell.tallies,
            own_spawn: false,
            opened: false,
            copy_waived: arm.no_copy.contains(&window),
            paths: Default::default(),
            socket_dirs: Default::default(),
        };
        let result = match (arm.trial)(&mut trial) {
            // A window built on purpose must have been built: a trial that
            // ran its code with no child holding its descriptors measured
            // nothing (it would read as a miss, and a fix as valid).
            Ok(_) if window.needs_a_holder() && !trial.opened && !trial.own_spawn => {
                Err(Fault::NotConfirmed(NEVER_OPENED.into()))
            }
            result => result,
        };
        let own = trial.own_spawn;
        for path in trial.paths.take() {
            // Most are plain files; a trial may have made a folder; some paths
            // were never created. What is left goes with the scratch folder.
            if std::fs::remove_file(&path).is_err() {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
        match result {
            Ok(hit) => {
                confirmed += 1;
                cell.iterations += 1;
                match &race {
                    Some(race) if !*own_spawns.get_or_insert(own) => {
                        if hit {
                            // The copy that showed the hazard belongs to a
                            // spawn still running when the trial looked (a
                            // spawn counts as finished only once its child
                            // is reaped): one in progress now, else the
                            // latest, which ended since.
                            let (finished, started) = (race.finished(), race.started());
                            let first = (finished + 1).min(started).max(finished_before + 1);
                            spawn_hits.mark(first, started, started);
                        }
                    }
                    _ => {
                        cell.trials += 1;
                        cell.hits += u64::from(hit);
                    }
                }
            }
            Err(Fault::NotConfirmed(why)) => {
                cell.broken_trials += 1;
                if cell.broken_trials > max_unconfirmed {
                    cell.gave_up = true;
                    // Give up, keeping the counts: with fewer confirmed
                    // trials than the minimum the verdict is `broken`.
                    cell.tallies
                        .entry("last-unconfirmed".into())
                        .or_default()
                        .insert(why, 1);
                    break;
                }
            }
            Err(fault) => {
                cell.fault = Some(fault);
                break;
            }
        }
    }
    if let Some(race) = race {
        match race.stop() {
            Ok(spawns) => {
                if own_spawns != Some(true) {
                    // Every spawn started while the loop ran is one trial.
                    cell.trials = cell.trials.saturating_add(spawns);
                    cell.hits = cell.hits.saturating_add(spawn_hits.hits.min(spawns));
                }
                *cell
                    .tallies
                    .entry("race-spawns".into())
                    .or_default()
                    .entry("total".into())
                    .or_default() += spawns;
            }
            Err(e) if cell.fault.is_none() => {
                cell.fault = Some(Fault::Broken(format!("the spawn race failed: {e}")));
            }
            Err(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_hit_marks_each_overlapping_spawn_once() {
        let mut h = SpawnHits::default();
        h.mark(1, 1, 1);
        h.mark(1, 2, 2); // spawn 1 again, and spawn 2
        h.mark(3, 5, 4); // clipped to the spawns started
        assert_eq!(h.hits, 4);
        h.mark(2, 2, 9); // already counted
        assert_eq!(h.hits, 4);
    }

    fn ok(_: &mut Trial<'_>) -> Result<bool, Fault> {
        Ok(false)
    }

    /// Every other trial cannot confirm its window.
    fn flaky(_: &mut Trial<'_>) -> Result<bool, Fault> {
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        if CALLS.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
            Err(Fault::NotConfirmed("not seen parked".into()))
        } else {
            Ok(true)
        }
    }

    fn never(_: &mut Trial<'_>) -> Result<bool, Fault> {
        Err(Fault::NotConfirmed("not seen parked".into()))
    }

    fn hit(_: &mut Trial<'_>) -> Result<bool, Fault> {
        Ok(true)
    }

    fn settings(trials: u64, thorough: bool) -> Settings {
        Settings {
            trials,
            race: Duration::from_millis(4),
            thorough,
            deadline: None,
            hold_by: HoldBy::Fork,
        }
    }

    fn probe(arms: &'static [Arm]) -> Probe {
        Probe {
            hazard: "posix-lock-drop",
            about: "",
            trials: 10,
            race: Duration::from_millis(4),
            arms,
            observe: None,
        }
    }

    /// A fix that only the parked-call window covers races where the
    /// interposer is missing: its parked-call cells are unsupported there.
    #[test]
    fn a_fix_covered_only_by_parked_call_races_without_the_interposer() {
        use crate::report::verdict::Window::{ParkedCall, PosixSpawn};
        let std_socket = Arm {
            id: "std-socket",
            role: Role::Mitigation,
            windows: &[PosixSpawn, ParkedCall],
            trial: ok,
            ..ARM
        };
        assert!(covered_with(&std_socket, true));
        assert!(!covered_with(&std_socket, false));
        // This test process runs without the interposer.
        assert!(!covered(&std_socket));
        assert!(races(&probe(&[]), &std_socket, false));
    }

    /// A default run races the controls and the fixes no deterministic
    /// window decides; the others are left out, and say so; a thorough run
    /// races them all.
    #[test]
    fn a_default_run_races_no_covered_mitigation() {
        use crate::report::verdict::Window::{InProcess, PosixSpawn};
        static ARMS: &[Arm] = &[
            Arm {
                id: "c",
                windows: &[InProcess, PosixSpawn],
                trial: ok,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
            Arm {
                id: "covered",
                role: Role::Mitigation,
                windows: &[InProcess, PosixSpawn],
                trial: ok,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
            Arm {
                id: "race-only",
                role: Role::Mitigation,
                windows: &[PosixSpawn],
                trial: ok,
                ..ARM
            },
            Arm {
                id: "race-only-sham",
                role: Role::Sham,
                windows: &[PosixSpawn],
                trial: ok,
                ..ARM
            },
        ];
        let p = probe(ARMS);
        assert!(covered(&ARMS[1]) && !covered(&ARMS[2]));
        let raced: Vec<&str> = ARMS
            .iter()
            .filter(|a| races(&p, a, false))
            .map(|a| a.id)
            .collect();
        assert_eq!(raced, ["c", "race-only", "race-only-sham"]);
        assert!(ARMS.iter().all(|a| races(&p, a, true)));
        let r = run(&p, settings(7, false), &[]).unwrap();
        let in_race: Vec<&str> = r
            .arms
            .iter()
            .filter(|a| a.window == PosixSpawn)
            .map(|a| a.arm.as_str())
            .collect();
        assert_eq!(in_race, ["c", "race-only", "race-only-sham"]);
        assert!(
            r.arms
                .iter()
                .filter(|a| a.window == PosixSpawn && a.role == Role::Mitigation)
                .all(|a| !covered(ARMS.iter().find(|d| d.id == a.arm).unwrap()))
        );
        let left: Vec<(&str, Window)> = r
            .left_out
            .iter()
            .map(|l| (l.arm.as_str(), l.window))
            .collect();
        assert_eq!(left, [("covered", PosixSpawn)]);
        assert!(r.find("covered", InProcess).is_some());
        let thorough = run(&p, settings(7, true), &["covered".into()]).unwrap();
        assert!(thorough.find("covered", PosixSpawn).is_some());
        assert!(thorough.left_out.is_empty());
    }

    /// A deterministic control of all hits stops at 7 trials, and so does a
    /// fix that 7/7 against 0/7 decides; a control that missed runs to the
    /// cap, and its fixes with it.
    #[test]
    fn trial_counted_cells_stop_once_decided() {
        use crate::report::verdict::Window::InProcess;
        static ALL_HITS: &[Arm] = &[
            Arm {
                id: "c",
                windows: &[InProcess],
                trial: hit,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
            Arm {
                id: "m",
                role: Role::Mitigation,
                windows: &[InProcess],
                trial: ok,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
        ];
        let r = run(&probe(ALL_HITS), settings(10, false), &[]).unwrap();
        let count = |r: &ProbeReport, i: usize| r.arms[i].outcome.count().unwrap();
        assert_eq!((count(&r, 0).hits, count(&r, 0).trials), (7, 7));
        assert_eq!((count(&r, 1).hits, count(&r, 1).trials), (0, 7));
        assert_eq!(
            r.judgement(&r.arms[1]).verdict,
            crate::report::verdict::Verdict::Valid
        );
        /// Hits in every other trial.
        fn half(_: &mut Trial<'_>) -> Result<bool, Fault> {
            static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            Ok(CALLS.fetch_add(1, Ordering::Relaxed).is_multiple_of(2))
        }
        static PARTIAL: &[Arm] = &[
            Arm {
                id: "c",
                windows: &[InProcess],
                trial: half,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
            Arm {
                id: "m",
                role: Role::Mitigation,
                windows: &[InProcess],
                trial: ok,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
        ];
        let r = run(&probe(PARTIAL), settings(10, false), &[]).unwrap();
        assert_eq!(count(&r, 0).trials, 10);
        assert_eq!(count(&r, 1).trials, 10);
    }

    /// A statistical fix with 0 hits runs all its trials: a later trial
    /// could still hit, so `valid` after the few trials Fisher needs would
    /// rest on less evidence than the cap asks for; a hit (invalid) stops it.
    #[test]
    fn statistical_fixes_stop_early_only_at_a_hit() {
        use crate::report::verdict::Window::InProcess;
        static ARMS: &[Arm] = &[
            Arm {
                id: "c",
                windows: &[InProcess],
                trial: hit,
                kind: Some(Kind::Statistical),
                ..ARM
            },
            Arm {
                id: "m",
                role: Role::Mitigation,
                windows: &[InProcess],
                trial: ok,
                kind: Some(Kind::Statistical),
                ..ARM
            },
            Arm {
                id: "leaky",
                role: Role::Mitigation,
                windows: &[InProcess],
                trial: hit,
                kind: Some(Kind::Statistical),
                ..ARM
            },
        ];
        let p = Probe {
            hazard: "env-race",
            ..probe(ARMS)
        };
        let r = run(&p, settings(40, false), &[]).unwrap();
        let count = |i: usize| r.arms[i].outcome.count().unwrap();
        assert_eq!((count(0).hits, count(0).trials), (40, 40));
        assert_eq!((count(1).hits, count(1).trials), (0, 40));
        assert_eq!(
            r.judgement(&r.arms[1]).verdict,
            crate::report::verdict::Verdict::Valid
        );
        assert_eq!(count(2).trials, MIN_DETERMINISTIC_TRIALS);
    }

    /// Cells of a race window with set counts, for the stopping rule.
    fn race_cells(arms: &'static [Arm], counts: &[(u64, u64)]) -> Cells<'static> {
        arms.iter()
            .zip(counts)
            .map(|(arm, &(hits, trials))| {
                let cell = Cell {
                    hits,
                    trials,
                    iterations: trials,
                    ..Cell::default()
                };
                (arm, Window::PosixSpawn, cell)
            })
            .collect()
    }

    static RACE: &[Arm] = &[
        Arm {
            id: "c",
            windows: &[Window::PosixSpawn],
            trial: ok,
            ..ARM
        },
        Arm {
            id: "m",
            role: Role::Mitigation,
            windows: &[Window::PosixSpawn],
            trial: ok,
            ..ARM
        },
        Arm {
            id: "n",
            role: Role::Mitigation,
            windows: &[Window::PosixSpawn],
            trial: ok,
            ..ARM
        },
    ];

    /// Each round adds `per_round` (hits, trials) to each raced cell; the
    /// rounds run through [`race_rounds`] and [`still_racing`], the run's own
    /// scheduler and stopping rule. Returns each cell's rounds.
    fn race(per_round: [(u64, u64); 3], max_rounds: u32) -> (Vec<u32>, u32) {
        race_with(|i, _| per_round[i], max_rounds).0
    }

    /// [`race`] with the counts of cell `i`'s block in round `r` (from 0)
    /// given by `per_round(i, r)`; also returns the final cells.
    fn race_with(
        per_round: impl Fn(usize, u32) -> (u64, u64),
        max_rounds: u32,
    ) -> ((Vec<u32>, u32), Cells<'static>) {
        let p = probe(RACE);
        let platform = Platform::detect();
        let cells = std::cell::RefCell::new(race_cells(RACE, &[(0, 0); 3]));
        let mut blocks = vec![0u32; 3];
        let rounds = race_rounds(
            vec![0, 1, 2],
            max_rounds,
            None,
            |i| {
                let (hits, trials) = per_round(i, blocks[i]);
                let cell = &mut cells.borrow_mut()[i].2;
                cell.hits += hits;
                cell.trials += trials;
                blocks[i] += 1;
                Ok::<(), ()>(())
            },
            |window, rounds| still_racing(&p, &cells.borrow(), window, rounds, &platform),
        )
        .unwrap();
        ((blocks, rounds), cells.into_inner())
    }

    /// A fix decided early races again when its control's later rounds undo
    /// the decision, so the verdict the report shows holds on final counts.
    #[test]
    fn a_fix_whose_verdict_the_control_undoes_races_again() {
        // The control hits 10 of 10 in its first round and never again; `n`
        // is valid after one round, then not, as the control's rate falls.
        let ((blocks, rounds), cells) = race_with(
            |i, r| match (i, r) {
                (0, 0) => (10, 10),
                (1, _) => (1, 10),
                _ => (0, 10),
            },
            THOROUGH_RACE_ROUNDS,
        );
        assert!(blocks[2] > 1, "{blocks:?}");
        // The control raced every round that `n` did.
        assert!(blocks[0] >= blocks[2].max(RACE_BLOCKS), "{blocks:?}");
        let p = probe(RACE);
        let decided = judge_now(&p, &cells, 2, &Platform::detect())
            .verdict
            .is_decided();
        assert!(decided || rounds == THOROUGH_RACE_ROUNDS, "{blocks:?}");
    }

    #[test]
    fn adaptive_races_stop_decided_arms_and_keep_the_control_for_undecided_ones() {
        // A hit decides `m` invalid after one round; `n` (0 of 10 a round
        // against 10 of 10) is valid after one round too; the control still
        // measures its rate for a default run's rounds, then stops.
        // `n`'s verdict rests on the control's count, so it shares every
        // block the control races; `m`'s hit decides it alone.
        let (blocks, rounds) = race([(10, 10), (1, 10), (0, 10)], THOROUGH_RACE_ROUNDS);
        assert_eq!(blocks, [RACE_BLOCKS, 1, RACE_BLOCKS]);
        assert_eq!(rounds, RACE_BLOCKS);
        // A rare control: 1 hit in 100 a round. `m` hits and stops at once;
        // `n` needs about 10 control hits for p <= 0.001, so the control
        // races on with it past the default's rounds until it is decided.
        let (blocks, _) = race([(1, 100), (1, 100), (0, 100)], THOROUGH_RACE_ROUNDS);
        assert_eq!(blocks[1], 1);
        assert!(blocks[2] > RACE_BLOCKS, "{blocks:?}");
        assert!(blocks[2] < THOROUGH_RACE_ROUNDS, "{blocks:?}");
        assert_eq!(blocks[0], blocks[2]);
        let p = probe(RACE);
        let cells = race_cells(
            RACE,
            &[
                (u64::from(blocks[2]), 100 * u64::from(blocks[2])),
                (0, 0),
                (0, 100 * u64::from(blocks[2])),
            ],
        );
        let platform = Platform::detect();
        assert!(judge_now(&p, &cells, 2, &platform).verdict.is_decided());
        let earlier = race_cells(
            RACE,
            &[
                (u64::from(blocks[2]) - 1, 100 * (u64::from(blocks[2]) - 1)),
                (0, 0),
                (0, 100 * (u64::from(blocks[2]) - 1)),
            ],
        );
        assert!(!judge_now(&p, &earlier, 2, &platform).verdict.is_decided());
    }

    /// A fix judged against its control's count races every block the
    /// control races: a fix stopped as `not-needed` while the control missed
    /// must not turn `valid` on hits from rounds it sat out (load drift).
    #[test]
    fn a_fix_shares_every_block_its_verdict_rests_on() {
        // The control misses its first 400 spawns (absent: `n` is
        // not-needed), then hits 20 of 400 a round; `n` never hits.
        let ((blocks, _), cells) = race_with(
            |i, r| match (i, r) {
                (0, 0) => (0, 400),
                (0, _) => (20, 400),
                (1, _) => (1, 400),
                _ => (0, 400),
            },
            THOROUGH_RACE_ROUNDS,
        );
        assert_eq!(blocks[1], 1, "{blocks:?}");
        assert_eq!(blocks[2], blocks[0], "{blocks:?}");
        let count = |i: usize| (cells[i].2.hits, cells[i].2.trials);
        assert_eq!(count(2).1, count(0).1, "{blocks:?}");
    }

    #[test]
    fn adaptive_races_respect_the_budget() {
        // A control that never hits decides nothing: every arm races to the
        // budget and no further.
        let (blocks, rounds) = race([(0, 10), (0, 10), (0, 10)], 9);
        assert_eq!(blocks, [9, 9, 9]);
        assert_eq!(rounds, 9);
        // A default run's budget is its rounds.
        let (blocks, _) = race([(0, 10), (0, 10), (0, 10)], RACE_BLOCKS);
        assert_eq!(blocks, [RACE_BLOCKS; 3]);
        // A deadline already passed starts no round.
        let rounds = race_rounds(
            vec![0],
            9,
            Some(Instant::now()),
            |_| Ok::<(), ()>(()),
            |a, _| a.to_vec(),
        )
        .unwrap();
        assert_eq!(rounds, 0);
    }

    #[test]
    fn unconfirmed_trials_are_excluded_counted_and_bounded() {
        use crate::report::verdict::Window::InProcess;
        static ARMS: &[Arm] = &[
            Arm {
                id: "c",
                windows: &[InProcess],
                trial: flaky,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
            Arm {
                id: "m",
                role: Role::Mitigation,
                windows: &[InProcess],
                trial: never,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
        ];
        let probe = Probe {
            hazard: "unconfirmed",
            about: "",
            trials: 7,
            race: Duration::from_millis(1),
            arms: ARMS,
            observe: None,
        };
        let settings = Settings {
            trials: 7,
            race: Duration::from_millis(1),
            thorough: false,
            deadline: None,
            hold_by: HoldBy::Fork,
        };
        let r = run(&probe, settings, &[]).unwrap();
        let Outcome::Observed {
            trials,
            hits,
            broken_trials,
            ..
        } = r.arms[0].outcome
        else {
            panic!("{:?}", r.arms[0].outcome)
        };
        assert_eq!((trials, hits), (7, 7));
        assert!((7..=8).contains(&broken_trials), "{broken_trials}");
        // A window that never confirms ends broken, after a bounded number of tries.
        assert_eq!(r.arms[1].outcome.count().map(|c| c.trials), Some(0));
        assert_eq!(r.arms[1].outcome.broken_trials(), 15);
        assert_eq!(
            r.judgement(&r.arms[1]).verdict,
            crate::report::verdict::Verdict::Broken
        );
    }

    /// A fork-window fix whose code never opens the window cannot read
    /// `valid`: its trials are unconfirmed and the cell is broken, while the
    /// control that opens it is measured.
    #[test]
    fn a_trial_that_never_opens_its_window_is_unconfirmed() {
        use crate::report::verdict::Window::ForkWindow;
        fn opens(t: &mut Trial<'_>) -> Result<bool, Fault> {
            let (_r, w) = io::pipe().ctx("pipe")?;
            t.during_window(std::os::fd::AsRawFd::as_raw_fd(&w), || Ok(true))
        }
        static ARMS: &[Arm] = &[
            Arm {
                id: "c",
                windows: &[ForkWindow],
                trial: opens,
                ..ARM
            },
            Arm {
                id: "m",
                role: Role::Mitigation,
                windows: &[ForkWindow],
                // The control's lock, released with no child holding a copy.
                trial: ok,
                ..ARM
            },
        ];
        let r = run(&probe(ARMS), settings(7, false), &[]).unwrap();
        let control = r.find("c", ForkWindow).unwrap();
        assert_eq!(
            control.outcome.count().map(|c| (c.hits, c.trials)),
            Some((7, 7))
        );
        let fix = r.find("m", ForkWindow).unwrap();
        assert_eq!(fix.outcome.count().map(|c| c.trials), Some(0), "{fix:?}");
        assert_eq!(
            r.judgement(fix).verdict,
            crate::report::verdict::Verdict::Broken
        );
        let Outcome::Observed { tallies, .. } = &fix.outcome else {
            panic!("{fix:?}")
        };
        assert!(
            tallies["last-unconfirmed"].contains_key(NEVER_OPENED),
            "{tallies:?}"
        );
    }

    #[test]
    fn declarations_are_checked() {
        use crate::report::verdict::Window::{InProcess, Inherited};
        static GOOD: &[Arm] = &[
            Arm {
                id: "c",
                role: Role::Control,
                about: "",
                windows: &[Inherited],
                trial: ok,
                ..ARM
            },
            Arm {
                id: "m",
                role: Role::Mitigation,
                about: "",
                windows: &[Inherited],
                trial: ok,
                ..ARM
            },
            Arm {
                id: "m-sham",
                role: Role::Sham,
                about: "",
                windows: &[Inherited],
                trial: ok,
                ..ARM
            },
        ];
        let probe = |arms: &'static [Arm]| Probe {
            hazard: "h",
            about: "",
            trials: 7,
            race: Duration::from_millis(1),
            arms,
            observe: None,
        };
        check(&probe(GOOD)).unwrap();
        assert_eq!(sham_of(&probe(GOOD), &GOOD[1], Inherited), Some("m-sham"));
        assert_eq!(control_for(&probe(GOOD), &GOOD[1], Inherited), Some("c"));
        static NO_KIND: &[Arm] = &[Arm {
            id: "c",
            windows: &[InProcess],
            trial: ok,
            ..ARM
        }];
        assert!(check(&probe(NO_KIND)).unwrap_err().contains("kind"));
        // An in-process kind other than report::IN_PROCESS_KINDS's.
        static WRONG_KIND: &[Arm] = &[Arm {
            id: "c",
            windows: &[InProcess],
            trial: ok,
            kind: Some(crate::report::verdict::Kind::Statistical),
            ..ARM
        }];
        let wrong = Probe {
            hazard: "posix-lock-drop",
            ..probe(WRONG_KIND)
        };
        let e = check(&wrong).unwrap_err();
        assert!(e.contains("IN_PROCESS_KINDS says deterministic"), "{e}");
        static ORPHAN: &[Arm] = &[Arm {
            id: "m",
            role: Role::Mitigation,
            windows: &[Inherited],
            trial: ok,
            ..ARM
        }];
        assert!(check(&probe(ORPHAN)).unwrap_err().contains("no control"));
        static BAD_SHAM: &[Arm] = &[
            Arm {
                id: "c",
                windows: &[Inherited],
                trial: ok,
                ..ARM
            },
            Arm {
                id: "x-sham",
                role: Role::Sham,
                windows: &[Inherited],
                trial: ok,
                ..ARM
            },
        ];
        assert!(check(&probe(BAD_SHAM)).unwrap_err().contains("sham"));
        static UNNAMED: &[Arm] = &[ARM];
        assert!(check(&probe(UNNAMED)).is_err());
        // A fix sham-tested in one of its windows but not in the other.
        use crate::report::verdict::Window::PosixSpawn;
        static HALF_SHAM: &[Arm] = &[
            Arm {
                id: "c",
                windows: &[Inherited, PosixSpawn],
                trial: ok,
                ..ARM
            },
            Arm {
                id: "m",
                role: Role::Mitigation,
                windows: &[Inherited, PosixSpawn],
                trial: ok,
                ..ARM
            },
            Arm {
                id: "m-sham",
                role: Role::Sham,
                windows: &[Inherited],
                trial: ok,
                ..ARM
            },
        ];
        let e = check(&probe(HALF_SHAM)).unwrap_err();
        assert!(e.contains("not in posix-spawn"), "{e}");
    }
}
