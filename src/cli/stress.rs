//! `fdwindow stress`: runs a command again and again, alone and with the
//! fork-pressure co-tenant preloaded into it, and compares the failure rates.
//!
//! 1. Runs alternate: one alone, one pressured, so a change in the machine's
//!    load falls on both arms alike.
//! 2. A pressured run gets the injector (built into fdwindow, written to a
//!    private file for the run) in the loader's preload variable and
//!    the [`Spec`] in `FDWINDOW_PRESSURE` (with `match=` from `--match`, so a
//!    build driver such as cargo and its compilers stay unpressured and only
//!    the test binaries get pressure).
//! 3. A run fails when it exits non-zero or dies by a signal; one that
//!    outlives `--timeout` is killed and counted as a timeout (within the
//!    arm's bad runs, and on its own).
//! 4. Each arm reports `k/N` with a 95% Wilson interval, the run time summed
//!    until its first failure, and the median of that time over its failures
//!    (the time between failures, each counted from the previous one).
//! 5. The injector reports as it goes, to a file per pressured run: a run
//!    killed at the timeout still shows it was pressured. The summary says how
//!    much of the pressured runs' time the pressure overlapped, and warns
//!    under half.
//! 6. The injector watches `fdwindow stress` itself ([`controller`]): if it
//!    dies, even by SIGKILL, the pressure in the command stops within one
//!    hold. Nothing of stress's is passed down to the command.
//! 7. The [`Verdict`]: `exposed` when the one-sided Fisher exact p that the
//!    alone arm fails less often than the pressured one is at most
//!    [`EXPOSED_P`], `unpressured` when no pressured process reported back,
//!    `inconclusive` otherwise. Only `--fail-if-exposed` makes `exposed` an
//!    exit status of its own ([`EXIT_EXPOSED`]).
//!
//! Progress goes to stderr; the summary, as JSON ([`STRESS_SCHEMA`]), to stdout.
//! A closed stderr (`2>&1 | head -2`) stops the runs as Ctrl-C does: the
//! summary of what ran, then exit 141 (see `fdwindow::base::out`).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use fdwindow::cotenant::preload;
use fdwindow::error::{Error, Result};
use fdwindow::note;
use fdwindow::report::stats::{Count, fisher_less};
use fdwindow_fix::base::child::{GroupExit, wait_group};
use fdwindow_fix::base::scratch::Scratch;
use fdwindow_fix::pressure::{self, ENV_VAR, Spec};

use super::pressure_help::PRESSURE_KEYS;

/// The JSON summary's `schema`. A change in any field's meaning (or a field
/// removed or renamed) bumps the number; a new field does not.
pub const STRESS_SCHEMA: &str = "fdwindow-stress/1";

/// Exit status: the arms ran; any verdict, `exposed` too unless
/// `--fail-if-exposed`.
pub const EXIT_OK: u8 = 0;
/// Exit status: no pressured process reported back, so the pressure arm was
/// never under pressure (also: the summary could not be written to stdout).
pub const EXIT_UNPRESSURED: u8 = 1;
/// Exit status: bad input, or pressure that never overlapped a command given
/// without `--match` (`main` turns [`run`]'s `Err` into it).
pub const EXIT_USAGE: u8 = 2;
/// Exit status: the verdict is `exposed` and `--fail-if-exposed` was given.
pub const EXIT_EXPOSED: u8 = 4;
/// Exit status: interrupted by SIGINT, SIGTERM or SIGHUP: this plus the
/// signal's number, the shells' convention (130, 143, 129), as
/// [`exit_code`](fdwindow_fix::base::interrupts::exit_code) gives it.
pub const EXIT_INTERRUPTED_BASE: u8 = 128;

/// The largest one-sided Fisher p at which the verdict is `exposed`.
pub const EXPOSED_P: f64 = 1e-3;

/// How long stress runs with neither `--runs` nor `--duration`.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(60);

/// The variable the injector appends its per-process line to.
const REPORT_VAR: &str = "FDWINDOW_PRESSURE_REPORT";

/// `--runs`' help: it states [`DEFAULT_DURATION`].
fn runs_help() -> String {
    format!(
        "Runs per arm. With neither --runs nor --duration, stress runs for {} s",
        DEFAULT_DURATION.as_secs()
    )
}

/// `--duration`'s help: it states [`DEFAULT_DURATION`].
fn duration_help() -> String {
    format!(
        "Run for this long in all (both arms, alternating), e.g. 30s, 500ms. With neither \
         --duration nor --runs, stress runs for {} s",
        DEFAULT_DURATION.as_secs()
    )
}

/// `--pressure`'s long help: every key with its default and unit.
fn pressure_help() -> String {
    format!(
        "The fork pressure: comma-separated KEY=VALUE pairs, any subset, e.g.\n\
         threads=8,hold=20ms,path=fork. Keys:\n\n{PRESSURE_KEYS}"
    )
}

