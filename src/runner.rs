//! `fdwindow run`: runs every probe as its own process (this binary again,
//! `fdwindow probe HAZARD`), under a hard timeout and in its own process
//! group, and merges the reports into `results/<platform-id>.json`.
//!
//! A probe that fails, times out or prints a bad report keeps its previous
//! report (which, like every report in the file, ran on this very platform:
//! the id names the full kernel release, libc and virtualization); the file is
//! replaced atomically and only after every probe ran, under the results
//! folder's lock, so an interrupted run changes nothing and concurrent runs
//! lose nothing.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::evidence::results;
use crate::harness::PARENT_ENV;
use crate::report::platform::Platform;
use crate::report::{ProbeReport, ResultsFile, SCHEMA_VERSION};
use fdwindow_fix::base::child::{GroupExit, wait_group};
use fdwindow_fix::base::interrupts::interrupted;
use fdwindow_fix::base::scratch::{SCRATCH_ENV, Scratch};

/// Every probe, by hazard id; each runs as `fdwindow probe <id>`, a process of its own.
/// The clock probes go first: clock-collision creates thousands of files and
/// is slowed several-fold by the journal work the other probes leave behind.
pub const PROBES: &[&str] = &[
    "clock-resolution",
    "clock-collision",
    "flock-survival",
    "ofd-lock-survival",
    "posix-lock-drop",
    "listener-survival",
    "unix-listener-survival",
    "peer-fin-with-clone",
    "pipe-eof",
    "port-pick",
    "bind-matrix",
    "two-step-cloexec",
    "etxtbsy",
    "holder-scan",
    "env-race",
    "spawn-window",
];

/// What `fdwindow run` was asked to do.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Where results files and MATRIX.md live.
    pub results_dir: PathBuf,
    /// The program that runs one probe as `EXE probe HAZARD` (the `fdwindow`
    /// binary: the runner re-executes itself per probe).
    pub exe: PathBuf,
    /// Passed to each probe as `--trials`.
    pub trials: Option<u64>,
    /// Passed to each probe as `--race-ms`.
    pub race_ms: Option<u64>,
    /// Passed to each probe as `--thorough`: also measure what only a
    /// thorough run measures (the `RLIMIT_NOFILE` sweep).
    pub thorough: bool,
    /// Per-probe hard timeout.
    pub timeout: Duration,
    /// Run only these hazards (all when empty).
    pub only: Vec<String>,
}

/// What a completed run did to its platform's results file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// No file of this platform was there: the matrix gains its column.
    Created,
    /// This run's reports replaced the file's reports of the same probes.
    Updated,
    /// No probe reported: the file and the matrix were left as they were.
    Unchanged,
}

/// What a completed run did.
#[derive(Debug)]
pub struct RunSummary {
    /// This platform's results file.
    pub results_path: PathBuf,
    /// What the run did to it.
    pub written: Written,
    /// The merged results for this platform.
    pub results: ResultsFile,
    /// Probes that failed, with why (their previous results were kept).
    pub failures: Vec<(String, String)>,
    /// Wall time of the whole run.
    pub elapsed: Duration,
}

