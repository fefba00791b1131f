//! The probes, one behaviour per file, each a declaration on the shared
//! harness (`fdwindow::harness`). `fdwindow probe HAZARD [ARGS]` runs one:
//! the runner starts each in a process of its own by re-executing this
//! binary, so one probe's descriptors and children never reach another's
//! measurement, and `cargo install` installs one file.

use std::process::ExitCode;

use fdwindow::harness::Probe;

pub mod bind_matrix;
pub mod clock_collision;
pub mod clock_resolution;
pub mod env_race;
pub mod etxtbsy;
pub mod flock_survival;
pub mod holder_scan;
pub mod listener_survival;
pub mod ofd_lock_survival;
pub mod peer_fin_with_clone;
pub mod pipe_eof;
pub mod port_pick;
pub mod posix_lock_drop;
pub mod spawn_window;
pub mod two_step_cloexec;
pub mod unix_listener_survival;

/// A probe's entry point: its arguments, those after `fdwindow probe HAZARD`.
type Main = fn(Vec<String>) -> ExitCode;

/// Every probe, its declaration and its entry point, in
/// `fdwindow::runner::PROBES`'s order (a test holds the two lists equal).
/// `fdwindow check` holds each results file's cells to the declarations
/// (arm, role, window, control, sham).
pub const ALL: &[(&Probe, Main)] = &[
    (&clock_resolution::PROBE, clock_resolution::main),
    (&clock_collision::PROBE, clock_collision::main),
    (&flock_survival::PROBE, flock_survival::main),
    (&ofd_lock_survival::PROBE, ofd_lock_survival::main),
    (&posix_lock_drop::PROBE, posix_lock_drop::main),
    (&listener_survival::PROBE, listener_survival::main),
    (&unix_listener_survival::PROBE, unix_listener_survival::main),
    (&peer_fin_with_clone::PROBE, peer_fin_with_clone::main),
    (&pipe_eof::PROBE, pipe_eof::main),
    (&port_pick::PROBE, port_pick::main),
    (&bind_matrix::PROBE, bind_matrix::main),
    (&two_step_cloexec::PROBE, two_step_cloexec::main),
    (&etxtbsy::PROBE, etxtbsy::main),
    (&holder_scan::PROBE, holder_scan::main),
    (&env_race::PROBE, env_race::main),
    (&spawn_window::PROBE, spawn_window::main),
];

/// The entry point of the probe for `hazard`.
pub fn find(hazard: &str) -> Option<Main> {
    ALL.iter()
        .find(|(probe, _)| probe.hazard == hazard)
        .map(|(_, main)| *main)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_probe_the_runner_runs_is_here_in_its_order() {
        let here: Vec<&str> = super::ALL.iter().map(|(p, _)| p.hazard).collect();
        assert_eq!(here, fdwindow::runner::PROBES);
    }
}
