//! `fdwindow audit`: which tests of a suite an inherited descriptor breaks,
//! which class of descriptor, and what to do about it.
//!
//! 1. [`discover`] learns the test binaries (building first, so cargo, rustc
//!    and nextest never carry pressure) and lists each binary's tests.
//! 2. Each binary runs `--runs` times alone and `--runs` times with the
//!    injector preloaded, alternately, so a change in the machine's load falls
//!    on both arms alike. [`libtest`] reads each test's outcome.
//! 3. A test that failed under pressure and never alone, but not often enough
//!    for the rule (one-sided Fisher p <= 0.001, [`fdwindow::stats::fisher_less`]), is a suspect: it reruns alone
//!    in its own process (`--exact`), both arms alternately, until the rule
//!    decides, it fails alone, or the rerun budget ends. Suite runs and
//!    `--exact` reruns are different conditions: their counts are never added.
//!    The reruns look at their p at most [`LOOKS`] times, each at
//!    `ALPHA / LOOKS`; a test whose suite failures include runs that ended
//!    before it reported (a timeout, a crash) is decided by its reruns only.
//! 4. Each exposed test reruns (`--exact`) under fork-path pressure whose
//!    children close one class of descriptor right after the fork
//!    ([`DropClass`]), round-robin with the plain fork-path control and the
//!    sham that closes everything. Failures that persist with everything
//!    closed come from load; a class whose drop clears them (0 failures, Fisher
//!    p <= 0.001 against the control) is the cause, mapped to its hazards.
//!
//! Progress goes to stderr, the report (md, json or junit) to stdout. Exit 1
//! when any test is exposed, 2 for bad input, 130 when interrupted.

mod discover;
mod libtest;
mod report;

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use fdwindow::child::{GroupExit, wait_group};
use fdwindow::harness;
use fdwindow::pressure::{self, DropClass, ENV_VAR, SpawnPath, Spec};
use fdwindow::stats::Count;

use discover::Binary;
use libtest::Outcome;

/// The variable the injector appends its per-process line to.
const REPORT_VAR: &str = "FDWINDOW_PRESSURE_REPORT";
/// The rule: exposed at a one-sided Fisher p at or under this.
pub const ALPHA: f64 = 0.001;
/// The `--exact` reruns look at their p after 1, 2, 4, … 256 pairs and at
/// the end of their budget: at most this many looks, each tested at
/// `ALPHA / LOOKS`. Stopping at the first look that decides would otherwise
/// call an unaffected test exposed more often than `ALPHA`; the Bonferroni
/// bound over the looks keeps it at `ALPHA` overall.
pub const LOOKS: u32 = 10;

/// Whether the reruns look at their p after `pairs` pairs (a power of two
/// under 2^(LOOKS - 1); the budget's end is the last look).
fn is_look(pairs: u64) -> bool {
    pairs.is_power_of_two() && pairs < 1 << (LOOKS - 1)
}
/// The shortest hold of the diagnosis's children.
const DIAGNOSIS_HOLD: Duration = Duration::from_millis(50);
/// The audit's pressure unless `--pressure` says otherwise: write-up 001's
/// condition (four threads, a 20 ms hold), on both spawn paths.
const DEFAULT_PRESSURE: &str = "threads=4,hold=20ms,path=mix";

/// The arguments of `fdwindow audit`.
#[derive(clap::Args, Debug)]
pub struct AuditArgs {
    /// Runs of each binary per arm (alone, pressure).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    runs: u64,
    /// Stop the suite runs after this long (at least one run per arm), e.g. 60s.
    #[arg(long, value_parser = pressure::parse_duration)]
    duration: Option<Duration>,
    /// The pressure, over threads=4,hold=20ms,path=mix: threads=N,hold=D,path=fork|spawn|mix
    /// (see fdwindow::pressure::Spec).
    #[arg(long, default_value = "")]
    pressure: String,
    /// Report format on stdout.
    #[arg(long, default_value = "md", value_parser = ["md", "json", "junit"])]
    format: String,
    /// Kill a run after this many seconds; its unreported tests count as timeouts.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: u64,
    /// Time for the `--exact` reruns of each suspect.
    #[arg(long, default_value = "30s", value_parser = pressure::parse_duration)]
    rerun_budget: Duration,
    /// At most this many `--exact` reruns per arm of each suspect.
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    max_reruns: u64,
    /// Time for the diagnosis of each exposed test.
    #[arg(long, default_value = "60s", value_parser = pressure::parse_duration)]
    diagnose_budget: Duration,
    /// At most this many diagnosis rounds (one run of every variant, at once,
    /// each); fewer when the counts settle the answer.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    diagnose_rounds: u64,
    /// Skip the diagnosis.
    #[arg(long)]
    no_diagnose: bool,
    /// A preload library to use instead of the injector built into fdwindow.
    #[arg(long)]
    injector: Option<PathBuf>,
    /// Results folder read for the advice on each hazard.
    #[arg(long, default_value = "results")]
    results: PathBuf,
    /// Copy each run's output to stderr, each line marked with its run and arm.
    #[arg(long)]
    show_output: bool,
    /// Keep each failing run's output in this folder (created if missing).
    #[arg(long, value_name = "DIR")]
    keep_failures: Option<PathBuf>,
    /// A libtest binary, `cargo test …` or `cargo nextest run …`, with arguments.
    #[arg(last = true, required = true, num_args = 1..)]
    command: Vec<String>,
}

