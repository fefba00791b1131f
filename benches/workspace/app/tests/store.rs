//! The store, reopened: each test closes its store and opens it again at
//! once, as a restart does. Three go through `kit::store::with_store`,
//! which closes the locked file without unlocking it: one cause, one site,
//! three exposed tests (labels.json). The journal's tests do the same with
//! an OFD byte-range lock: one drops its writer (exposed), one unlocks first.

use kit::ScratchDir;
use kit::store::with_store;

mod busy {
    include!(concat!(env!("OUT_DIR"), "/busy_tests.rs"));
}

fn busy(i: usize) {
    kit::busy::mixed(i);
}

#[test]
fn counter_survives_restart() {
    let dir = ScratchDir::new("counter");
    let path = dir.join("store");
    with_store(&path, |s| s.put("count", "1")).unwrap();
    let count = with_store(&path, |s| s.get("count").map(str::to_owned)).unwrap();
    assert_eq!(count.as_deref(), Some("1"));
}

#[test]
fn settings_saved_then_loaded() {
    let dir = ScratchDir::new("settings");
    let path = dir.join("store");
    with_store(&path, |s| s.put("theme", "dark")).unwrap();
    let theme = with_store(&path, |s| s.get("theme").map(str::to_owned)).unwrap();
    assert_eq!(theme.as_deref(), Some("dark"));
}

#[test]
fn cache_cleared_then_reused() {
    let dir = ScratchDir::new("cache");
    let path = dir.join("store");
    with_store(&path, |s| s.put("entry", "")).unwrap();
    with_store(&path, |s| s.put("entry", "fresh")).unwrap();
}

#[test]
fn two_stores_side_by_side() {
    let dir = ScratchDir::new("pair");
    with_store(&dir.join("a"), |a| a.put("k", "a")).unwrap();
    with_store(&dir.join("b"), |b| b.put("k", "b")).unwrap();
}

/// A journal writer dropped, its segment claimed again at once: the OFD
/// lock goes with the file's last descriptor (ofd-lock-survival).
#[cfg(target_os = "linux")]
#[test]
fn journal_segment_reclaimed_after_writer_drops() {
    let dir = ScratchDir::new("journal");
    let path = dir.join("journal");
    let mut first = kit::journal::Writer::claim(&path, 0).unwrap();
    first.write(b"one\n").unwrap();
    drop(first);
    let mut second = kit::journal::Writer::claim(&path, 0).unwrap();
    second.write(b"two\n").unwrap();
    second.finish().unwrap();
}

/// The same, with the segment given up by `finish` (unlocked, then
/// closed): no copy can keep the claim. Not exposed.
#[cfg(target_os = "linux")]
#[test]
fn journal_segment_handed_over_after_finish() {
    let dir = ScratchDir::new("journal-finish");
    let path = dir.join("journal");
    let mut first = kit::journal::Writer::claim(&path, 1).unwrap();
    first.write(b"one\n").unwrap();
    first.finish().unwrap();
    let second = kit::journal::Writer::claim(&path, 1).unwrap();
    second.finish().unwrap();
}
