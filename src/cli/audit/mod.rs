//! `fdwindow audit`: which tests of a suite fork pressure breaks, which held
//! descriptor breaks them, and what to do about it.
//!
//! 1. [`discover`] learns the test binaries (building first, so cargo, rustc
//!    and nextest never carry pressure) and lists each binary's tests.
//! 2. Detection ([`fdwindow::cotenant::detect`]): each binary runs with a
//!    copy of every descriptor it closes held, which finds the tests a held
//!    copy breaks whatever their natural rate; a few `--exact` runs alone
//!    show whether a suspect fails without one. With `--rates` (or `--runs`,
//!    `--duration`) a screen of pressured runs follows, and interleaved
//!    `--exact` reruns, alone and pressured, decide by the sign rule (10
//!    pressured failures before any failure alone). The budget (`--budget`)
//!    is a ceiling. [`libtest`] reads each test's outcome.
//! 3. The diagnosis ([`diagnose`]) of each exposed or undecided test builds
//!    the window on purpose: the injector's `close-hold=CLASS` mode holds a
//!    copy of every descriptor of one class the test closes, passed to one
//!    holder process, for a while. The class whose copy makes the test fail names the hazard;
//!    the injector's report says what was held (a path, a port). A test no
//!    class breaks is checked for load: pressure whose children drop every
//!    descriptor against plain pressure.
//!
//! Progress goes to stderr ([`progress`]), the report (md, json or junit) to
//! stdout. Exit statuses: [`exit`], 2 for bad input or nothing audited, and
//! 128 + N when signal N stopped it (141 when stderr or stdout was closed by
//! its reader: the audit winds down as on Ctrl-C, see `fdwindow::base::out`).

mod decide;
mod diagnose;
mod leftovers;
mod model;
mod plan;
mod progress;
mod report;
mod runner;
mod screen;
mod site;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use fdwindow::cotenant::detect::{self, Detection, Plan, ScreenStop};
use fdwindow::error::{Error, Result};
use fdwindow_fix::base::interrupts;
use fdwindow_fix::pressure::{self, Spec};

use crate::cli::discover;
use crate::cli::partition::Partition;
use leftovers::Leftovers;
use model::{Audit, TestCase};
use progress::Progress;
use runner::Runner;
use screen::SuiteBench;

/// The screen's and reruns' pressure before `--pressure`'s keys: more
/// threads and a longer hold than `fdwindow stress`'s `threads=4,hold=1ms`.
/// A test fails only when a child forks in the moment its descriptor lives
/// and still holds it when the test checks, so both the fork rate and the
/// hold count; on the labelled benchmark's sockets and files binaries this
/// one saw every exposed test fail at least twice in 150 runs, 44 failures
/// in all against the stress default's 14 (`benches/flakes/pressure-choice.json`).
pub const PRESSURE: &str = "threads=8,hold=5ms,path=mix";

/// The audit's exit statuses (besides 2, bad input, and 128+N, stopped by
/// signal N).
pub mod exit {
    /// No test exposed, none failed alone.
    pub const CLEAN: u8 = 0;
    /// A test is exposed: a held copy of a descriptor breaks it.
    pub const EXPOSED: u8 = 1;
    /// No test exposed, but one failed alone: broken or flaky without pressure.
    pub const FAILS_ALONE: u8 = 3;
}

/// The arguments of `fdwindow audit`.
#[derive(clap::Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Exit status: 0 nothing exposed; 1 a test exposed; 3 none exposed but a test \
                  failed alone (broken or flaky without pressure); 2 bad input or nothing to \
                  audit; 128+N stopped by signal N (130 Ctrl-C, 143 SIGTERM)."
)]
pub struct AuditArgs {
    #[command(subcommand)]
    merge: Option<AuditCommand>,
    /// Time for the whole audit (screen, reruns, diagnosis), e.g. 300s; a
    /// shard (`--partition`) gets all of it. Default: 150 s, or more where
    /// the timing run says the suite needs it (the audit says so).
    #[arg(long, value_parser = pressure::parse_duration)]
    budget: Option<Duration>,
    /// Audit one shard of the tests, as nextest shards them: count:K/N (or
    /// K/N) deals each binary's tests round-robin, hash:K/N by a hash of the
    /// name. `fdwindow audit merge` joins the shards' JSON reports.
    #[arg(long, value_name = "K/N", value_parser = clap::value_parser!(Partition))]
    partition: Option<Partition>,
    /// After the held-copy screen, screen with exactly this many pressured
    /// runs of each binary.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    runs: Option<u64>,
    /// Screen for this long, held copies then pressure (at least one run of
    /// each binary), e.g. 60s.
    #[arg(long, value_parser = pressure::parse_duration, conflicts_with = "runs")]
    duration: Option<Duration>,
    /// The pressure, as key=value pairs over the audit's threads=8,hold=5ms,path=mix.
    #[arg(long, default_value = "", hide_default_value = true, long_help = pressure_help())]
    pressure: String,
    /// Measure each suspect's rate under realistic fork pressure: a
    /// pressured screen for the budget's share after the held-copy screen,
    /// and sign-rule reruns (alone and pressured in pairs) for every
    /// suspect, within the budget. Off: the held-copy window decides.
    #[arg(long)]
    rates: bool,
    /// Report format on stdout.
    #[arg(long, default_value = "md", value_parser = ["md", "json", "junit", "github"])]
    format: String,
    /// Kill a run after this many seconds; its unreported tests count as timeouts.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: u64,
    /// Time for the `--exact` reruns of all suspects together (default:
    /// until a tenth of the budget is left).
    #[arg(long, value_parser = pressure::parse_duration)]
    rerun_budget: Option<Duration>,
    /// At most this many rerun pairs (alone, pressure) per suspect.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    max_reruns: u64,
    /// How long the diagnosis's children hold each closed descriptor.
    #[arg(long, default_value = "100ms", value_parser = pressure::parse_duration)]
    hold: Duration,
    /// Skip the diagnosis.
    #[arg(long)]
    no_diagnose: bool,
    /// A preload library to use instead of the injector built into fdwindow.
    #[arg(long)]
    injector: Option<PathBuf>,
    /// Results folder read for the advice on each hazard (default: ./results
    /// if it holds results, else fdwindow's encoded claims, and the report
    /// says which).
    #[arg(long, value_name = "DIR")]
    results: Option<PathBuf>,
    /// Copy each run's output to stderr, each line marked with its run and arm.
    #[arg(long)]
    show_output: bool,
    /// Keep each failing run's output in this folder (created if missing).
    #[arg(long, value_name = "DIR")]
    keep_failures: Option<PathBuf>,
    /// A libtest binary, `cargo test …` or `cargo nextest run …`, with
    /// arguments: filters, `--exact`, `--skip`, `-p`, `--test`, features and
    /// nextest's `-E` all select what is audited.
    #[arg(last = true, required = true, num_args = 1..)]
    command: Vec<String>,
}