/// One arm's count for one test.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Runs that reported FAILED (or died before reporting).
    pub failures: u64,
    /// Runs in which the test reported, failed to, or timed out.
    pub runs: u64,
    /// Runs killed by `--timeout` before the test reported.
    pub timeouts: u64,
}

impl Tally {
    /// Failures and timeouts: what the rule counts as bad runs.
    pub fn bad(self) -> u64 {
        self.failures + self.timeouts
    }

    fn add(&mut self, seen: Seen) {
        match seen {
            Seen::Ok => self.runs += 1,
            Seen::Failed => {
                self.runs += 1;
                self.failures += 1;
            }
            Seen::TimedOut => {
                self.runs += 1;
                self.timeouts += 1;
            }
        }
    }
}

/// One-sided Fisher p that `a` fails more than `b` (its bad runs:
/// failures and timeouts), i.e. that `b`'s rate is below `a`'s.
pub fn p_greater(a: Tally, b: Tally) -> f64 {
    let count = |t: Tally| Count::new(t.bad(), t.runs);
    fdwindow::stats::fisher_less(count(b), count(a))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Ok,
    Failed,
    TimedOut,
}

/// A diagnosis variant: the fork-path control, or one class dropped.
pub type Variant = Option<DropClass>;

/// What the diagnosis found for one exposed test.
#[derive(Clone, Debug, Default)]
pub struct Diagnosis {
    /// Counts per variant, the control (`None`) first.
    pub variants: Vec<(Variant, Tally)>,
    /// `load`, a class id, `several classes`, `undecided` or `unreproduced`.
    pub held: String,
    /// The classes whose drop cleared the failures.
    pub classes: Vec<DropClass>,
    /// Rounds run.
    pub rounds: u64,
    /// Seconds spent.
    pub seconds: f64,
}

/// Everything measured for one test.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// Whole-binary runs: alone, pressure.
    pub suite: [Tally; 2],
    /// `--exact` reruns of a suspect: alone, pressure.
    pub exact: [Tally; 2],
    /// The first failure message.
    pub message: Option<String>,
    /// Set for exposed tests when the diagnosis ran.
    pub diagnosis: Option<Diagnosis>,
    /// Seconds spent in `--exact` reruns.
    pub rerun_seconds: f64,
    /// Whole-binary runs, alone and pressured, in which this test never
    /// reported because the binary timed out or died first: counted as bad,
    /// but not attributable to this test (any test in flight may have hung
    /// or crashed), so only its own `--exact` reruns can decide it.
    pub unattributed: [u64; 2],
}

impl Record {
    /// The suite's p.
    pub fn p_suite(&self) -> f64 {
        p_greater(self.suite[1], self.suite[0])
    }

    /// The reruns' p (1 without reruns).
    pub fn p_exact(&self) -> f64 {
        p_greater(self.exact[1], self.exact[0])
    }

    /// Whether the decision rests on the `--exact` reruns: they ran, or the
    /// suite's bad runs include some not attributable to this test.
    fn decided_by_reruns(&self) -> bool {
        self.exact[0].runs + self.exact[1].runs > 0 || self.unattributed[1] > 0
    }

    /// The p the decision rests on: the reruns' when they decide (1 without
    /// reruns), else the suite's. Never the smaller of the two, which would
    /// test twice at `ALPHA`.
    pub fn p(&self) -> f64 {
        if self.decided_by_reruns() {
            self.p_exact()
        } else {
            self.p_suite()
        }
    }

