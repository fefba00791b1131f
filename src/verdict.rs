//! The closed outcome vocabulary and the rules that turn outcomes into verdicts.
//!
//! An arm's [`Outcome`] is what happened when it ran; its [`Verdict`] is derived
//! from that outcome (and, for a mitigation, its control's) every time it is
//! shown. Verdicts are never stored, so they can never disagree with the counts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::{ABSENCE_THRESHOLD, Count, decisive_trials};

/// Extra measurements of an observed arm: for each named quantity, how many
/// trials saw each value (e.g. `"connect" -> {"refused": 12}`).
pub type Tallies = BTreeMap<String, BTreeMap<String, u64>>;

/// What happened when an arm ran (LTP's TPASS/TFAIL vs TCONF vs TBROK).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Outcome {
    /// The arm ran its trials; `hits` of them showed the hazard.
    Observed {
        /// Trials run.
        trials: u64,
        /// Trials in which the hazard showed.
        hits: u64,
        /// Extra measurements, counted by value (per trial, or totals such as
        /// the spawns a race made).
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

impl Outcome {
    /// The hit count, for an observed outcome.
    pub fn count(&self) -> Option<Count> {
        match self {
            Outcome::Observed { trials, hits, .. } => Some(Count::new(*hits, *trials)),
            Outcome::Unsupported { .. } | Outcome::Broken { .. } => None,
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
    /// No child at all: the hazard is within one process.
    InProcess,
}

impl Window {
    /// Every window kind, in display order.
    pub const ALL: [Window; 4] = [
        Window::ForkWindow,
        Window::PosixSpawn,
        Window::Inherited,
        Window::InProcess,
    ];

    /// The public id, e.g. `fork-window`.
    pub fn id(self) -> &'static str {
        match self {
            Window::ForkWindow => "fork-window",
            Window::PosixSpawn => "posix-spawn",
            Window::Inherited => "inherited",
            Window::InProcess => "in-process",
        }
    }

    /// Parses a public id.
    pub fn from_id(id: &str) -> Option<Window> {
        Window::ALL.into_iter().find(|w| w.id() == id)
    }
}

/// The derived judgement on one arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Control: the hazard showed at least once.
    Present,
    /// Control: no hit in enough trials to bound the rate under 1%.
    Absent,
    /// Mitigation: no hit in enough trials, against a control present in the same run.
    Valid,
    /// Mitigation: the hazard showed despite it.
    Invalid,
    /// Too few trials, or (for a mitigation) a control that did not show the hazard.
    Inconclusive,
    /// The OS lacks what the arm needs.
    Unsupported,
    /// Setup failed.
    Broken,
}

impl Verdict {
    /// The public id, e.g. `present`.
    pub fn id(self) -> &'static str {
        match self {
            Verdict::Present => "present",
            Verdict::Absent => "absent",
            Verdict::Valid => "valid",
            Verdict::Invalid => "invalid",
            Verdict::Inconclusive => "inconclusive",
            Verdict::Unsupported => "unsupported",
            Verdict::Broken => "broken",
        }
    }
}

/// The verdict on a control arm.
pub fn control_verdict(outcome: &Outcome) -> Verdict {
    match outcome {
        Outcome::Observed { trials, hits, .. } => {
            if *hits > 0 {
                Verdict::Present
            } else if *trials >= decisive_trials(ABSENCE_THRESHOLD) {
                Verdict::Absent
            } else {
                Verdict::Inconclusive
            }
        }
        Outcome::Unsupported { .. } => Verdict::Unsupported,
        Outcome::Broken { .. } => Verdict::Broken,
    }
}

