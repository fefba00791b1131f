//! The probes, one behaviour per file, each a declaration on the shared
//! harness (`fdwindow::harness`). `fdwindow probe HAZARD [ARGS]` runs one:
//! the runner starts each in a process of its own by re-executing this
//! binary, so one probe's descriptors and children never reach another's
//! measurement, and `cargo install` installs one file.

use std::process::ExitCode;

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

/// Every probe by hazard id, in `fdwindow::runner::PROBES`'s order (a test
/// holds the two lists equal).
pub const ALL: &[(&str, Main)] = &[
    ("clock-resolution", clock_resolution::main),
    ("clock-collision", clock_collision::main),
    ("flock-survival", flock_survival::main),
    ("ofd-lock-survival", ofd_lock_survival::main),
    ("posix-lock-drop", posix_lock_drop::main),
    ("listener-survival", listener_survival::main),
    ("unix-listener-survival", unix_listener_survival::main),
    ("peer-fin-with-clone", peer_fin_with_clone::main),
    ("pipe-eof", pipe_eof::main),
    ("port-pick", port_pick::main),
    ("bind-matrix", bind_matrix::main),
    ("two-step-cloexec", two_step_cloexec::main),
    ("etxtbsy", etxtbsy::main),
    ("holder-scan", holder_scan::main),
    ("env-race", env_race::main),
    ("spawn-window", spawn_window::main),
];

/// The entry point of the probe for `hazard`.
pub fn find(hazard: &str) -> Option<Main> {
    ALL.iter()
        .find(|(h, _)| *h == hazard)
        .map(|(_, main)| *main)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_probe_the_runner_runs_is_here_in_its_order() {
        let here: Vec<&str> = super::ALL.iter().map(|(h, _)| *h).collect();
        assert_eq!(here, fdwindow::runner::PROBES);
    }
}
