//! fdwindow: probes for the kernel behaviours behind descriptor-inheritance
//! flakes, and the verdicts they support.
//!
//! When a thread starts a child, the child holds a copy of every descriptor of
//! the parent until it execs (close-on-exec ones), or for its whole life (the
//! others). A lock "released" by close, or a listener "closed", lives on in
//! that copy. Each probe in `probes/` (run as `fdwindow probe HAZARD`, a
//! process of its own) measures one such behaviour on this machine through
//! the shared [`harness`]; the runner merges the reports
//! into `results/`, and [`views::matrix`] renders what they show.
//!
//! The OS calls, the building blocks and the fixes users depend on live in
//! the `fdwindow-fix` crate (its `sys` and `base` below everything here).
//! The folders here are the stages above it, lowest first; each imports only
//! from those before it (`tests/layers.rs` holds the order):
//!
//! 0. [`error`]: the one error type, and the exit status each kind ends with;
//! 1. [`report`]: the vocabulary: documents, verdict rules, the platform;
//! 2. [`base`]: the one writer of stdout and stderr;
//! 3. [`hazards`]: what probes are made of beyond the fixes;
//! 4. [`cotenant`]: the preloaded shims and the audit's detection rule;
//! 5. [`harness`]: runs a probe's arms and prints its report;
//! 6. [`evidence`]: the results folder, costs, claims, and the queries over them;
//! 7. [`views`]: the matrix, the chart, advice, the README's sections;
//! 8. [`runner`], then [`vm`]: probes to results to views, here or under other kernels.
//!
//! Every module is reached by its stage path (`fdwindow::report::verdict`),
//! inside the crate too, and the root re-exports nothing: the imports draw
//! the pipeline.
#![deny(missing_docs)]

pub mod base;
pub mod cotenant;
pub mod error;
pub mod evidence;
pub mod harness;
pub mod hazards;
pub mod report;
pub mod runner;
pub mod views;
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
