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

pub mod advise;
pub mod chart;
pub mod child;
pub mod child_hook;
pub mod clocks;
pub mod cloexec;
pub mod costs;
pub mod errno;
pub mod fix;
pub mod harness;
pub mod holders;
pub mod knowledge;
pub mod locks;
pub mod matrix;
pub mod parked;
pub mod platform;
pub mod preload;
pub mod pressure;
pub mod pressure_file;
pub mod readme;
pub mod report;
pub mod reported;
pub mod results;
pub mod runner;
pub mod scratch;
pub mod sockets;
pub mod spawn;
pub mod spawn_lock;
pub mod stats;
mod sys;
pub mod timing;
pub mod verdict;
pub mod vm;

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
