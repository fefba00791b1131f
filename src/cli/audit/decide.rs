//! Decides the suspects: each one's diagnosis, or its cause's.

use std::time::{Duration, Instant};

use fdwindow::cotenant::detect::Verdict;
use fdwindow::error::Result;
use fdwindow_fix::base::interrupts;
use fdwindow_fix::pressure::Spec;

use super::diagnose;
use super::model::Audit;
use super::progress::Progress;
use super::runner::Runner;
use super::site;
use crate::cli::discover::Binary;

/// Causes tried on a new suspect before its own diagnosis, the latest first.
const CAUSES_TRIED: usize = 4;

/// Diagnoses each exposed test, then each undecided one, each first tried
/// against the causes already decided in its binary ([`diagnose::join`]):
/// suspects that share a call site are decided once, the others by that
/// site's copies alone. An exposed test gets at least a short diagnosis,
/// even past `end`: without a cause it is half an answer; an undecided one
/// only what the budget has left.
pub(super) fn diagnose_suspects(
    audit: &mut Audit,
    runner: &mut Runner,
    binaries: &[Binary],
    (spec, hold): (&Spec, Duration),
    end: Instant,
    progress: &mut Progress,
) -> Result<()> {
    let mut order: Vec<usize> = (0..audit.tests.len())
        .filter(|&t| audit.detection.verdict(t) == Verdict::Exposed)
        .collect();
    order.extend(
        (0..audit.tests.len()).filter(|&t| audit.detection.verdict(t) == Verdict::Undecided),
    );
    let mut symbols = site::Symbols::default();
    let mut causes: Vec<(usize, diagnose::KnownCause)> = Vec::new();
    for t in order {
        if interrupts::interrupted() {
            break;
        }
        let exposed = audit.detection.verdict(t) == Verdict::Exposed;
        if !exposed && Instant::now() >= end {
            break;
        }
        let end = if exposed {
            end.max(Instant::now() + diagnose::MIN_TIME)
        } else {
            end
        };
        let case = &audit.tests[t];
        let bin = &binaries[case.binary];
        let mut joined = None;
        let known = causes.iter().rev().filter(|(b, _)| *b == case.binary);
        for (_, cause) in known.take(CAUSES_TRIED) {
            joined = diagnose::join(runner, bin, case, spec, hold, cause, end, progress)?;
            if joined.is_some() {
                break;
            }
        }
        let d = match joined {
            Some(d) => d,
            None => {
                let root = bin.root.clone().or_else(|| std::env::current_dir().ok());
                let workspace = site::Workspace::new(root.unwrap_or_default());
                let d = diagnose::diagnose(
                    runner,
                    bin,
                    case,
                    spec,
                    hold,
                    exposed,
                    end,
                    progress,
                    (&mut symbols, &workspace),
                )?;
                if let Some(cause) = diagnose::KnownCause::of(&case.name, &d) {
                    causes.push((case.binary, cause));
                }
                d
            }
        };
        let with = d
            .joined
            .as_ref()
            .map_or_else(String::new, |j| format!(", with {}'s cause", j.test));
        progress.step(&format!(
            "  diagnosis {} {}: {}{with} ({} runs, {:.1} s)",
            audit.binaries[case.binary],
            case.name,
            d.summary(),
            d.runs(),
            d.seconds
        ));
        audit.diagnoses.insert(t, d);
    }
    Ok(())
}