/// `--fail-if-exposed`'s help: it states [`EXIT_EXPOSED`].
fn fail_if_exposed_help() -> String {
    format!("Exit {EXIT_EXPOSED} when the verdict is exposed (without it, exposed exits {EXIT_OK})")
}

/// `--help`'s closing text: the verdicts and every exit status.
fn after_help() -> String {
    format!(
        "Verdict (the summary's \"verdict\", and stderr's \"verdict:\" line):
  exposed       the one-sided Fisher exact p that the alone arm fails less often than the
                pressure arm is at most {EXPOSED_P} (the summary's \"p\" and \"p_max\")
  unpressured   no pressured process reported back
  inconclusive  otherwise

Exit status:
  {EXIT_OK:<7}the arms ran: inconclusive, or exposed without --fail-if-exposed
  {EXIT_UNPRESSURED:<7}no pressured process reported back (--match named nothing, or the
         loader ignored the preload); also when the summary cannot be written to stdout
  {EXIT_USAGE:<7}bad input; or, for a command other than cargo test or cargo nextest run
         given without --match (or match=), pressure that overlapped 0% of the pressured
         runs' time
  {EXIT_EXPOSED:<7}exposed, with --fail-if-exposed
  {EXIT_INTERRUPTED_BASE}+N  interrupted by signal N: 130 SIGINT, 143 SIGTERM, 129 SIGHUP
  141    stdout is a closed pipe: the summary could not be written"
    )
}

/// The arguments of `fdwindow stress`.
#[derive(clap::Args, Debug)]
#[command(after_help = after_help())]
pub struct StressArgs {
    #[arg(long, help = runs_help(), conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    runs: Option<u64>,
    #[arg(long, help = duration_help(), value_parser = pressure::parse_duration)]
    duration: Option<Duration>,
    /// The pressure, KEY=VALUE pairs: threads, hold, path, max-alive, for,
    /// match, drop (--help lists each with its unit and default)
    #[arg(long, value_name = "SPEC", long_help = pressure_help())]
    pressure: Option<String>,
    /// Pressure only processes whose executable's file name matches this glob
    /// (`*` only), e.g. 'locks-*' for an integration test `locks` run by a script
    /// (`cargo test` and `cargo nextest run` need none: their test binaries run directly).
    #[arg(long = "match", value_name = "GLOB")]
    exe_match: Option<String>,
    /// A preload library to use instead of the injector built into fdwindow.
    #[arg(long)]
    injector: Option<PathBuf>,
    /// Kill a run after this many seconds and count it as failed.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: u64,
    /// Copy the command's stdout and stderr to stderr, each line marked with
    /// its run and arm (default: discarded). The JSON summary stays alone on stdout.
    #[arg(long)]
    show_output: bool,
    /// Keep each failing or timed-out run's output in this folder (created if missing).
    #[arg(long, value_name = "DIR")]
    keep_failures: Option<PathBuf>,
    #[arg(long, help = fail_if_exposed_help())]
    fail_if_exposed: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, num_args = 1..)]
    command: Vec<String>,
}

/// One arm's tally.
#[derive(Default)]
struct Arm {
    /// Runs, and runs that failed or timed out.
    count: Count,
    /// Runs killed at `--timeout` (also in `count.hits`).
    timeouts: u64,
    /// Summed run time of this arm.
    time: Duration,
    /// Summed run time at each failure.
    failures_at: Vec<Duration>,
    first_failure_run: Option<u64>,
}

impl Arm {
    fn record(&mut self, ended: Ended, took: Duration) {
        let failed = ended != Ended::Passed;
        if ended == Ended::TimedOut {
            self.timeouts += 1;
        }
        self.count.trials += 1;
        self.time += took;
        if failed {
            self.count.hits += 1;
            self.failures_at.push(self.time);
            self.first_failure_run.get_or_insert(self.count.trials);
        }
    }