impl AuditArgs {
    /// The budget: `--budget`, else the default (until the timing run
    /// chooses one for the suite).
    fn budget(&self) -> Duration {
        self.budget.unwrap_or(detect::DEFAULT_BUDGET)
    }
}

impl AuditArgs {
    /// The detection's plan: the budget, the screen the arguments ask for.
    fn plan(&self) -> Plan {
        Plan {
            budget: self.budget(),
            screen: match (self.runs, self.duration, self.rates) {
                (Some(n), _, _) => ScreenStop::Runs(n),
                (None, Some(d), _) => ScreenStop::For(d),
                (None, None, true) => ScreenStop::Share,
                (None, None, false) => ScreenStop::Held,
            },
            rerun_budget: self.rerun_budget,
            max_pairs: self.max_reruns,
            rates: self.rates,
            // The pair order's coin: any seed will do, a new one each audit.
            seed: plan::clock_seed(),
        }
    }

    /// Without `--budget`, a budget the suite fits in, from its timing run
    /// (said on stderr when it is not the default).
    fn fit_budget(&mut self, plan: &mut Plan, timing_seconds: f64, progress: &mut Progress) {
        if self.budget.is_some() {
            return;
        }
        let fit = detect::budget_for(timing_seconds);
        if fit > self.budget() {
            progress.step(&format!(
                "budget: {:.0} s, not the default {:.0} s: the timing run took {timing_seconds:.1} \
                 s, and the screen's share must hold it and two more runs of every binary \
                 (--budget sets it)",
                fit.as_secs_f64(),
                self.budget().as_secs_f64()
            ));
            self.budget = Some(fit);
            plan.budget = fit;
        }
    }

    /// How the suspects are rerun, for the progress line.
    fn reruns_text(&self) -> &'static str {
        if self.rates {
            ", alone and pressured in pairs"
        } else if self.runs.is_some() || self.duration.is_some() {
            ", alone; those only pressure broke also pressured, in pairs"
        } else {
            " alone (the held-copy window decides; --rates adds pressured reruns)"
        }
    }
}

/// `--pressure`'s long help: the keys a user may set, with the audit's
/// defaults (it sets `drop=` and `match=` itself).
fn pressure_help() -> String {
    let base: Spec = PRESSURE.parse().expect("the audit's pressure parses");
    format!(
        "The pressure, as comma-separated key=value pairs over the audit's {PRESSURE}. Keys:\n{}",
        crate::cli::pressure_help::keys_over(&base, &["drop", "match"])
    )
}

/// `fdwindow audit`'s subcommands.
#[derive(clap::Subcommand, Debug)]
enum AuditCommand {
    /// Join the JSON reports of every shard of one `--partition`ed audit
    /// into one report.
    Merge(MergeArgs),
}

/// The arguments of `fdwindow audit merge`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Exit status: as the audit's (0, 1, 3) for the merged report; 2 when a \
                        report is unreadable, of another schema, command, pressure, partition \
                        scheme or fdwindow version, a shard or test appears twice, or a shard \
                        is missing."
)]
struct MergeArgs {
    /// Report format on stdout.
    #[arg(long, default_value = "md", value_parser = ["md", "json", "junit", "github"])]
    format: String,
    /// The shards' reports (`fdwindow audit --partition K/N --format json`).
    #[arg(required = true, num_args = 1..)]
    reports: Vec<PathBuf>,
}