/// Runs the probes and writes the results and the matrix.
///
/// 1. Checks everything it can before measuring: the hazards, the probe
///    binaries, the folder and every file in it (a bad file stays untouched).
/// 2. Runs the probes; a report is kept only if it ran on this platform.
/// 3. Takes the folder's lock, re-reads this platform's file, merges only
///    this run's reports ([`merge_own`]), writes it and the matrix, unlocks.
pub fn run(opts: &RunOptions) -> Result<RunSummary> {
    let started = Instant::now();
    if let Some(unknown) = opts.only.iter().find(|h| !PROBES.contains(&h.as_str())) {
        return Err(Error::Usage(format!(
            "no probe for hazard {unknown:?}; probes: {}",
            PROBES.join(", ")
        )));
    }
    let selected: Vec<&str> = PROBES
        .iter()
        .copied()
        .filter(|h| opts.only.is_empty() || opts.only.iter().any(|o| o == h))
        .collect();
    check_exe(&opts.exe).map_err(Error::Usage)?;
    let platform = Platform::detect();
    let results_path = opts.results_dir.join(format!("{}.json", platform.id));
    // Refuse before measuring anything: bad files stay untouched.
    results::check_writable(&opts.results_dir)
        .map_err(|e| Error::Usage(format!("results folder is not writable: {e}")))?;
    // A full run replaces this platform's file when it has an older schema:
    // that is the command the refusal names.
    let replaces_older = |e: &Error| {
        opts.only.is_empty()
            && matches!(e, Error::BadFile { path, problem }
                if *path == results_path && crate::report::is_older_schema(problem))
    };
    let before = match results::load(&results_path) {
        Err(e) if replaces_older(&e) => None,
        other => other?,
    };
    match results::load_dir(&opts.results_dir) {
        Err(e) if !replaces_older(&e) => return Err(e),
        _ => {}
    }
    crate::evidence::costs::load_dir(&opts.results_dir)?;
    let scratch = Scratch::new_swept("run").map_err(Error::io("make the scratch folder"))?;

    let (mut measured, failures) = run_probes(&selected, opts, scratch.dir(), &platform)?;
    drop(scratch);
    // Each report names the run's others, so a file that loses one of them
    // fails `fdwindow check` (a probe that failed wrote nothing to lose).
    let written: Vec<String> = measured.keys().cloned().collect();
    for report in measured.values_mut() {
        if let Some(scope) = report.scope.as_mut() {
            scope.probes = written.clone();
        }
    }
    if measured.is_empty() {
        return Ok(RunSummary {
            results_path,
            written: Written::Unchanged,
            results: before.unwrap_or_else(|| ResultsFile {
                schema: SCHEMA_VERSION,
                platform,
                probes: BTreeMap::new(),
            }),
            failures,
            elapsed: started.elapsed(),
        });
    }

    let lock = results::FolderLock::acquire(&opts.results_dir, interrupted).map_err(|e| {
        if e.kind() == std::io::ErrorKind::Interrupted {
            Error::Interrupted
        } else {
            Error::io("lock the results folder")(e)
        }
    })?;
    // Re-read under the lock: another run may have written since we started.
    // The older-schema file this full run replaces is still there: replace it.
    let current = match results::load(&results_path) {
        Err(e) if replaces_older(&e) => None,
        other => other?,
    };
    let written = if current.is_some() || results_path.exists() {
        Written::Updated
    } else {
        Written::Created
    };
    let (merged, notes) = merge_own(current, before.as_ref(), measured, &platform);
    for note in notes {
        crate::base::out::note!("fdwindow: {note}");
    }
    let json = serde_json::to_string_pretty(&merged).expect("results serialise") + "\n";
    results::write_atomic(&results_path, json.as_bytes())
        .map_err(Error::io(format!("write {}", results_path.display())))?;
    write_matrix(&opts.results_dir).map_err(Error::io("write the matrix"))?;
    drop(lock);
    Ok(RunSummary {
        results_path,
        written,
        results: merged,
        failures,
        elapsed: started.elapsed(),
    })
}

/// Runs each selected probe in a process of its own: the reports kept (each
/// from this platform, its fork windows held by forks) and the probes that
/// failed, with why.
fn run_probes(
    selected: &[&str],
    opts: &RunOptions,
    scratch: &Path,
    platform: &Platform,
) -> Result<ProbeRuns> {
    let mut measured = BTreeMap::new();
    let mut failures = Vec::new();
    for &hazard in selected {
        if interrupted() {
            return Err(Error::Interrupted);
        }
        crate::base::out::note!("fdwindow: probing {hazard} …");
        let outcome = run_probe(hazard, opts, scratch).and_then(|report| {
            // A report is filed under the platform it ran on, never another,
            // and only with its fork windows held by forks.
            if report.platform.id != platform.id {
                Err(ProbeFailure::Failed(format!(
                    "ran on platform {}, not {}",
                    report.platform.id, platform.id
                )))
            } else if let Some(how) = report.scope.as_ref().and_then(|s| s.held_by.as_ref()) {
                Err(ProbeFailure::Failed(format!(
                    "its fork windows were held by {how}: a comparison, not results"
                )))
            } else {
                Ok(report)
            }
        });
        match outcome {
            Ok(report) => {
                measured.insert(hazard.to_string(), report);
            }
            Err(ProbeFailure::Interrupted) => return Err(Error::Interrupted),
            Err(ProbeFailure::Failed(why)) => {
                crate::base::out::note!("fdwindow: {hazard} failed: {why}");
                failures.push((hazard.to_string(), why));
            }
        }
    }
    Ok((measured, failures))
}

