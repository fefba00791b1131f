//! The closed outcome vocabulary and the rules that turn outcomes into verdicts.
//!
//! An arm's [`Outcome`] is what happened when it ran; its [`Verdict`] is derived
//! from that outcome (and, for a mitigation, its control's) every time it is
//! shown. Verdicts are never stored, so they can never disagree with the counts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::report::stats::{ABSENCE_THRESHOLD, Count, MAX_TRIALS, decisive_trials, fisher_less};

/// Whether an arm of `kind` measured on `platform` is `emulated` (DESIGN.md,
/// Platforms): under TCG, every statistical arm (races, clocks, environment
/// races) and every timed one measures the emulator's scheduling and clock;
/// a deterministic window built on purpose measures only the guest kernel's
/// semantics, wherever it runs.
pub fn emulated(platform: &crate::report::platform::Platform, kind: Kind, timed: bool) -> bool {
    platform.emulated() && (kind == Kind::Statistical || timed)
}

/// Extra measurements of an observed arm: for each named quantity, how many
/// trials saw each value (e.g. `"connect" -> {"refused": 12}`).
pub type Tallies = BTreeMap<String, BTreeMap<String, u64>>;

/// What happened when an arm ran (LTP's TPASS/TFAIL vs TCONF vs TBROK).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Outcome {
    /// The arm ran its trials; `hits` of them showed the hazard. In a race
    /// window (`posix-spawn`) the unit is a spawn: `trials` counts the spawns
    /// started while the arm's loop ran, `hits` those during which it showed.
    Observed {
        /// Confirmed trials (spawns, in a race window).
        trials: u64,
        /// Trials in which the hazard showed.
        hits: u64,
        /// Trials excluded because their window could not be confirmed or
        /// their deadline expired: never counted as "the hazard did not show".
        #[serde(default, skip_serializing_if = "is_zero")]
        broken_trials: u64,
        /// Extra measurements, counted by value (per trial, or totals such as
        /// the loop iterations a race made).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        tallies: Tallies,
    },
    /// The OS lacks what the arm needs (ENOSYS, EINVAL, no such flag).
    Unsupported {
        /// Which call or flag is missing, and how that was detected.
        reason: String,
    },
    /// Setup failed; nothing can be said about the hazard.
    Broken {
        /// The error, with the step that failed.
        error: String,
    },
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Outcome {
    /// An observed outcome with no excluded trials and no tallies.
    pub fn observed(hits: u64, trials: u64) -> Outcome {
        Outcome::Observed {
            trials,
            hits,
            broken_trials: 0,
            tallies: Tallies::new(),
        }
    }

    /// The hit count, for an observed outcome.
    pub fn count(&self) -> Option<Count> {
        match self {
            Outcome::Observed { trials, hits, .. } => Some(Count::new(*hits, *trials)),
            Outcome::Unsupported { .. } | Outcome::Broken { .. } => None,
        }
    }

    /// Trials excluded as unconfirmed.
    pub fn broken_trials(&self) -> u64 {
        match self {
            Outcome::Observed { broken_trials, .. } => *broken_trials,
            Outcome::Unsupported { .. } | Outcome::Broken { .. } => 0,
        }
    }
}

/// An arm's part in its hazard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The naive code: does the hazard show?
    Control,
    /// A fix: does the hazard stay away, against a control that showed it?
    Mitigation,
    /// A mitigation's own code with only the fix switched off (arm
    /// `<mitigation>-sham`): it must show the hazard, or the mitigation's
    /// zero proves nothing about the fix.
    Sham,
}

impl Role {
    /// The public id, e.g. `sham`.
    pub fn id(self) -> &'static str {
        match self {
            Role::Control => "control",
            Role::Mitigation => "mitigation",
            Role::Sham => "sham",
        }
    }
}

/// How a cell's trials relate to the hazard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The window is built on purpose and every trial confirms it existed:
    /// a handful of trials decides.
    Deterministic,
    /// A race against real spawns or threads: a rate is measured.
    Statistical,
}

