//! `fdwindow advise`: what a reviewer needs about one hazard on one OS, ready
//! to paste: the valid fixes (cheapest first where costs are measured), the
//! invalid ones and why, each with its evidence per window (counts from
//! different windows are never added), and, apart, the fixes not measured
//! here with their claim and source.

use std::collections::BTreeSet;
use std::fmt::Write;

use serde::Serialize;

use crate::evidence::costs::CostsFile;
use crate::evidence::knowledge::{Claim, claims};
use crate::evidence::query::{VALID_MEANS, cell_line, combined_verdict};
use crate::report::verdict::{Role, Verdict};
use crate::report::{ResultsFile, Table};

/// The advice on one hazard for one OS.
#[derive(Clone, Debug, Serialize)]
pub struct Advice {
    /// Hazard id.
    pub hazard: String,
    /// `linux` or `macos`.
    pub os: String,
    /// What the probe checks.
    pub about: String,
    /// The naive code, and whether the hazard showed.
    pub controls: Vec<ArmAdvice>,
    /// Mitigations `valid` (or `avoids`) in every window measured.
    pub valid: Vec<ArmAdvice>,
    /// Mitigations that showed the hazard in some window.
    pub invalid: Vec<ArmAdvice>,
    /// Mitigations the evidence does not decide (inconclusive, not-needed,
    /// unsupported, broken, or decided differently per window).
    pub undecided: Vec<ArmAdvice>,
    /// Arms with a claim for this OS but no measurement here: the claim and
    /// its source, never counted as valid.
    pub not_measured: Vec<ArmAdvice>,
    /// For an observation: its measured tables, from each platform of this OS.
    pub tables: Vec<(String, Table)>,
    /// What the evidence was read from, one line each: every file, this
    /// machine's marked, or that this machine has no measurements among
    /// them (`Sources::describe`; set by the caller, which read the files).
    pub sources: Vec<String>,
}

/// One arm's standing.
#[derive(Clone, Debug, Serialize)]
pub struct ArmAdvice {
    /// Arm id.
    pub arm: String,
    /// What the arm's code does.
    pub about: String,
    /// Its standing: the verdict every measured window shares (`invalid` if
    /// any window is; `inconclusive` when windows disagree otherwise), or the
    /// claimed verdict when nothing was measured. Never from summed counts.
    pub verdict: Verdict,
    /// Why, from the encoded knowledge.
    pub why: Option<String>,
    /// Where that is documented.
    pub refs: Vec<String>,
    /// Per window and platform: `window: verdict hits/trials (interval) on platform, date`.
    pub evidence: Vec<String>,
    /// The releases (kernel's `uname -r` on Linux, the OS version on macOS)
    /// whose measurements the verdict rests on, each once, with its VM
    /// accelerator where it ran in one; emulated cells are not counted.
    pub measured_on: Vec<String>,
    /// `true` when the claim behind an unmeasured arm repeats a public source
    /// (not one of this project's own measured claims).
    pub reported: bool,
    /// Per window and platform, for a mitigation: the one-sided Fisher p against its control.
    pub p: Vec<Option<f64>>,
    /// Measured cost beside its baseline (`+1.2 µs (1.3×) on <platform>`), from `make bench`.
    pub cost: Option<String>,
    /// The fix's extra time over its baseline in ns, for ranking.
    #[serde(skip)]
    pub cost_ns: Option<f64>,
}

/// Every hazard id known from the claims or the results, with what it checks.
pub fn hazards(files: &[ResultsFile]) -> Vec<(String, String)> {
    let mut ids: BTreeSet<String> = claims().map(|c| c.hazard.to_owned()).collect();
    ids.extend(files.iter().flat_map(|f| f.probes.keys().cloned()));
    ids.into_iter()
        .map(|id| {
            let about = files
                .iter()
                .find_map(|f| f.probes.get(&id))
                .map_or_else(String::new, |r| r.about.clone());
            (id, about)
        })
        .collect()
}