/// Runs `fdwindow audit`; `Err` is bad input (exit status 2).
pub fn run(mut args: AuditArgs) -> Result<ExitCode> {
    if let Some(AuditCommand::Merge(m)) = &args.merge {
        return merge(m);
    }
    let mut spec = checked_spec(&args)?;
    // Before the build: a results folder that cannot give advice is bad
    // input, found before minutes of audit.
    let advisor = report::Advisor::choose(args.results.as_deref())?;
    // Before the injector is written to a temporary file: a Ctrl-C during
    // the build then ends the audit through its guards, which remove it.
    interrupts::catch_interrupts();
    spec.controller = Some(crate::stress::controller()?);
    // The injector and its per-run reports, in a folder that the next
    // stress or audit removes should this one be killed.
    let folder = crate::stress::run_folder()?;
    let injector = crate::stress::Injector::locate(args.injector.as_deref(), folder.dir())?;
    let preload_var = injector.var;
    if let Some(dir) = &args.keep_failures {
        std::fs::create_dir_all(dir)
            .map_err(|e| usage!("--keep-failures {}: {e}", dir.display()))?;
    }
    let binaries = discover::discover(&args.command);
    if interrupts::interrupted() {
        return Ok(fdwindow_fix::base::interrupts::exit_code());
    }
    let discover::Found {
        mut binaries,
        warnings: found_warnings,
    } = binaries?;
    // What discovery left out is said now, on stderr, and in the report.
    for w in &found_warnings {
        progress::line(&format!("warning: {w}"));
    }
    let empty_shard = args.partition.and_then(|p| shard(p, &mut binaries));
    if let Some(why) = empty_shard {
        let mut audit = Audit::empty(&args, spec_shown(&spec));
        audit.warnings = found_warnings;
        audit.warnings.push(why);
        let report = report::Report::of(&audit, &advisor);
        drop(injector);
        drop(folder);
        fdwindow::base::out::stdout(&render(&report, &args.format));
        return Ok(exit_code(&report));
    }
    let mut runner = Runner::new(
        (preload_var, injector.path()),
        folder.dir(),
        Duration::from_secs(args.timeout),
        (args.show_output, args.keep_failures.clone()),
    );
    let here = std::env::current_dir().unwrap_or_default();
    runner.leftovers = Leftovers::snapshot(
        binaries.iter().map(|b| b.cwd.as_deref().unwrap_or(&here)),
        args.keep_failures.as_slice(),
    );
    let mut tests = TestCase::all(&binaries);
    let shown_spec = spec_shown(&spec);
    let mut plan = args.plan();
    let mut progress = Progress::new();
    progress.step(&format!(
        "fdwindow audit: {} binaries, {} tests{}, budget {:.0} s, pressure {shown_spec}",
        binaries.len(),
        tests.len(),
        args.partition
            .map(|p| format!(" (shard {p})"))
            .unwrap_or_default(),
        args.budget().as_secs_f64()
    ));
    let started = Instant::now();
    let (timing_seconds, timing_each) =
        plan::timing(&mut runner, &binaries, &mut tests, &mut progress)?;
    args.fit_budget(&mut plan, timing_seconds, &mut progress);
    let mut bench = SuiteBench::new(&mut runner, &binaries, &mut tests, &spec, &mut progress);
    bench.started = started;
    (bench.budget, bench.hold, bench.reruns) = (args.budget(), args.hold, args.reruns_text());
    let detection = bench.detect(&plan, &timing_each)?;
    let (names, unpressured, unheld_by) = (bench.names, bench.unpressured, bench.unheld_by);
    let mut audit = Audit {
        timing_seconds,
        binaries: names,
        tests,
        detection,
        warnings: found_warnings,
        ..Audit::empty(&args, shown_spec)
    };
    screen_warnings(&mut audit, &unpressured, &unheld_by);
    // The diagnosis of each exposed test, then each undecided one.
    let diag_started = Instant::now();
    if !args.no_diagnose {
        let end = started + args.budget();
        decide::diagnose_suspects(
            &mut audit,
            &mut runner,
            &binaries,
            (&spec, args.hold),
            end,
            &mut progress,
        )?;
    }
    audit.diagnosis_seconds = diag_started.elapsed().as_secs_f64();
    progress.finish();

    let (text, exit) = conclude(audit, &mut runner, &args, started.elapsed(), &advisor)?;
    // The private files go before the output, the last thing done (a
    // failed write only changes the exit status: see base::out).
    drop(injector);
    drop(folder);
    fdwindow::base::out::stdout(&text);
    Ok(exit)
}

/// The audit's end: what the runs reached and left, the warnings, the report
/// rendered and the exit status.
fn conclude(
    mut audit: Audit,
    runner: &mut Runner,
    args: &AuditArgs,
    took: Duration,
    advisor: &report::Advisor,
) -> Result<(String, ExitCode)> {
    audit.pressured = runner.pressured();
    rerun_warnings(&mut audit, took, args.budget());
    leftover_warnings(&mut audit, &runner.leftovers.sweep());
    audit.interrupted = interrupts::interrupted();
    pressure_reached(&mut audit, runner.preload_var)?;
    let report = report::Report::of(&audit, advisor);
    let text = render(&report, &args.format);
    let exit = if audit.interrupted {
        fdwindow_fix::base::interrupts::exit_code()
    } else {
        exit_code(&report)
    };
    Ok((text, exit))
}

/// The audit's pressure from `args`, every argument checked before the
/// build; `Err` is bad input.
fn checked_spec(args: &AuditArgs) -> Result<Spec> {
    crate::stress::check_command(&args.command)?;
    let spec: Spec = format!("{PRESSURE},{}", args.pressure)
        .parse()
        .map_err(|e| usage!("--pressure: {e}"))?;
    if spec.config.drop.is_some()
        || spec.controller.is_some()
        || spec.close_hold.is_some()
        || !spec.close_sites.is_empty()
    {
        return Err(Error::usage(
            "--pressure: drop=, close-hold=, close-site= and controller= are the audit's to set",
        ));
    }
    // The audit runs each test binary itself, so every pressured run is of
    // a test binary: a `match=` could only keep the pressure out of it.
    if spec.exe_match.is_some() {
        return Err(Error::usage(
            "--pressure: match= is not the audit's: it pressures each test binary it runs",
        ));
    }
    if args.budget.is_some_and(|b| b.is_zero()) {
        return Err(Error::usage("--budget must be longer than 0"));
    }
    // The injector refuses a hold as long as its deadline (`for`), and a
    // hold as long as a run's timeout times every held run out.
    let longest = spec.config.deadline.min(Duration::from_secs(args.timeout));
    if args.hold.is_zero() || args.hold >= longest {
        return Err(usage!(
            "--hold must be longer than 0 and shorter than {longest:?} (the pressure's `for` \
             and `--timeout`, whichever is shorter)"
        ));
    }
    Ok(spec)
}

/// Keeps `binaries`' tests of shard `p` (and the binaries with any); says
/// why when the shard holds none: not an error, since the suite has tests
/// and shards deal per binary, and its empty report lets merge see it.
fn shard(p: Partition, binaries: &mut Vec<discover::Binary>) -> Option<String> {
    let all: usize = binaries.iter().map(|b| b.tests.len()).sum();
    for bin in binaries.iter_mut() {
        bin.tests = p.shard(&bin.tests, &bin.ignored);
        bin.partitioned = true;
    }
    binaries.retain(|b| !b.tests.is_empty());
    binaries
        .is_empty()
        .then(|| format!("shard {p} holds none of the suite's {all} tests: nothing audited in it"))
}

