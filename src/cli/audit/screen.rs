//! The screen and the reruns on real processes: [`SuiteBench`] runs what
//! [`fdwindow::cotenant::detect`] asks for (pressured runs, held-copy runs of
//! groups of tests, `--exact` reruns) and shows its progress.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fdwindow::cotenant::detect::{self, Bench, HeldRun, Rerun, Seen, Verdict};
use fdwindow::error::{Error, Result};
use fdwindow_fix::base::interrupts;
use fdwindow_fix::pressure::{DropClass, Spec};

use super::diagnose;
use super::model::TestCase;
use super::progress::Progress;
use super::runner::{Runner, seen};
use crate::cli::discover::Binary;

/// The audit's runs, for [`detect::detect`]: real processes.
pub(super) struct SuiteBench<'a> {
    pub(super) runner: &'a mut Runner,
    pub(super) binaries: &'a [Binary],
    pub(super) tests: &'a mut [TestCase],
    pub(super) spec: &'a Spec,
    pub(super) started: Instant,
    pub(super) progress: &'a mut Progress,
    pub(super) budget: Duration,
    /// The binaries' names, for progress lines.
    pub(super) names: Vec<String>,
    /// Per binary, screen runs in which the pressure never started (not
    /// counted).
    pub(super) unpressured: Vec<u64>,
    /// How long a held-copy screen's children hold each closed descriptor.
    pub(super) hold: Duration,
    /// The held-copy screen's closes let through unheld, by reason.
    pub(super) unheld_by: BTreeMap<String, u64>,
    /// How the suspects are rerun, for the progress line.
    pub(super) reruns: &'static str,
}

impl Bench for SuiteBench<'_> {
    type Error = Error;

    fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    fn interrupted(&self) -> bool {
        interrupts::interrupted()
    }

    fn screen(&mut self, b: usize) -> Result<Vec<(usize, Seen)>> {
        let bin = &self.binaries[b];
        let mine: Vec<usize> = (0..self.tests.len())
            .filter(|&t| self.tests[t].binary == b)
            .collect();
        let mut out = Vec::new();
        // The binary's tests are `mine`, in its order.
        let runs = bin.runs();
        let args: Vec<Vec<String>> = runs.iter().map(|(a, _)| a.clone()).collect();
        let results = self
            .runner
            .run_all(bin, &args, Some(self.spec), "screen", false)?;
        for ((_, only), result) in runs.into_iter().zip(results) {
            let only = only.map(|i| mine[i]);
            if interrupts::interrupted() {
                break;
            }
            // A run the pressure never reached says nothing of pressure:
            // its passes must not clear a test.
            if result.pressure.is_some_and(|p| p.processes == 0) {
                self.unpressured[b] += 1;
                continue;
            }
            for &t in &mine {
                if only.is_some_and(|o| o != t) {
                    continue;
                }
                let case = &mut self.tests[t];
                if let Some((s, msg)) = seen(&result, &case.name) {
                    if !result.parsed.outcomes.contains_key(&case.name) {
                        case.unattributed += 1;
                    }
                    if case.message.is_none() {
                        case.message = msg;
                    }
                    out.push((t, s));
                }
            }
        }
        Ok(out)
    }

    fn screen_held(&mut self, b: usize, group: &[usize]) -> Result<Option<HeldRun>> {
        let bin = &self.binaries[b];
        let spec = diagnose::hold_spec(self.spec, self.hold, DropClass::All, false);
        let names: Vec<&str> = group.iter().map(|&t| self.tests[t].name.as_str()).collect();
        let mut held = HeldRun::default();
        let runs = bin.group_runs(&names);
        let args: Vec<Vec<String>> = runs.iter().map(|(a, _)| a.clone()).collect();
        let results = self
            .runner
            .run_all(bin, &args, Some(&spec), "screen-held", false)?;
        for ((_, ran), result) in runs.into_iter().zip(results) {
            if interrupts::interrupted() {
                break;
            }
            // The injector never started (a static binary?): no copy can be
            // held here, and the pressure screen says so in its warnings.
            if result.pressure.is_some_and(|p| p.processes == 0) {
                return Ok(None);
            }
            let ran: Vec<usize> = ran.iter().map(|&i| group[i]).collect();
            held.copies += result.holds.held.len() as u64;
            // A run that died before its injector counted cannot say what
            // went unheld: its tests count as run with a gap.
            let gap = result.holds.skipped > 0 || !result.holds.counted;
            held.unheld += result.holds.skipped;
            for (reason, n) in &result.holds.unheld {
                *self.unheld_by.entry(reason.clone()).or_default() += n;
            }
            for &t in &ran {
                let case = &mut self.tests[t];
                if let Some((s, msg)) = seen(&result, &case.name) {
                    if case.message.is_none() {
                        case.message = msg;
                    }
                    held.seen.push((t, s));
                    if gap {
                        held.gaps.push(t);
                    }
                }
            }
        }
        Ok(Some(held))
    }

    fn rerun(&mut self, t: usize, pressured: bool) -> Result<Rerun> {
        let case = &self.tests[t];
        let bin = &self.binaries[case.binary];
        let label = if pressured {
            "rerun-pressure"
        } else {
            "rerun-alone"
        };
        let spec = pressured.then_some(self.spec);
        let result = self
            .runner
            .run(bin, &bin.exact_args(&case.name), spec, label)?;
        let found = seen(&result, &case.name);
        let case = &mut self.tests[t];
        if let Some((_, msg)) = &found
            && case.message.is_none()
        {
            case.message.clone_from(msg);
        }
        let reached = result.pressure.unwrap_or_default();
        Ok(Rerun {
            seen: found.map(|(s, _)| s),
            spawns: reached.spawns,
            pressured: reached.processes > 0,
        })
    }

    fn progress(&mut self, event: detect::Event<'_>) {
        let left = self.budget.saturating_sub(self.started.elapsed());
        match event {
            detect::Event::Holding { pace } => {
                let each = self.paces(pace);
                self.progress.step(&format!(
                    "screen: a run of each binary alone takes {each}; each runs once with a \
                     copy of every closed descriptor held for {hold:?} (close-hold=all, each \
                     copy passed to one holder process), again in halves where a close went \
                     through unheld",
                    hold = self.hold,
                ));
            }
            detect::Event::Held {
                runs,
                screened,
                tests,
                suspects,
            } => self.progress.update(&format!(
                "screen (held copies): {runs} runs, {screened} of {tests} tests screened, \
                 {suspects} failed; {:.0} s left",
                left.as_secs_f64()
            )),
            detect::Event::Planned { pace, rounds } => {
                let each = self.paces(pace);
                let plan = rounds.map_or_else(String::new, |n| {
                    format!(
                        "; at that pace the screen's share holds about {n} rounds: a test failing \
                         in {:.1}% of pressured runs of its binary has a 90% chance to be seen",
                        100.0 * detect::seen_rate90(n)
                    )
                });
                self.progress.step(&format!(
                    "screen plan: a pressured run of each binary takes {each}{plan}"
                ));
            }
            detect::Event::Screen { rounds, suspects } => self.progress.update(&format!(
                "screen: {rounds} rounds of pressured runs, {suspects} tests failed; {:.0} s left",
                left.as_secs_f64()
            )),
            detect::Event::Confirming { suspects } => self.progress.step(&format!(
                "{} suspects: rerunning each with --exact{}",
                suspects.len(),
                self.reruns
            )),
            detect::Event::Pair { test, pairs } => {
                let word = pairs.decided().map_or("", Verdict::id);
                let text = format!(
                    "  {} {}: alone {}/{}, pressure {}/{} {word}; {:.0} s left",
                    self.names[self.tests[test].binary],
                    self.tests[test].name,
                    pairs.alone.bad(),
                    pairs.alone.runs,
                    pairs.pressure.bad(),
                    pairs.pressure.runs,
                    left.as_secs_f64()
                );
                if pairs.decided().is_some() {
                    self.progress.step(&text);
                } else {
                    self.progress.update(&text);
                }
            }
        }
    }
}

