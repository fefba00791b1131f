//! One cell's bookkeeping (an arm in a window): its counts, tallies and
//! fault, its outcome, and the report's judgement of it as it stands.

use std::time::Duration;

use crate::report::platform::Platform;
use crate::report::tallies::TIME_TALLY;
use crate::report::verdict::{Judgement, Kind, Outcome, Tallies, Window};
use crate::report::{ArmReport, ProbeReport, SCHEMA_VERSION};

use super::declare::{Arm, Probe, declared};
use super::trial::Fault;

/// The cells of a run: each arm in each window it runs in.
pub(super) type Cells<'p> = Vec<(&'p Arm, Window, Cell)>;

/// One cell's counts so far, over all its blocks.
#[derive(Debug, Default)]
pub(super) struct Cell {
    pub(super) trials: u64,
    pub(super) hits: u64,
    pub(super) broken_trials: u64,
    pub(super) iterations: u64,
    pub(super) tallies: Tallies,
    pub(super) fault: Option<Fault>,
    /// Too many unconfirmed trials: no more are tried.
    pub(super) gave_up: bool,
    /// Time spent in its blocks, reported as the tally `time-ms`.
    pub(super) elapsed: Duration,
}

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

/// The judgement on cell `i` as the cells stand now: the report's own
/// [`ProbeReport::judgement`] on a report of these counts, so a run stops an
/// arm by the very rule that later judges it.
pub(super) fn judge_now(
    probe: &Probe,
    cells: &Cells<'_>,
    i: usize,
    platform: &Platform,
) -> Judgement {
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

/// One cell as its report shows it.
pub(super) fn arm_report(
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