    /// The median time from one failure (or the start) to the next.
    fn median_gap(&self) -> Option<Duration> {
        let mut gaps: Vec<Duration> = self
            .failures_at
            .iter()
            .scan(Duration::ZERO, |prev, &at| {
                let gap = at - *prev;
                *prev = at;
                Some(gap)
            })
            .collect();
        gaps.sort();
        let n = gaps.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(gaps[n / 2]),
            _ => Some((gaps[n / 2 - 1] + gaps[n / 2]) / 2),
        }
    }

    fn json(&self, id: &str) -> serde_json::Value {
        let ci = self.count.wilson();
        serde_json::json!({
            "arm": id,
            "runs": self.count.trials,
            "failures": self.count.hits - self.timeouts,
            "timeouts": self.timeouts,
            "rate": self.count.rate(),
            "wilson95": [ci.low, ci.high],
            "run_time_s": self.time.as_secs_f64(),
            "first_failure_run": self.first_failure_run,
            "first_failure_after_s": self.failures_at.first().map(Duration::as_secs_f64),
            "median_time_to_failure_s": self.median_gap().map(|d| d.as_secs_f64()),
        })
    }

    fn line(&self, id: &str) -> String {
        let ci = self.count.wilson();
        let first = match self.failures_at.first() {
            Some(t) => format!(
                "first failure after {:.2} s (run {}), median {:.2} s",
                t.as_secs_f64(),
                self.first_failure_run.unwrap_or(0),
                self.median_gap().unwrap_or_default().as_secs_f64()
            ),
            None => "no failure".into(),
        };
        let timeouts = match self.timeouts {
            0 => String::new(),
            n => format!(" ({n} timed out)"),
        };
        format!(
            "{id:<9} {}/{} failed{timeouts} (95% CI {:.1}%–{:.1}%), {first}",
            self.count.hits,
            self.count.trials,
            ci.low * 100.0,
            ci.high * 100.0
        )
    }
}

/// The share of the pressured runs' time under which the summary warns that
/// the pressure barely overlapped the command.
const OVERLAP_SHARE: f64 = 0.5;

/// The share of the pressured runs' time under which the pressure never
/// overlapped the command: the summary prints the share in whole percent,
/// and this is where it reads 0%. A pressured process that execs at once
/// (rustup's `cargo` proxy, `sh -c 'exec …'`) loses its threads with its old
/// image and reports a few microseconds.
const NO_OVERLAP_SHARE: f64 = 0.005;

/// The error for pressure that never overlapped the command, one line.
const NEVER_OVERLAPPED: &str = "pressure never overlapped the command (0% of the pressured runs' \
     time: the pressured process exec'd or ended as pressure started); use --match GLOB to \
     pressure the process that runs the tests";

/// What the comparison of the two arms says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// The one-sided Fisher p that the alone arm fails less often than the
    /// pressure arm is at most [`EXPOSED_P`].
    Exposed,
    /// No pressured process reported back: the pressure arm compares nothing.
    Unpressured,
    /// Neither: too few failures under pressure to tell, or as many alone.
    Inconclusive,
}

impl Verdict {
    /// The word the summary and the stderr line use.
    fn id(self) -> &'static str {
        match self {
            Verdict::Exposed => "exposed",
            Verdict::Unpressured => "unpressured",
            Verdict::Inconclusive => "inconclusive",
        }
    }

    /// The verdict on the two arms' counts; `reached` is whether any
    /// pressured process reported back.
    fn of(alone: Count, pressured: Count, reached: bool) -> (Verdict, f64) {
        let p = fisher_less(alone, pressured);
        let verdict = if !reached && pressured.trials > 0 {
            Verdict::Unpressured
        } else if p <= EXPOSED_P {
            Verdict::Exposed
        } else {
            Verdict::Inconclusive
        };
        (verdict, p)
    }
}

/// A p for the stderr line: two decimals, or two digits in scientific
/// notation under 0.01.
fn p_text(p: f64) -> String {
    if p >= 0.01 {
        format!("{p:.2}")
    } else {
        format!("{p:.1e}")
    }
}

/// The stderr line that states the verdict.
fn verdict_line(verdict: Verdict, p: f64, alone: Count, pressured: Count) -> String {
    let counts = format!(
        "pressure {}/{} vs alone {}/{}",
        pressured.hits, pressured.trials, alone.hits, alone.trials
    );
    match verdict {
        Verdict::Unpressured => {
            format!("verdict: unpressured ({counts}, but no pressured process reported back)")
        }
        Verdict::Exposed | Verdict::Inconclusive => format!(
            "verdict: {} ({counts}, one-sided Fisher p = {} {} {EXPOSED_P})",
            verdict.id(),
            p_text(p),
            if p <= EXPOSED_P { "<=" } else { ">" }
        ),
    }
}

/// This process as the controller of the pressure it starts
/// (`controller=PID@START`): the injector in the command watches it (a pidfd
/// on Linux, a kqueue on macOS) and stops its threads within one hold once
/// it ends, SIGKILL included. Nothing is passed down to the command: a
/// process the pressure does not reach (`match=`) holds no descriptor of ours.
pub(crate) fn controller() -> Result<fdwindow_fix::pressure::ProcessId> {
    fdwindow_fix::pressure::ProcessId::this_process()
        .map_err(|e| usage!("cannot name this process for the injector to watch: {e}"))
}

/// What the injector reported for one pressured run.
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct RunPressure {
    /// Processes in which pressure started.
    pub(crate) processes: u64,
    /// Children they spawned.
    pub(crate) spawns: u64,
    /// The longest time pressure ran in one of them (its overlap with the run).
    pub(crate) longest: Duration,
}