impl<'a> SuiteBench<'a> {
    /// The bench of `binaries` and their `tests`, under `spec`, started now
    /// with the default budget and hold (the caller sets its own).
    pub(super) fn new(
        runner: &'a mut Runner,
        binaries: &'a [Binary],
        tests: &'a mut [TestCase],
        spec: &'a Spec,
        progress: &'a mut Progress,
    ) -> SuiteBench<'a> {
        SuiteBench {
            runner,
            binaries,
            tests,
            spec,
            started: Instant::now(),
            progress,
            budget: detect::DEFAULT_BUDGET,
            names: binaries.iter().map(|b| b.name.clone()).collect(),
            unpressured: vec![0; binaries.len()],
            hold: Duration::from_millis(100),
            unheld_by: BTreeMap::new(),
            reruns: "",
        }
    }

    /// Detection over this bench's suite ([`detect::detect`]), planned from
    /// each binary's timing run.
    pub(super) fn detect(
        &mut self,
        plan: &detect::Plan,
        timing: &[f64],
    ) -> Result<detect::Detection> {
        let test_binaries: Vec<usize> = self.tests.iter().map(|t| t.binary).collect();
        let binaries = self.binaries.len();
        detect::detect(self, &test_binaries, binaries, plan, timing)
    }
}

impl SuiteBench<'_> {
    /// Each binary's name and seconds, for the plan's line.
    fn paces(&self, pace: &[f64]) -> String {
        let each: Vec<String> = self
            .names
            .iter()
            .zip(pace)
            .map(|(name, s)| match s {
                // A fast binary's pace would read 0.0 s.
                s if *s < 1.0 => format!("{name} {:.0} ms", s * 1000.0),
                s => format!("{name} {s:.1} s"),
            })
            .collect();
        each.join(", ")
    }
}
