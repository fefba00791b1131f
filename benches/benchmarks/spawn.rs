//! Spawning a child: std's default (posix_spawn) and fork+exec (a no-op
//! `pre_exec`) as baselines, beside the fixes that close inherited
//! descriptors in the child: `close_range` in `pre_exec`, the closefrom file
//! action, and (macOS) `POSIX_SPAWN_CLOEXEC_DEFAULT`; and vfork's kernel path.
//! The parameter is the number of descriptors the parent holds open.

use std::time::Duration;

use criterion::{Criterion, criterion_group};
use fdwindow::hazards::spawn::{OpenFiles, Prepared, SpawnPath};

use super::support::Group;

fn spawn(c: &mut Criterion) {
    let mut group = Group::new(c, "spawn", Duration::from_millis(1500));
    for fds in [16, 1000] {
        let _open = OpenFiles::fill_to(fds, 64).expect("open descriptors");
        for path in SpawnPath::ALL {
            let mut prepared = match Prepared::new(path) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("spawn/{}: skipped: {e}", path.id());
                    continue;
                }
            };
            // Every child is reaped inside the timed call: the cost of a
            // spawn includes waiting for it, as a test that runs one does.
            group.bench(path.id(), &fds.to_string(), move || {
                prepared.spawn().expect("spawn").wait().expect("child")
            });
        }
        // Before `_open` closes this parameter's descriptors.
        group.measure();
    }
    group.finish();
}

criterion_group!(spawns, spawn);
