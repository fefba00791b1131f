//! The alternating runs: alone, then pressured, until the runs or the
//! time are used up; then the summary.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use fdwindow::error::{Error, Result};
use fdwindow::note;
use fdwindow_fix::base::child::{GroupExit, wait_group};
use fdwindow_fix::pressure::{ENV_VAR, Spec};

use super::args::*;
use super::injector::*;
use super::verdict::*;

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
pub(super) fn pressure_spec(args: &StressArgs) -> Result<Spec> {
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
pub(super) struct Launch {
    pub(super) steps: Vec<Step>,
    pub(super) capture: bool,
    pub(super) preload_var: &'static str,
    pub(super) preload: String,
    pub(super) spec: String,
}

impl Launch {
    /// `step`'s command; with `report`, under pressure reporting there.
    pub(super) fn command(&self, step: &Step, report: Option<&Path>) -> Command {
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
pub(super) struct Arms {
    pub(super) alone: Arm,
    pub(super) pressured: Arm,
    pub(super) reach: RunPressure,
    pub(super) runs_reached: u64,
    pub(super) overlap: Duration,
    pub(super) pressured_time: Duration,
}

impl Arms {
    /// The share of the pressured runs' time that pressure ran.
    pub(super) fn share(&self) -> f64 {
        self.overlap.as_secs_f64() / self.pressured_time.as_secs_f64().max(1e-9)
    }
}

/// Runs the arms in turns (alone, then pressured) until `--runs` or
/// `--duration` or an interrupt, with a status line as it goes.
pub(super) fn run_arms(
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
pub(super) fn run_turn(
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
pub(super) struct Judged {
    pub(super) verdict: Verdict,
    pub(super) p: f64,
    pub(super) interrupted: bool,
    pub(super) never_overlapped: bool,
}

/// Judges the arms: the verdict, and pressure that never overlapped the
/// command (nothing compared), with the lines a reader sees.
pub(super) fn judge(args: &StressArgs, spec: &Spec, arms: &Arms) -> Judged {
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

/// One process of a run.
pub(super) struct Step {
    pub(super) program: PathBuf,
    pub(super) args: Vec<String>,
    pub(super) cwd: Option<PathBuf>,
    /// The environment cargo or nextest would give it.
    pub(super) env: Vec<(String, String)>,
}

/// The processes of one run: the command itself, or, for `cargo test` and
/// `cargo nextest run`, each test binary it builds (built here, once).
pub(super) fn steps(command: &[String]) -> Result<Vec<Step>> {
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
pub(super) fn run_steps(
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
pub(super) enum Ended {
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
pub(super) fn run_once(mut cmd: Command, timeout: Duration) -> std::io::Result<RunOutput> {
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
pub(super) fn keep(dir: &Path, label: &str, ended: Ended, stdout: &str, stderr: &str) {
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