impl Kind {
    /// The public id, e.g. `deterministic`.
    pub fn id(self) -> &'static str {
        match self {
            Kind::Deterministic => "deterministic",
            Kind::Statistical => "statistical",
        }
    }
}

/// How a child comes to hold the parent's descriptors during a trial.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Window {
    /// A child held between fork and exec by a `pre_exec` that blocks on a pipe.
    ForkWindow,
    /// A race against a thread spawning children through real `posix_spawn`.
    PosixSpawn,
    /// A descriptor without close-on-exec, held for the exec'd child's life.
    Inherited,
    /// The creating thread parked by an interposed wrapper right after a
    /// creating call returns, a child spawned, then the thread goes on.
    ParkedCall,
    /// No child at all: the hazard is within one process.
    InProcess,
}

impl Window {
    /// Every window kind, in display order.
    pub const ALL: [Window; 5] = [
        Window::ForkWindow,
        Window::PosixSpawn,
        Window::Inherited,
        Window::ParkedCall,
        Window::InProcess,
    ];

    /// The public id, e.g. `fork-window`.
    pub fn id(self) -> &'static str {
        match self {
            Window::ForkWindow => "fork-window",
            Window::PosixSpawn => "posix-spawn",
            Window::Inherited => "inherited",
            Window::ParkedCall => "parked-call",
            Window::InProcess => "in-process",
        }
    }

    /// Parses a public id.
    pub fn from_id(id: &str) -> Option<Window> {
        Window::ALL.into_iter().find(|w| w.id() == id)
    }

    /// The kind every cell in this window has; `None` for `in-process`,
    /// where each arm declares its own.
    pub fn kind(self) -> Option<Kind> {
        match self {
            Window::ForkWindow | Window::Inherited | Window::ParkedCall => {
                Some(Kind::Deterministic)
            }
            Window::PosixSpawn => Some(Kind::Statistical),
            Window::InProcess => None,
        }
    }

    /// Whether a sham here tests the window rather than the fix's code. In
    /// `parked-call` the interposer strips the flag from the fix's own call,
    /// showing that the parked window sees a missing flag at all; such a
    /// sham neither requires nor replaces a sham of the same fix elsewhere.
    pub fn sham_tests_the_window(self) -> bool {
        self == Window::ParkedCall
    }

    /// Whether a trial here must open the window with a child of its own
    /// that holds its descriptors (fork-window, inherited).
    pub fn needs_a_holder(self) -> bool {
        matches!(self, Window::ForkWindow | Window::Inherited)
    }

    /// Whether trials here count spawns (a race against real spawns).
    pub fn is_race(self) -> bool {
        self == Window::PosixSpawn
    }
}

/// The derived judgement on one arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Control (or sham): the hazard showed at least once.
    Present,
    /// Control: no hit in enough confirmed trials (7 in a deterministic cell;
    /// a 95% upper bound under 1% in a statistical one).
    Absent,
    /// Mitigation: 0 hits, its control present in the same window of the same
    /// run, one-sided Fisher p <= 0.001 against it, and its sham (if any) present.
    Valid,
    /// Mitigation: the hazard showed despite it.
    Invalid,
    /// Mitigation: its control is absent here, so there is no hazard to fix.
    NotNeeded,
    /// Mitigation: the fix removes the hazardous step altogether, so no trial
    /// can test it; shown with the arm's argument.
    Avoids,
    /// Too few trials, a control or sham that did not show the hazard.
    Inconclusive,
    /// The OS lacks what the arm needs.
    Unsupported,
    /// Setup failed, or too few confirmed trials remain.
    Broken,
}

impl Verdict {
    /// Every verdict.
    pub const ALL: [Verdict; 9] = [
        Verdict::Present,
        Verdict::Absent,
        Verdict::Valid,
        Verdict::Invalid,
        Verdict::NotNeeded,
        Verdict::Avoids,
        Verdict::Inconclusive,
        Verdict::Unsupported,
        Verdict::Broken,
    ];

