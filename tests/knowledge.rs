//! The encoded knowledge holds against every committed measurement, and the
//! check does catch a measurement that contradicts it.

use std::path::Path;

use fdwindow::knowledge::contradictions;
use fdwindow::report::ResultsFile;
use fdwindow::verdict::Outcome;

fn committed() -> Vec<ResultsFile> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    fdwindow::results::load_dir(&dir).expect("committed results load")
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
    let linux = files
        .iter_mut()
        // Not a VM's: under TCG most cells are emulated, and no claim uses them.
        .find(|f| f.platform.os == "linux" && f.platform.accel.is_empty())
        .expect("a Linux results file");
    // Make unlock-then-close show the hazard in the fork window.
    let report = linux
        .probes
        .get_mut("flock-survival")
        .expect("flock-survival measured");
    let arm = report
        .arms
        .iter_mut()
        .find(|a| a.arm == "unlock-then-close" && a.window.id() == "fork-window")
        .expect("arm measured");
    arm.outcome = Outcome::Observed {
        trials: 20,
        hits: 3,
        tallies: Default::default(),
    };
    let found = contradictions(&files);
    assert_eq!(found.len(), 1, "{found:?}");
    let text = found[0].to_string();
    assert!(
        text.contains("flock-survival unlock-then-close fork-window"),
        "{text}"
    );
    assert!(
        text.contains("claimed valid") && text.contains("measured invalid 3/20"),
        "{text}"
    );
}

#[test]
fn an_unencoded_measured_arm_is_caught() {
    let mut files = committed();
    let linux = files
        .iter_mut()
        .find(|f| f.platform.os == "linux" && f.platform.accel.is_empty())
        .unwrap();
    let report = linux.probes.get_mut("flock-survival").unwrap();
    let mut extra = report.arms[1].clone();
    extra.arm = "brand-new-fix".into();
    report.arms.push(extra);
    let found = contradictions(&files);
    assert!(
        found
            .iter()
            .any(|c| c.cell.starts_with("flock-survival brand-new-fix")),
        "{found:?}"
    );
}
