//! What a probe declares: the [`Probe`], its [`Arm`]s (each with one trial
//! function and the windows it runs in), and what a declaration says a cell
//! shows ([`declared`]), which `fdwindow check` holds the results to.

use std::time::Duration;

use crate::report::verdict::{Kind, Role, Window};
use crate::report::{ArmReport, Table};
use fdwindow_fix::base::scratch::Scratch;

use super::trial::{Fault, Trial};

use std::time::Instant;

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
    /// more. A deterministic cell stops at 7 once its verdict is decided ([`run`](super::run)).
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
    /// trial is unconfirmed ([`NO_COPY`](super::NO_COPY)), and `fdwindow check` fails a cell
    /// whose [`COPY_TALLY`](crate::report::tallies::COPY_TALLY) shows fewer copies than trials.
    pub no_copy: &'static [Window],
}

/// The defaults for an [`Arm`] declaration's optional fields. Its `id` is
/// empty, which [`check`](super::check()) refuses: every arm names itself and its trial.
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

pub(super) fn undeclared(_: &mut Trial<'_>) -> Result<bool, Fault> {
    Err(Fault::Broken("the arm declares no trial".into()))
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

/// `arm`'s part in `window`: the one rule `arm_report` writes reports by,
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

/// Trial settings; the defaults come from the probe's declaration.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// The most trials per arm in a deterministic or in-process window.
    pub trials: u64,
    /// Time per arm in the posix-spawn race, over all its blocks.
    pub race: Duration,
    /// Also measure what only a thorough run measures (`--thorough`): the
    /// spawn cost swept over `RLIMIT_NOFILE`, and every mitigation in the
    /// race windows ([`races`](super::races)), each raced until its verdict is decided or
    /// [`THOROUGH_RACE_ROUNDS`](super::THOROUGH_RACE_ROUNDS) blocks have run.
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

/// The control `arm` is judged against in `window`: the one it names, or the
/// first control declared there.
pub(super) fn control_for(probe: &Probe, arm: &Arm, window: Window) -> Option<&'static str> {
    probe
        .arms
        .iter()
        .filter(|a| a.role == Role::Control && a.windows.contains(&window))
        .find(|a| arm.against.is_none_or(|named| named == a.id))
        .map(|a| a.id)
}

/// The sham of mitigation `arm` in `window`, if it declares one there.
pub(super) fn sham_of(probe: &Probe, arm: &Arm, window: Window) -> Option<&'static str> {
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
