//! Runs the audited test binaries: alone or under the injector, output
//! captured, each run's process group ended with it; what a run says about
//! one test ([`seen`]).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fdwindow::cotenant::detect::Seen;
use fdwindow::error::Result;
use fdwindow_fix::base::child::{GroupExit, wait_group};
use fdwindow_fix::base::interrupts;
use fdwindow_fix::pressure::{ENV_VAR, Spec};

use super::diagnose;
use super::leftovers::Leftovers;
use super::progress;
use crate::cli::discover::Binary;
use crate::cli::libtest::{self, Outcome};

/// The variable the injector appends its per-process lines to.
const REPORT_VAR: &str = "FDWINDOW_PRESSURE_REPORT";

/// How one run of a binary ended, with what it printed.
pub(super) struct RunResult {
    pub(super) parsed: libtest::Parsed,
    pub(super) timed_out: bool,
    /// Exited other than by success, or by a signal: tests that never
    /// reported died with it.
    pub(super) status: Option<ExitStatus>,
    /// What the injector reported (pressured runs only).
    pub(super) pressure: Option<crate::stress::RunPressure>,
    /// The injector's close-hold lines (diagnosis runs only).
    pub(super) holds: diagnose::Holds,
}

/// Runs test binaries alone or pressured, with output captured.
pub(super) struct Runner {
    pub(super) preload_var: &'static str,
    pub(super) preload: String,
    /// Folder for the per-run injector reports.
    pub(super) report_dir: PathBuf,
    pub(super) timeout: Duration,
    pub(super) show_output: bool,
    pub(super) keep: Option<PathBuf>,
    pub(super) seq: AtomicU64,
    /// Pressured runs, and those in which the injector reported pressure.
    pub(super) pressured_runs: AtomicU64,
    pub(super) reached_runs: AtomicU64,
    /// What the tests leave in their folders, removed after failing runs.
    pub(super) leftovers: Leftovers,
}