    /// Whether the rule calls it exposed: the suite's p at `ALPHA`, or the
    /// reruns' at `ALPHA / LOOKS` (see [`LOOKS`]).
    pub fn exposed(&self) -> bool {
        if self.decided_by_reruns() {
            self.p_exact() <= ALPHA / f64::from(LOOKS)
        } else {
            self.p_suite() <= ALPHA
        }
    }

    /// Failed under pressure, never alone, not yet decided.
    fn suspect(&self) -> bool {
        self.suite[1].bad() > 0 && self.suite[0].bad() == 0 && !self.exposed()
    }
}

/// How one run of a binary ended, with what it printed.
struct RunResult {
    parsed: libtest::Parsed,
    timed_out: bool,
    /// Exited other than by success, or by a signal: tests that never
    /// reported died with it.
    status: Option<ExitStatus>,
}

/// Runs test binaries alone or pressured, with output captured.
struct Runner {
    preload_var: &'static str,
    preload: String,
    /// Folder for the per-run injector reports.
    report_dir: PathBuf,
    timeout: Duration,
    show_output: bool,
    keep: Option<PathBuf>,
    seq: u64,
    /// Pressured runs, and those in which the injector reported pressure.
    pressured_runs: u64,
    reached_runs: u64,
    /// Its end-of-file stops the pressure in every run if the audit dies.
    controller: crate::stress::Controller,
}

/// A run started and not yet waited for.
struct Started {
    child: std::process::Child,
    start: Instant,
    out: std::thread::JoinHandle<String>,
    err: std::thread::JoinHandle<String>,
    tag: String,
    label: String,
    binary: String,
    args: Vec<String>,
    spec: Option<String>,
    /// This run's injector report, removed when read.
    report: Option<TempFile>,
}

impl Runner {
    fn run(
        &mut self,
        bin: &Binary,
        args: &[String],
        spec: Option<&Spec>,
        label: &str,
    ) -> Result<RunResult, String> {
        let started = self.start(bin, args, spec, label)?;
        self.finish(started)
    }

    /// Starts one run in its own process group, its output drained by two
    /// threads.
    fn start(
        &mut self,
        bin: &Binary,
        args: &[String],
        spec: Option<&Spec>,
        label: &str,
    ) -> Result<Started, String> {
        self.seq += 1;
        let mut cmd = Command::new(&bin.path);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        if let Some(dir) = &bin.cwd {
            cmd.current_dir(dir).env("CARGO_MANIFEST_DIR", dir);
        }
        let report = spec.map(|_| TempFile(self.report_dir.join(format!("{}.pressure", self.seq))));
        match (spec, &report) {
            (Some(spec), Some(report)) => {
                cmd.env(self.preload_var, &self.preload)
                    .env(ENV_VAR, spec.to_string())
                    .env(REPORT_VAR, &report.0);
                self.controller.pass_to(&mut cmd);
            }
            _ => {
                cmd.env_remove(ENV_VAR);
            }
        }
        let start = Instant::now();
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("{}: {e}", bin.path.display()))?;
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
        Ok(Started {
            child,
            start,
            out,
            err,
            tag: format!("run {} {} {label}", self.seq, bin.name),
            label: label.to_owned(),
            binary: bin.name.clone(),
            args: args.to_vec(),
            spec: spec.map(Spec::to_string),
            report,
        })
    }

    /// Waits for a started run (killing its group at the timeout) and reads it.
    fn finish(&mut self, mut s: Started) -> Result<RunResult, String> {
        let ended = wait_group(&mut s.child, s.start + self.timeout, harness::interrupted)
            .map_err(|e| format!("{}: {e}", s.binary))?;
        let stdout = s.out.join().unwrap_or_default();
        let stderr = s.err.join().unwrap_or_default();
        if let Some(report) = s.report.take() {
            // The injector reports as it goes: a killed run counts too.
            self.pressured_runs += 1;
            self.reached_runs += u64::from(crate::stress::read_report(&report.0).processes > 0);
        }
        let (timed_out, status) = match ended {
            GroupExit::Exited(st) => (false, Some(st)),
            GroupExit::TimedOut => (true, None),
            GroupExit::Stopped => (false, None),
        };
        let parsed = libtest::parse(&stdout);
        let failed = timed_out
            || status.is_some_and(|st| !st.success())
            || parsed.outcomes.values().any(|o| *o == Outcome::Failed);
        if self.show_output {
            for line in stdout.lines().chain(stderr.lines()) {
                eprintln!("[{}] {line}", s.tag);
            }
        }
        if failed && let Some(dir) = &self.keep {
            let safe: String = s
                .tag
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
                "# {} ({}): {}\n# args: {:?}\n# pressure: {}\n## stdout\n{stdout}\n## stderr\n{stderr}",
                s.tag,
                s.label,
                if timed_out {
                    "timed out".to_owned()
                } else {
                    format!("{status:?}")
                },
                s.args,
                s.spec.as_deref().unwrap_or("none")
            );
            let path = dir.join(format!("{safe}.log"));
            if let Err(e) = fdwindow::results::write_atomic(&path, text.as_bytes()) {
                eprintln!("warning: --keep-failures: {}: {e}", path.display());
            }
        }
        Ok(RunResult {
            parsed,
            timed_out,
            status,
        })
    }
}

