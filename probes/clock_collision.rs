//! Checks whether names built as `<prefix>-<pid>-<nanos>` collide when threads
//! create them exclusively at the same moment.
//!
//! Method: each trial is one round:
//! 1. 8 threads wait on one `Barrier`;
//! 2. once released, each reads the clock, builds its name as the arm does,
//!    and creates that file exclusively (`O_CREAT|O_EXCL`, as `create_dir`'s
//!    `mkdir(2)` is: the same EEXIST on a repeated name);
//! 3. a hit is any `EEXIST` in the round.
//!
//! `us-truncated` simulates macOS's microsecond CLOCK_REALTIME on Linux by
//! truncating the nanoseconds; the fixes keep that µs timestamp in their names
//! and name it as their control (`against`).
//!
//! Both fixes are `avoids`: each removes the step that can collide, so no
//! round can test them, and their rounds only show that the code runs.
//! `tempfile` could instead have had a sham (the same Builder with
//! `rand_bytes(0)` and no retry), but that sham is `us-truncated` under
//! another name: it would show again that µs names collide, not that 6
//! random characters plus an exclusive create with retry cannot; and 400
//! rounds cannot reach a 1 in 62^6 draw. The argument is the evidence.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Trial};
use fdwindow::hazards::clocks::truncate_to_micros;
use fdwindow::report::verdict::Kind;
use fdwindow::report::verdict::Role::{Control, Mitigation};
use fdwindow::report::verdict::Window::InProcess;
use fdwindow_fix::scratch::unique_name;

/// Threads per round.
const THREADS: usize = 8;

pub static PROBE: Probe = Probe {
    hazard: "clock-collision",
    about: "Checks whether pid+timestamp scratch names collide when 8 threads create them exclusively at the same moment.",
    // Enough rounds for a control with no hit to be `absent` (bound under 1%).
    trials: 400,
    race: Duration::ZERO,
    arms: &[
        Arm {
            id: "pid-realtime-nanos",
            role: Control,
            about: "Each thread creates `<prefix>-<pid>-<SystemTime nanos>` exclusively (O_CREAT|O_EXCL).",
            windows: &[InProcess],
            trial: pid_realtime_nanos,
            kind: Some(Kind::Statistical),
            ..ARM
        },
        Arm {
            id: "us-truncated",
            role: Control,
            about: "A SIMULATION of macOS's microsecond CLOCK_REALTIME on Linux: \
                `pid-realtime-nanos` with the nanos truncated to whole microseconds.",
            windows: &[InProcess],
            trial: us_truncated,
            kind: Some(Kind::Statistical),
            ..ARM
        },
        Arm {
            id: "process-sequence",
            role: Mitigation,
            about: "`fdwindow_fix::scratch::unique_name` (pid + a process-wide atomic counter), \
                with the µs timestamp of `us-truncated` kept in the name.",
            windows: &[InProcess],
            trial: process_sequence,
            kind: Some(Kind::Statistical),
            against: Some("us-truncated"),
            avoids: Some(
                "a process-wide atomic counter never hands out one number twice, so no two names made in one process can be equal, whatever the clock reads",
            ),
            timed: false,
            no_copy: &[],
        },
        Arm {
            id: "tempfile",
            role: Mitigation,
            about: "tempfile's Builder: the µs-timestamp prefix plus 6 random characters, \
                created exclusively with its own retry on EEXIST.",
            windows: &[InProcess],
            trial: tempfile_builder,
            kind: Some(Kind::Statistical),
            against: Some("us-truncated"),
            avoids: Some(
                "tempfile creates with O_EXCL and on EEXIST draws 6 fresh random characters (62^6, about 5.7e10 names) and tries again, so a collision costs a retry, never a shared name or a failure",
            ),
            timed: false,
            no_copy: &[],
        },
    ],
    observe: None,
};

/// Runs this probe with `args` (those after `fdwindow probe clock-collision`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE, args)
}

/// Nanoseconds since the epoch from `SystemTime` (CLOCK_REALTIME).
fn nanos() -> io::Result<u128> {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .map_err(io::Error::other)
}

/// Creates `dir/name` exclusively and returns its path.
///
/// Files rather than folders: the collision is in the name, and on an ext4
/// mounted with `discard` (this project's machines) each mkdir/rmdir pair
/// costs milliseconds of block allocation and trim, which made 1,600 rounds
/// take 4–9 s; empty files need no blocks.
fn create_new(dir: &Path, name: &str) -> io::Result<PathBuf> {
    let path = dir.join(name);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    Ok(path)
}

/// Runs one round: `THREADS` threads released together each call `create` in
/// the scratch folder. A hit is any `AlreadyExists`; any other error is broken.
fn round(
    t: &mut Trial<'_>,
    create: impl Fn(&Path) -> io::Result<PathBuf> + Sync,
) -> Result<bool, Fault> {
    let probe_path = t.fresh_path("round");
    let dir = probe_path
        .parent()
        .expect("scratch paths have a folder")
        .to_owned();
    let barrier = Barrier::new(THREADS);
    let results: Vec<io::Result<PathBuf>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    create(&dir)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("a creating thread panicked")))
            })
            .collect()
    });
    let mut collisions = 0;
    for r in results {
        match r {
            // Removed now rather than with the scratch folder, so 400 rounds
            // leave no 3,200 files behind during the run.
            Ok(path) => std::fs::remove_file(&path).ctx("remove a created file")?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => collisions += 1,
            Err(e) => return Err(Fault::Broken(format!("create a named file: {e}"))),
        }
    }
    t.tally("threads", &THREADS.to_string());
    t.tally("eexist-per-round", &collisions.to_string());
    Ok(collisions > 0)
}

fn pid_realtime_nanos(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let pid = std::process::id();
    round(t, |dir| {
        create_new(dir, &format!("fixture-{pid}-{}", nanos()?))
    })
}

fn us_truncated(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let pid = std::process::id();
    round(t, |dir| {
        let micros = truncate_to_micros(nanos()?);
        create_new(dir, &format!("fixture-{pid}-{micros}"))
    })
}

fn process_sequence(t: &mut Trial<'_>) -> Result<bool, Fault> {
    round(t, |dir| {
        let micros = truncate_to_micros(nanos()?);
        create_new(dir, &format!("{}-{micros}", unique_name("fixture")))
    })
}

fn tempfile_builder(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let pid = std::process::id();
    round(t, |dir| {
        let micros = truncate_to_micros(nanos()?);
        // keep(): the round removes what it created, not each NamedTempFile.
        tempfile::Builder::new()
            .prefix(&format!("fixture-{pid}-{micros}-"))
            .tempfile_in(dir)
            .and_then(|f| f.keep().map(|(_, path)| path).map_err(|e| e.error))
    })
}