/// The verdict on a mitigation arm, given its control's outcome in the same run.
///
/// Zero hits are decisive once the Wilson upper bound falls under 1% or under
/// the rate the control showed, whichever is larger: a fix need not be measured
/// more finely than the hazard it fixes. Without a present control the arm is
/// inconclusive, however many trials it ran.
pub fn mitigation_verdict(outcome: &Outcome, control: Option<&Outcome>) -> Verdict {
    match outcome {
        Outcome::Observed { trials, hits, .. } => {
            if *hits > 0 {
                return Verdict::Invalid;
            }
            let Some(control) = control.filter(|c| control_verdict(c) == Verdict::Present) else {
                return Verdict::Inconclusive;
            };
            let control_rate = control.count().and_then(Count::rate).unwrap_or(0.0);
            if *trials >= decisive_trials(control_rate.max(ABSENCE_THRESHOLD)) {
                Verdict::Valid
            } else {
                Verdict::Inconclusive
            }
        }
        Outcome::Unsupported { .. } => Verdict::Unsupported,
        Outcome::Broken { .. } => Verdict::Broken,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn observed(hits: u64, trials: u64) -> Outcome {
        Outcome::Observed {
            trials,
            hits,
            tallies: Tallies::new(),
        }
    }

    #[test]
    fn control_rules() {
        assert_eq!(control_verdict(&observed(1, 1)), Verdict::Present);
        assert_eq!(control_verdict(&observed(0, 380)), Verdict::Inconclusive);
        assert_eq!(control_verdict(&observed(0, 381)), Verdict::Absent);
        let unsupported = Outcome::Unsupported {
            reason: "ENOSYS".into(),
        };
        assert_eq!(control_verdict(&unsupported), Verdict::Unsupported);
        let broken = Outcome::Broken {
            error: "open: EACCES".into(),
        };
        assert_eq!(control_verdict(&broken), Verdict::Broken);
    }

    #[test]
    fn mitigation_rules() {
        let always = observed(10, 10);
        // A control at rate 1 makes a single clean trial decisive.
        assert_eq!(
            mitigation_verdict(&observed(0, 1), Some(&always)),
            Verdict::Valid
        );
        assert_eq!(
            mitigation_verdict(&observed(1, 50), Some(&always)),
            Verdict::Invalid
        );
        // A rare control needs as many trials as 1% does.
        let rare = observed(1, 1000);
        assert_eq!(
            mitigation_verdict(&observed(0, 380), Some(&rare)),
            Verdict::Inconclusive
        );
        assert_eq!(
            mitigation_verdict(&observed(0, 381), Some(&rare)),
            Verdict::Valid
        );
        // A control at 5% needs the 0-hit upper bound under 5%: 73 trials.
        let five = observed(5, 100);
        assert_eq!(
            mitigation_verdict(&observed(0, 72), Some(&five)),
            Verdict::Inconclusive
        );
        assert_eq!(
            mitigation_verdict(&observed(0, 73), Some(&five)),
            Verdict::Valid
        );
        // No reproduced hazard, no valid fix.
        assert_eq!(
            mitigation_verdict(&observed(0, 10_000), None),
            Verdict::Inconclusive
        );
        let absent = observed(0, 10_000);
        assert_eq!(
            mitigation_verdict(&observed(0, 10_000), Some(&absent)),
            Verdict::Inconclusive
        );
        let broken = Outcome::Broken { error: "x".into() };
        assert_eq!(
            mitigation_verdict(&observed(0, 10_000), Some(&broken)),
            Verdict::Inconclusive
        );
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
                    tallies,
                },
                r#"{"status":"observed","trials":3,"hits":0,"tallies":{"connect":{"refused":3}}}"#,
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
    }

    fn any_outcome() -> impl Strategy<Value = Outcome> {
        prop_oneof![
            (0u64..2000, 0u64..2000).prop_map(|(a, b)| observed(a.min(b), a.max(b))),
            Just(Outcome::Unsupported { reason: "r".into() }),
            Just(Outcome::Broken { error: "e".into() }),
        ]
    }

    proptest! {
        #[test]
        fn valid_needs_a_present_control(m in any_outcome(), c in proptest::option::of(any_outcome())) {
            let v = mitigation_verdict(&m, c.as_ref());
            if v == Verdict::Valid {
                prop_assert_eq!(c.as_ref().map(control_verdict), Some(Verdict::Present));
                prop_assert_eq!(m.count().map(|c| c.hits), Some(0));
            }
        }

        #[test]
        fn any_hit_is_invalid_or_present(m in any_outcome(), c in proptest::option::of(any_outcome())) {
            if let Some(count) = m.count().filter(|c| c.hits > 0) {
                prop_assert_eq!(mitigation_verdict(&m, c.as_ref()), Verdict::Invalid);
                prop_assert_eq!(control_verdict(&m), Verdict::Present);
                prop_assert!(count.trials >= count.hits);
            }
        }
    }
}