/// What a run says about `test`; `None` when it did not run (ignored, filtered).
fn seen(run: &RunResult, test: &str) -> Option<(Seen, Option<String>)> {
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

/// Removes the injector's report file on every path out.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The whole audit's outcome, for the report.
pub struct Audit {
    /// The command as given.
    pub command: Vec<String>,
    /// The pressure spec of the suite runs.
    pub spec: Spec,
    /// The binaries, by index.
    pub binaries: Vec<String>,
    /// Per (binary index, test name).
    pub records: BTreeMap<(usize, String), Record>,
    /// Suite rounds run (runs per arm of each binary).
    pub rounds: u64,
    /// Seconds per phase: suite, reruns, diagnosis.
    pub phases: [f64; 3],
    /// Pressured runs, and those in which the injector reported pressure.
    pub pressured: (u64, u64),
    /// Warnings for the reader.
    pub warnings: Vec<String>,
    /// Whether Ctrl-C cut it short.
    pub interrupted: bool,
}

/// Runs `fdwindow audit`; `Err` is bad input (exit status 2).
pub fn run(args: AuditArgs) -> Result<ExitCode, String> {
    let mut spec: Spec = format!("{DEFAULT_PRESSURE},{}", args.pressure)
        .parse()
        .map_err(|e| format!("--pressure: {e}"))?;
    if spec.config.drop.is_some() || spec.controller.is_some() {
        return Err("--pressure: drop= and ctl= are the audit's to set".into());
    }
    let controller =
        crate::stress::Controller::new().map_err(|e| format!("controller pipe: {e}"))?;
    spec.controller = Some(controller.fd());
    let injector = crate::stress::Injector::locate(args.injector.as_deref())?;
    let preload_var = injector.var;
    if let Some(dir) = &args.keep_failures {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("--keep-failures {}: {e}", dir.display()))?;
    }
    let binaries = discover::discover(&args.command)?;
    if binaries.is_empty() {
        return Err("the command built no test binaries".into());
    }
    let report_dir = tempfile::Builder::new()
        .prefix("fdwindow-audit-")
        .tempdir()
        .map_err(|e| format!("a folder for the injector's reports: {e}"))?;
    let preload = match std::env::var(preload_var) {
        Ok(old) if !old.is_empty() => format!("{}:{old}", injector.path().display()),
        _ => injector.path().display().to_string(),
    };
    let mut runner = Runner {
        preload_var,
        preload,
        report_dir: report_dir.path().to_owned(),
        timeout: Duration::from_secs(args.timeout),
        show_output: args.show_output,
        keep: args.keep_failures.clone(),
        seq: 0,
        pressured_runs: 0,
        reached_runs: 0,
        controller,
    };
    harness::catch_interrupts();
    // The tests of each whole-binary run, listed alone.
    let mut lists: Vec<Vec<String>> = Vec::new();
    for bin in &binaries {
        if bin.per_test {
            lists.push(bin.tests.clone());
            continue;
        }
        let mut list_args = bin.args.clone();
        list_args.extend(["--list".into(), "--format".into(), "terse".into()]);
        let out = Command::new(&bin.path)
            .args(&list_args)
            .current_dir(bin.cwd.as_deref().unwrap_or(Path::new(".")))
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", bin.path.display()))?;
        lists.push(libtest::parse_list(&String::from_utf8_lossy(&out.stdout)));
    }
    let total_tests: usize = lists.iter().map(Vec::len).sum();
    eprintln!(
        "fdwindow audit: {} binaries, {total_tests} tests, {} runs per arm, pressure {}",
        binaries.len(),
        args.runs,
        Spec {
            controller: None,
            ..spec.clone()
        }
    );
    let mut audit = Audit {
        command: args.command.clone(),
        spec: Spec {
            controller: None,
            ..spec.clone()
        },
        binaries: binaries.iter().map(|b| b.name.clone()).collect(),
        records: BTreeMap::new(),
        rounds: 0,
        phases: [0.0; 3],
        pressured: (0, 0),
        warnings: Vec::new(),
        interrupted: false,
    };
    for (i, list) in lists.iter().enumerate() {
        for t in list {
            audit.records.insert((i, t.clone()), Record::default());
        }
    }

    // Phase 1: the suite, alternately alone and pressured.
    let started = Instant::now();
    while audit.rounds < args.runs
        && !(audit.rounds > 0 && args.duration.is_some_and(|d| started.elapsed() >= d))
        && !harness::interrupted()
    {
        for (i, bin) in binaries.iter().enumerate() {
            for (arm, pressured) in [(0, None), (1, Some(&spec))] {
                let label = if arm == 0 { "alone" } else { "pressure" };
                let runs: Vec<(Vec<String>, Option<&String>)> = if bin.per_test {
                    lists[i].iter().map(|t| (exact_args(t), Some(t))).collect()
                } else {
                    vec![(bin.args.clone(), None)]
                };
                for (run_args, only) in runs {
                    let result = runner.run(bin, &run_args, pressured, label)?;
                    if harness::interrupted() {
                        break;
                    }
                    for t in &lists[i] {
                        if only.is_some_and(|o| o != t) {
                            continue;
                        }
                        if let Some((s, msg)) = seen(&result, t) {
                            let r = audit.records.get_mut(&(i, t.clone())).expect("listed");
                            r.suite[arm].add(s);
                            if !result.parsed.outcomes.contains_key(t) {
                                r.unattributed[arm] += 1;
                            }
                            if r.message.is_none() {
                                r.message = msg;
                            }
                        }
                    }
                }
            }
        }
        audit.rounds += 1;
        let (a, p) = audit.records.values().fold((0, 0), |(a, p), r| {
            (
                a + u64::from(r.suite[0].bad() > 0),
                p + u64::from(r.suite[1].bad() > 0),
            )
        });
        eprintln!(
            "round {}/{}: {a} tests failed alone, {p} under pressure ({:.1} s)",
            audit.rounds,
            args.runs,
            started.elapsed().as_secs_f64()
        );
    }
    audit.phases[0] = started.elapsed().as_secs_f64();

    // Phase 2: suspects rerun alone in their own process, both arms.
    let started = Instant::now();
    let suspects: Vec<(usize, String)> = audit
        .records
        .iter()
        .filter(|(_, r)| r.suspect())
        .map(|(k, _)| k.clone())
        .collect();
    if !suspects.is_empty() {
        eprintln!("{} suspects: rerunning each with --exact", suspects.len());
    }
    for key in suspects {
        if harness::interrupted() {
            break;
        }
        let bin = &binaries[key.0];
        let t0 = Instant::now();
        let end = t0 + args.rerun_budget;
        let mut rec = audit.records[&key].clone();
        while rec.exact[1].runs < args.max_reruns && Instant::now() < end && !harness::interrupted()
        {
            for (arm, pressured) in [(0, None), (1, Some(&spec))] {
                let label = if arm == 0 {
                    "rerun-alone"
                } else {
                    "rerun-pressure"
                };
                let result = runner.run(bin, &exact_args(&key.1), pressured, label)?;
                if let Some((s, msg)) = seen(&result, &key.1) {
                    rec.exact[arm].add(s);
                    if rec.message.is_none() {
                        rec.message = msg;
                    }
                }
            }
            if rec.exact[0].bad() > 0 || (is_look(rec.exact[1].runs) && rec.exposed()) {
                break;
            }
        }
        rec.rerun_seconds = t0.elapsed().as_secs_f64();
        eprintln!(
            "  {} {}: alone {}/{}, pressure {}/{}, p {:.2e} ({:.1} s)",
            bin.name,
            key.1,
            rec.exact[0].bad(),
            rec.exact[0].runs,
            rec.exact[1].bad(),
            rec.exact[1].runs,
            rec.p_exact(),
            rec.rerun_seconds
        );
        audit.records.insert(key, rec);
    }
    audit.phases[1] = started.elapsed().as_secs_f64();

    // Phase 3: diagnosis of each exposed test.
    let started = Instant::now();
    if !args.no_diagnose {
        let exposed: Vec<(usize, String)> = audit
            .records
            .iter()
            .filter(|(_, r)| r.exposed())
            .map(|(k, _)| k.clone())
            .collect();
        for key in exposed {
            if harness::interrupted() {
                break;
            }
            let d = diagnose(&mut runner, &binaries[key.0], &key.1, &spec, &args)?;
            eprintln!(
                "  diagnosis {} {}: {} ({} rounds, {:.1} s)",
                binaries[key.0].name, key.1, d.held, d.rounds, d.seconds
            );
            audit.records.get_mut(&key).expect("listed").diagnosis = Some(d);
        }
    }
    audit.phases[2] = started.elapsed().as_secs_f64();

    audit.pressured = (runner.pressured_runs, runner.reached_runs);
    if audit.pressured.1 < audit.pressured.0 {
        audit.warnings.push(format!(
            "pressure started in only {} of {} pressured runs: the loader may have ignored {preload_var}",
            audit.pressured.1, audit.pressured.0
        ));
    }
    audit.interrupted = harness::interrupted();
    let files = fdwindow::results::load_dir(&args.results).unwrap_or_default();
    let text = match args.format.as_str() {
        "json" => report::json(&audit, &files),
        "junit" => report::junit(&audit, &files),
        _ => report::markdown(&audit, &files),
    };
    // `emit` may end the process on a failed write (a closed pipe,
    // `>/dev/full`), skipping drops: remove the private files first.
    let exit = if audit.interrupted {
        ExitCode::from(130)
    } else if audit.records.values().any(Record::exposed) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    };
    drop(report_dir);
    drop(injector);
    crate::emit(&text);
    Ok(exit)
}

