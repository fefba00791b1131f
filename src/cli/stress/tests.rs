//! Unit tests of the report reader and the verdict.

use std::time::Duration;

use fdwindow::report::stats::Count;

use super::injector::*;
use super::verdict::*;

#[test]
fn report_keeps_the_latest_line_per_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r");
    std::fs::write(
        &path,
        "10 0 0.000100 0.000000 a\n11 0 0.000200 0.000000 b c\n10 40 0.400000 0.2 a\n\
         bad line\nheld 10 file /tmp/x\nholds 10 1 0\n10 90 0.900000 0.5 a\n",
    )
    .unwrap();
    let r = read_report(&path);
    assert_eq!(r.processes, 2);
    assert_eq!(r.spawns, 90);
    assert_eq!(r.longest, Duration::from_millis(900));
    let none = read_report(&dir.path().join("missing"));
    assert_eq!((none.processes, none.spawns), (0, 0));
}

#[test]
fn the_verdict_follows_fisher_p_and_whether_pressure_reached() {
    let (alone, pressured) = (Count::new(0, 30), Count::new(26, 30));
    let (verdict, p) = Verdict::of(alone, pressured, true);
    assert_eq!(verdict, Verdict::Exposed);
    assert_eq!(
        verdict_line(verdict, p, alone, pressured),
        format!(
            "verdict: exposed (pressure 26/30 vs alone 0/30, one-sided Fisher p = {} <= 0.001)",
            p_text(p)
        )
    );
    assert!(p_text(p).contains("e-"), "{}", p_text(p));
    // The same counts with no pressured process: the arm compared nothing.
    assert_eq!(Verdict::of(alone, pressured, false).0, Verdict::Unpressured);
    // As many failures alone, or too few runs to tell (0/3 against 3/3
    // is p = 0.05), against failures alone that pressure still outnumbers.
    for (alone, pressured, expected) in [
        ((3, 3), (3, 3), Verdict::Inconclusive),
        ((0, 3), (0, 3), Verdict::Inconclusive),
        ((0, 3), (3, 3), Verdict::Inconclusive),
        ((5, 30), (26, 30), Verdict::Exposed),
    ] {
        let (a, b) = (
            Count::new(alone.0, alone.1),
            Count::new(pressured.0, pressured.1),
        );
        let (v, p) = Verdict::of(a, b, true);
        assert_eq!(v, expected, "{a:?} {b:?}: p {p}");
    }
    // 0/12 against 12/12, the integration test's counts: 1 / C(24, 12).
    let (v, p) = Verdict::of(Count::new(0, 12), Count::new(12, 12), true);
    assert_eq!(v, Verdict::Exposed);
    assert!((p * 2_704_156.0 - 1.0).abs() < 1e-6, "{p}");
    // No run at all (interrupted at once): nothing to call unpressured.
    assert_eq!(
        Verdict::of(Count::default(), Count::default(), false).0,
        Verdict::Inconclusive
    );
}

#[test]
fn the_verdict_ids_are_distinct_words() {
    let all = [
        Verdict::Exposed,
        Verdict::Unpressured,
        Verdict::Inconclusive,
    ];
    let ids: std::collections::BTreeSet<&str> = all.iter().map(|v| v.id()).collect();
    assert_eq!(ids.len(), all.len());
}
