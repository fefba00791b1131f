//! One matrix across kernels: rows whose deterministic verdict differs between
//! kernels are listed and marked; TCG cells outside the deterministic windows
//! are `emulated`, shown as such and used by no claim; advise names releases.

mod common;

use std::path::Path;

use fdwindow::report::ResultsFile;
use fdwindow::report::platform::{Platform, Virtualization};
use fdwindow::report::verdict::{Outcome, Window};

fn host() -> ResultsFile {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let mut files = fdwindow::evidence::results::load_dir(&dir).expect("committed results load");
    common::quoted_linux(&mut files).clone()
}

/// The host's file as if measured on another kernel in a VM.
fn guest(accel: &str, release: &str) -> ResultsFile {
    let mut f = host();
    f.platform.kernel_release = release.into();
    f.platform.upstream_version = String::new();
    f.platform.virtualization = match accel {
        "tcg" => Virtualization::Tcg,
        "kvm" => Virtualization::KvmGuest,
        other => panic!("no accelerator {other}"),
    };
    f.platform.id = Platform::make_id(
        "linux",
        release,
        "",
        "x86_64",
        "glibc",
        "2.36",
        f.platform.virtualization,
    );
    // As the harness flags them in a guest (fdwindow::vm::emulated).
    for report in f.probes.values_mut() {
        // Each report carries the platform it ran on (issue 13).
        report.platform = f.platform.clone();
        for a in &mut report.arms {
            a.emulated = fdwindow::vm::emulated(&f.platform, a.kind, a.arm.contains("stall"));
        }
    }
    f
}

fn set(f: &mut ResultsFile, hazard: &str, arm: &str, window: Window, hits: u64, trials: u64) {
    let a = f
        .probes
        .get_mut(hazard)
        .unwrap()
        .arms
        .iter_mut()
        .find(|a| a.arm == arm && a.window == window)
        .unwrap_or_else(|| panic!("{hazard} {arm} {} measured", window.id()));
    a.outcome = Outcome::observed(hits, trials);
}

#[test]
fn a_deterministic_row_that_differs_between_kernels_is_listed_and_marked() {
    let mut other = guest("kvm", "5.4.0-1-generic");
    set(
        &mut other,
        "flock-survival",
        "close",
        Window::ForkWindow,
        0,
        20,
    );
    // A race cell that differs is no kernel difference.
    set(
        &mut other,
        "flock-survival",
        "close",
        Window::PosixSpawn,
        0,
        20,
    );
    let md = fdwindow::views::matrix::render(&[host(), other], &[]);
    let top = md.split("\n## `").next().unwrap();
    assert!(top.contains("## Rows that differ between kernels"), "{top}");
    let listed: Vec<&str> = top
        .lines()
        .filter(|l| l.starts_with("| `flock-survival` |"))
        .collect();
    // The control, and its mitigations, which lose their control there.
    assert!(
        listed.iter().any(|l| l
            .starts_with("| `flock-survival` | `close` | fork-window | present on `linux-6.18")),
        "{listed:?}"
    );
    assert!(
        listed
            .iter()
            .all(|l| l.contains("| fork-window |") && l.contains("on `linux-5.4.0-1-generic")),
        "{listed:?}"
    );
    assert!(
        md.contains("| `close` ≠ | control | fork-window |"),
        "marked row"
    );
    assert!(!md.contains("| `close` ≠ | control | posix-spawn |"));
}