impl Runner {
    /// A runner whose pressured runs load `injector` through `preload_var`
    /// (before what the variable already names), each reporting into a
    /// file of `report_dir`, each killed after `timeout`; with `show_output`
    /// copying each run's output to stderr, and failing runs' output kept
    /// in `keep`.
    pub(super) fn new(
        (preload_var, injector): (&'static str, &std::path::Path),
        report_dir: &std::path::Path,
        timeout: Duration,
        (show_output, keep): (bool, Option<PathBuf>),
    ) -> Runner {
        let preload = match std::env::var(preload_var) {
            Ok(old) if !old.is_empty() => format!("{}:{old}", injector.display()),
            _ => injector.display().to_string(),
        };
        Runner {
            preload_var,
            preload,
            report_dir: report_dir.to_owned(),
            timeout,
            show_output,
            keep,
            seq: AtomicU64::new(0),
            pressured_runs: AtomicU64::new(0),
            reached_runs: AtomicU64::new(0),
            leftovers: Leftovers::snapshot([], &[]),
        }
    }

    /// Pressured runs so far, and those in which the injector reported
    /// pressure.
    pub(super) fn pressured(&self) -> (u64, u64) {
        (
            self.pressured_runs.load(Ordering::Relaxed),
            self.reached_runs.load(Ordering::Relaxed),
        )
    }

    /// Runs `bin` once with `args`, under `spec` if given, and reads it.
    pub(super) fn run(
        &self,
        bin: &Binary,
        args: &[String],
        spec: Option<&Spec>,
        label: &str,
    ) -> Result<RunResult> {
        self.start(bin, args, spec, label, false)
    }

    /// Runs `bin` once per argument list of `runs`, `bin.jobs` of them at
    /// once (nextest's test threads, where each test is a process), as
    /// [`Runner::run`] does; the results in the order of `runs`, each run
    /// until the first error.
    pub(super) fn run_all(
        &self,
        bin: &Binary,
        runs: &[Vec<String>],
        spec: Option<&Spec>,
        label: &str,
        bootstrap: bool,
    ) -> Result<Vec<RunResult>> {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results: Vec<std::sync::Mutex<Option<Result<RunResult>>>> =
            runs.iter().map(|_| std::sync::Mutex::new(None)).collect();
        std::thread::scope(|scope| {
            for _ in 0..bin.jobs.clamp(1, runs.len().max(1)) {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= runs.len() || interrupts::interrupted() {
                            break;
                        }
                        let result = self.start(bin, &runs[i], spec, label, bootstrap);
                        let failed = result.is_err();
                        *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
                        if failed {
                            // The others stop too: no run starts after it.
                            next.store(runs.len(), Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        let mut out = Vec::new();
        for slot in results {
            match slot.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some(result) => out.push(result?),
                None => break, // interrupted before it started
            }
        }
        Ok(out)
    }

    /// The command of one run of `bin`: its own folder and environment, a
    /// process group of its own, and with `pressure` the injector preloaded
    /// under that spec, reporting to its file.
    fn command(
        &self,
        bin: &Binary,
        args: &[String],
        pressure: Option<(&Spec, &crate::stress::ReportFile)>,
        bootstrap: bool,
    ) -> Command {
        let mut cmd = Command::new(&bin.path);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(dir) = &bin.cwd {
            cmd.current_dir(dir);
        }
        cmd.envs(bin.env.iter().map(|(k, v)| (k, v)));
        if bootstrap {
            cmd.env("RUSTC_BOOTSTRAP", "1");
        }
        match pressure {
            Some((spec, report)) => {
                cmd.env(self.preload_var, &self.preload)
                    .env(ENV_VAR, spec.to_string())
                    .env(REPORT_VAR, &report.0);
            }
            _ => {
                cmd.env_remove(ENV_VAR);
            }
        }
        cmd
    }

    /// One run; `bootstrap` lets it take libtest's unstable `--report-time`.
    fn start(
        &self,
        bin: &Binary,
        args: &[String],
        spec: Option<&Spec>,
        label: &str,
        bootstrap: bool,
    ) -> Result<RunResult> {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let report = spec
            .map(|_| crate::stress::ReportFile(self.report_dir.join(format!("{seq}.pressure"))));
        let mut cmd = self.command(bin, args, spec.zip(report.as_ref()), bootstrap);
        // It dies with the audit: one killed outright leaves no test
        // running (this thread waits for it below).
        fdwindow_fix::sys::child_hook::die_with_parent(&mut cmd);
        let running = self.leftovers.run_guard();
        let start = Instant::now();
        let mut child = cmd
            .spawn()
            .map_err(|e| usage!("{}: {e}", bin.path.display()))?;
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                if let Some(mut p) = pipe {
                    let _ = p.read_to_end(&mut buf);
                }
                String::from_utf8_lossy(&buf).into_owned()
            })
        };
        let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
        let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
        let ended = wait_group(&mut child, start + self.timeout, interrupts::interrupted)
            .map_err(|e| usage!("{}: {e}", bin.name))?;
        drop(running);
        let stdout = out.join().unwrap_or_default();
        let stderr = err.join().unwrap_or_default();
        let (pressure, holds) = match &report {
            Some(r) => {
                // The injector reports as it goes: a killed run counts too.
                let got = crate::stress::read_report(&r.0);
                self.pressured_runs.fetch_add(1, Ordering::Relaxed);
                self.reached_runs
                    .fetch_add(u64::from(got.processes > 0), Ordering::Relaxed);
                (Some(got), diagnose::read_holds(&r.0))
            }
            None => (None, diagnose::Holds::default()),
        };
        drop(report);
        let (timed_out, status) = match ended {
            GroupExit::Exited(st) => (false, Some(st)),
            GroupExit::TimedOut => (true, None),
            GroupExit::Stopped => (false, None),
        };
        let parsed = libtest::parse(&stdout);
        let failed = timed_out
            || status.is_some_and(|st| !st.success())
            || parsed.outcomes.values().any(|o| *o == Outcome::Failed);
        if failed {
            // Before the next run: what the failure left must not fail it.
            self.leftovers.sweep_if_idle();
        }
        let tag = format!("run {seq} {} {label}", bin.name);
        if self.show_output {
            for line in stdout.lines().chain(stderr.lines()) {
                progress::line(&format!("[{tag}] {line}"));
            }
        }
        if failed && let Some(dir) = &self.keep {
            let ended = if timed_out {
                "timed out".to_owned()
            } else {
                format!("{status:?}")
            };
            keep_failure(dir, &tag, &ended, args, spec, (&stdout, &stderr));
        }
        Ok(RunResult {
            parsed,
            timed_out,
            status,
            pressure,
            holds,
        })
    }
}

/// Writes a failed run's output to `dir` (`--keep-failures`), a file per run
/// named after its tag; a write that fails is a warning.
fn keep_failure(
    dir: &std::path::Path,
    tag: &str,
    ended: &str,
    args: &[String],
    spec: Option<&Spec>,
    (stdout, stderr): (&str, &str),
) {
    let safe: String = tag
        .trim_start_matches("run ")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let text = format!(
        "# {tag}: {ended}\n# args: {args:?}\n# pressure: {}\n## stdout\n{stdout}\n## stderr\n{stderr}",
        spec.map_or_else(|| "none".to_owned(), Spec::to_string)
    );
    let path = dir.join(format!("{safe}.log"));
    if let Err(e) = fdwindow::evidence::results::write_atomic(&path, text.as_bytes()) {
        progress::line(&format!(
            "warning: --keep-failures: {}: {e}",
            path.display()
        ));
    }
}

/// What a run says about `test`; `None` when it did not run (ignored, filtered).
pub(super) fn seen(run: &RunResult, test: &str) -> Option<(Seen, Option<String>)> {
    match run.parsed.outcomes.get(test) {
        Some(Outcome::Ok) => Some((Seen::Ok, None)),
        Some(Outcome::Failed) => Some((Seen::Failed, run.parsed.messages.get(test).cloned())),
        Some(Outcome::Ignored) => None,
        None if run.timed_out => Some((Seen::TimedOut, Some("timed out (--timeout)".into()))),
        None => match run.status {
            Some(s) if !s.success() => Some((
                Seen::Failed,
                Some(format!(
                    "the test binary ended ({s}) before this test reported"
                )),
            )),
            _ => None,
        },
    }
}
