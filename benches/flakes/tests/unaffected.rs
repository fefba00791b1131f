//! Tests that fork pressure does not cause to fail (labels.json): a
//! setenv/getenv race between two threads of one test, a test failing now
//! and then for no descriptor reason, and tests with nothing to break.
//!
//! No test here other than the environment race reads or writes the
//! environment (libc's getenv is not safe against a concurrent setenv). The
//! one other reader is std's panic hook (RUST_BACKTRACE) when a test fails;
//! the race moves no array after its setup, so only a panic landing in the
//! microseconds of that setup could read a stale one.

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use fdwindow_flakes::{process_random, work};

const SETTING: &CStr = c"FDWINDOW_FLAKES_SETTING";
const OTHERS: [&CStr; 4] = [
    c"FDWINDOW_FLAKES_D0",
    c"FDWINDOW_FLAKES_D1",
    c"FDWINDOW_FLAKES_D2",
    c"FDWINDOW_FLAKES_D3",
];

/// Rounds of the race per run: each moves the setting once past every other
/// variable the writer rewrites.
const ROUNDS: usize = 2;

/// The worker's work between two reads of the setting (loop iterations):
/// the longer, the rarer a read overlaps a rewrite.
const WORK_ITEM: u64 = 4000;

struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

fn setenv(name: &CStr, value: &CStr) {
    // SAFETY: two NUL-terminated strings; glibc copies them. Thread safety
    // against getenv is exactly what this test gets wrong on purpose, and
    // nothing else in this binary reads the environment.
    let r = unsafe { libc::setenv(name.as_ptr(), value.as_ptr(), 1) };
    assert_eq!(r, 0);
}

fn unsetenv(name: &CStr) {
    // SAFETY: as in setenv.
    let r = unsafe { libc::unsetenv(name.as_ptr()) };
    assert_eq!(r, 0);
}

/// A settings reloader rewrites some variables (unsetenv, then setenv) in one
/// thread while a worker reads a setting that is never removed with libc's
/// getenv in another. glibc's unsetenv moves the later entries of the
/// environment down in place, so a getenv walking the array now and then
/// steps over the setting and finds nothing (env-race; no child involved:
/// glibc's unsetenv frees nothing, and after the first round no setenv
/// moves the array, so the race only misses, never crashes).
#[test]
fn worker_sees_setting_during_reload() {
    for name in OTHERS {
        setenv(name, c"1");
    }
    let mut missed = 0;
    for _ in 0..ROUNDS {
        // Put the setting after the variables the reloader rewrites.
        unsetenv(SETTING);
        setenv(SETTING, c"on");
        let done = AtomicBool::new(false);
        let reads = AtomicUsize::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                // done is set however this thread ends, so the reader stops.
                let _done = SetOnDrop(&done);
                // Start once the worker is reading, so the two overlap.
                while reads.load(Ordering::Relaxed) < 2 {
                    std::hint::spin_loop();
                }
                for name in OTHERS {
                    unsetenv(name);
                    setenv(name, c"1");
                }
            });
            // Bounded: the reloader ends after its few rewrites.
            while !done.load(Ordering::Acquire) {
                // A work item, then a look at the setting.
                let mut h = 0u64;
                for k in 0..WORK_ITEM {
                    h = std::hint::black_box(h.wrapping_mul(31).wrapping_add(k));
                }
                // SAFETY: a NUL-terminated name; the result is only tested for null.
                if unsafe { libc::getenv(SETTING.as_ptr()) }.is_null() {
                    missed += 1;
                }
                reads.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    unsetenv(SETTING);
    for name in OTHERS {
        unsetenv(name);
    }
    work(60);
    assert_eq!(
        missed, 0,
        "the worker found the setting unset {missed} times during a reload"
    );
}

/// A date parser is checked on one random day per run (an unpinned seed);
/// its bug shows for 5 in 100 of them, alone or not.
#[test]
fn date_parse_random_day() {
    let r = process_random() % 100;
    work(60);
    assert!(r >= 5, "day {} of the year did not round-trip", r + 300);
}

/// Tests with nothing to break, for the binary's run time.
#[test]
fn checksum_is_stable() {
    work(120);
    let sum: u64 = (1..=1000u64).map(|x| x * x % 97).sum();
    assert_eq!(sum, (1..=1000u64).map(|x| x * x % 97).sum::<u64>());
}

#[test]
fn table_formats() {
    work(150);
    assert_eq!(format!("{:>6}|{:<4}|", "ab", 7), "    ab|7   |");
}

#[test]
fn sorted_merge() {
    work(100);
    let mut v: Vec<u32> = (0..100).rev().collect();
    v.sort_unstable();
    assert!(v.windows(2).all(|w| w[0] < w[1]));
}
