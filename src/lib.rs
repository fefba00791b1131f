//! fdwindow: probes for the kernel behaviours behind descriptor-inheritance
//! flakes, and the verdicts they support.
//!
//! When a thread starts a child, the child holds a copy of every descriptor of
//! the parent until it execs (close-on-exec ones), or for its whole life (the
//! others). A lock "released" by close, or a listener "closed", lives on in
//! that copy. Each probe binary in `probes/` measures one such behaviour on
//! this machine through the shared [`harness`]; the runner merges the reports
//! into `results/`, and [`matrix`] renders what they show.
#![deny(missing_docs)]

pub mod base;
pub mod cotenant;
pub mod evidence;
pub mod fix;
pub mod harness;
pub mod hazards;
pub mod report;
pub mod runner;
mod sys;
pub mod views;
pub mod vm;

// The paths users, probes, examples and benches rely on: each module stays
// reachable at the crate root wherever its stage folder put it.
pub use base::{child, errno, locks, scratch, sockets};
pub use cotenant::{preload, pressure};
pub use evidence::{costs, knowledge, pressure_file, reported, results, timing};
pub use harness::parked;
pub use hazards::{clocks, cloexec, holders, spawn, spawn_lock};
pub use report::{platform, stats, verdict};
pub use views::{advise, chart, matrix, readme};

/// Serialises unit tests that fork or watch for descriptor copies: a fork in
/// one test thread would hold another test's descriptors (the very hazard
/// this crate measures).
#[cfg(test)]
pub(crate) fn test_serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