/// Builds the advice; `None` when neither a measurement nor a claim knows the
/// hazard. Valid fixes are ranked by the extra time they cost over their
/// baseline on this OS's measured platforms (unmeasured ones last).
pub fn advise(
    files: &[ResultsFile],
    costs: &[CostsFile],
    hazard: &str,
    os: &str,
) -> Option<Advice> {
    let measured: Vec<&ResultsFile> = files
        .iter()
        .filter(|f| f.platform.os == os && f.probes.contains_key(hazard))
        .collect();
    let about = files
        .iter()
        .find_map(|f| f.probes.get(hazard))
        .map(|r| r.about.clone());
    let mut advice = Advice {
        hazard: hazard.to_owned(),
        os: os.to_owned(),
        about: about.clone().unwrap_or_default(),
        controls: Vec::new(),
        valid: Vec::new(),
        invalid: Vec::new(),
        undecided: Vec::new(),
        not_measured: Vec::new(),
        tables: measured
            .iter()
            .flat_map(|f| {
                f.probes[hazard]
                    .tables
                    .iter()
                    .map(|t| (f.platform.id.clone(), t.clone()))
            })
            .collect(),
        sources: Vec::new(),
    };
    let arms = arm_order(files, hazard, os, about.is_some())?;
    for (arm, role, arm_about) in arms {
        let Some((entry, measured_here)) = arm_advice(&measured, costs, hazard, os, arm, arm_about)
        else {
            continue;
        };
        let verdict = entry.verdict;
        match (role, verdict) {
            (Role::Control | Role::Sham, _) => advice.controls.push(entry),
            (Role::Mitigation, _) if !measured_here => advice.not_measured.push(entry),
            (Role::Mitigation, Verdict::Valid | Verdict::Avoids) => advice.valid.push(entry),
            (Role::Mitigation, Verdict::Invalid) => advice.invalid.push(entry),
            (Role::Mitigation, _) => advice.undecided.push(entry),
        }
    }
    advice.valid.sort_by(|a, b| {
        a.cost_ns
            .unwrap_or(f64::INFINITY)
            .total_cmp(&b.cost_ns.unwrap_or(f64::INFINITY))
    });
    Some(advice)
}

/// The hazard's arms, in the order the reports (or, failing those, the
/// claims for `os`) list them; `None` when neither a report (`known`: one
/// describes the hazard) nor a claim knows it.
fn arm_order(
    files: &[ResultsFile],
    hazard: &str,
    os: &str,
    known: bool,
) -> Option<Vec<(String, Role, String)>> {
    let mut arms: Vec<(String, Role, String)> = Vec::new();
    for f in files.iter().filter(|f| f.probes.contains_key(hazard)) {
        for a in &f.probes[hazard].arms {
            if !arms.iter().any(|(id, _, _)| *id == a.arm) {
                arms.push((a.arm.clone(), a.role, a.about.clone()));
            }
        }
    }
    if arms.is_empty() && !known && !claims().any(|c| c.hazard == hazard) {
        return None;
    }
    for c in claims().filter(|c| c.hazard == hazard && c.os == os) {
        if !arms.iter().any(|(id, _, _)| id == c.arm) {
            let role = if matches!(c.verdict, Verdict::Present | Verdict::Absent) {
                Role::Control
            } else {
                Role::Mitigation
            };
            arms.push((c.arm.to_owned(), role, String::new()));
        }
    }
    Some(arms)
}

/// One arm's advice on `os`: its measured cells (the claims', kept apart,
/// where nothing is measured), its cost, and whether it was measured here;
/// `None` when nothing measures or claims it.
fn arm_advice(
    measured: &[&ResultsFile],
    costs: &[CostsFile],
    hazard: &str,
    os: &str,
    arm: String,
    arm_about: String,
) -> Option<(ArmAdvice, bool)> {
    let mut evidence = Vec::new();
    let mut verdicts = Vec::new();
    let mut ps = Vec::new();
    let mut claim: Option<Claim> = None;
    let mut measured_on: Vec<String> = Vec::new();
    for f in measured {
        let report = &f.probes[hazard];
        for a in report.arms.iter().filter(|a| a.arm == arm) {
            let j = report.judgement(a);
            // An emulated cell is evidence shown, never a verdict used.
            if !a.emulated {
                verdicts.push(j.verdict);
                ps.push(j.p);
                let release = release_of(&f.platform);
                if !measured_on.contains(&release) {
                    measured_on.push(release);
                }
            }
            let date = report.started_at.get(..10).unwrap_or(&report.started_at);
            evidence.push(format!(
                "{}: {} on `{}`, {date}",
                a.window.id(),
                cell_line(report, a),
                f.platform.id
            ));
            claim = claim.or_else(|| {
                crate::evidence::knowledge::claim_on(&f.platform, hazard, &arm, a.window)
            });
        }
    }
    let measured_here = !verdicts.is_empty() || !evidence.is_empty();
    let (verdict, reported) = if measured_here {
        (combined_verdict(&verdicts), false)
    } else {
        // Nothing measured on this OS: what the claims say, kept apart.
        let cs: Vec<Claim> = claims()
            .filter(|c| c.os == os && c.hazard == hazard && c.arm == arm)
            .collect();
        let first = cs.first().copied()?;
        claim = Some(first);
        for c in &cs {
            let window = c.window.map_or("every window", |w| w.id());
            let range = c.range.map_or_else(String::new, |r| format!(" ({r})"));
            let source = if c.reported {
                "reported by a public source"
            } else {
                "claimed by fdwindow, not measured on this OS's results here"
            };
            evidence.push(format!("{window}{range}: {} ({source})", c.verdict.id()));
        }
        let words: Vec<Verdict> = cs.iter().map(|c| c.verdict).collect();
        (combined_verdict(&words), cs.iter().all(|c| c.reported))
    };
    let measured_cost = costs
        .iter()
        .filter(|c| c.platform.os == os)
        .find_map(|c| c.cost(hazard, &arm).map(|cost| (cost, &c.platform.id)));
    let entry = ArmAdvice {
        cost: measured_cost.map(|(c, platform)| format!("{} on `{platform}`", c.text())),
        cost_ns: measured_cost.map(|(c, _)| c.rank_ns()),
        arm,
        about: arm_about,
        verdict,
        why: claim.map(|c| c.reason.to_owned()),
        refs: claim.map_or_else(Vec::new, |c| c.refs.iter().map(|r| r.to_string()).collect()),
        evidence,
        measured_on,
        reported,
        p: ps,
    };
    Some((entry, measured_here))
}