/// Reads an injector report: lines `pid spawns elapsed_s covered_s exe`,
/// written as pressure goes, the last per pid the latest.
pub(crate) fn read_report(path: &Path) -> RunPressure {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut last: std::collections::BTreeMap<&str, (u64, f64)> = Default::default();
    for line in text.lines() {
        let mut f = line.split(' ');
        let (Some(pid), Some(spawns), Some(elapsed)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        // close-hold's `held …` and `holds …` lines are the audit's to read.
        if pid.parse::<u32>().is_err() {
            continue;
        }
        let spawns = spawns.parse::<u64>().unwrap_or(0);
        let elapsed = elapsed.parse::<f64>().unwrap_or(0.0);
        let e = last.entry(pid).or_default();
        *e = (e.0.max(spawns), e.1.max(elapsed));
    }
    RunPressure {
        processes: last.len() as u64,
        spawns: last.values().map(|v| v.0).sum(),
        longest: Duration::from_secs_f64(
            last.values()
                .map(|v| v.1)
                .fold(0.0, f64::max)
                .clamp(0.0, 1e9),
        ),
    }
}

/// Removes the injector's report file on every path out (stress's and the
/// audit's runs).
pub(crate) struct ReportFile(pub(crate) PathBuf);

impl Drop for ReportFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs `fdwindow stress`; `Err` is bad input (exit status 2).
pub fn run(args: StressArgs) -> Result<ExitCode> {
    let mut spec = pressure_spec(&args)?;
    // Ctrl-C and SIGTERM set a flag from here on, before the injector's file
    // exists: a signal that killed the process after the write would leave it.
    fdwindow_fix::base::interrupts::catch_interrupts();
    let folder = run_folder()?;
    let injector = Injector::locate(args.injector.as_deref(), folder.dir())?;
    // What the reader sees: the pressure without the controller.
    let shown = spec.to_string();
    spec.controller = Some(controller()?);
    let preload = match std::env::var(injector.var) {
        Ok(old) if !old.is_empty() => format!("{}:{old}", injector.path().display()),
        _ => injector.path().display().to_string(),
    };
    if let Some(dir) = &args.keep_failures {
        std::fs::create_dir_all(dir)
            .map_err(|e| usage!("--keep-failures {}: {e}", dir.display()))?;
    }
    let launch = Launch {
        // `cargo test` and `cargo nextest run` are built first; each run then
        // runs their test binaries (nextest's: one process per test), so that
        // pressure reaches the tests and never cargo, rustc or nextest.
        steps: steps(&args.command)?,
        capture: args.show_output || args.keep_failures.is_some(),
        preload_var: injector.var,
        preload,
        spec: spec.to_string(),
    };
    note!(
        "fdwindow stress: {} {} with pressure {shown}",
        args.runs.map_or_else(
            || format!(
                "for {:.1} s,",
                args.duration.unwrap_or(DEFAULT_DURATION).as_secs_f64()
            ),
            |n| format!("{n} runs per arm,")
        ),
        args.command.join(" ")
    );
    let arms = run_arms(&args, &launch, folder.dir(), spec.exe_match.as_deref())?;
    let judged = judge(&args, &spec, &arms);
    let summary = serde_json::json!({
        "schema": STRESS_SCHEMA,
        "command": args.command,
        "platform": fdwindow::report::platform::Platform::detect(),
        "fdwindow_version": env!("CARGO_PKG_VERSION"),
        "pressure": shown,
        // The built-in injector's file is gone by the time anyone reads this.
        "injector": args.injector.as_ref().map_or_else(
            || "built-in".to_owned(),
            |p| p.display().to_string()
        ),
        "pressured_processes": arms.reach.processes,
        "pressured_runs": arms.runs_reached,
        "pressure_spawns": arms.reach.spawns,
        "pressure_overlap_share": arms.share(),
        "interrupted": judged.interrupted,
        "arms": [arms.alone.json("alone"), arms.pressured.json("pressure")],
        "verdict": judged.verdict.id(),
        // One-sided Fisher exact p that the alone arm fails less often.
        "p": judged.p,
        "p_max": EXPOSED_P,
    });
    // The run's private folder, with the injector, goes before the output, the last thing
    // done (a failed write only changes the exit status: see base::out).
    drop(injector);
    drop(folder);
    fdwindow::base::out::stdout(
        &(serde_json::to_string_pretty(&summary).expect("plain JSON") + "\n"),
    );
    if judged.interrupted {
        // EXIT_INTERRUPTED_BASE plus the signal that arrived first.
        return Ok(fdwindow_fix::base::interrupts::exit_code());
    }
    if judged.never_overlapped {
        // `main` prints it as one `error:` line and exits EXIT_USAGE.
        return Err(Error::usage(NEVER_OVERLAPPED));
    }
    Ok(ExitCode::from(match judged.verdict {
        Verdict::Unpressured => {
            // The "pressure" arm ran without pressure: its k/N compares nothing.
            note!(
                "error: no pressured process reported back; the pressure arm was not under pressure"
            );
            EXIT_UNPRESSURED
        }
        Verdict::Exposed if args.fail_if_exposed => EXIT_EXPOSED,
        Verdict::Exposed | Verdict::Inconclusive => EXIT_OK,
    }))
}

/// `--pressure` as a [`Spec`], with `--match`; refuses the audit's own keys.
fn pressure_spec(args: &StressArgs) -> Result<Spec> {
    if args.duration.is_some_and(|d| d.is_zero()) {
        return Err(Error::usage("--duration must be longer than 0"));
    }
    check_command(&args.command)?;
    let mut spec: Spec = args
        .pressure
        .as_deref()
        .unwrap_or_default()
        .parse()
        .map_err(|e| usage!("--pressure: {e}"))?;
    if spec.close_hold.is_some() || !spec.close_sites.is_empty() {
        // It starts no spawning threads: stress would compare nothing.
        return Err(Error::usage(
            "--pressure: close-hold= and close-site= are the audit's diagnosis, not pressure",
        ));
    }
    if args.exe_match.is_some() {
        spec.exe_match = args.exe_match.clone();
    }
    Ok(spec)
}

/// How each run's commands are made: the steps, and for a pressured run the
/// preload and the pressure.
struct Launch {
    steps: Vec<Step>,
    capture: bool,
    preload_var: &'static str,
    preload: String,
    spec: String,
}

impl Launch {
    /// `step`'s command; with `report`, under pressure reporting there.
    fn command(&self, step: &Step, report: Option<&Path>) -> Command {
        let mut cmd = Command::new(&step.program);
        cmd.args(&step.args).stdin(Stdio::null());
        if let Some(dir) = &step.cwd {
            cmd.current_dir(dir);
        }
        cmd.envs(step.env.iter().map(|(k, v)| (k, v)));
        if self.capture {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        } else {
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
        }
        match report {
            Some(report) => {
                cmd.env(self.preload_var, &self.preload)
                    .env(ENV_VAR, &self.spec)
                    .env(REPORT_VAR, report);
            }
            None => {
                cmd.env_remove(ENV_VAR);
            }
        }
        cmd
    }
}

/// Both arms' counts, and what the pressured runs reported, summed.
#[derive(Default)]
struct Arms {
    alone: Arm,
    pressured: Arm,
    reach: RunPressure,
    runs_reached: u64,
    overlap: Duration,
    pressured_time: Duration,
}

impl Arms {
    /// The share of the pressured runs' time that pressure ran.
    fn share(&self) -> f64 {
        self.overlap.as_secs_f64() / self.pressured_time.as_secs_f64().max(1e-9)
    }
}

/// Runs the arms in turns (alone, then pressured) until `--runs` or
/// `--duration` or an interrupt, with a status line as it goes.
fn run_arms(
    args: &StressArgs,
    launch: &Launch,
    folder: &Path,
    exe_match: Option<&str>,
) -> Result<Arms> {
    let mut arms = Arms::default();
    let timeout = Duration::from_secs(args.timeout);
    let started = Instant::now();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut warned = false;
    let mut last_line = Instant::now();
    loop {
        let done = arms.alone.count.trials;
        let more = match (args.runs, args.duration) {
            (Some(n), _) => done < n,
            (None, Some(d)) => started.elapsed() < d,
            (None, None) => started.elapsed() < DEFAULT_DURATION,
        };
        if !more || fdwindow_fix::base::interrupts::interrupted() {
            break;
        }
        for pressured_run in [false, true] {
            run_turn(args, launch, folder, timeout, pressured_run, &mut arms)?;
            if fdwindow_fix::base::interrupts::interrupted() {
                break;
            }
        }
        if !warned && arms.runs_reached == 0 && arms.pressured.count.trials > 0 {
            warned = true;
            note!(
                "\nwarning: no pressured process reported back (no executable matched {:?}, \
                 or the loader ignored {}): nothing may be under pressure",
                exe_match.unwrap_or("*"),
                launch.preload_var
            );
        }
        let n = arms.alone.count.trials;
        let status = format!(
            "run {n}{}  alone {}/{n}  pressure {}/{n}",
            args.runs.map_or(String::new(), |t| format!("/{t}")),
            arms.alone.count.hits,
            arms.pressured.count.hits
        );
        if tty {
            fdwindow::base::out::stderr(&format!("\r{status}   "));
        } else if last_line.elapsed() >= Duration::from_secs(1)
            || args.runs.is_some_and(|t| n % (t / 10).max(1) == 0)
        {
            // Not a terminal (a CI log): a line a second or every tenth.
            note!("{status}");
            last_line = Instant::now();
        }
    }
    if tty {
        note!();
    }
    Ok(arms)
}

/// One run of one arm: its outcome recorded, its output shown or kept, and
/// for a pressured run what pressure reported.
fn run_turn(
    args: &StressArgs,
    launch: &Launch,
    folder: &Path,
    timeout: Duration,
    pressured_run: bool,
    arms: &mut Arms,
) -> Result<()> {
    let arm = if pressured_run {
        &arms.pressured
    } else {
        &arms.alone
    };
    let n = arm.count.trials + 1;
    let label = format!(
        "run {n} {}",
        if pressured_run { "pressure" } else { "alone" }
    );
    let report = pressured_run.then(|| ReportFile(folder.join(format!("{n}.pressure"))));
    let (ended, took, output) = run_steps(&launch.steps, timeout, |step| {
        launch.command(step, report.as_ref().map(|r| r.0.as_path()))
    })
    .map_err(|e| usage!("{}: {e}", args.command[0]))?;
    if let Some(report) = &report {
        // Written as pressure went: a run killed at --timeout counts too.
        let got = read_report(&report.0);
        arms.reach.processes += got.processes;
        arms.reach.spawns += got.spawns;
        arms.runs_reached += u64::from(got.processes > 0);
        arms.overlap += got.longest.min(took);
        arms.pressured_time += took;
    }
    if ended != Ended::Passed && fdwindow_fix::base::interrupts::interrupted() {
        return Ok(()); // Ctrl-C reached the run too: it did not fail on its own.
    }
    if let Some((stdout, stderr)) = &output {
        if args.show_output {
            for line in stdout.lines().chain(stderr.lines()) {
                note!("[{label}] {line}");
            }
        }
        if ended != Ended::Passed
            && let Some(dir) = &args.keep_failures
        {
            keep(dir, &label, ended, stdout, stderr);
        }
    }
    let arm = if pressured_run {
        &mut arms.pressured
    } else {
        &mut arms.alone
    };
    arm.record(ended, took);
    Ok(())
}

/// The comparison's verdict, printed with both arms' lines and the reach.
struct Judged {
    verdict: Verdict,
    p: f64,
    interrupted: bool,
    never_overlapped: bool,
}

/// Judges the arms: the verdict, and pressure that never overlapped the
/// command (nothing compared), with the lines a reader sees.
fn judge(args: &StressArgs, spec: &Spec, arms: &Arms) -> Judged {
    let (processes, spawns) = (arms.reach.processes, arms.reach.spawns);
    let share = arms.share();
    note!("{}", arms.alone.line("alone"));
    note!("{}", arms.pressured.line("pressure"));
    note!(
        "pressure ran in {processes} processes ({} of {} runs) and spawned {spawns} children; \
         it overlapped {:.0}% of the pressured runs' time",
        arms.runs_reached,
        arms.pressured.count.trials,
        share * 100.0
    );
    let interrupted = fdwindow_fix::base::interrupts::interrupted();
    let (verdict, p) = Verdict::of(arms.alone.count, arms.pressured.count, processes > 0);
    // Pressure that ran only in a process that exec'd or ended at once: the
    // user did not choose what to pressure (no --match, no match=), and the
    // command is not one whose test binaries stress could find.
    let never_overlapped = verdict != Verdict::Unpressured
        && !interrupted
        && arms.pressured_time > Duration::ZERO
        && share < NO_OVERLAP_SHARE
        && spec.exe_match.is_none()
        && !crate::cli::discover::builds_tests(&args.command);
    // Pressure that never reached the command compares nothing either.
    let verdict = if never_overlapped {
        Verdict::Unpressured
    } else {
        verdict
    };
    if arms.pressured_time > Duration::ZERO && share < OVERLAP_SHARE && !never_overlapped {
        note!(
            "warning: pressure overlapped under {:.0}% of the pressured runs' time: \
             short runs may have ended before pressure reached what they test",
            OVERLAP_SHARE * 100.0
        );
    }
    note!(
        "{}",
        verdict_line(verdict, p, arms.alone.count, arms.pressured.count)
    );
    Judged {
        verdict,
        p,
        interrupted,
        never_overlapped,
    }
}

/// Fails unless `path` is a shared library the loader could preload
/// ([`preload::check_preloadable`]): anything else (a PIE executable such as
/// `/bin/true` is `ET_DYN` like a library) would fail or run unpressured
/// every command. Read, never loaded.
fn check_library(path: &Path) -> Result<()> {
    preload::check_preloadable(path).map_err(|e| {
        usage!(
            "injector {} {e}; give a shared library, or leave out --injector for the one built \
             into fdwindow (`fdwindow preload {} --out FILE` writes it)",
            path.display(),
            preload::Library::INJECT.name()
        )
    })
}

/// Fails unless the command names a program: an empty one would fail every
/// run with a bare "No such file or directory".
pub(crate) fn check_command(command: &[String]) -> Result<()> {
    match command.first() {
        Some(program) if !program.is_empty() => Ok(()),
        _ => Err(Error::usage(
            "the command is empty: name the program to run after --",
        )),
    }
}

/// A run's private folder, `<temp>/fdwindow-preload-<pid>-<n>` (mode 0700):
/// the built-in injector and the injector's per-run reports live in it, and
/// it goes when the run ends. It is swept ([`Scratch::new_swept`]): a stress
/// or audit killed by SIGKILL leaves it behind only until the next one
/// starts, which first removes every such folder of a dead run (its lock is
/// free) and never a live run's (its lock is held). The name keeps the
/// `fdwindow-preload-` of [`preload::Library::write`]'s folders, which a
/// preloaded process may look for in its mappings to tell it is pressured;
/// those folders (`fdwindow-preload-XXXXXX`) are not of this scheme and are
/// never swept.
pub(crate) fn run_folder() -> Result<Scratch> {
    let temp = std::env::temp_dir();
    Scratch::new_swept_in(&temp, "preload")
        .map_err(|e| usage!("a private folder for the run in {}: {e}", temp.display()))
}

/// The injector a run preloads: the file given by `--injector`, or the one
/// built into fdwindow, written to the run's private folder.
pub(crate) struct Injector {
    /// The loader's preload variable.
    pub(crate) var: &'static str,
    path: PathBuf,
}

impl Injector {
    /// `given`, else the built-in injector written into `folder` (which
    /// removes it: [`run_folder`]); `Err` says why neither works.
    pub(crate) fn locate(given: Option<&Path>, folder: &Path) -> Result<Injector> {
        let Some(var) = preload::variable() else {
            return Err(Error::usage(
                "unsupported: this OS has no preload mechanism fdwindow knows",
            ));
        };
        let path = match given {
            Some(p) => {
                let path = std::fs::canonicalize(p)
                    .map_err(|e| usage!("--injector {}: {e}", p.display()))?;
                check_library(&path)?;
                path
            }
            None => preload::Library::INJECT
                .write_in(folder)
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::Unsupported => usage!("unsupported: {e}"),
                    _ => usage!("cannot write the injector: {e}"),
                })?,
        };
        Ok(Injector { var, path })
    }

    /// The library's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// One process of a run.
