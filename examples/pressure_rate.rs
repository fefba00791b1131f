//! Measures what the pressure co-tenant costs: children per second, and per
//! CPU-second (user+system time of this process and its reaped children),
//! for `fdwindow_fix::pressure` against a plain loop of `Command::spawn` + `wait`
//! on the same path and thread count. Each pair runs five times, alternating,
//! and the table shows medians, so a neighbour's load falls on both alike.
//!
//! ```text
//! cargo run --release --example pressure_rate -- [SECONDS_PER_RUN]
//! ```

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fdwindow_fix::pressure::{Config, Pressure, SpawnPath};

/// User+system seconds of this process and its reaped children.
fn cpu_seconds() -> f64 {
    use nix::sys::resource::{UsageWho, getrusage};
    use nix::sys::time::TimeValLike;
    let secs = |who| {
        let usage = getrusage(who).expect("getrusage");
        (usage.user_time() + usage.system_time()).num_microseconds() as f64 / 1e6
    };
    secs(UsageWho::RUSAGE_SELF) + secs(UsageWho::RUSAGE_CHILDREN)
}

/// A plain loop: `threads` threads spawning and waiting for `/usr/bin/true`.
fn plain(threads: usize, fork: bool, run: Duration) -> u64 {
    let spawns = AtomicU64::new(0);
    let end = Instant::now() + run;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut cmd = Command::new("/usr/bin/true");
                cmd.env_clear().stdin(Stdio::null()).stdout(Stdio::null());
                if fork {
                    // An empty pre_exec: it only forces the fork path.
                    fdwindow_fix::sys::child_hook::fork_only(&mut cmd);
                }
                while Instant::now() < end {
                    cmd.spawn().unwrap().wait().unwrap();
                    spawns.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    spawns.into_inner()
}

fn main() -> std::process::ExitCode {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    let run = Duration::from_secs_f64(secs);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    fdwindow::say!("| loop | path | threads | spawns/s | spawns per CPU-second |");
    fdwindow::say!("|---|---|---|---|---|");
    for threads in [1, cpus] {
        for (path, fork) in [(SpawnPath::PosixSpawn, false), (SpawnPath::ForkExec, true)] {
            let (mut plain_rows, mut pressure_rows) = (Vec::new(), Vec::new());
            for _ in 0..5 {
                let (t0, c0) = (Instant::now(), cpu_seconds());
                let n = plain(threads, fork, run);
                let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
                plain_rows.push((n as f64 / wall, n as f64 / cpu));

                let c0 = cpu_seconds();
                let pressure = Pressure::start(Config {
                    threads,
                    hold: Duration::ZERO,
                    path,
                    ..Config::default()
                })
                .unwrap();
                let end = Instant::now() + run;
                while Instant::now() < end {
                    std::thread::park_timeout(end - Instant::now());
                }
                let stats = pressure.stop().unwrap();
                let cpu = cpu_seconds() - c0;
                pressure_rows.push((stats.rate(), stats.spawns as f64 / cpu));
            }
            for (name, rows) in [("plain", plain_rows), ("pressure", pressure_rows)] {
                let (rate, per_cpu) = medians(rows);
                fdwindow::say!(
                    "| {name} | {} | {threads} | {rate:.0} | {per_cpu:.0} |",
                    path.id()
                );
            }
        }
    }
    // Through the writer: 141 after a closed stdout, 1 after a full one.
    fdwindow::base::out::status(std::process::ExitCode::SUCCESS)
}

/// The medians of both columns.
fn medians(rows: Vec<(f64, f64)>) -> (f64, f64) {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (
        median(rows.iter().map(|r| r.0).collect()),
        median(rows.iter().map(|r| r.1).collect()),
    )
}
