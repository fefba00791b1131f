//! What the audit's stages share: the suite's tests, the whole audit's
//! outcome, and each test's word in the report.

use std::collections::BTreeMap;
use std::time::Duration;

use fdwindow::cotenant::detect::{Detection, Verdict};
use fdwindow_fix::pressure::Spec;

use super::diagnose::{self, Diagnosis};
use crate::cli::discover::Binary;
use crate::cli::partition::Partition;

/// One test of the suite.
#[derive(Clone, Debug)]
pub struct TestCase {
    /// Index into [`Audit::binaries`].
    pub binary: usize,
    /// libtest's name.
    pub name: String,
    /// The first failure message seen.
    pub message: Option<String>,
    /// Screen runs in which the binary timed out or died before this test
    /// reported (counted as bad: any test in flight may have caused it).
    pub unattributed: u64,
    /// Its run time alone, from the timing run.
    pub time: Option<f64>,
}

impl TestCase {
    /// Every test of `binaries`, in their order.
    pub fn all(binaries: &[Binary]) -> Vec<TestCase> {
        binaries
            .iter()
            .enumerate()
            .flat_map(|(b, bin)| {
                bin.tests.iter().map(move |name| TestCase {
                    binary: b,
                    name: name.clone(),
                    message: None,
                    unattributed: 0,
                    time: None,
                })
            })
            .collect()
    }
}

/// The whole audit's outcome, for the report.
pub struct Audit {
    /// The command as given.
    pub command: Vec<String>,
    /// The pressure of the screen and the reruns.
    pub spec: Spec,
    /// The budget the audit ran under.
    pub budget: Duration,
    /// The shard audited.
    pub partition: Option<Partition>,
    /// Seconds of the timing run.
    pub timing_seconds: f64,
    /// The binaries, by index.
    pub binaries: Vec<String>,
    /// The tests, by index (detection's indices).
    pub tests: Vec<TestCase>,
    /// What detection found.
    pub detection: Detection,
    /// The diagnosis of each exposed or undecided test, by test index.
    pub diagnoses: BTreeMap<usize, Diagnosis>,
    /// Seconds spent in the diagnosis.
    pub diagnosis_seconds: f64,
    /// Pressured runs, and those in which the injector reported pressure.
    pub pressured: (u64, u64),
    /// Warnings for the reader.
    pub warnings: Vec<String>,
    /// Whether Ctrl-C cut it short.
    pub interrupted: bool,
}

impl Audit {
    /// The test's verdict: detection's, with `load` where the diagnosis
    /// found that pressure breaks it without any held descriptor.
    pub fn verdict(&self, test: usize) -> Word {
        self.decision(test).0
    }

    /// The rule that made an exposed test exposed.
    pub fn basis(&self, test: usize) -> Option<Basis> {
        self.decision(test).1
    }

    fn decision(&self, test: usize) -> (Word, Option<Basis>) {
        let diagnosis = self.diagnoses.get(&test);
        let held = diagnosis.is_some_and(|d| matches!(d.cause, diagnose::Cause::Held(_)));
        let complete = diagnosis.is_some_and(Diagnosis::complete);
        match self.detection.verdict(test) {
            Verdict::Exposed if diagnosis.is_some_and(Diagnosis::is_load) => (Word::Load, None),
            // The sign rule says pressure breaks it; with a complete
            // diagnosis that found no held descriptor behind it, it is not
            // a descriptor hazard (CPU, memory, timing), and is reported
            // apart. One the budget cut short stays exposed: an experiment
            // that did not finish clears nothing.
            Verdict::Exposed if complete && !held => (Word::PressureOnly, None),
            Verdict::Exposed => (Word::Exposed, Some(Basis::SignRule)),
            Verdict::FailsAlone => (Word::FailsAlone, None),
            // Failed in the screen (pressure or held copies), never alone in its
            // reruns, and the held-copy window decides on its own that a
            // copy of the descriptor it closes breaks it.
            Verdict::Undecided
                if diagnosis.is_some_and(Diagnosis::decisive)
                    && self
                        .detection
                        .pairs
                        .get(&test)
                        .is_some_and(|p| p.alone.runs > 0 && p.alone.bad() == 0) =>
            {
                (Word::Exposed, Some(Basis::HeldCopy))
            }
            Verdict::Undecided => (Word::Undecided, None),
            Verdict::NotExposed => (Word::NotExposed, None),
        }
    }

    /// Total seconds.
    pub fn seconds(&self) -> f64 {
        self.timing_seconds + self.detection.seconds.iter().sum::<f64>() + self.diagnosis_seconds
    }
}

/// A test's word in the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Word {
    /// A held copy of a descriptor breaks it: it fails more under pressure
    /// (the sign rule) and its diagnosis names the descriptor, or it failed
    /// under pressure, never alone, and the held-copy window decides.
    Exposed,
    /// Fails more under pressure (the sign rule), but no held descriptor
    /// reproduced it and the load check did not decide.
    PressureOnly,
    /// Fails more under pressure, and as often when the pressure's children
    /// hold nothing: CPU, memory or fork cost, not a held descriptor.
    Load,
    /// Failed alone in its reruns.
    FailsAlone,
    /// Failed in the screen, not decided within the budget.
    Undecided,
    /// Never failed in the screen.
    NotExposed,
}

/// The rule by which a test is exposed; the report states both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// The sign rule of its interleaved reruns.
    SignRule,
    /// The held-copy window: failed in the screen, ran alone in its reruns
    /// and never failed there, and its class's copies broke it against
    /// their sham.
    HeldCopy,
}

impl Basis {
    /// The id in reports.
    pub fn id(self) -> &'static str {
        match self {
            Basis::SignRule => "sign-rule",
            Basis::HeldCopy => "held-copy",
        }
    }
}

impl Word {
    /// The id in reports.
    pub fn id(self) -> &'static str {
        match self {
            Word::Exposed => "exposed",
            Word::PressureOnly => "pressure-only",
            Word::Load => "load",
            Word::FailsAlone => "fails-alone",
            Word::Undecided => "undecided",
            Word::NotExposed => "not-exposed",
        }
    }
}