struct Step {
    program: PathBuf,
    args: Vec<String>,
    cwd: Option<PathBuf>,
    /// The environment cargo or nextest would give it.
    env: Vec<(String, String)>,
}

/// The processes of one run: the command itself, or, for `cargo test` and
/// `cargo nextest run`, each test binary it builds (built here, once).
fn steps(command: &[String]) -> Result<Vec<Step>> {
    if !crate::cli::discover::builds_tests(command) {
        return Ok(vec![Step {
            program: command[0].clone().into(),
            args: command[1..].to_vec(),
            cwd: None,
            env: Vec::new(),
        }]);
    }
    let mut steps = Vec::new();
    let found = crate::cli::discover::discover(command)?;
    for w in &found.warnings {
        note!("warning: {w}");
    }
    for bin in found.binaries {
        steps.extend(bin.runs().into_iter().map(|(args, _)| Step {
            program: bin.path.clone(),
            args,
            cwd: bin.cwd.clone(),
            env: bin.env.clone(),
        }));
    }
    note!(
        "fdwindow stress: each run runs {} test process{}",
        steps.len(),
        if steps.len() == 1 { "" } else { "es" }
    );
    Ok(steps)
}

/// Runs the steps of one run in turn, within one `timeout`, up to the
/// first that fails: how the run ended, its time, and the output of all.
fn run_steps(
    steps: &[Step],
    timeout: Duration,
    make: impl Fn(&Step) -> Command,
) -> std::io::Result<RunOutput> {
    let start = Instant::now();
    let mut output: Option<(String, String)> = None;
    let mut ended = Ended::Passed;
    for step in steps {
        let left = timeout.saturating_sub(start.elapsed());
        let (e, _, out) = run_once(make(step), left)?;
        if let Some((o, err)) = out {
            let all = output.get_or_insert_with(Default::default);
            all.0.push_str(&o);
            all.1.push_str(&err);
        }
        ended = e;
        if e != Ended::Passed || fdwindow_fix::base::interrupts::interrupted() {
            break;
        }
    }
    Ok((ended, start.elapsed(), output))
}