/// libtest's arguments to run exactly one test, ignored or not.
fn exact_args(test: &str) -> Vec<String> {
    vec![test.to_owned(), "--exact".into()]
}

/// Reruns one exposed test under fork-path pressure variants, round-robin.
fn diagnose(
    runner: &mut Runner,
    bin: &Binary,
    test: &str,
    spec: &Spec,
    args: &AuditArgs,
) -> Result<Diagnosis, String> {
    let t0 = Instant::now();
    let end = t0 + args.diagnose_budget;
    let variants: Vec<Variant> = std::iter::once(None)
        .chain(DropClass::ALL.into_iter().map(Some))
        .collect();
    let specs: Vec<Spec> = variants
        .iter()
        .map(|v| {
            let mut s = spec.clone();
            // Only a forked child runs code before exec; a hold at least
            // DIAGNOSIS_HOLD makes a held copy outlast the child's own start
            // (the time before it can close anything).
            s.config.path = SpawnPath::ForkExec;
            s.config.hold = s.config.hold.max(DIAGNOSIS_HOLD);
            s.config.drop = *v;
            s
        })
        .collect();
    let mut d = Diagnosis {
        variants: variants.iter().map(|v| (*v, Tally::default())).collect(),
        ..Diagnosis::default()
    };
    while d.rounds < args.diagnose_rounds && Instant::now() < end && !harness::interrupted() {
        // One round: every variant at once, so the machine's load at that
        // moment falls on all of them alike.
        let mut started = Vec::with_capacity(specs.len());
        for (i, s) in specs.iter().enumerate() {
            let label = format!("diagnose-{}", variants[i].map_or("control", DropClass::id));
            match runner.start(bin, &exact_args(test), Some(s), &label) {
                Ok(st) => started.push((i, st)),
                Err(e) => {
                    for (_, st) in started {
                        let _ = runner.finish(st);
                    }
                    return Err(e);
                }
            }
        }
        for (i, st) in started {
            let result = runner.finish(st)?;
            if let Some((seen, _)) = seen(&result, test) {
                d.variants[i].1.add(seen);
            }
        }
        d.rounds += 1;
        if settled(&d.variants, d.rounds) {
            break;
        }
    }
    let (held, classes) = decide(&d.variants);
    d.held = held;
    d.classes = classes;
    d.seconds = t0.elapsed().as_secs_f64();
    Ok(d)
}

