//! Each verdict rule, proved on hand-built reports: what a reviewer may quote
//! follows from the counts of one window of one run, and nothing else.

use fdwindow::report::platform::Platform;
use fdwindow::report::verdict::{Kind, Outcome, Role, Verdict, Window};
use fdwindow::report::{ArmReport, ProbeReport, ResultsFile, SCHEMA_VERSION};

fn arm(id: &str, role: Role, window: Window, outcome: Outcome) -> ArmReport {
    ArmReport {
        arm: id.into(),
        role,
        window,
        kind: window.kind().unwrap_or(Kind::Deterministic),
        about: "hand-built".into(),
        against: (role != Role::Control).then(|| "close".into()),
        sham: None,
        avoids: None,
        emulated: false,
        outcome,
    }
}

fn report(arms: Vec<ArmReport>) -> ProbeReport {
    ProbeReport {
        left_out: Vec::new(),
        schema: SCHEMA_VERSION,
        hazard: "flock-survival".into(),
        about: "hand-built".into(),
        fdwindow_version: "0".into(),
        platform: Platform::detect(),
        started_at: "2026-12-01T00:00:00Z".into(),
        elapsed_ms: 1,
        arms,
        tables: Vec::new(),
        scope: None,
    }
}

/// The mitigation's verdict against a control, both in the fork window.
fn judged(control: Outcome, fix: Outcome) -> Verdict {
    let w = Window::ForkWindow;
    let r = report(vec![
        arm("close", Role::Control, w, control),
        arm("fix", Role::Mitigation, w, fix),
    ]);
    r.judgement(&r.arms[1]).verdict
}

#[test]
fn significance_against_the_same_window_control() {
    let o = Outcome::observed;
    assert_eq!(judged(o(1, 1), o(0, 1)), Verdict::Inconclusive);
    assert_eq!(judged(o(6, 6), o(0, 6)), Verdict::Inconclusive);
    assert_eq!(judged(o(7, 7), o(0, 7)), Verdict::Valid);
    assert_eq!(judged(o(10, 10), o(0, 10)), Verdict::Valid);
    assert_eq!(judged(o(7, 7), o(1, 7)), Verdict::Invalid);
}

#[test]
fn a_control_in_another_window_does_not_count() {
    let r = report(vec![
        arm(
            "close",
            Role::Control,
            Window::Inherited,
            Outcome::observed(10, 10),
        ),
        arm(
            "fix",
            Role::Mitigation,
            Window::ForkWindow,
            Outcome::observed(0, 10),
        ),
    ]);
    let j = r.judgement(&r.arms[1]);
    assert_eq!(j.verdict, Verdict::Inconclusive);
    assert!(j.why.unwrap().contains("did not run"));
}

#[test]
fn an_absent_control_makes_its_mitigation_not_needed() {
    let o = Outcome::observed;
    assert_eq!(judged(o(0, 7), o(0, 7)), Verdict::NotNeeded);
    // Too few clean control trials say nothing either way.
    assert_eq!(judged(o(0, 6), o(0, 7)), Verdict::Inconclusive);
}

#[test]
fn a_sham_not_present_makes_its_mitigation_inconclusive() {
    let w = Window::ForkWindow;
    let with_sham = |sham: Outcome| {
        let mut fix = arm("fix", Role::Mitigation, w, Outcome::observed(0, 10));
        fix.sham = Some("fix-sham".into());
        let r = report(vec![
            arm("close", Role::Control, w, Outcome::observed(10, 10)),
            fix,
            arm("fix-sham", Role::Sham, w, sham),
        ]);
        r.judgement(&r.arms[1]).verdict
    };
    assert_eq!(with_sham(Outcome::observed(0, 10)), Verdict::Inconclusive);
    assert_eq!(with_sham(Outcome::observed(10, 10)), Verdict::Valid);
}

#[test]
fn unconfirmed_trials_are_excluded_and_counted() {
    let lost = |trials, broken_trials| Outcome::Observed {
        trials,
        hits: 0,
        broken_trials,
        tallies: Default::default(),
    };
    let o = Outcome::observed;
    assert_eq!(judged(o(7, 7), lost(7, 5)), Verdict::Valid);
    assert_eq!(judged(o(7, 7), lost(6, 5)), Verdict::Broken);
    assert_eq!(lost(7, 5).broken_trials(), 5);
}

#[test]
fn avoids_is_never_valid() {
    let w = Window::InProcess;
    let mut fix = arm("fix", Role::Mitigation, w, Outcome::observed(0, 20));
    fix.avoids = Some("nothing is written".into());
    let r = report(vec![
        arm("close", Role::Control, w, Outcome::observed(20, 20)),
        fix,
    ]);
    assert_eq!(r.judgement(&r.arms[1]).verdict, Verdict::Avoids);
}

#[test]
fn an_overflowed_sum_is_refused_on_load() {
    let w = Window::ForkWindow;
    let file = ResultsFile {
        schema: SCHEMA_VERSION,
        platform: Platform::detect(),
        probes: [(
            "flock-survival".to_owned(),
            report(vec![arm(
                "close",
                Role::Control,
                w,
                Outcome::observed(u64::MAX, 3),
            )]),
        )]
        .into(),
    };
    let json = serde_json::to_string(&file).unwrap();
    let err = ResultsFile::from_json(&json).unwrap_err().to_string();
    assert!(
        err.contains("18446744073709551615 hits in 3 trials"),
        "{err}"
    );
}

/// README, MATRIX.md and `advise` carry the same quotable sentence on `valid`.
#[test]
fn the_meaning_of_valid_is_quotable_everywhere() {
    let norm = |t: &str| {
        t.lines()
            .map(|l| l.trim_start_matches('>').trim())
            .collect::<Vec<_>>()
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let sentence = norm(fdwindow::views::matrix::VALID_MEANS);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in ["README.md", "results/MATRIX.md"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        assert!(norm(&text).contains(&sentence), "{file} lacks: {sentence}");
    }
    let advice = fdwindow::views::advise::advise(&[], &[], "flock-survival", "macos").unwrap();
    assert!(norm(&fdwindow::views::advise::markdown(&advice)).contains(&sentence));
}