/// How one run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    Passed,
    /// Exited non-zero, died by a signal, or was stopped by Ctrl-C.
    Failed,
    /// Killed at `--timeout`.
    TimedOut,
}

/// How a run ended, how long it took, and its stdout and stderr if piped.
type RunOutput = (Ended, Duration, Option<(String, String)>);

/// Runs the command once: how it ended, how long it took, and its output
/// when the command's stdout and stderr are piped.
fn run_once(mut cmd: Command, timeout: Duration) -> std::io::Result<RunOutput> {
    let start = Instant::now();
    // Its own process group, so a timeout or Ctrl-C also ends what the
    // command started (a test binary under cargo, with its pressure threads);
    // the terminal's Ctrl-C reaches only us, and wait_group passes it on.
    // It dies with us too: a stress killed outright leaves no command
    // running under pressure (this thread waits for it below).
    fdwindow_fix::sys::child_hook::die_with_parent(&mut cmd);
    let mut child = cmd.process_group(0).spawn()?;
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        pipe.map(|mut p| {
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = p.read_to_end(&mut buf);
                String::from_utf8_lossy(&buf).into_owned()
            })
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let ended = match wait_group(
        &mut child,
        start + timeout,
        fdwindow_fix::base::interrupts::interrupted,
    )? {
        GroupExit::Exited(status) if status.success() => Ended::Passed,
        GroupExit::Exited(_) => Ended::Failed,
        GroupExit::TimedOut => Ended::TimedOut,
        // One that Ctrl-C stopped is set aside by the caller, which sees `interrupted()`.
        GroupExit::Stopped => Ended::Failed,
    };
    let output = match (out, err) {
        (Some(o), Some(e)) => Some((o.join().unwrap_or_default(), e.join().unwrap_or_default())),
        _ => None,
    };
    Ok((ended, start.elapsed(), output))
}