    /// The public id, e.g. `present`.
    pub fn id(self) -> &'static str {
        match self {
            Verdict::Present => "present",
            Verdict::Absent => "absent",
            Verdict::Valid => "valid",
            Verdict::Invalid => "invalid",
            Verdict::NotNeeded => "not-needed",
            Verdict::Avoids => "avoids",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Unsupported => "unsupported",
            Verdict::Broken => "broken",
        }
    }

    /// Parses a public id.
    pub fn from_id(id: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.id() == id)
    }

    /// Whether the evidence decided the question (`present`, `absent`,
    /// `valid`, `invalid`, `not-needed`, `avoids`).
    pub fn is_decided(self) -> bool {
        match self {
            Verdict::Present
            | Verdict::Absent
            | Verdict::Valid
            | Verdict::Invalid
            | Verdict::NotNeeded
            | Verdict::Avoids => true,
            Verdict::Inconclusive | Verdict::Unsupported | Verdict::Broken => false,
        }
    }
}

/// The fewest confirmed trials a deterministic cell needs: a control with 0
/// hits in 7 is `absent`, and 7/7 against 0/7 is the smallest square table
/// that decides at p <= 0.001 (p = 2.9e-4).
pub const MIN_DETERMINISTIC_TRIALS: u64 = 7;

/// The one-sided significance a mitigation must reach against its control.
pub const SIGNIFICANCE: f64 = 0.001;

/// A verdict with its reasons: what a reviewer quotes.
#[derive(Clone, Debug, PartialEq)]
pub struct Judgement {
    /// The verdict.
    pub verdict: Verdict,
    /// For a mitigation judged against a control: the one-sided Fisher exact
    /// p that its rate is below the control's.
    pub p: Option<f64>,
    /// Why it is not decided, or what decided it, in a few words.
    pub why: Option<String>,
    /// For an inconclusive mitigation: the further trials (in each arm, at the
    /// control's rate) that would decide it.
    pub more_trials: Option<u64>,
}

impl Judgement {
    fn plain(verdict: Verdict) -> Judgement {
        Judgement {
            verdict,
            p: None,
            why: None,
            more_trials: None,
        }
    }

    fn because(verdict: Verdict, why: impl Into<String>) -> Judgement {
        Judgement {
            why: Some(why.into()),
            ..Judgement::plain(verdict)
        }
    }
}

/// The verdict on a control (or a sham) of the given kind.
pub fn control_verdict(outcome: &Outcome, kind: Kind) -> Verdict {
    control_judgement(outcome, kind).verdict
}

/// The verdict on a control (or sham), with why when undecided.
pub fn control_judgement(outcome: &Outcome, kind: Kind) -> Judgement {
    match outcome {
        Outcome::Observed {
            trials,
            hits,
            broken_trials,
            ..
        } => {
            if *hits > 0 {
                return Judgement::plain(Verdict::Present);
            }
            if let Some(j) = too_few_confirmed(*trials, *broken_trials, kind) {
                return j;
            }
            let needed = match kind {
                Kind::Deterministic => MIN_DETERMINISTIC_TRIALS,
                Kind::Statistical => decisive_trials(ABSENCE_THRESHOLD),
            };
            if *trials >= needed {
                Judgement::plain(Verdict::Absent)
            } else {
                Judgement {
                    more_trials: Some(needed - trials),
                    ..Judgement::because(
                        Verdict::Inconclusive,
                        format!("0 hits in {trials} trials; absence needs {needed}"),
                    )
                }
            }
        }
        Outcome::Unsupported { .. } => Judgement::plain(Verdict::Unsupported),
        Outcome::Broken { .. } => Judgement::plain(Verdict::Broken),
    }
}

