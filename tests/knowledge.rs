//! The encoded knowledge holds against every committed measurement, and the
//! check catches each way a measurement can stop supporting a claim.

mod common;

use std::path::Path;

use fdwindow::evidence::knowledge::{Finding, check, claim_on, contradictions};
use fdwindow::report::ResultsFile;
use fdwindow::report::verdict::{Kind, Outcome, Role, Verdict};

fn committed() -> Vec<ResultsFile> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    fdwindow::evidence::results::load_dir(&dir).expect("committed results load")
}

fn linux(files: &mut [ResultsFile]) -> &mut ResultsFile {
    common::quoted_linux(files)
}

#[test]
fn committed_results_agree_with_the_claims() {
    let files = committed();
    assert!(!files.is_empty());
    let found = contradictions(&files);
    let listing: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert!(
        found.is_empty(),
        "measurements contradict the encoded claims:\n{}",
        listing.join("\n")
    );
}

#[test]
fn a_contradicting_measurement_is_caught_and_named() {
    let mut files = committed();
    let report = linux(&mut files)
        .probes
        .get_mut("flock-survival")
        .expect("flock-survival measured");
    let arm = report
        .arms
        .iter_mut()
        .find(|a| a.arm == "unlock-then-close" && a.window.id() == "fork-window")
        .expect("arm measured");
    arm.outcome = Outcome::observed(3, 10);
    let found = contradictions(&files);
    assert_eq!(found.len(), 1, "{found:?}");
    let text = found[0].to_string();
    assert!(
        text.contains("flock-survival unlock-then-close fork-window"),
        "{text}"
    );
    assert!(
        text.contains("claimed valid") && text.contains("measured invalid 3/10"),
        "{text}"
    );
}

/// Every claimed-present deterministic control and every claimed-present
/// sham set to 0/N, and every claimed-valid mitigation set to 1/N, one at a
/// time: each fails the check, naming that cell.
#[test]
fn every_claimed_cell_can_fail_the_check() {
    let files = committed();
    // The quoted file: a TCG guest's emulated cells are held to no claim.
    let quoted =
        fdwindow::evidence::query::quoted_file(&files, "linux").expect("a Linux results file");
    let (i, file) = files
        .iter()
        .enumerate()
        .find(|(_, f)| f.platform.id == quoted.platform.id)
        .unwrap();
    let (mut mutated, mut shams) = (0, 0);
    for (hazard, report) in &file.probes {
        for (k, arm) in report.arms.iter().enumerate() {
            let Some(claim) = claim_on(&file.platform, hazard, &arm.arm, arm.window) else {
                continue;
            };
            let Some(count) = arm.outcome.count() else {
                continue;
            };
            let n = count.trials.max(7);
            let outcome = match (arm.role, arm.kind, claim.verdict) {
                (Role::Control, Kind::Deterministic, Verdict::Present) => Outcome::observed(0, n),
                (Role::Mitigation, _, Verdict::Valid) => Outcome::observed(1, n),
                // A sham that stops showing the hazard: deterministic, in as
                // many trials; statistical, in enough that the cell reads
                // `absent` (the 95% upper bound of 0/1000 is under 1%).
                (Role::Sham, Kind::Deterministic, Verdict::Present) => {
                    shams += 1;
                    Outcome::observed(0, n)
                }
                (Role::Sham, Kind::Statistical, Verdict::Present) if claim.or.is_none() => {
                    shams += 1;
                    Outcome::observed(0, n.max(1000))
                }
                _ => continue,
            };
            let mut copy = files.clone();
            copy[i].probes.get_mut(hazard).unwrap().arms[k].outcome = outcome;
            let cell = format!("{hazard} {} {}", arm.arm, arm.window.id());
            let found = contradictions(&copy);
            assert!(
                found.iter().any(|c| c.cell == cell),
                "{cell} mutated, but the check did not name it: {found:?}"
            );
            mutated += 1;
        }
    }
    assert!(mutated >= 20, "only {mutated} cells mutated");
    assert!(shams >= 5, "only {shams} sham cells mutated");
}

