//! `fdwindow_fix::spawn` against what it replaces, `std::process::Command::spawn`
//! (posix_spawn): the same child (`/usr/bin/true`, empty environment, stdio
//! to /dev/null), reaped inside the timed call. `fix-spawn` is the default
//! path (Linux: close_range with CLOSE_RANGE_CLOEXEC in `pre_exec`, which
//! makes std fork; macOS: posix_spawn with POSIX_SPAWN_CLOEXEC_DEFAULT);
//! `fix-spawn-fd-walk` forces the Linux fallback for kernels before 5.11 (a
//! getdents64 walk of /proc/self/fd), whose cost grows with the open
//! descriptors. The parameter is the number of descriptors the parent holds.

use std::process::{Command, Stdio};
use std::time::Duration;

use criterion::{Criterion, criterion_group};
use fdwindow::hazards::spawn::OpenFiles;
use fdwindow_fix::spawn::{Command as FixCommand, Stdio as FixStdio};

use super::support::Group;

const PROGRAM: &str = "/usr/bin/true";

fn fix_spawn(c: &mut Criterion) {
    let mut group = Group::new(c, "fix-spawn", Duration::from_millis(1500));
    for fds in [16, 1000] {
        let _open = OpenFiles::fill_to(fds, 64).expect("open descriptors");
        let param = fds.to_string();
        let mut std_cmd = Command::new(PROGRAM);
        std_cmd
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        group.bench("std-command", &param, move || {
            std_cmd.spawn().expect("spawn").wait().expect("child")
        });
        for (imp, walk) in [("fix-spawn", false), ("fix-spawn-fd-walk", true)] {
            let mut cmd = FixCommand::new(PROGRAM);
            cmd.env_clear()
                .stdin(FixStdio::Null)
                .stdout(FixStdio::Null)
                .stderr(FixStdio::Null)
                .force_fd_walk(walk);
            group.bench(imp, &param, move || {
                cmd.spawn().expect("spawn").wait().expect("child")
            });
        }
        // Before `_open` closes this parameter's descriptors.
        group.measure();
    }
    group.finish();
}

criterion_group!(fix_spawns, fix_spawn);