/// The diagnosis rule. `variants[0]` is the control, then one per
/// [`DropClass::ALL`], the sham last. A variant clears the failures when it
/// fails significantly less than the control (one-sided Fisher p <= ALPHA):
/// a child needs a moment after the fork before it can close anything, so a
/// test that checks within that moment may still fail now and then.
fn decide(variants: &[(Variant, Tally)]) -> (String, Vec<DropClass>) {
    let control = variants[0].1;
    if control.bad() == 0 {
        return ("unreproduced".into(), Vec::new());
    }
    let cleared = |t: Tally| p_greater(control, t) <= ALPHA;
    let (_, sham) = variants[variants.len() - 1];
    if !cleared(sham) {
        // Failing about as often (at least half the control's rate) with
        // nothing held: load. Fewer failures, or none, without significance:
        // undecided.
        let half_rate = 2 * sham.bad() * control.runs >= control.bad() * sham.runs;
        return if sham.bad() > 0 && half_rate {
            ("load".into(), Vec::new())
        } else {
            ("undecided".into(), Vec::new())
        };
    }
    let found: Vec<DropClass> = variants[1..variants.len() - 1]
        .iter()
        .filter(|(_, t)| cleared(*t))
        .filter_map(|(v, _)| *v)
        .collect();
    if found.is_empty() {
        return ("several classes".into(), found);
    }
    let ids: Vec<&str> = found.iter().map(|c| c.id()).collect();
    (ids.join("+"), found)
}