/// A table answer that changed between kernels (exec of a file open for
/// writing ran on one, ETXTBSY on the other) is listed with both answers;
/// a table of counts that differs is not.
#[test]
fn a_table_answer_that_differs_between_kernels_is_listed() {
    let mut other = guest("kvm", "6.11.0-1-amd64");
    let etxtbsy = other.probes.get_mut("etxtbsy").unwrap();
    let table = etxtbsy
        .tables
        .iter_mut()
        .find(|t| t.id == "exec-while-open")
        .unwrap();
    assert_eq!(table.rows[0][1], "ETXTBSY");
    table.rows[0][1] = "runs".into();
    let md = fdwindow::views::matrix::render(&[host(), other.clone()], &[]);
    let top = md.split("\n## `").next().unwrap();
    let listed: Vec<&str> = top
        .lines()
        .filter(|l| l.starts_with("| `etxtbsy` | `exec-while-open` |"))
        .collect();
    assert_eq!(listed.len(), 1, "{top}");
    assert!(
        listed[0].contains("| write descriptor open | exec | ETXTBSY on `linux-6.18")
            && listed[0].contains("runs on `linux-6.11.0-1-amd64"),
        "{listed:?}"
    );
    // Counts are no kernel answer: a different spawn-window table is not listed.
    let mut counts = guest("kvm", "6.11.0-1-amd64");
    let slopes = counts
        .probes
        .get_mut("spawn-window")
        .unwrap()
        .tables
        .iter_mut()
        .find(|t| t.id == "slopes")
        .unwrap();
    slopes.rows[0][1] = "1.0".into();
    let md = fdwindow::views::matrix::render(&[host(), counts], &[]);
    assert!(md.contains("Table answers (an errno"), "{md}");
}

#[test]
fn the_same_verdicts_on_two_kernels_list_none() {
    let md = fdwindow::views::matrix::render(&[host(), guest("kvm", "6.1.0-1-amd64")], &[]);
    assert!(md.contains("None: every deterministic row"), "{md}");
    // One kernel alone has nothing to compare.
    let md = fdwindow::views::matrix::render(&[host()], &[]);
    assert!(!md.contains("Rows that differ between kernels"));
}

#[test]
fn tcg_race_cells_are_emulated_and_no_claim_uses_them() {
    let mut tcg = guest("tcg", "6.1.0-57-cloud-amd64");
    // Contradict the claims in a race cell: emulated, so nothing is found.
    set(
        &mut tcg,
        "flock-survival",
        "unlock-then-close",
        Window::PosixSpawn,
        5,
        20,
    );
    let report = fdwindow::evidence::knowledge::check(std::slice::from_ref(&tcg));
    assert_eq!(report.failures, vec![], "{report}");
    assert!(
        report
            .listed
            .iter()
            .any(|c| c.cell == "flock-survival unlock-then-close posix-spawn"
                && c.evidence.contains("(emulated)")),
        "{report}"
    );
    let md = fdwindow::views::matrix::render(&[host(), tcg.clone()], &[]);
    assert!(
        md.contains("*emulated*: **invalid** 5/20"),
        "emulated cell shown"
    );
    // The same in the fork window measures the kernel: it is caught.
    set(
        &mut tcg,
        "flock-survival",
        "unlock-then-close",
        Window::ForkWindow,
        3,
        20,
    );
    let report = fdwindow::evidence::knowledge::check(&[tcg]);
    assert_eq!(report.failures.len(), 1, "{report}");
    assert_eq!(
        report.failures[0].cell, "flock-survival unlock-then-close fork-window",
        "{report}"
    );
}

#[test]
fn advise_names_the_releases_a_fix_was_measured_on() {
    let files = [host(), guest("tcg", "6.1.0-57-cloud-amd64")];
    let advice = fdwindow::views::advise::advise(&files, &[], "flock-survival", "linux").unwrap();
    let fix = advice
        .valid
        .iter()
        .find(|a| a.arm == "unlock-then-close")
        .expect("unlock-then-close valid");
    let host = host().platform;
    let host_release = match host.virtualization {
        Virtualization::Bare => format!("`{}`", host.kernel_release),
        v => format!("`{}` ({})", host.kernel_release, v.id()),
    };
    assert_eq!(
        fix.measured_on,
        vec![host_release, "`6.1.0-57-cloud-amd64` (tcg)".to_owned()]
    );
    let md = fdwindow::views::advise::markdown(&advice);
    assert!(md.contains("measured on: `"), "{md}");
    assert!(md.contains("emulated: measures QEMU's TCG"), "{md}");
}