/// The reports a run kept, by hazard, and the probes that failed with why.
type ProbeRuns = (BTreeMap<String, ProbeReport>, Vec<(String, String)>);

/// Fails unless `exe`, the program that runs the probes, is a file.
fn check_exe(exe: &Path) -> Result<(), String> {
    match std::fs::metadata(exe) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(format!("probe program {} is not a file", exe.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "probe program {} does not exist (build with `cargo build --release`)",
            exe.display()
        )),
        Err(e) => Err(format!("probe program {}: {e}", exe.display())),
    }
}

/// When a report's probe finished: its start plus its run time, in seconds
/// since the epoch (0 when the time is unreadable, so it loses).
fn finished(report: &ProbeReport) -> u64 {
    unix_from_utc(&report.started_at).map_or(0, |s| s + report.elapsed_ms / 1000)
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SSZ`, the form reports carry.
fn unix_from_utc(text: &str) -> Option<u64> {
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    if text.len() != 20 || !text.ends_with('Z') {
        return None;
    }
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // Howard Hinnant's days_from_civil.
    // See: <https://howardhinnant.github.io/date_algorithms.html#days_from_civil>
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()
}

/// Merges this run's reports into the platform's file as read under the
/// lock (`current`), given the file as it was when the run started
/// (`before`). Only this run's probes change; every other report stays as
/// the file holds it (loading refused a file with a report of another
/// platform: [`results::parse`]). For a probe that a concurrent run also
/// measured, the report that finished later wins. Returns the file and what
/// to tell the user.
pub fn merge_own(
    current: Option<ResultsFile>,
    before: Option<&ResultsFile>,
    measured: BTreeMap<String, ProbeReport>,
    platform: &Platform,
) -> (ResultsFile, Vec<String>) {
    let mut notes = Vec::new();
    let mut file = current.unwrap_or_else(|| ResultsFile {
        schema: SCHEMA_VERSION,
        platform: platform.clone(),
        probes: BTreeMap::new(),
    });
    file.schema = SCHEMA_VERSION;
    file.platform = platform.clone();
    for (hazard, ours) in measured {
        let theirs = file.probes.get(&hazard);
        let concurrent = theirs.filter(|t| before.and_then(|b| b.probes.get(&hazard)) != Some(*t));
        match concurrent {
            Some(t) if finished(t) > finished(&ours) => {
                notes.push(format!(
                    "{hazard}: kept a concurrent run's report (started {}), which finished after this run's; this run's report of {hazard} is discarded",
                    t.started_at
                ));
            }
            Some(t) => {
                notes.push(format!(
                    "{hazard}: replaced a concurrent run's report (started {}) with this run's, which finished later",
                    t.started_at
                ));
                let mut ours = ours;
                crate::evidence::results::carry_thorough(&hazard, &mut ours, t);
                file.probes.insert(hazard, ours);
            }
            None => {
                let mut ours = ours;
                if let Some(old) = file.probes.get(&hazard) {
                    crate::evidence::results::carry_thorough(&hazard, &mut ours, old);
                }
                file.probes.insert(hazard, ours);
            }
        }
    }
    (file, notes)
}

/// What `fdwindow matrix` writes: each file's name in the results folder and
/// its contents, all derived from the results and costs files in `dir`.
pub fn render_outputs(dir: &Path) -> Result<Vec<(&'static str, String)>, Error> {
    let files = results::load_dir(dir)?;
    let costs = crate::evidence::costs::load_dir(dir)?;
    let mut outputs = vec![("MATRIX.md", crate::views::matrix::render(&files, &costs))];
    if let Some(svg) = crate::views::chart::render_spawn_window(&files) {
        outputs.push((crate::views::SPAWN_WINDOW_SVG, svg));
    }
    Ok(outputs)
}

/// Regenerates `<dir>/MATRIX.md` (and the spawn-window chart, when there is a
/// sweep to draw) from every results and costs file in `dir`.
pub fn write_matrix(dir: &Path) -> std::io::Result<()> {
    let outputs = render_outputs(dir).map_err(|e| std::io::Error::other(e.to_string()))?;
    for (name, contents) in outputs {
        results::write_atomic(&dir.join(name), contents.as_bytes())?;
    }
    Ok(())
}

enum ProbeFailure {
    Interrupted,
    Failed(String),
}

fn run_probe(hazard: &str, opts: &RunOptions, scratch: &Path) -> Result<ProbeReport, ProbeFailure> {
    let mut cmd = Command::new(&opts.exe);
    cmd.args(["probe", hazard]);
    if let Some(t) = opts.trials {
        cmd.arg("--trials").arg(t.to_string());
    }
    if let Some(ms) = opts.race_ms {
        cmd.arg("--race-ms").arg(ms.to_string());
    }
    if opts.thorough {
        cmd.arg("--thorough");
    }
    // The probe starts no race round after four fifths of its timeout, so a
    // thorough run's adaptive races report rather than being killed.
    let deadline_ms = (opts.timeout.as_millis() * 4 / 5).max(1);
    cmd.arg("--deadline-ms").arg(deadline_ms.to_string());
    // Its own process group, so a timeout kills the probe and every child it
    // holds in one signal.
    cmd.env(SCRATCH_ENV, scratch)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A runner killed by SIGKILL runs none of the kills above, so the probe
    // must die with it by other means. On Linux the kernel sends it SIGKILL
    // (PR_SET_PDEATHSIG, set between fork and exec, so std forks instead of
    // calling posix_spawn). The signal follows the thread that spawns the
    // probe, and that is this thread, which waits for the probe below: it
    // outlives the probe on every path but its process's death. Elsewhere the
    // probe watches this process itself (PARENT_ENV: on macOS a kqueue
    // NOTE_EXIT watch) and kills its group. A probe's held children need
    // neither: each is parked on, or reads, a pipe whose write end only the
    // probe holds, so it ends at end-of-file when the probe dies.
    fdwindow_fix::sys::die_with_parent(&mut cmd);
    cmd.env(PARENT_ENV, std::process::id().to_string());
    let mut child = cmd.spawn().map_err(|e| {
        ProbeFailure::Failed(format!(
            "start {} probe {hazard}: {e} (build with `cargo build --release`)",
            opts.exe.display()
        ))
    })?;
    // Drain both pipes on their own threads, so a chatty probe can never fill
    // a pipe buffer and deadlock against our wait.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let deadline = Instant::now() + opts.timeout;
    let status = match wait_group(&mut child, deadline, interrupted) {
        Ok(GroupExit::Exited(status)) => status,
        Ok(GroupExit::TimedOut) => {
            return Err(ProbeFailure::Failed(format!(
                "timed out after {:?}; killed",
                opts.timeout
            )));
        }
        Ok(GroupExit::Stopped) => return Err(ProbeFailure::Interrupted),
        Err(e) => return Err(ProbeFailure::Failed(format!("wait: {e}"))),
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&err.join().unwrap_or_default())
        .trim()
        .to_owned();
    if !status.success() {
        return Err(ProbeFailure::Failed(format!(
            "exited with {status}: {stderr}"
        )));
    }
    // Strictly, as every file is read: this report is written into one.
    let report: ProbeReport = std::str::from_utf8(&stdout)
        .map_err(Error::usage)
        .and_then(|text| crate::evidence::strict_json::from_str(text, "bad report"))
        .map_err(|e| ProbeFailure::Failed(format!("unreadable report: {e}")))?;
    report
        .validate()
        .map_err(|e| ProbeFailure::Failed(e.to_string()))?;
    if report.hazard != hazard {
        return Err(ProbeFailure::Failed(format!(
            "reported hazard {} instead",
            report.hazard
        )));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::verdict::{Outcome, Role, Window};

    fn report(hazard: &str, platform: &Platform, started_at: &str, elapsed_ms: u64) -> ProbeReport {
        ProbeReport {
            left_out: Vec::new(),
            schema: SCHEMA_VERSION,
            hazard: hazard.into(),
            about: String::new(),
            fdwindow_version: "test".into(),
            platform: platform.clone(),
            started_at: started_at.into(),
            elapsed_ms,
            arms: vec![crate::report::ArmReport {
                arm: "close".into(),
                role: Role::Control,
                window: Window::InProcess,
                kind: crate::report::verdict::Kind::Deterministic,
                emulated: false,
                about: String::new(),
                against: None,
                sham: None,
                avoids: None,
                outcome: Outcome::Unsupported {
                    reason: "test".into(),
                },
            }],
            tables: Vec::new(),
            scope: None,
        }
    }

    fn file(platform: &Platform, reports: &[&ProbeReport]) -> ResultsFile {
        ResultsFile {
            schema: SCHEMA_VERSION,
            platform: platform.clone(),
            probes: reports
                .iter()
                .map(|r| (r.hazard.clone(), (*r).clone()))
                .collect(),
        }
    }

    #[test]
    fn times_parse_as_written() {
        let t = 1_796_083_716;
        assert_eq!(unix_from_utc(&crate::report::utc_from_unix(t)), Some(t));
        assert_eq!(unix_from_utc("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(unix_from_utc("2000-03-01T00:00:01Z"), Some(951_868_801));
        assert_eq!(unix_from_utc("yesterday"), None);
    }

    #[test]
    fn a_merge_changes_only_this_runs_probes() {
        let here = Platform::detect();
        let old = report("flock-survival", &here, "2026-01-01T00:00:00Z", 1000);
        let theirs = report("bind-matrix", &here, "2026-01-02T00:00:00Z", 1000);
        let ours = report("flock-survival", &here, "2026-01-02T00:00:05Z", 1000);
        // Another run wrote bind-matrix since this one started: it stays.
        let before = file(&here, &[&old]);
        let current = file(&here, &[&old, &theirs]);
        let measured = [("flock-survival".to_owned(), ours.clone())].into();
        let (merged, notes) = merge_own(Some(current), Some(&before), measured, &here);
        assert_eq!(merged.probes["flock-survival"], ours);
        assert_eq!(merged.probes["bind-matrix"], theirs);
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn of_two_runs_of_one_probe_the_later_finished_wins() {
        let here = Platform::detect();
        let ours = report("etxtbsy", &here, "2026-01-02T00:00:00Z", 10_000);
        // A concurrent run's report that finished later than ours is kept.
        let later = report("etxtbsy", &here, "2026-01-02T00:00:03Z", 10_000);
        let measured = [("etxtbsy".to_owned(), ours.clone())].into();
        let (merged, notes) = merge_own(Some(file(&here, &[&later])), None, measured, &here);
        assert_eq!(merged.probes["etxtbsy"], later);
        assert!(
            notes[0].contains("kept a concurrent run's report"),
            "{notes:?}"
        );
        // One that finished earlier is replaced, and the user told.
        let earlier = report("etxtbsy", &here, "2026-01-01T23:59:00Z", 10_000);
        let measured = [("etxtbsy".to_owned(), ours.clone())].into();
        let (merged, notes) = merge_own(Some(file(&here, &[&earlier])), None, measured, &here);
        assert_eq!(merged.probes["etxtbsy"], ours);
        assert!(
            notes[0].contains("replaced a concurrent run's report"),
            "{notes:?}"
        );
        // The report this run read at its start is no concurrent run's.
        let measured = [("etxtbsy".to_owned(), ours.clone())].into();
        let before = file(&here, &[&later]);
        let (merged, notes) = merge_own(Some(before.clone()), Some(&before), measured, &here);
        assert_eq!(merged.probes["etxtbsy"], ours);
        assert!(notes.is_empty(), "{notes:?}");
    }

    /// A report of another platform in this platform's file is refused on
    /// loading, before any probe runs, rather than dropped by the merge.
    #[test]
    fn a_file_holding_another_platforms_report_is_refused() {
        let here = Platform::detect();
        let mut other = here.clone();
        other.kernel_release = "6.11.10".into();
        other.id = Platform::make_id(
            &other.os,
            "6.11.10",
            "",
            &other.arch,
            &other.libc,
            &other.libc_version,
            other.virtualization,
        );
        assert_ne!(other.id, here.id);
        let stale = report("peer-fin-with-clone", &other, "2026-01-01T00:00:00Z", 1);
        let ours = report("posix-lock-drop", &here, "2026-01-01T00:00:00Z", 1);
        let s = Scratch::new("runner-foreign").unwrap();
        let path = s.dir().join(format!("{}.json", here.id));
        let json = serde_json::to_string_pretty(&file(&here, &[&ours, &stale])).unwrap();
        std::fs::write(&path, &json).unwrap();
        let Error::BadFile { path: at, problem } = results::load(&path).unwrap_err() else {
            panic!("not a bad file");
        };
        assert_eq!(at, path);
        assert_eq!(
            problem,
            format!(
                "the peer-fin-with-clone report ran on platform {}, not on this file's {}",
                other.id, here.id
            )
        );
        // Without the foreign report the file loads.
        let json = serde_json::to_string_pretty(&file(&here, &[&ours])).unwrap();
        std::fs::write(&path, &json).unwrap();
        assert!(results::load(&path).unwrap().is_some());
    }
}
