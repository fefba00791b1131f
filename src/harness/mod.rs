//! The harness stage: takes in a probe's declaration (its hazard, arms and
//! one trial function each) and the windows the base builds; gives out one
//! [`ProbeReport`](crate::report::ProbeReport) per run, as JSON on stdout, every arm's outcome counted
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
//! The files, in the order a run goes through them: `declare.rs` (what a probe
//! declares, and the settings it runs with), `check.rs` (the declaration's
//! rules), `entry.rs` (the command line and the report on stdout),
//! `schedule.rs` (the cells, arm by arm), `race.rs` (the race windows' rounds),
//! `cell.rs` (one cell's counts and judgement) and `trial.rs` (one trial and its
//! window).
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

mod cell;
mod check;
mod declare;
mod entry;
pub mod parked;
mod race;
mod schedule;
mod trial;

pub use check::check;
pub use declare::{ARM, Arm, Declared, Probe, Settings, declared};
pub use entry::{PARENT_ENV, main, probe_command};
pub use race::{RACE_BLOCKS, THOROUGH_RACE_ROUNDS};
pub use schedule::{THOROUGH_ONLY, covered, races, races_with, run};
pub use trial::{Context, Fault, NEVER_OPENED, NO_COPY, Trial};