/// Writes a failing run's output to `dir`, one file per run.
fn keep(dir: &Path, label: &str, ended: Ended, stdout: &str, stderr: &str) {
    let name: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let path = dir.join(format!("{name}.log"));
    let text = format!("# {label}: {ended:?}\n## stdout\n{stdout}\n## stderr\n{stderr}");
    if let Err(e) = fdwindow::evidence::results::write_atomic(&path, text.as_bytes()) {
        note!("warning: --keep-failures: {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_keeps_the_latest_line_per_process() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r");
        std::fs::write(
            &path,
            "10 0 0.000100 0.000000 a\n11 0 0.000200 0.000000 b c\n10 40 0.400000 0.2 a\n\
             bad line\nheld 10 file /tmp/x\nholds 10 1 0\n10 90 0.900000 0.5 a\n",
        )
        .unwrap();
        let r = read_report(&path);
        assert_eq!(r.processes, 2);
        assert_eq!(r.spawns, 90);
        assert_eq!(r.longest, Duration::from_millis(900));
        let none = read_report(&dir.path().join("missing"));
        assert_eq!((none.processes, none.spawns), (0, 0));
    }

    #[test]
    fn the_verdict_follows_fisher_p_and_whether_pressure_reached() {
        let (alone, pressured) = (Count::new(0, 30), Count::new(26, 30));
        let (verdict, p) = Verdict::of(alone, pressured, true);
        assert_eq!(verdict, Verdict::Exposed);
        assert_eq!(
            verdict_line(verdict, p, alone, pressured),
            format!(
                "verdict: exposed (pressure 26/30 vs alone 0/30, one-sided Fisher p = {} <= 0.001)",
                p_text(p)
            )
        );
        assert!(p_text(p).contains("e-"), "{}", p_text(p));
        // The same counts with no pressured process: the arm compared nothing.
        assert_eq!(Verdict::of(alone, pressured, false).0, Verdict::Unpressured);
        // As many failures alone, or too few runs to tell (0/3 against 3/3
        // is p = 0.05), against failures alone that pressure still outnumbers.
        for (alone, pressured, expected) in [
            ((3, 3), (3, 3), Verdict::Inconclusive),
            ((0, 3), (0, 3), Verdict::Inconclusive),
            ((0, 3), (3, 3), Verdict::Inconclusive),
            ((5, 30), (26, 30), Verdict::Exposed),
        ] {
            let (a, b) = (
                Count::new(alone.0, alone.1),
                Count::new(pressured.0, pressured.1),
            );
            let (v, p) = Verdict::of(a, b, true);
            assert_eq!(v, expected, "{a:?} {b:?}: p {p}");
        }
        // 0/12 against 12/12, the integration test's counts: 1 / C(24, 12).
        let (v, p) = Verdict::of(Count::new(0, 12), Count::new(12, 12), true);
        assert_eq!(v, Verdict::Exposed);
        assert!((p * 2_704_156.0 - 1.0).abs() < 1e-6, "{p}");
        // No run at all (interrupted at once): nothing to call unpressured.
        assert_eq!(
            Verdict::of(Count::default(), Count::default(), false).0,
            Verdict::Inconclusive
        );
    }

    #[test]
    fn the_verdict_ids_are_distinct_words() {
        let all = [
            Verdict::Exposed,
            Verdict::Unpressured,
            Verdict::Inconclusive,
        ];
        let ids: std::collections::BTreeSet<&str> = all.iter().map(|v| v.id()).collect();
        assert_eq!(ids.len(), all.len());
    }
}
