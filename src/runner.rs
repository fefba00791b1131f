//! `fdwindow run`: runs every probe binary as its own process, under a hard
//! timeout and in its own process group, and merges the reports into
//! `results/<platform-id>.json`.
//!
//! A probe that fails, times out or prints a bad report keeps its previous
//! results; the file is replaced atomically and only after every probe ran, so
//! an interrupted run changes nothing.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::child::{GroupExit, wait_group};
use crate::harness::interrupted;
use crate::platform::Platform;
use crate::report::{ProbeReport, ResultsFile, SCHEMA_VERSION};
use crate::results;
use crate::scratch::{SCRATCH_ENV, Scratch};

/// Every probe, by hazard id; its binary is `probe-<id>` beside `fdwindow`.
/// The clock probes go first: clock-collision creates thousands of files and
/// is slowed several-fold by the journal work the other probes leave behind.
pub const PROBES: &[&str] = &[
    "clock-resolution",
    "clock-collision",
    "flock-survival",
    "ofd-lock-survival",
    "posix-lock-drop",
    "listener-survival",
    "peer-fin-with-clone",
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
    /// Where the probe binaries are.
    pub probes_dir: PathBuf,
    /// Passed to each probe as `--trials`.
    pub trials: Option<u64>,
    /// Passed to each probe as `--race-ms`.
    pub race_ms: Option<u64>,
    /// Per-probe hard timeout.
    pub timeout: Duration,
    /// Run only these hazards (all when empty).
    pub only: Vec<String>,
}

/// Why a run did not complete.
#[derive(Debug)]
pub enum RunError {
    /// Bad input: unknown hazard, corrupt or future results file, unwritable folder.
    Usage(String),
    /// SIGINT or SIGTERM: probes killed, nothing written.
    Interrupted,
    /// Writing the results failed.
    Io(std::io::Error),
}

/// What a completed run did.
#[derive(Debug)]
pub struct RunSummary {
    /// The results file written.
    pub results_path: PathBuf,
    /// The merged results for this platform.
    pub results: ResultsFile,
    /// Probes that failed, with why (their previous results were kept).
    pub failures: Vec<(String, String)>,
    /// Wall time of the whole run.
    pub elapsed: Duration,
}

/// Runs the probes and writes the results and the matrix.
pub fn run(opts: &RunOptions) -> Result<RunSummary, RunError> {
    let started = Instant::now();
    if let Some(unknown) = opts.only.iter().find(|h| !PROBES.contains(&h.as_str())) {
        return Err(RunError::Usage(format!(
            "no probe for hazard {unknown:?}; probes: {}",
            PROBES.join(", ")
        )));
    }
    let platform = Platform::detect();
    let results_path = opts.results_dir.join(format!("{}.json", platform.id));
    // Refuse before measuring anything: bad files stay untouched.
    results::check_writable(&opts.results_dir)
        .map_err(|e| RunError::Usage(format!("results folder is not writable: {e}")))?;
    // A full run replaces this platform's file when it has an older schema:
    // that is the command the refusal names.
    let replaces_older = |e: &results::BadResults| {
        opts.only.is_empty() && e.path == results_path && crate::report::is_older_schema(&e.problem)
    };
    let previous = match results::load(&results_path) {
        Err(e) if replaces_older(&e) => None,
        other => other.map_err(|e| RunError::Usage(e.to_string()))?,
    };
    match results::load_dir(&opts.results_dir) {
        Err(e) if !replaces_older(&e) => return Err(RunError::Usage(e.to_string())),
        _ => {}
    }
    let scratch = Scratch::new("run").map_err(RunError::Io)?;

    let mut merged = previous.unwrap_or_else(|| ResultsFile {
        schema: SCHEMA_VERSION,
        platform: platform.clone(),
        probes: Default::default(),
    });
    merged.schema = SCHEMA_VERSION;
    merged.platform = platform;
    let mut failures = Vec::new();
    for hazard in PROBES
        .iter()
        .filter(|h| opts.only.is_empty() || opts.only.iter().any(|o| o == *h))
    {
        eprintln!("fdwindow: probing {hazard} …");
        match run_probe(hazard, opts, scratch.dir()) {
            Ok(report) => {
                merged.probes.insert(hazard.to_string(), report);
            }
            Err(ProbeFailure::Interrupted) => return Err(RunError::Interrupted),
            Err(ProbeFailure::Failed(why)) => {
                eprintln!("fdwindow: {hazard} failed: {why}");
                failures.push((hazard.to_string(), why));
            }
        }
    }
    let json = serde_json::to_string_pretty(&merged).expect("results serialise") + "\n";
    results::write_atomic(&results_path, json.as_bytes()).map_err(RunError::Io)?;
    write_matrix(&opts.results_dir).map_err(RunError::Io)?;
    Ok(RunSummary {
        results_path,
        results: merged,
        failures,
        elapsed: started.elapsed(),
    })
}

/// What `fdwindow matrix` writes: each file's name in the results folder and
/// its contents, all derived from the results and costs files in `dir`.
pub fn render_outputs(dir: &Path) -> Result<Vec<(&'static str, String)>, results::BadResults> {
    let files = results::load_dir(dir)?;
    let costs = crate::costs::load_dir(dir)?;
    let mut outputs = vec![("MATRIX.md", crate::matrix::render(&files, &costs))];
    if let Some(svg) = crate::chart::render_spawn_window(&files) {
        outputs.push((crate::chart::SPAWN_WINDOW_SVG, svg));
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
    let bin = opts.probes_dir.join(format!("probe-{hazard}"));
    let mut cmd = Command::new(&bin);
    if let Some(t) = opts.trials {
        cmd.arg("--trials").arg(t.to_string());
    }
    if let Some(ms) = opts.race_ms {
        cmd.arg("--race-ms").arg(ms.to_string());
    }
    // Its own process group, so a timeout kills the probe and every child it
    // holds in one signal; process_group keeps std on posix_spawn.
    cmd.env(SCRATCH_ENV, scratch)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| {
        ProbeFailure::Failed(format!(
            "start {}: {e} (build with `cargo build --release`)",
            bin.display()
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
    let report: ProbeReport = serde_json::from_slice(&stdout)
        .map_err(|e| ProbeFailure::Failed(format!("unreadable report: {e}")))?;
    report.validate().map_err(ProbeFailure::Failed)?;
    if report.hazard != hazard {
        return Err(ProbeFailure::Failed(format!(
            "reported hazard {} instead",
            report.hazard
        )));
    }
    Ok(report)
}
