//! `fdwindow stress`: runs a command again and again, alone and with the
//! fork-pressure co-tenant preloaded into it, and compares the failure rates.
//!
//! 1. Runs alternate: one alone, one pressured, so a change in the machine's
//!    load falls on both arms alike.
//! 2. A pressured run gets the injector (built into fdwindow, written to a
//!    private file for the run) in the loader's preload variable and
//!    the [`Spec`] in `FDWINDOW_PRESSURE` (with `match=` from `--match`, so a
//!    build driver such as cargo and its compilers stay unpressured and only
//!    the test binaries get pressure).
//! 3. A run fails when it exits non-zero or dies by a signal; one that
//!    outlives `--timeout` is killed and counted as a timeout (within the
//!    arm's bad runs, and on its own).
//! 4. Each arm reports `k/N` with a 95% Wilson interval, the run time summed
//!    until its first failure, and the median of that time over its failures
//!    (the time between failures, each counted from the previous one).
//! 5. The injector reports as it goes, to a file per pressured run: a run
//!    killed at the timeout still shows it was pressured. The summary says how
//!    much of the pressured runs' time the pressure overlapped, and warns
//!    under half.
//! 6. The injector watches `fdwindow stress` itself ([`controller`]): if it
//!    dies, even by SIGKILL, the pressure in the command stops within one
//!    hold. Nothing of stress's is passed down to the command.
//! 7. The [`Verdict`]: `exposed` when the one-sided Fisher exact p that the
//!    alone arm fails less often than the pressured one is at most
//!    [`EXPOSED_P`], `unpressured` when no pressured process reported back,
//!    `inconclusive` otherwise. Only `--fail-if-exposed` makes `exposed` an
//!    exit status of its own ([`EXIT_EXPOSED`]).
//!
//! Progress goes to stderr; the summary, as JSON ([`STRESS_SCHEMA`]), to stdout.
//! A closed stderr (`2>&1 | head -2`) stops the runs as Ctrl-C does: the
//! summary of what ran, then exit 141 (see `fdwindow::base::out`).

mod args;
mod injector;
mod run;
mod verdict;

#[cfg(test)]
mod tests;

pub use args::StressArgs;
pub(crate) use injector::{
    Injector, ReportFile, RunPressure, check_command, controller, read_report, run_folder,
};
pub use run::run;