/// A deterministic cell that lost trials to unconfirmed windows and kept
/// fewer than the minimum is `broken`.
fn too_few_confirmed(trials: u64, broken_trials: u64, kind: Kind) -> Option<Judgement> {
    (kind == Kind::Deterministic && broken_trials > 0 && trials < MIN_DETERMINISTIC_TRIALS).then(
        || {
            Judgement::because(
                Verdict::Broken,
                format!(
                    "{broken_trials} trials unconfirmed, {trials} confirmed (fewer than {MIN_DETERMINISTIC_TRIALS})"
                ),
            )
        },
    )
}

/// What a mitigation is judged with: its control and, if it has one, its sham,
/// both from the same window of the same run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Against<'a> {
    /// The control's outcome; `None` when it did not run.
    pub control: Option<&'a Outcome>,
    /// Whether the mitigation needs a sham, and the sham's outcome if it ran.
    pub sham: Option<Option<&'a Outcome>>,
    /// The arm's `avoids` argument, when it declares one.
    pub avoids: Option<&'a str>,
}

/// The verdict on a mitigation arm of the given kind. See [`Verdict`] and
/// DESIGN.md (Vocabulary, Verdict) for the rules.
pub fn mitigation_judgement(outcome: &Outcome, kind: Kind, against: Against<'_>) -> Judgement {
    let (trials, hits, broken_trials) = match outcome {
        Outcome::Observed {
            trials,
            hits,
            broken_trials,
            ..
        } => (*trials, *hits, *broken_trials),
        Outcome::Unsupported { .. } => return Judgement::plain(Verdict::Unsupported),
        Outcome::Broken { .. } => return Judgement::plain(Verdict::Broken),
    };
    if hits > 0 {
        let p = against
            .control
            .and_then(Outcome::count)
            .map(|c| fisher_less(Count::new(hits, trials), c));
        return Judgement {
            p,
            ..Judgement::plain(Verdict::Invalid)
        };
    }
    if let Some(j) = too_few_confirmed(trials, broken_trials, kind) {
        return j;
    }
    if let Some(argument) = against.avoids {
        return Judgement::because(Verdict::Avoids, argument);
    }
    // A deterministic fix is decided on 7 trials at least, whatever a small
    // control makes of Fisher's test (0/5 against 10/10 is p = 3.3e-4). An
    // `avoids` argument rests on its construction: trials only refute it.
    if kind == Kind::Deterministic && trials < MIN_DETERMINISTIC_TRIALS {
        return Judgement {
            more_trials: Some(MIN_DETERMINISTIC_TRIALS - trials),
            ..Judgement::because(
                Verdict::Inconclusive,
                format!("{trials} trials, fewer than {MIN_DETERMINISTIC_TRIALS}"),
            )
        };
    }
    let Some(control) = against.control else {
        return Judgement::because(Verdict::Inconclusive, "its control did not run");
    };
    let control_count = match control_verdict(control, kind) {
        Verdict::Absent => {
            return Judgement::because(Verdict::NotNeeded, "its control is absent here");
        }
        Verdict::Present => control.count().expect("a present control was observed"),
        other => {
            return Judgement::because(
                Verdict::Inconclusive,
                format!("its control is {}", other.id()),
            );
        }
    };
    let mine = Count::new(0, trials);
    let p = fisher_less(mine, control_count);
    if p > SIGNIFICANCE {
        return Judgement {
            verdict: Verdict::Inconclusive,
            p: Some(p),
            why: Some(format!("needs p <= {SIGNIFICANCE}")),
            more_trials: more_trials_to_decide(mine, control_count),
        };
    }
    if let Some(sham) = against.sham {
        let sham_verdict = sham.map(|s| control_verdict(s, kind));
        if sham_verdict != Some(Verdict::Present) {
            return Judgement {
                p: Some(p),
                ..Judgement::because(
                    Verdict::Inconclusive,
                    match sham_verdict {
                        Some(v) => format!("its sham is {}", v.id()),
                        None => "its sham did not run".to_owned(),
                    },
                )
            };
        }
    }
    Judgement {
        p: Some(p),
        ..Judgement::plain(Verdict::Valid)
    }
}