/// The screen's warnings: tests never screened with every close held,
/// binaries whose pressure never started in some runs.
fn screen_warnings(audit: &mut Audit, unpressured: &[u64], unheld_by: &BTreeMap<String, u64>) {
    if let Some(h) = &audit.detection.held {
        let unscreened = h.screened.iter().filter(|s| !**s).count();
        if unscreened > 0 {
            let unheld: u64 = h.unheld.iter().sum();
            let why: Vec<String> = unheld_by.iter().map(|(r, n)| format!("{n} {r}")).collect();
            audit.warnings.push(format!(
                "{unscreened} of {} tests never ran with every close held ({unheld} closes \
                 went through unheld{}): an exposure in them can be missed",
                audit.tests.len(),
                if why.is_empty() {
                    String::new()
                } else {
                    format!(": {}", why.join(", "))
                }
            ));
        }
    }
    for (b, n) in unpressured.iter().enumerate().filter(|(_, n)| **n > 0) {
        audit.warnings.push(format!(
            "{}: pressure never started in {n} of its {} screen runs; those runs are not counted",
            audit.binaries[b], audit.detection.screen_runs[b]
        ));
    }
}

/// Whether the pressured runs were pressured: a warning where some were
/// not, and `Err` (nothing audited) where none was.
fn pressure_reached(audit: &mut Audit, preload_var: &str) -> Result<()> {
    let (runs, reached) = audit.pressured;
    if reached < runs {
        audit.warnings.push(format!(
            "pressure started in only {reached} of {runs} pressured runs: the loader may have \
             ignored {preload_var}"
        ));
    }
    if !audit.interrupted && runs > 0 && reached == 0 {
        return Err(usage!(
            "pressure never started in any of the {runs} pressured runs (the loader ignored \
             {preload_var}: a static or setuid test binary?): nothing was audited"
        ));
    }
    Ok(())
}

/// What the tests left in their folders: removed from `target/`, named
/// elsewhere.
fn leftover_warnings(audit: &mut Audit, swept: &leftovers::Swept) {
    let some = |paths: &[PathBuf]| {
        const SHOWN: usize = 5;
        let names: Vec<String> = paths
            .iter()
            .take(SHOWN)
            .map(|p| p.display().to_string())
            .collect();
        let more = if paths.len() > SHOWN { ", …" } else { "" };
        format!("{} path(s): {}{more}", paths.len(), names.join(", "))
    };
    if !swept.removed.is_empty() {
        audit.warnings.push(format!(
            "the tests left {} in target/ that were not there when the audit began: a test \
that fails before its cleanup can fail every later run because of them, so the audit removed \
each after the failing run that left it, and again at the end",
            some(&swept.removed)
        ));
    }
    if !swept.left.is_empty() {
        audit.warnings.push(format!(
            "{} appeared in the tests' folders outside target/ while the audit ran (left as \
they are: the tests' or anyone's); a test that fails alone after its first failure may be \
failing because of them",
            some(&swept.left)
        ));
    }
}

/// The reruns' and the budget's warnings.
fn rerun_warnings(audit: &mut Audit, spent: Duration, budget: Duration) {
    let pairs = &audit.detection.pairs;
    if !interrupts::interrupted()
        && !pairs.is_empty()
        && pairs.values().all(|p| p.alone.runs + p.dropped == 0)
    {
        audit.warnings.push(
            "the screen left no time for the --exact reruns: every suspect is undecided \
             (a larger --budget, or fewer --runs)"
                .into(),
        );
    }
    if spent > budget + diagnose::MIN_TIME {
        audit.warnings.push(format!(
            "took {:.0} s of a {:.0} s budget: each exposed test's diagnosis gets at least {} s",
            spent.as_secs_f64(),
            budget.as_secs_f64(),
            diagnose::MIN_TIME.as_secs()
        ));
    }
    for (t, p) in &audit.detection.pairs {
        if p.pressure.runs == 0 && p.dropped > 0 {
            audit.warnings.push(format!(
                "{}: its --exact reruns never reported it ({} pairs)",
                audit.tests[*t].name, p.dropped
            ));
        }
        if p.unpressured > 0 {
            audit.warnings.push(format!(
                "{}: pressure never started in {} of its {} pressured reruns",
                audit.tests[*t].name, p.unpressured, p.pressure.runs
            ));
        }
    }
}

/// The pressure as the report shows it: without the controller.
fn spec_shown(spec: &Spec) -> Spec {
    Spec {
        controller: None,
        ..spec.clone()
    }
}

impl Audit {
    /// An audit of no test (an empty shard), and the fields an audit starts
    /// with.
    fn empty(args: &AuditArgs, spec: Spec) -> Audit {
        Audit {
            command: args.command.clone(),
            spec,
            budget: args.budget(),
            partition: args.partition,
            timing_seconds: 0.0,
            binaries: Vec::new(),
            tests: Vec::new(),
            detection: Detection {
                screen: Vec::new(),
                held: None,
                screen_runs: Vec::new(),
                pairs: BTreeMap::new(),
                seconds: [0.0, 0.0],
                interrupted: false,
            },
            diagnoses: BTreeMap::new(),
            diagnosis_seconds: 0.0,
            pressured: (0, 0),
            warnings: Vec::new(),
            interrupted: false,
        }
    }
}

/// `fdwindow audit merge`.
fn merge(m: &MergeArgs) -> Result<ExitCode> {
    let shards = m
        .reports
        .iter()
        .map(|p| report::read_shard(p))
        .collect::<Result<Vec<_>, _>>()?;
    let merged = report::merge(&shards)?;
    fdwindow::base::out::stdout(&render(&merged, &m.format));
    Ok(exit_code(&merged))
}

/// The report in `format`.
fn render(report: &report::Report, format: &str) -> String {
    match format {
        "json" => report.json(),
        "junit" => report.junit(),
        "github" => report.github(),
        _ => report.markdown(),
    }
}

