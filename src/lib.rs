//! fdwindow: probes for the kernel behaviours behind descriptor-inheritance
//! flakes, and the verdicts they support.
//!
//! When a thread starts a child, the child holds a copy of every descriptor of
//! the parent until it execs (close-on-exec ones), or for its whole life (the
//! others). A lock "released" by close, or a listener "closed", lives on in
//! that copy. Each probe binary in `probes/` measures one such behaviour on
//! this machine through the shared [`harness`]; the runner merges the reports
//! into `results/`, and [`views::matrix`] renders what they show.
//!
//! The folders are the stages, lowest first; each imports only from those
//! before it (`tests/layers.rs` holds the order):
//!
//! 1. `sys` (private): the OS calls, one file per OS;
//! 2. [`report`]: the vocabulary: documents, verdict rules, the platform;
//! 3. [`base`]: descriptors, locks, sockets, held children, scratch names;
//! 4. [`fix`]: the helpers for users' tests;
//! 5. [`hazards`]: what probes are made of beyond the base;
//! 6. [`cotenant`]: fork pressure and the preloaded shims;
//! 7. [`harness`]: runs a probe's arms and prints its report;
//! 8. [`evidence`]: the results folder, costs, claims, and the queries over them;
//! 9. [`views`]: the matrix, the chart, advice, the README's sections;
//! 10. [`runner`], then [`vm`]: probes to results to views, here or under other kernels.
//!
//! Each module also stays at its old path at the root (`fdwindow::report::verdict`,
//! `fdwindow::cotenant::pressure`, …).
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

// The one module outside the stage folders' public paths: the `pre_exec`
// hook lives with the OS calls (`sys`, private), and users reach it here.
pub use sys::child_hook;

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