/// The verdict alone; see [`mitigation_judgement`].
pub fn mitigation_verdict(outcome: &Outcome, kind: Kind, against: Against<'_>) -> Verdict {
    mitigation_judgement(outcome, kind, against).verdict
}

/// A p-value in short scientific form: `2.9e-4`, `0.25`.
pub fn p_text(p: f64) -> String {
    if p >= 0.01 {
        format!("{p:.2}")
    } else {
        format!("{p:.1e}")
    }
}

/// The fewest further trials, in each arm, that would make 0 hits decisive
/// at [`SIGNIFICANCE`] if the control went on at its observed rate; `None`
/// when no number up to 10^9 would.
pub fn more_trials_to_decide(mine: Count, control: Count) -> Option<u64> {
    let rate = control.rate()?;
    let decides = |k: u64| {
        let c_trials = control.trials.checked_add(k)?;
        let c_hits = control.hits + (rate * k as f64).floor() as u64;
        let m = Count::new(0, mine.trials.checked_add(k)?);
        Some(fisher_less(m, Count::new(c_hits.min(c_trials), c_trials)) <= SIGNIFICANCE)
    };
    let (mut lo, mut hi) = (0u64, 1u64);
    while decides(hi) != Some(true) {
        lo = hi;
        hi = hi.checked_mul(2)?;
        if hi > MAX_TRIALS {
            return None;
        }
    }
    // decides(lo) is false (or lo = 0, already known undecided), decides(hi) true.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if decides(mid) == Some(true) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn observed(hits: u64, trials: u64) -> Outcome {
        Outcome::observed(hits, trials)
    }

    fn against(control: &Outcome) -> Against<'_> {
        Against {
            control: Some(control),
            ..Against::default()
        }
    }

    const DET: Kind = Kind::Deterministic;
    const STAT: Kind = Kind::Statistical;

    #[test]
    fn control_rules() {
        assert_eq!(control_verdict(&observed(1, 1), DET), Verdict::Present);
        assert_eq!(control_verdict(&observed(0, 6), DET), Verdict::Inconclusive);
        assert_eq!(control_verdict(&observed(0, 7), DET), Verdict::Absent);
        assert_eq!(
            control_verdict(&observed(0, 380), STAT),
            Verdict::Inconclusive
        );
        assert_eq!(control_verdict(&observed(0, 381), STAT), Verdict::Absent);
        let unsupported = Outcome::Unsupported {
            reason: "ENOSYS".into(),
        };
        assert_eq!(control_verdict(&unsupported, DET), Verdict::Unsupported);
        let broken = Outcome::Broken {
            error: "open: EACCES".into(),
        };
        assert_eq!(control_verdict(&broken, DET), Verdict::Broken);
    }

    #[test]
    fn unconfirmed_trials_are_excluded_and_counted() {
        let lost = |trials, broken_trials| Outcome::Observed {
            trials,
            hits: 0,
            broken_trials,
            tallies: Tallies::new(),
        };
        // 7 confirmed trials remain: decided as if the others never ran.
        assert_eq!(control_verdict(&lost(7, 3), DET), Verdict::Absent);
        assert_eq!(lost(7, 3).broken_trials(), 3);
        // Fewer than 7 remain: broken, not "absent" nor "inconclusive".
        assert_eq!(control_verdict(&lost(6, 1), DET), Verdict::Broken);
        let control = observed(7, 7);
        assert_eq!(
            mitigation_verdict(&lost(6, 4), DET, against(&control)),
            Verdict::Broken
        );
        assert_eq!(
            mitigation_verdict(&lost(7, 4), DET, against(&control)),
            Verdict::Valid
        );
    }

    #[test]
    fn validity_is_a_test_against_the_control() {
        let j = |m: Outcome, c: Outcome| mitigation_judgement(&m, DET, against(&c));
        // 1/1 vs 0/1: a full control makes no single trial enough.
        assert_eq!(
            j(observed(0, 1), observed(1, 1)).verdict,
            Verdict::Inconclusive
        );
        // 7/7 vs 0/7 decides (p = 2.9e-4); 6/6 vs 0/6 does not (1.1e-3).
        let seven = j(observed(0, 7), observed(7, 7));
        assert_eq!(seven.verdict, Verdict::Valid);
        assert!((seven.p.unwrap() - 1.0 / 3432.0).abs() < 1e-12);
        let six = j(observed(0, 6), observed(6, 6));
        assert_eq!(six.verdict, Verdict::Inconclusive);
        assert_eq!(six.more_trials, Some(1), "{six:?}");
        // 10/10 vs 0/10: p = 5.4e-6.
        assert!((j(observed(0, 10), observed(10, 10)).p.unwrap() - 5.4e-6).abs() < 1e-7);
        // The old 1% floor: 0/381 against 2/381 is p = 0.25, not valid.
        let floor = mitigation_judgement(&observed(0, 381), STAT, against(&observed(2, 381)));
        assert_eq!(floor.verdict, Verdict::Inconclusive);
        assert!((floor.p.unwrap() - 0.2497).abs() < 1e-3, "{floor:?}");
        assert!(floor.more_trials.unwrap() > 1000, "{floor:?}");
        // 4/393 vs 0/400 does not decide either.
        let race = mitigation_judgement(&observed(0, 400), STAT, against(&observed(4, 393)));
        assert_eq!(race.verdict, Verdict::Inconclusive);
        assert_eq!(j(observed(1, 50), observed(7, 7)).verdict, Verdict::Invalid);
        // Fewer than 7 trials decide no deterministic fix, whatever the
        // control: 0/5 against 10/10 is p = 3.3e-4, yet inconclusive.
        let five = j(observed(0, 5), observed(10, 10));
        assert_eq!(five.verdict, Verdict::Inconclusive, "{five:?}");
        assert_eq!(five.more_trials, Some(2));
        assert_eq!(j(observed(0, 7), observed(10, 10)).verdict, Verdict::Valid);
    }

    #[test]
    fn controls_and_shams_gate_validity() {
        let full = observed(10, 10);
        // No control, an undecided control, a broken control: inconclusive.
        let none = mitigation_judgement(&observed(0, 10), DET, Against::default());
        assert_eq!(none.verdict, Verdict::Inconclusive);
        for c in [observed(0, 3), Outcome::Broken { error: "x".into() }] {
            assert_eq!(
                mitigation_verdict(&observed(0, 10), DET, against(&c)),
                Verdict::Inconclusive
            );
        }
        // An absent control: there is nothing to fix.
        assert_eq!(
            mitigation_verdict(&observed(0, 10), DET, against(&observed(0, 10))),
            Verdict::NotNeeded
        );
        // A sham that did not show the hazard makes the fix inconclusive.
        let with_sham = |sham: Option<&Outcome>| {
            mitigation_verdict(
                &observed(0, 10),
                DET,
                Against {
                    control: Some(&full),
                    sham: Some(sham),
                    avoids: None,
                },
            )
        };
        assert_eq!(with_sham(Some(&observed(0, 10))), Verdict::Inconclusive);
        assert_eq!(with_sham(None), Verdict::Inconclusive);
        assert_eq!(with_sham(Some(&observed(10, 10))), Verdict::Valid);
    }

    #[test]
    fn avoids_is_shown_as_such_and_still_fails_on_a_hit() {
        let a = |m: Outcome| {
            mitigation_judgement(
                &m,
                STAT,
                Against {
                    control: None,
                    sham: None,
                    avoids: Some("nothing is written"),
                },
            )
        };
        let j = a(observed(0, 20));
        assert_eq!(j.verdict, Verdict::Avoids);
        assert_eq!(j.why.as_deref(), Some("nothing is written"));
        assert_eq!(a(observed(1, 20)).verdict, Verdict::Invalid);
    }

    #[test]
    fn outcomes_round_trip_through_json() {
        let mut tallies = Tallies::new();
        tallies
            .entry("connect".into())
            .or_default()
            .insert("refused".into(), 3);
        let cases = [
            (
                observed(2, 7),
                r#"{"status":"observed","trials":7,"hits":2}"#,
            ),
            (
                Outcome::Observed {
                    trials: 3,
                    hits: 0,
                    broken_trials: 2,
                    tallies,
                },
                r#"{"status":"observed","trials":3,"hits":0,"broken_trials":2,"tallies":{"connect":{"refused":3}}}"#,
            ),
            (
                Outcome::Unsupported {
                    reason: "F_OFD_SETLK: EINVAL".into(),
                },
                r#"{"status":"unsupported","reason":"F_OFD_SETLK: EINVAL"}"#,
            ),
            (
                Outcome::Broken {
                    error: "open: EACCES".into(),
                },
                r#"{"status":"broken","error":"open: EACCES"}"#,
            ),
        ];
        for (outcome, json) in cases {
            assert_eq!(serde_json::to_string(&outcome).unwrap(), json);
            assert_eq!(serde_json::from_str::<Outcome>(json).unwrap(), outcome);
        }
        for w in Window::ALL {
            let json = serde_json::to_string(&w).unwrap();
            assert_eq!(json, format!("\"{}\"", w.id()));
            assert_eq!(Window::from_id(w.id()), Some(w));
        }
        for v in Verdict::ALL {
            assert_eq!(
                serde_json::to_string(&v).unwrap(),
                format!("\"{}\"", v.id())
            );
            assert_eq!(Verdict::from_id(v.id()), Some(v));
        }
        assert_eq!(serde_json::to_string(&Role::Sham).unwrap(), "\"sham\"");
        assert_eq!(Window::ParkedCall.kind(), Some(Kind::Deterministic));
        assert_eq!(Window::PosixSpawn.kind(), Some(Kind::Statistical));
    }

    fn any_outcome() -> impl Strategy<Value = Outcome> {
        prop_oneof![
            (0u64..2000, 0u64..2000).prop_map(|(a, b)| observed(a.min(b), a.max(b))),
            Just(Outcome::Unsupported { reason: "r".into() }),
            Just(Outcome::Broken { error: "e".into() }),
        ]
    }

    fn any_kind() -> impl Strategy<Value = Kind> {
        prop_oneof![Just(Kind::Deterministic), Just(Kind::Statistical)]
    }

    proptest! {
        #[test]
        fn valid_needs_a_present_control_and_significance(
            m in any_outcome(), c in proptest::option::of(any_outcome()), kind in any_kind()
        ) {
            let j = mitigation_judgement(&m, kind, Against { control: c.as_ref(), ..Against::default() });
            if j.verdict == Verdict::Valid {
                prop_assert_eq!(c.as_ref().map(|c| control_verdict(c, kind)), Some(Verdict::Present));
                prop_assert_eq!(m.count().map(|c| c.hits), Some(0));
                prop_assert!(j.p.unwrap() <= SIGNIFICANCE);
                if kind == Kind::Deterministic {
                    prop_assert!(m.count().unwrap().trials >= MIN_DETERMINISTIC_TRIALS);
                }
            }
        }

        #[test]
        fn any_hit_is_invalid_or_present(
            m in any_outcome(), c in proptest::option::of(any_outcome()), kind in any_kind()
        ) {
            if let Some(count) = m.count().filter(|c| c.hits > 0) {
                let against = Against { control: c.as_ref(), ..Against::default() };
                prop_assert_eq!(mitigation_verdict(&m, kind, against), Verdict::Invalid);
                prop_assert_eq!(control_verdict(&m, kind), Verdict::Present);
                prop_assert!(count.trials >= count.hits);
            }
        }
    }
}