/// The exit status a report calls for (see [`exit`]).
fn exit_code(report: &report::Report) -> ExitCode {
    ExitCode::from(report.exit_status())
}

#[cfg(test)]
mod tests {
    use super::*;
    use diagnose::{Cause, ClassRuns, DECIDE_RUNS, Diagnosis};
    use fdwindow::cotenant::detect::{Pairs, SIGN_FAILURES, Tally};
    use fdwindow_fix::pressure::DropClass;
    use model::{Basis, Word};

    fn tally(bad: u64, runs: u64) -> Tally {
        Tally {
            failures: bad,
            runs,
            timeouts: 0,
        }
    }

    fn pairs(alone: u64, pressure: u64, runs: u64) -> Pairs {
        Pairs {
            alone: tally(alone, runs),
            pressure: tally(pressure, runs),
            ..Pairs::default()
        }
    }

    /// A listener diagnosis: its class failed `held` of `runs`, its sham
    /// `sham` of `runs`.
    fn listener(held: u64, sham: u64, runs: u64) -> Diagnosis {
        Diagnosis {
            classes: vec![ClassRuns {
                class: DropClass::Listener,
                tally: tally(held, runs),
                started: runs,
                held: runs,
                skipped: 0,
                what: vec!["tcp 127.0.0.1:4000".into()],
                kept: diagnose::Kept::default(),
                stacks: Vec::new(),
                first_failure: (held > 0).then_some(1),
                message: None,
            }],
            shams: vec![(DropClass::Listener, tally(sham, runs))],
            forks_break: Vec::new(),
            load: None,
            cut_short: Vec::new(),
            cause: Cause::Held(vec![DropClass::Listener]),
            hazard: Some("listener-survival"),
            candidates: vec!["listener-survival"],
            sites: Vec::new(),
            seconds: 1.0,
            joined: None,
        }
    }

    fn with_cause(cause: Cause) -> Diagnosis {
        Diagnosis {
            cause,
            hazard: None,
            candidates: Vec::new(),
            ..listener(0, 0, 3)
        }
    }

    /// One test: its screen failures, its reruns, its diagnosis.
    fn audit(screen_bad: u64, reruns: Option<Pairs>, diagnosis: Option<Diagnosis>) -> Audit {
        Audit {
            command: vec!["t".into()],
            spec: Spec::default(),
            budget: Duration::from_secs(150),
            partition: None,
            timing_seconds: 0.5,
            binaries: vec!["t".into()],
            tests: vec![TestCase {
                binary: 0,
                name: "t".into(),
                message: None,
                unattributed: 0,
                time: Some(0.01),
            }],
            detection: Detection {
                screen: vec![tally(screen_bad, 200)],
                held: None,
                screen_runs: vec![200],
                pairs: reruns.into_iter().map(|p| (0, p)).collect(),
                seconds: [80.0, 50.0],
                interrupted: false,
            },
            diagnoses: diagnosis.into_iter().map(|d| (0, d)).collect(),
            diagnosis_seconds: 1.0,
            pressured: (0, 0),
            warnings: Vec::new(),
            interrupted: false,
        }
    }

    #[test]
    fn the_sign_rule_with_a_held_class_is_exposed_and_without_one_is_not() {
        let signed = || Some(pairs(0, SIGN_FAILURES, 400));
        assert_eq!(audit(2, signed(), None).verdict(0), Word::Exposed);
        assert_eq!(audit(2, signed(), None).basis(0), Some(Basis::SignRule));
        let named = Some(listener(3, 0, 3));
        assert_eq!(audit(2, signed(), named).verdict(0), Word::Exposed);
        let load = Some(with_cause(Cause::Load));
        assert_eq!(audit(2, signed(), load).verdict(0), Word::Load);
        let unexplained = Some(with_cause(Cause::Unexplained));
        assert_eq!(
            audit(2, signed(), unexplained).verdict(0),
            Word::PressureOnly
        );
        // A diagnosis the budget cut short clears nothing.
        let cut = Diagnosis {
            cut_short: vec![DropClass::Pipe],
            ..with_cause(Cause::Unexplained)
        };
        assert!(cut.summary().contains("cut short"), "{}", cut.summary());
        assert_eq!(audit(2, signed(), Some(cut)).verdict(0), Word::Exposed);
        // One failure short of the rule, and nothing decisive: undecided.
        let short = Some(pairs(0, SIGN_FAILURES - 1, 400));
        assert_eq!(audit(2, short, None).verdict(0), Word::Undecided);
    }

    #[test]
    fn a_decisive_window_exposes_an_undecided_test_that_never_failed_alone() {
        let n = DECIDE_RUNS;
        let decisive = || Some(listener(n, 0, n));
        assert!(decisive().unwrap().decisive());
        assert_eq!(
            audit(1, Some(pairs(0, 2, 50)), decisive()).verdict(0),
            Word::Exposed
        );
        assert_eq!(
            audit(1, Some(pairs(0, 2, 50)), decisive()).basis(0),
            Some(Basis::HeldCopy)
        );
        // Suspect from the screen, no time for reruns: never run alone,
        // so it may fail alone too.
        assert_eq!(audit(1, None, decisive()).verdict(0), Word::Undecided);
        // A failure alone outweighs the window.
        assert_eq!(
            audit(1, Some(pairs(1, 2, 50)), decisive()).verdict(0),
            Word::FailsAlone
        );
        // Three runs of each are not decisive (Fisher p = 0.05), nor is a
        // sham that fails too.
        for d in [listener(3, 0, 3), listener(n, 3, n)] {
            assert!(!d.decisive());
            assert_eq!(
                audit(1, Some(pairs(0, 2, 50)), Some(d)).verdict(0),
                Word::Undecided
            );
        }
    }

