//! Checks how finely each clock ticks here, and how often two reads of it are
//! equal: a clock that repeats values makes pid+timestamp names collide.
//!
//! Method: for every clock this OS offers (`clock_getres`, then reads through
//! `clock_gettime`) and for std's `SystemTime` and `Instant`: read it back to
//! back in one thread and count equal pairs and trailing zero digits of the
//! nanosecond field; then release two threads together by a `Barrier` for
//! each round and count the rounds in which both read the same value.

use std::io;
use std::sync::Barrier;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fdwindow::harness::{Probe, Settings};
use fdwindow::hazards::clocks::{
    NamedClock, getres, gettime, instant_clock, os_clocks, trailing_zero_digits,
};
use fdwindow::report::Table;
use fdwindow_fix::base::scratch::Scratch;

pub static PROBE: Probe = Probe {
    hazard: "clock-resolution",
    about: "Checks how finely each clock ticks, and how often two reads (one thread, or two at once) are equal.",
    trials: 400,
    race: Duration::ZERO,
    arms: &[],
    observe: Some(observe),
};

/// Runs this probe with `args` (those after `fdwindow probe clock-resolution`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE, args)
}

/// Back-to-back pairs per clock, per cross-thread round.
const PAIRS_PER_ROUND: u64 = 50;

/// Where a reading comes from.
#[derive(Clone, Copy)]
enum Source {
    Clock(NamedClock),
    SystemTime,
    /// Time since a shared base instant: `Instant` hides its fields, and the
    /// difference of two readings of a clock keeps that clock's granularity.
    Instant(Instant),
}

impl Source {
    fn name(&self) -> String {
        match self {
            Source::Clock(c) => c.name.to_owned(),
            Source::SystemTime => "SystemTime".into(),
            Source::Instant(_) => "Instant".into(),
        }
    }

    fn read(&self) -> io::Result<(i64, u32)> {
        match self {
            Source::Clock(c) => gettime(c.id),
            Source::SystemTime => {
                let d = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_err(io::Error::other)?;
                Ok((d.as_secs() as i64, d.subsec_nanos()))
            }
            Source::Instant(base) => {
                let d = base.elapsed();
                Ok((d.as_secs() as i64, d.subsec_nanos()))
            }
        }
    }

    /// The `clock_getres` cell.
    fn resolution(&self) -> io::Result<String> {
        Ok(match self {
            Source::Clock(c) => format!("{:?}", getres(c.id)?),
            Source::SystemTime => "std reads CLOCK_REALTIME".into(),
            Source::Instant(_) => format!("std reads {}", instant_clock()),
        })
    }
}

fn share(n: u64, of: u64) -> String {
    format!("{:.1}% ({n}/{of})", n as f64 * 100.0 / of.max(1) as f64)
}

fn observe(_: &Scratch, settings: Settings) -> Vec<Table> {
    let rounds = settings.trials;
    let pairs = rounds * PAIRS_PER_ROUND;
    let mut sources: Vec<Source> = os_clocks().into_iter().map(Source::Clock).collect();
    sources.push(Source::SystemTime);
    sources.push(Source::Instant(Instant::now()));
    let rows = sources
        .iter()
        .map(|s| {
            let name = s.name();
            match measure(s, pairs, rounds) {
                Ok(cells) => std::iter::once(name).chain(cells).collect(),
                Err(e) => {
                    let why = match e.raw_os_error() {
                        Some(libc::EINVAL) => format!("unsupported: {e}"),
                        _ => format!("broken: {e}"),
                    };
                    std::iter::once(name)
                        .chain(std::iter::repeat_n(why, 4))
                        .collect()
                }
            }
        })
        .collect();
    vec![Table {
        id: "clocks".into(),
        about: format!(
            "Per clock: its clock_getres; of {pairs} back-to-back reads in one thread, the share \
             whose nanosecond field ends in ≥ 3 zero digits (a microsecond clock: always) and the \
             histogram of trailing zero digits; the share of back-to-back pairs that are equal; \
             and of {rounds} rounds in which two threads released by one Barrier each read once, \
             the share with equal values. Instant is read as the time since a shared base Instant."
        ),
        columns: [
            "clock",
            "clock_getres",
            "nanos ending in ≥3 zeros",
            "trailing zero digits 0/1/2/≥3",
            "equal back-to-back (1 thread)",
            "equal across 2 threads",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        problem: None,
    }]
}

/// The four measured cells of one clock's row.
fn measure(s: &Source, pairs: u64, rounds: u64) -> io::Result<Vec<String>> {
    let resolution = s.resolution()?;
    let mut zeros = [0u64; 4];
    let mut equal = 0;
    for _ in 0..pairs {
        let a = s.read()?;
        let b = s.read()?;
        equal += u64::from(a == b);
        zeros[trailing_zero_digits(a.1).min(3) as usize] += 1;
    }
    let histogram = zeros
        .iter()
        .map(|z| format!("{:.1}%", *z as f64 * 100.0 / pairs as f64))
        .collect::<Vec<_>>()
        .join(" / ");
    let barrier = Barrier::new(2);
    // Each thread meets the barrier every round even after a failed read, so
    // an error in one can never leave the other waiting for ever.
    let read_rounds = || -> io::Result<Vec<(i64, u32)>> {
        let all: Vec<_> = (0..rounds)
            .map(|_| {
                barrier.wait();
                s.read()
            })
            .collect();
        all.into_iter().collect()
    };
    let (a, b) = std::thread::scope(|scope| {
        let other = scope.spawn(read_rounds);
        let mine = read_rounds();
        (mine, other.join().expect("the reading thread panicked"))
    });
    let (a, b) = (a?, b?);
    let across = a.iter().zip(&b).filter(|(x, y)| x == y).count() as u64;
    Ok(vec![
        resolution,
        share(zeros[3], pairs),
        histogram,
        share(equal, pairs),
        share(across, rounds),
    ])
}
