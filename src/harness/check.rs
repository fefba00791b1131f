//! The declaration check: unique ids, kinds where the window needs one, a
//! control for every fix in each window, shams named after their fix.

use crate::error::{Result, failed};
use crate::report::verdict::{Kind, Role, Window};

use super::declare::{Probe, control_for, sham_of};

/// Checks a probe's declaration: unique, non-empty ids; a kind for every
/// in-process arm and none elsewhere; every mitigation and sham has a control
/// in each of its windows; a sham is `<mitigation>-sham` of a declared
/// mitigation; controls name no control and make no argument.
pub fn check(probe: &Probe) -> Result<()> {
    for (i, arm) in probe.arms.iter().enumerate() {
        let bad = |why: &str| Err(failed!("{} arm {:?}: {why}", probe.hazard, arm.id));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{ARM, Arm, Fault, Probe, Trial};
    use crate::report::verdict::Role;
    use std::time::Duration;

    fn ok(_: &mut Trial<'_>) -> Result<bool, Fault> {
        Ok(true)
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
        assert!(
            check(&probe(NO_KIND))
                .unwrap_err()
                .to_string()
                .contains("kind")
        );
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
        let e = check(&wrong).unwrap_err().to_string();
        assert!(e.contains("IN_PROCESS_KINDS says deterministic"), "{e}");
        static ORPHAN: &[Arm] = &[Arm {
            id: "m",
            role: Role::Mitigation,
            windows: &[Inherited],
            trial: ok,
            ..ARM
        }];
        assert!(
            check(&probe(ORPHAN))
                .unwrap_err()
                .to_string()
                .contains("no control")
        );
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
        assert!(
            check(&probe(BAD_SHAM))
                .unwrap_err()
                .to_string()
                .contains("sham")
        );
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
        let e = check(&probe(HALF_SHAM)).unwrap_err().to_string();
        assert!(e.contains("not in posix-spawn"), "{e}");
    }
}