    /// The report states each rule with the threshold it applies, and each
    /// exposed row names its rule with a p that meets it.
    #[test]
    fn each_exposed_row_shows_the_rule_that_decided_it() {
        let n = DECIDE_RUNS;
        let signed = audit(2, Some(pairs(0, SIGN_FAILURES, 400)), None);
        let claims = report::Advisor::Claims(None);
        let md = report::Report::of(&signed, &claims).markdown();
        assert!(md.contains("sign test p <= 2^-10 = 9.8e-4"), "{md}");
        assert!(md.contains("(7/7 against 0/7 gives 2.9e-4)"), "{md}");
        assert!(md.contains("**exposed** (sign rule, p 9.8e-4)"), "{md}");
        let held = audit(1, Some(pairs(0, 2, 50)), Some(listener(n, 0, n)));
        let held = report::Report::of(&held, &claims);
        let md = held.markdown();
        assert!(md.contains("**exposed** (held copy, p 2.9e-4)"), "{md}");
        let json: serde_json::Value = serde_json::from_str(&held.json()).unwrap();
        assert_eq!(json["tests"][0]["basis"], "held-copy");
        assert_eq!(json["rule"]["held_copy"]["p_max"], diagnose::WINDOW_P);
        let junit = held.junit();
        assert!(junit.contains("exposed (held copy, p 2.9e-4)"), "{junit}");
        // Undecided: no basis, and the row says what the rule lacked.
        let short = audit(1, Some(pairs(0, 2, 50)), None);
        assert_eq!(short.basis(0), None);
        let md = report::Report::of(&short, &claims).markdown();
        assert!(md.contains("| undecided |"), "{md}");
        // What the reruns could confirm, from the undecided suspects only.
        assert!(md.contains("the fewest reruns had 50 pairs"), "{md}");
        let md = report::Report::of(&signed, &claims).markdown();
        assert!(!md.contains("Confirmation:"), "{md}");
    }

    #[test]
    fn a_test_the_screen_never_saw_fail_is_not_exposed() {
        assert_eq!(
            audit(0, None, Some(listener(DECIDE_RUNS, 0, DECIDE_RUNS))).verdict(0),
            Word::NotExposed
        );
    }

    /// A shard report of `names`, each with `verdict`.
    fn shard(k: u64, n: u64, names: &[&str], verdict: Word) -> report::Shard {
        let mut r = report::Report::of(&audit(0, None, None), &report::Advisor::Claims(None));
        r.partition = Some(Partition {
            scheme: crate::cli::partition::Scheme::Count,
            shard: k,
            total: n,
        });
        let one = r.tests[0].clone();
        r.tests = names
            .iter()
            .map(|name| report::TestReport {
                name: (*name).into(),
                verdict,
                ..one.clone()
            })
            .collect();
        report::Shard {
            path: format!("shard-{k}.json").into(),
            report: r.counted(),
        }
    }