#[test]
fn a_claimed_arm_missing_from_a_probe_that_ran_fails() {
    let mut files = committed();
    let report = linux(&mut files).probes.get_mut("flock-survival").unwrap();
    report.arms.retain(|a| a.arm != "std-unlock");
    let found = contradictions(&files);
    assert!(
        found.iter().any(|c| c.finding == Finding::WithoutEvidence
            && c.cell.starts_with("flock-survival std-unlock")),
        "{found:?}"
    );
    // A claim for every window is missing where the arm is gone from one
    // window the probe ran, though another window still has it.
    let mut files = committed();
    let report = linux(&mut files).probes.get_mut("flock-survival").unwrap();
    assert!(
        report
            .arms
            .iter()
            .any(|a| a.arm == "std-unlock" && a.window.id() == "inherited")
    );
    report
        .arms
        .retain(|a| !(a.arm == "std-unlock" && a.window.id() == "fork-window"));
    let found = contradictions(&files);
    assert!(
        found.iter().any(|c| c.finding == Finding::WithoutEvidence
            && c.cell == "flock-survival std-unlock every"
            && c.evidence.contains("fork-window")),
        "{found:?}"
    );
    // A probe that did not run at all is only listed.
    let mut files = committed();
    linux(&mut files).probes.remove("flock-survival");
    let report = check(&files);
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert!(
        report
            .listed
            .iter()
            .any(|c| c.finding == Finding::NotMeasured && c.cell.starts_with("flock-survival"))
    );
}

#[test]
fn an_unencoded_measured_arm_is_caught() {
    let mut files = committed();
    let report = linux(&mut files).probes.get_mut("flock-survival").unwrap();
    let mut extra = report.arms[1].clone();
    extra.arm = "brand-new-fix".into();
    report.arms.push(extra);
    let found = contradictions(&files);
    assert!(
        found.iter().any(|c| c.finding == Finding::WithoutClaim
            && c.cell.starts_with("flock-survival brand-new-fix")),
        "{found:?}"
    );
}

/// A Linux results file relabelled as macOS: macOS's claims are reported
/// ones, so a measured arm without a claim is news, and only the cells where
/// a reported claim names a different decided word fail.
#[test]
fn a_relabelled_file_fails_only_on_genuine_disagreements() {
    let mut files = committed();
    let mut mac = linux(&mut files).clone();
    mac.platform.os = "macos".into();
    mac.platform.id = "macos-relabelled".into();
    let report = check(std::slice::from_ref(&mac));
    let mut expected = Vec::new();
    for (hazard, r) in &mac.probes {
        for a in &r.arms {
            if let Some(claim) = claim_on(&mac.platform, hazard, &a.arm, a.window) {
                let v = r.judgement(a).verdict;
                if v != claim.verdict && claim.or != Some(v) && v != Verdict::Inconclusive {
                    expected.push(format!("{hazard} {} {}", a.arm, a.window.id()));
                }
            }
        }
    }
    let mut failed: Vec<String> = report
        .failures
        .iter()
        .map(|c| {
            assert!(
                matches!(c.finding, Finding::Contradiction | Finding::NotAllowed),
                "{c}"
            );
            c.cell.clone()
        })
        .collect();
    failed.sort();
    expected.sort();
    assert_eq!(failed, expected);
    assert!(
        !expected.is_empty(),
        "macOS's reported claims disagree with Linux somewhere"
    );
    assert!(report.listed.iter().any(|c| c.finding == Finding::News));
}

/// The quoted Linux file relabelled as macOS, with its parked-call cells set
/// by `mac_cell` (arm, current outcome) to what the test needs.
fn relabelled_with_parked(mac_cell: impl Fn(&str, &Outcome) -> Outcome) -> ResultsFile {
    let mut files = committed();
    let mut mac = linux(&mut files).clone();
    mac.platform.os = "macos".into();
    mac.platform.id = "macos-relabelled".into();
    let report = mac.probes.get_mut("two-step-cloexec").unwrap();
    for a in report
        .arms
        .iter_mut()
        .filter(|a| a.window.id() == "parked-call")
    {
        a.outcome = mac_cell(&a.arm, &a.outcome);
    }
    mac
}