/// Whether more rounds cannot change [`decide`]'s answer in practice: after
/// [`MIN_ROUNDS`], the sham fails at least half as often as the control
/// (load), or it and one class clear the failures while every other class
/// fails at least half as often as the control.
fn settled(variants: &[(Variant, Tally)], rounds: u64) -> bool {
    let control = variants[0].1;
    if rounds < MIN_ROUNDS || control.bad() == 0 {
        return false;
    }
    let cleared = |t: Tally| p_greater(control, t) <= ALPHA;
    let clearly_failing = |t: Tally| 2 * t.bad() >= control.bad();
    let sham = variants[variants.len() - 1].1;
    if clearly_failing(sham) {
        return true;
    }
    let singles = &variants[1..variants.len() - 1];
    cleared(sham)
        && singles.iter().any(|(_, t)| cleared(*t))
        && singles
            .iter()
            .all(|(_, t)| cleared(*t) || clearly_failing(*t))
}

/// Diagnosis rounds before [`settled`] may stop it.
const MIN_ROUNDS: u64 = 10;

/// The hazards a held class can be (`fdwindow advise` ids).
pub fn hazards_of(class: DropClass) -> &'static [&'static str] {
    match class {
        DropClass::File => &["flock-survival", "ofd-lock-survival", "etxtbsy"],
        DropClass::Listener => &["listener-survival", "unix-listener-survival", "port-pick"],
        DropClass::Stream => &["peer-fin-with-clone"],
        DropClass::Datagram => &["port-pick"],
        DropClass::Pipe => &["pipe-eof"],
        DropClass::All => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(bad: u64, runs: u64) -> Tally {
        Tally {
            failures: bad,
            runs,
            timeouts: 0,
        }
    }

    fn variants(control: Tally, singles: [Tally; 5], sham: Tally) -> Vec<(Variant, Tally)> {
        let mut v = vec![(None, control)];
        v.extend(
            DropClass::ALL[..5]
                .iter()
                .zip(singles)
                .map(|(c, t)| (Some(*c), t)),
        );
        v.push((Some(DropClass::All), sham));
        v
    }

    #[test]
    fn one_class_clears() {
        let f = t(9, 10);
        let d = decide(&variants(t(10, 10), [t(1, 10), f, f, f, f], t(0, 10)));
        assert_eq!(d.0, "file");
        assert_eq!(d.1, [DropClass::File]);
    }

    #[test]
    fn persisting_with_everything_dropped_is_load() {
        let f = t(9, 10);
        assert_eq!(decide(&variants(t(10, 10), [f; 5], t(8, 10))).0, "load");
    }

    #[test]
    fn no_single_class_is_several() {
        let f = t(9, 10);
        let d = decide(&variants(t(10, 10), [f; 5], t(0, 10)));
        assert_eq!(d.0, "several classes");
    }

    #[test]
    fn too_few_runs_stay_undecided() {
        let z = t(0, 3);
        let f = t(2, 3);
        // 3/3 vs 0/3 is p = 0.05: not cleared, and nothing failed: undecided.
        assert_eq!(
            decide(&variants(t(3, 3), [z, f, f, f, f], z)).0,
            "undecided"
        );
        assert_eq!(
            decide(&variants(t(0, 10), [t(0, 10); 5], t(0, 10))).0,
            "unreproduced"
        );
    }

    #[test]
    fn settles_only_on_clear_counts() {
        let f = t(9, 10);
        // One class clears, the others clearly fail: settled.
        assert!(settled(
            &variants(t(10, 10), [t(0, 10), f, f, f, f], t(1, 10)),
            10
        ));
        // Not before MIN_ROUNDS.
        assert!(!settled(
            &variants(t(9, 9), [t(0, 9), f, f, f, f], t(0, 9)),
            9
        ));
        // The sham at 3/10 against 10/10 is neither cleared nor clearly failing.
        assert!(!settled(
            &variants(t(10, 10), [t(0, 10), f, f, f, f], t(3, 10)),
            10
        ));
        // The sham failing as often as the control: load, settled.
        assert!(settled(&variants(t(10, 10), [f; 5], t(8, 10)), 10));
    }

    #[test]
    fn p_is_the_one_sided_fisher_test() {
        // 10/10 against 0/10: 1/C(20,10); 8/10 against 0/10: 45/C(20,8).
        assert!((p_greater(t(10, 10), t(0, 10)) - 1.0 / 184_756.0).abs() < 1e-12);
        assert!((p_greater(t(8, 10), t(0, 10)) - 45.0 / 125_970.0).abs() < 1e-12);
        assert!(p_greater(t(0, 10), t(5, 10)) > 1.0 - 1e-9);
        assert!(p_greater(t(5, 10), t(5, 10)) > 0.5);
        let p = p_greater(t(20, 1000), t(0, 1000));
        assert!(p > 0.0 && p < 1e-5, "{p}");
    }

    #[test]
    fn tallies_and_rule() {
        let mut r = Record {
            suite: [t(0, 10), t(10, 10)],
            ..Record::default()
        };
        assert!(r.exposed());
        r.suite = [t(0, 10), t(3, 10)];
        assert!(!r.exposed() && r.suspect());
        r.exact = [t(0, 100), t(20, 100)];
        assert!(r.exposed());
        let mut timeouts = Tally::default();
        timeouts.add(Seen::TimedOut);
        assert_eq!(
            (timeouts.bad(), timeouts.failures, timeouts.runs),
            (1, 0, 1)
        );
    }

    /// A test queued behind one that hung or crashed under pressure collects
    /// bad runs it did not cause: the suite cannot expose it, only its own
    /// reruns; and the reruns' p is never mixed with the suite's.
    #[test]
    fn unattributed_failures_are_decided_by_reruns() {
        let mut r = Record {
            suite: [t(0, 10), t(10, 10)],
            unattributed: [0, 10],
            ..Record::default()
        };
        assert!(!r.exposed() && r.suspect());
        assert_eq!(r.p(), 1.0);
        // Clean reruns clear it, however strong the suite's counts look.
        r.exact = [t(0, 40), t(0, 40)];
        assert!(!r.exposed());
        // Attributed suite failures with clean reruns: the reruns decide.
        r.unattributed = [0, 0];
        assert!(!r.exposed(), "the smaller p must not win");
        r.exact = [t(0, 40), t(40, 40)];
        assert!(r.exposed());
    }

    /// Each look tests at ALPHA / LOOKS: a rerun p just under ALPHA is not
    /// enough; looks happen at powers of two only, LOOKS - 1 of them before
    /// the budget's end.
    #[test]
    fn reruns_look_a_bounded_number_of_times_at_a_corrected_level() {
        let r = Record {
            suite: [t(0, 10), t(3, 10)],
            exact: [t(0, 10), t(8, 10)],
            ..Record::default()
        };
        let p = r.p_exact();
        assert!(p < ALPHA && p > ALPHA / f64::from(LOOKS), "{p}");
        assert!(!r.exposed());
        let looks = (1..=100_000).filter(|&n| is_look(n)).count();
        assert_eq!(looks as u32, LOOKS - 1);
    }
}