    #[test]
    fn merge_is_the_union_of_its_shards() {
        let merged = report::merge(&[
            shard(2, 2, &["b", "d"], Word::Exposed),
            shard(1, 2, &["a", "c"], Word::NotExposed),
        ])
        .unwrap();
        let names: Vec<&str> = merged.tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "d"]);
        assert_eq!(merged.exposed, 2);
        assert_eq!(merged.partition, None);
        assert_eq!(merged.merged.as_ref().unwrap().total, 2);
        assert_eq!(merged.screen_runs.len(), 2);
        // Every test of every shard, once: the JUnit holds all four.
        assert_eq!(merged.junit().matches("<testcase ").count(), 4);
        // A merged report reads back as JSON.
        let again: report::Report = serde_json::from_str(&merged.json()).unwrap();
        assert_eq!(again, merged);
    }

    #[test]
    fn merge_refuses_what_is_not_one_sharded_audit() {
        let err = |shards: &[report::Shard]| report::merge(shards).unwrap_err().to_string();
        let missing = err(&[shard(1, 3, &["a"], Word::NotExposed)]);
        assert_eq!(missing, "missing shards: 2/3, 3/3");
        let twice = err(&[
            shard(1, 2, &["a"], Word::NotExposed),
            shard(1, 2, &["b"], Word::NotExposed),
        ]);
        assert!(twice.contains("both are shard 1"), "{twice}");
        let dup = err(&[
            shard(1, 2, &["a"], Word::NotExposed),
            shard(2, 2, &["a"], Word::NotExposed),
        ]);
        assert!(dup.contains("`a` is in shards 1 and 2"), "{dup}");
        let mut other = shard(2, 2, &["b"], Word::NotExposed);
        other.report.command = vec!["u".into()];
        let cmd = err(&[shard(1, 2, &["a"], Word::NotExposed), other]);
        assert!(cmd.contains("another command"), "{cmd}");
        let mut other = shard(2, 2, &["b"], Word::NotExposed);
        other.report.pressure = "threads=1".into();
        assert!(err(&[shard(1, 2, &["a"], Word::NotExposed), other]).contains("another pressure"));
        let mut other = shard(2, 2, &["b"], Word::NotExposed);
        other.report.fdwindow_version = "0.0.1".into();
        assert!(err(&[shard(1, 2, &["a"], Word::NotExposed), other]).contains("fdwindow version"));
        let mut other = shard(2, 2, &["b"], Word::NotExposed);
        other.report.partition.as_mut().unwrap().scheme = crate::cli::partition::Scheme::Hash;
        assert!(err(&[shard(1, 2, &["a"], Word::NotExposed), other]).contains("partition scheme"));
        let mut whole = shard(1, 1, &["a"], Word::NotExposed);
        whole.report.partition = None;
        assert!(err(&[whole]).contains("not a shard"));
        // A shard a signal stopped holds tests it never ran.
        let mut stopped = shard(2, 2, &["b"], Word::NotExposed);
        stopped.report.interrupted = true;
        let e = err(&[shard(1, 2, &["a"], Word::NotExposed), stopped]);
        assert!(e.contains("shard-2.json: a signal stopped"), "{e}");
        // The counts come from the tests, never from a file.
        let mut claims = shard(2, 2, &[], Word::NotExposed);
        claims.report.exposed = 1;
        let merged = report::merge(&[shard(1, 2, &["a"], Word::NotExposed), claims]).unwrap();
        assert_eq!((merged.exposed, merged.tests.len()), (0, 1));
    }

    /// The report's fields, as `--format json` writes them: a change here
    /// is a change of the schema, and bumps [`report::SCHEMA`].
    #[test]
    fn the_json_fields_are_the_schemas() {
        assert_eq!(report::SCHEMA, "fdwindow-audit/4");
        let json: serde_json::Value =
            serde_json::from_str(&shard(1, 1, &["a"], Word::Exposed).report.json()).unwrap();
        let keys = |v: &serde_json::Value| -> Vec<String> {
            v.as_object().unwrap().keys().cloned().collect()
        };
        assert_eq!(
            keys(&json),
            [
                "advice_from",
                "budget_seconds",
                "causes",
                "command",
                "exposed",
                "fails_alone",
                "fdwindow_version",
                "interrupted",
                "merged",
                "partition",
                "platform",
                "pressure",
                "pressure_started_runs",
                "pressured_runs",
                "rule",
                "schema",
                "screen_runs",
                "seconds",
                "tests",
                "warnings"
            ]
        );
        assert_eq!(
            keys(&json["tests"][0]),
            [
                "advice",
                "basis",
                "basis_p",
                "binary",
                "candidates",
                "detection",
                "diagnosis",
                "hazard",
                "held_screened",
                "message",
                "name",
                "reruns",
                "screen",
                "screen_held",
                "screen_unattributed",
                "time_s",
                "verdict"
            ]
        );
        assert_eq!(json["tests"][0]["verdict"], "exposed");
    }

    #[test]
    fn a_report_of_another_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        let mut r = shard(1, 1, &["a"], Word::NotExposed).report;
        r.schema = "fdwindow-audit/0".into();
        std::fs::write(&path, r.json()).unwrap();
        let e = report::read_shard(&path).err().unwrap().to_string();
        assert!(e.contains("schema fdwindow-audit/0"), "{e}");
        std::fs::write(&path, "{\"tests\": []}").unwrap();
        assert!(
            report::read_shard(&path)
                .err()
                .unwrap()
                .to_string()
                .contains("no schema")
        );
        std::fs::write(&path, "{\"schema\": \"fdwindow-audit/4\"}").unwrap();
        assert!(
            report::read_shard(&path)
                .err()
                .unwrap()
                .to_string()
                .contains("malformed")
        );
    }

    /// An interrupted report says so in markdown and JUnit.
    #[test]
    fn an_interrupted_report_says_so() {
        let mut r = shard(1, 1, &["a"], Word::NotExposed).report;
        r.interrupted = true;
        r.tests[0].screen.runs = 0;
        assert!(
            r.markdown().contains("> warning: interrupted"),
            "{}",
            r.markdown()
        );
        let x = r.junit();
        assert!(x.contains("name=\"interrupted\" value=\"true\""), "{x}");
        assert!(
            x.contains("<skipped message=\"never ran under pressure: a signal"),
            "{x}"
        );
    }

    #[test]
    fn exit_codes_follow_the_verdicts() {
        for (word, status) in [
            (Word::Exposed, exit::EXPOSED),
            (Word::FailsAlone, exit::FAILS_ALONE),
            (Word::NotExposed, exit::CLEAN),
            (Word::PressureOnly, exit::CLEAN),
        ] {
            let r = shard(1, 1, &["a"], word).report;
            assert_eq!(r.exit_status(), status, "{word:?}");
        }
    }

    /// A site of `a::drops_a_listener` held in each of the window's 7 runs,
    /// all failing, the only one.
    fn site_runs(file: Option<&str>, line: Option<u32>, found: site::Found) -> site::SiteRuns {
        site::SiteRuns {
            site: site::Site {
                file: file.map(str::to_owned),
                line,
                function: Some("a::drops_a_listener".into()),
                found,
                via: None,
            },
            runs: DECIDE_RUNS,
            failing: DECIDE_RUNS,
            only: true,
            alone: None,
            addrs: Default::default(),
        }
    }

    /// Exposed tests of one binary whose diagnoses name one site and hazard
    /// are one cause, decided on the test whose own diagnosis decided it,
    /// listed once in the markdown and once in GitHub's annotations; a
    /// test at another site is a cause of its own.
    #[test]
    fn tests_that_share_a_site_are_one_cause() {
        let n = DECIDE_RUNS;
        let site_at = |line| site_runs(Some("src/lib.rs"), Some(line), site::Found::Workspace);
        let mut rep = listener(n, 0, n);
        rep.sites = vec![site_at(117)];
        let mut joined = rep.clone();
        joined.joined = Some(diagnose::Joined {
            test: "a".into(),
            site: site::AloneRuns {
                failures: 3,
                runs: 3,
                held: 3,
            },
        });
        let mut other = listener(n, 0, n);
        other.sites = vec![site_at(209)];
        let mut a = audit(1, Some(pairs(0, 0, 3)), None);
        let case = a.tests[0].clone();
        a.tests = ["a", "b", "c"]
            .iter()
            .map(|name| TestCase {
                name: (*name).into(),
                ..case.clone()
            })
            .collect();
        a.detection.screen = vec![tally(0, 0); 3];
        a.detection.held = Some(detect::HeldScreen {
            tally: vec![tally(1, 1); 3],
            runs: vec![1],
            copies: vec![3],
            unheld: vec![0],
            screened: vec![true; 3],
        });
        a.detection.pairs = (0..3).map(|t| (t, pairs(0, 0, 3))).collect();
        a.diagnoses = [(0, rep), (1, joined), (2, other)].into_iter().collect();
        let r = report::Report::of(&a, &report::Advisor::Claims(None));
        assert_eq!(r.exposed, 3);
        let causes: Vec<(Option<u32>, &str, Vec<&str>)> = r
            .causes
            .iter()
            .map(|c| {
                let tests = c.tests.iter().map(String::as_str).collect();
                (
                    c.site.as_ref().and_then(|s| s.line),
                    c.decided_on.as_str(),
                    tests,
                )
            })
            .collect();
        assert_eq!(
            causes,
            [
                (Some(117), "a", vec!["a", "b"]),
                (Some(209), "c", vec!["c"])
            ]
        );
        let md = r.markdown();
        assert!(
            md.contains(
                "### `src/lib.rs:117` in `a::drops_a_listener` (t): listener-survival, 2 tests"
            ),
            "{md}"
        );
        assert!(md.contains("; 1 other by this site's copies alone"), "{md}");
        assert!(
            md.contains("Decided with the cause of `a`: holding only its call site"),
            "{md}"
        );
        assert_eq!(r.github().lines().count(), 2, "{}", r.github());
        let json: serde_json::Value = serde_json::from_str(&r.json()).unwrap();
        assert_eq!(json["tests"][1]["diagnosis"]["decided_with"]["test"], "a");
    }

    /// The call site of a held cause is in the markdown, the JSON and the
    /// JUnit case (a property and the failure's text); a site from the
    /// symbol table alone comes with the hint to build with line tables.
    #[test]
    fn the_site_reaches_every_format() {
        let n = DECIDE_RUNS;
        let at = site_runs;
        let mut d = listener(n, 0, n);
        d.sites = vec![at(Some("tests/a.rs"), Some(12), site::Found::Workspace)];
        let claims = report::Advisor::Claims(None);
        let held = report::Report::of(&audit(1, Some(pairs(0, 2, 50)), Some(d.clone())), &claims);
        let md = held.markdown();
        assert!(
            md.contains(
                "- call site: `tests/a.rs:12` in `a::drops_a_listener`: the only site held in each \
                 of its 7 failing runs"
            ),
            "{md}"
        );
        assert!(!md.contains("line tables"), "{md}");
        let json: serde_json::Value = serde_json::from_str(&held.json()).unwrap();
        assert_eq!(
            json["tests"][0]["diagnosis"]["sites"][0]["site"]["line"],
            12
        );
        assert_eq!(json["tests"][0]["diagnosis"]["site"]["line"], 12);
        let junit = held.junit();
        assert!(
            junit.contains("<property name=\"site\" value=\"tests/a.rs:12\"/>"),
            "{junit}"
        );
        assert!(junit.contains("call site: `tests/a.rs:12`"), "{junit}");
        // One cause, at its site, listing its test; the markdown leads with it.
        assert_eq!(held.causes.len(), 1, "{:?}", held.causes);
        assert_eq!(held.causes[0].tests, ["t"]);
        assert!(
            md.contains("## Causes\n\n### `tests/a.rs:12` in `a::drops_a_listener` (t): "),
            "{md}"
        );
        let github = held.github();
        assert!(
            github.starts_with(
                "::error file=tests/a.rs,line=12,title=fdwindow audit%3A listener-survival breaks \
                 1 test::t: t"
            ),
            "{github}"
        );
        assert!(github.contains("%0Acall site: `tests/a.rs:12`"), "{github}");
        assert_eq!(github.lines().count(), 1, "{github}");
        // Two sites held in every failing run, told apart by holding each
        // alone: the one that breaks the test is named, the other listed.
        let mut breaks = at(Some("tests/a.rs"), Some(12), site::Found::Workspace);
        let mut harmless = at(Some("tests/a.rs"), Some(7), site::Found::Workspace);
        (breaks.only, harmless.only) = (false, false);
        let alone = |failures| site::AloneRuns {
            failures,
            runs: 3,
            held: 3,
        };
        (breaks.alone, harmless.alone) = (Some(alone(3)), Some(alone(0)));
        d.sites = vec![breaks.clone(), harmless.clone()];
        let md = report::Report::of(&audit(1, Some(pairs(0, 2, 50)), Some(d.clone())), &claims)
            .markdown();
        assert!(
            md.contains(
                "- call site: `tests/a.rs:12` in `a::drops_a_listener`: holding its copies alone \
                 failed 3/3; the other sites held alone: `tests/a.rs:7` in `a::drops_a_listener` (0/3)"
            ),
            "{md}"
        );
        breaks.alone = Some(alone(1));
        d.sites = vec![breaks, harmless];
        let md = report::Report::of(&audit(1, Some(pairs(0, 2, 50)), Some(d.clone())), &claims)
            .markdown();
        assert!(md.contains("- no call site breaks it by itself"), "{md}");
        d.sites = vec![at(None, None, site::Found::Symbol)];
        let held = report::Report::of(&audit(1, Some(pairs(0, 2, 50)), Some(d)), &claims);
        let md = held.markdown();
        assert!(
            md.contains("`a::drops_a_listener` (from the symbol table"),
            "{md}"
        );
        assert!(md.contains("debug = \"line-tables-only\""), "{md}");
    }

    /// Every test is a JUnit case: exposed a failure naming its hazard,
    /// failed alone an error, the rest pass; each with its time.
    #[test]
    fn junit_holds_every_test_with_its_cause() {
        let mut r = shard(1, 1, &["a", "b", "c"], Word::NotExposed).report;
        r.tests[0].verdict = Word::Exposed;
        r.tests[0].hazard = Some("flock-survival".into());
        r.tests[0]
            .advice
            .insert("flock-survival".into(), "unlock first".into());
        r.tests[1].verdict = Word::FailsAlone;
        let x = r.counted().junit();
        assert_eq!(x.matches("<testcase ").count(), 3, "{x}");
        assert_eq!(x.matches("<failure ").count(), 1, "{x}");
        assert_eq!(x.matches("<error ").count(), 1, "{x}");
        assert!(x.contains("flock-survival: unlock first"), "{x}");
        assert!(x.contains("classname=\"t\""), "{x}");
        assert_eq!(x.matches("time=\"0.010\"").count(), 3, "{x}");
        assert!(x.contains("<property name=\"alone\""), "{x}");
    }
}