fn parked_failures(report: &fdwindow::evidence::knowledge::CheckReport) -> Vec<String> {
    let mut cells: Vec<String> = report
        .failures
        .iter()
        .filter(|c| c.cell.ends_with("parked-call"))
        .map(|c| c.cell.clone())
        .collect();
    cells.sort();
    cells
}

/// What a Mac shows in the parked-call window: controls present; std's
/// socket, accept, pipe, socketpair and connects invalid (std makes them in
/// two steps on Apple); std's open and dup valid with their shams present;
/// atomic-flag and the shams with no flag to strip unsupported.
fn on_a_mac(arm: &str, linux: &Outcome) -> Outcome {
    let unsupported = || Outcome::Unsupported {
        reason: "no sham here: socket was made without an atomic close-on-exec flag to strip"
            .into(),
    };
    match arm {
        "atomic-flag" | "atomic-flag-sham" => unsupported(),
        "std-file-open" | "std-dup" | "std-file-open-sham" | "std-dup-sham" => linux.clone(),
        a if a.starts_with("two-step-") => linux.clone(),
        a if a.ends_with("-sham") => unsupported(),
        _ => {
            let n = linux.count().expect("a measured cell").trials;
            Outcome::observed(n, n)
        }
    }
}

#[test]
fn a_mac_showing_the_expected_parked_call_cells_passes_and_all_broken_fails() {
    let mac = relabelled_with_parked(on_a_mac);
    // Every parked-call cell has a macOS claim, and each agrees.
    let cells: Vec<_> = mac.probes["two-step-cloexec"]
        .arms
        .iter()
        .filter(|a| a.window.id() == "parked-call")
        .collect();
    assert_eq!(cells.len(), 25);
    for a in &cells {
        assert!(
            claim_on(&mac.platform, "two-step-cloexec", &a.arm, a.window).is_some(),
            "{} has no macOS claim",
            a.arm
        );
    }
    let report = check(std::slice::from_ref(&mac));
    assert_eq!(parked_failures(&report), Vec::<String>::new());

    // A broken interposer: every parked-call cell broken fails, each named.
    let broken = relabelled_with_parked(|_, _| Outcome::Broken {
        error: "no call parked".into(),
    });
    let failed = parked_failures(&check(std::slice::from_ref(&broken)));
    assert_eq!(failed.len(), 25, "{failed:?}");
    // So does a std constructor that stopped leaking (a wrong claim or a
    // changed std would show here).
    let atomic_socket = relabelled_with_parked(|arm, linux| match arm {
        "std-socket" => linux.clone(),
        _ => on_a_mac(arm, linux),
    });
    assert_eq!(
        parked_failures(&check(std::slice::from_ref(&atomic_socket))),
        vec!["two-step-cloexec std-socket parked-call".to_owned()]
    );
}

#[test]
fn a_mac_whose_clock_showed_no_collision_passes_as_allowed() {
    let mut mac = relabelled_with_parked(on_a_mac);
    let report = mac.probes.get_mut("clock-collision").unwrap();
    for a in report.arms.iter_mut() {
        if a.arm == "pid-realtime-nanos" || a.arm == "us-truncated" {
            a.outcome = Outcome::observed(0, 400);
        }
    }
    let report = check(std::slice::from_ref(&mac));
    let clock: Vec<_> = report
        .failures
        .iter()
        .filter(|c| c.cell.starts_with("clock-collision"))
        .collect();
    assert!(clock.is_empty(), "{clock:?}");
    // Present is what the source says; absent is allowed, not claimed.
    for arm in ["pid-realtime-nanos", "us-truncated"] {
        let claim = claim_on(
            &mac.platform,
            "clock-collision",
            arm,
            fdwindow::report::verdict::Window::InProcess,
        )
        .unwrap();
        assert_eq!(
            (claim.verdict, claim.or),
            (Verdict::Present, Some(Verdict::Absent))
        );
    }
}
