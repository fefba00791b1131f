//! The fork-pressure co-tenant: threads that keep starting children inside a
//! process, so that a test's descriptors are copied into children the way a
//! busy test runner copies them, and descriptor-inheritance flakes show on
//! demand instead of once a week in CI.
//!
//! [`Pressure::start`] starts [`Config::threads`] threads. Each loops:
//!
//! 1. take a slot (at most [`Config::max_alive`] children alive at once);
//! 2. start a child by the chosen [`SpawnPath`]: fork+exec with a `pre_exec`
//!    that sleeps [`Config::hold`] between fork and exec (the child holds a copy
//!    of every descriptor, close-on-exec ones included, for that long), or
//!    std's default path (`posix_spawn`; on glibc a `CLONE_VM|CLONE_VFORK`
//!    clone whose window is short and cannot be stretched), or both in turn;
//! 3. reap the child and give the slot back.
//!
//! Every child execs `/usr/bin/true` with an empty environment prepared before
//! the fork, so no child can start pressure of its own (a preloaded injector
//! whose children kept `LD_PRELOAD` would fill the process table in seconds).
//! The threads block every signal, so a host's signal handling is unchanged:
//! process-directed signals (SIGCHLD, SIGINT, SIGTERM) go to the host's threads.
//! Dropping the guard stops the threads and reaps every child; the threads also
//! stop by themselves at [`Config::deadline`], so a leaked guard cannot spawn
//! forever.
//!
//! ```
//! use fdwindow_fix::pressure::{Config, Pressure};
//!
//! let pressure = Pressure::start(Config::default())?;
//! // ... the code under test: open, lock, close, bind, spawn ...
//! let stats = pressure.stop()?;
//! eprintln!("{} children, {:?} with one inside a window", stats.spawns, stats.covered);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! The same loop runs inside any process, in any language, from the injector
//! (`shims/inject.c` in the `fdwindow` crate, a C port of this loop that
//! `fdwindow preload inject` writes out, preloaded with `LD_PRELOAD` /
//! `DYLD_INSERT_LIBRARIES` and configured by [`ENV_VAR`] in the [`Spec`]
//! syntax), which `fdwindow stress` and `fdwindow audit` use.
//!
//! # References
//! - <https://man7.org/linux/man-pages/man2/fork.2.html> ("The child inherits
//!   copies of the parent's set of open file descriptors.")
//! - <https://man7.org/linux/man-pages/man7/signal-safety.7.html> (`nanosleep`
//!   is async-signal-safe)
//! - <https://man7.org/linux/man-pages/man3/pthread_sigmask.3.html> ("A new
//!   thread inherits a copy of its creator's signal mask.")

mod config;
mod run;
mod spec;

#[cfg(test)]
mod tests;

pub use config::*;
pub use run::{Pressure, Stats};
pub use spec::*;