/// A platform's release as advice names it: the kernel's on Linux (where the
/// kernel decides the behaviour), the OS version elsewhere; with its
/// virtualization when it ran in a guest or an emulator.
fn release_of(p: &crate::report::platform::Platform) -> String {
    let release = if p.os == "linux" || p.os_release.is_empty() {
        &p.kernel_release
    } else {
        &p.os_release
    };
    match p.virtualization {
        crate::report::platform::Virtualization::Bare => format!("`{release}`"),
        v => format!("`{release}` ({})", v.id()),
    }
}

/// Renders advice as Markdown for a review comment.
pub fn markdown(a: &Advice) -> String {
    let mut out = format!("### fdwindow: `{}` on {}\n\n", a.hazard, a.os);
    if !a.about.is_empty() {
        let _ = writeln!(out, "{}\n", a.about);
    }
    let section = |out: &mut String, title: &str, arms: &[ArmAdvice]| {
        if arms.is_empty() {
            return;
        }
        let _ = writeln!(out, "**{title}**\n");
        for (i, x) in arms.iter().enumerate() {
            let tag = if x.reported {
                " *(reported by a public source, not measured)*"
            } else {
                ""
            };
            let _ = write!(out, "{}. `{}`: **{}**{tag}", i + 1, x.arm, x.verdict.id());
            if !x.about.is_empty() {
                let _ = write!(out, ". {}", x.about);
            }
            out.push('\n');
            if let Some(why) = &x.why {
                let _ = writeln!(out, "   - why: {why}");
            }
            if !x.measured_on.is_empty() {
                let _ = writeln!(out, "   - measured on: {}", x.measured_on.join(", "));
            }
            if let Some(cost) = &x.cost {
                let _ = writeln!(out, "   - cost: {cost} (`make bench`)");
            }
            for e in &x.evidence {
                let _ = writeln!(out, "   - {e}");
            }
            for r in &x.refs {
                let _ = writeln!(out, "   - see: {r}");
            }
        }
        out.push('\n');
    };
    let known = [
        &a.controls,
        &a.valid,
        &a.invalid,
        &a.undecided,
        &a.not_measured,
    ];
    if known.iter().all(|x| x.is_empty()) && a.tables.is_empty() {
        let _ = writeln!(
            out,
            "Nothing measured on {} yet, and no public source encoded: run `make probe-{}`.\n",
            a.os, a.os
        );
    }
    section(&mut out, "The hazard (controls and shams)", &a.controls);
    section(&mut out, "Valid fixes (cheapest measured first)", &a.valid);
    section(&mut out, "Invalid: these do not fix it", &a.invalid);
    section(
        &mut out,
        "Not needed, unsupported, broken or not decided by the evidence",
        &a.undecided,
    );
    section(
        &mut out,
        "Not measured here (a claim and its source, no evidence from this OS)",
        &a.not_measured,
    );
    for (platform, t) in &a.tables {
        let _ = writeln!(out, "**`{}` on `{platform}`**: {}\n", t.id, t.about);
        match &t.problem {
            Some(problem) => {
                let _ = writeln!(out, "{problem}\n");
            }
            None => {
                let _ = writeln!(
                    out,
                    "| {} |\n|{}",
                    t.columns.join(" | "),
                    "---|".repeat(t.columns.len())
                );
                for row in &t.rows {
                    let _ = writeln!(out, "| {} |", row.join(" | "));
                }
                out.push('\n');
            }
        }
    }
    out.push_str(VALID_MEANS);
    out.push_str(" Counts are per window, never summed; intervals are 95% Wilson.\n");
    if !a.sources.is_empty() {
        out.push_str("\n**Sources**\n\n");
        for line in &a.sources {
            let _ = writeln!(out, "- {line}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reported_only_advice_for_an_unmeasured_os() {
        let a = advise(&[], &[], "flock-survival", "macos").unwrap();
        // Unmeasured fixes are never "valid fixes", whatever their source says.
        assert!(a.valid.is_empty() && a.invalid.is_empty());
        assert!(
            a.not_measured
                .iter()
                .any(|x| x.arm == "unlock-then-close" && x.reported)
        );
        let md = markdown(&a);
        assert!(md.contains("Not measured here"), "{md}");
        assert!(md.contains("reported by a public source"), "{md}");
        assert!(md.contains(VALID_MEANS));
        assert!(a.tables.is_empty());
        assert!(advise(&[], &[], "no-such-hazard", "linux").is_none());
    }

    #[test]
    fn own_claims_for_an_unmeasured_arm_are_not_measured_and_not_reported() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
        let mut files = crate::evidence::results::load_dir(&dir).unwrap();
        // The arm is gone from every Linux file, this machine's and the VM's.
        for linux in files.iter_mut().filter(|f| f.platform.os == "linux") {
            if let Some(report) = linux.probes.get_mut("flock-survival") {
                report.arms.retain(|a| a.arm != "std-unlock");
            }
        }
        let a = advise(&files, &[], "flock-survival", "linux").unwrap();
        assert!(!a.valid.iter().any(|x| x.arm == "std-unlock"));
        let x = a
            .not_measured
            .iter()
            .find(|x| x.arm == "std-unlock")
            .expect("listed as not measured");
        assert!(!x.reported, "fdwindow's own claim labelled reported");
        assert!(x.why.is_some() && !x.refs.is_empty());
        let md = markdown(&a);
        let section = md.split("Not measured here").nth(1).unwrap();
        assert!(section.contains("`std-unlock`"), "{md}");
        assert!(!md.contains("reported by a public source"), "{md}");
        // Evidence is per window, never a sum.
        let close = a.controls.iter().find(|x| x.arm == "close").unwrap();
        let platforms = files
            .iter()
            .filter(|f| f.platform.os == "linux" && f.probes.contains_key("flock-survival"))
            .count();
        assert_eq!(close.evidence.len(), 3 * platforms, "{:?}", close.evidence);
    }

    #[test]
    fn valid_fixes_are_ranked_by_measured_cost() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
        let files = crate::evidence::results::load_dir(&dir).unwrap();
        let linux = crate::evidence::query::quoted_file(&files, "linux").expect("Linux results");
        let link = |arm: &str| {
            crate::evidence::costs::LINKS
                .iter()
                .find(|l| l.hazard == "flock-survival" && l.arm == arm)
                .unwrap()
        };
        // Ten rounds each, in a fixed pattern of ±5 ns.
        let cost = |ns: f64| {
            crate::evidence::costs::BenchCost::from_samples(
                (0..10)
                    .map(|i| ns + if i % 2 == 0 { 5.0 } else { -5.0 })
                    .collect(),
            )
            .unwrap()
        };
        // fs2-unlock cheapest, std-unlock dearest; unlock-then-close unmeasured.
        let (fs2, std) = (link("fs2-unlock"), link("std-unlock"));
        let mut costs = crate::evidence::costs::CostsFile {
            schema: crate::evidence::costs::COSTS_SCHEMA,
            platform: linux.platform.clone(),
            benches: [
                (fs2.bench.to_owned(), cost(110.0)),
                (fs2.baseline.to_owned(), cost(100.0)),
                (std.bench.to_owned(), cost(900.0)),
            ]
            .into(),
            differences: Default::default(),
        };
        costs.compute_differences();
        let a = advise(
            &files,
            std::slice::from_ref(&costs),
            "flock-survival",
            "linux",
        )
        .unwrap();
        let order: Vec<&str> = a.valid.iter().map(|x| x.arm.as_str()).collect();
        assert_eq!(order.first(), Some(&"fs2-unlock"), "{order:?}");
        assert_eq!(order.get(1), Some(&"std-unlock"), "{order:?}");
        assert!(
            a.valid[0]
                .cost
                .as_deref()
                .unwrap()
                .starts_with("+10 ns (95% CI +10 ns to +10 ns, 1.10×)"),
            "{:?}",
            a.valid[0].cost
        );
        assert!(markdown(&a).contains("cost: +10 ns"));
    }
}
