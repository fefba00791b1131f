//! Checks how long a child holds the parent's close-on-exec descriptors after
//! a spawn starts, per spawn path, as the parent's memory and descriptors grow.
//!
//! Method: per sample, a fresh close-on-exec pipe; the clock starts, the path
//! spawns `/usr/bin/true`, the parent drops its write end, and `poll(2)` on the
//! read end wakes when exec has closed the child's copy (see `fdwindow::hazards::spawn`).
//! Sweeps touched anonymous memory (4 MiB–1 GiB) and open descriptors
//! (10–10,000); `--trials` sets the samples per point and path.
//!
//! With `--thorough` it also sweeps `RLIMIT_NOFILE` (2^10 up to 2^20 and the
//! hard limit, raising the hard limit where the process may) and measures the
//! whole cost of one spawn on each path that closes descriptors in the child,
//! against std's paths, which close none.

use std::time::Duration;

use fdwindow::harness::{Probe, Settings};
use fdwindow::hazards::spawn::{Sweep, measure_nofile_sweep, measure_sweep, nofile_points};
use fdwindow::report::Table;
use fdwindow_fix::base::interrupts::interrupted;
use fdwindow_fix::base::scratch::Scratch;

pub static PROBE: Probe = Probe {
    hazard: "spawn-window",
    about: "Checks how long a child holds the parent's close-on-exec descriptors after a spawn \
            starts, per spawn path, by the parent's resident memory and open descriptors.",
    trials: 12,
    race: Duration::ZERO,
    arms: &[],
    observe: Some(observe),
};

/// Runs this probe with `args` (those after `fdwindow probe spawn-window`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE, args)
}

fn observe(_: &Scratch, settings: Settings) -> Vec<Table> {
    let sweep = Sweep {
        rss_mib: vec![4, 64, 256, 1024],
        fds: vec![10, 100, 1000, 10_000],
        samples: settings.trials as usize,
    };
    let mut tables = measure_sweep(&sweep, &interrupted);
    if settings.thorough {
        let hard = hard_nofile().unwrap_or(libc::RLIM_INFINITY);
        tables.push(measure_nofile_sweep(
            &nofile_points(hard),
            settings.trials as usize,
            &interrupted,
        ));
    }
    tables
}

/// The hard `RLIMIT_NOFILE` (getrlimit(2)); `None` when unlimited.
fn hard_nofile() -> Option<libc::rlim_t> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum
}
