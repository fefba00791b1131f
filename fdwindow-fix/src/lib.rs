//! Fixes for descriptor-inheritance flakes, and the fork pressure that
//! reproduces them in a test.
//!
//! When a thread starts a child, the child holds a copy of every descriptor
//! of the parent until it execs (close-on-exec ones), or for its whole life
//! (the others). A lock "released" by close, or a listener "closed", lives on
//! in that copy. The helpers here do the same work without the hazard; the
//! `fdwindow` command measures each of them, per OS, against the naive code
//! (`fdwindow verdict HAZARD ARM` says whether one holds on the machine at
//! hand):
//!
//! - [`lock`]: unlock before close, so a held copy keeps no lock;
//! - [`listener`]: retire a listener (shutdown before close), or hold a port
//!   bound but unlistened;
//! - [`scratch`]: process-unique scratch names, whatever the clock's grain;
//! - [`spawn`]: a spawn lock, and a spawn that inherits nothing but stdio;
//! - [`isolate`]: one test in its own process, with an exact-pass check;
//! - [`env`]: one guard for the environment.
//!
//! [`pressure`] is the co-tenant: threads in the process under test that keep
//! starting children, so a test that depends on a descriptor being gone fails
//! on demand instead of once in a hundred runs.
//!
//! This crate builds without a C compiler, clap or serde. The stages below
//! the fixes, [`sys`] (the OS calls, one file per OS) and [`base`]
//! (descriptors, locks, sockets, held children), are public for the
//! `fdwindow` crate's probes and hidden from these docs.
#![deny(missing_docs)]

#[doc(hidden)]
pub mod base;
#[doc(hidden)]
pub mod sys;

pub mod env;
pub mod isolate;
pub mod listener;
pub mod lock;
pub mod pressure;
pub mod scratch;
pub mod spawn;

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
