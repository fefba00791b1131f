//! The hazards' own machinery: what the probes in `probes/` are made of,
//! beyond the [`base`](crate::base).
//!
//! Takes in the base's descriptors and children and the [`fix`](crate::fix)
//! helpers (a probe measures a fix as one of its arms); gives out the
//! descriptor-creating calls and their two-step and atomic forms
//! ([`cloexec`]), the spawn paths and the spawn-window measurement
//! ([`spawn`]), the process-wide spawn lock ([`spawn_lock`]), clock
//! readings ([`clocks`]) and the scan for the processes that hold a
//! descriptor ([`holders`]). Nothing here judges a trial or writes a report:
//! that is the [`harness`](crate::harness)'s work.

pub mod clocks;
pub mod cloexec;
pub mod holders;
pub mod spawn;
pub mod spawn_lock;
