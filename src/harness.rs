//! The shared harness: a probe is a [`Probe`] declaration; [`main`] runs it and
//! prints its [`ProbeReport`](crate::report::ProbeReport) as JSON on stdout.
//!
//! The harness owns the bookkeeping every probe needs: parsing the command
//! line, the scratch folder, opening and closing each trial's window, counting
//! hits, stopping an arm at its first `unsupported` or `broken` trial, and
//! stopping everything cleanly on SIGINT or SIGTERM. A probe supplies only
//! what differs: its arms and one trial function each.

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;

use crate::child::{HeldChild, InheritingChild, SpawnRace};
use crate::platform::Platform;
use crate::report::{ArmReport, ProbeReport, SCHEMA_VERSION, Table, utc_now};
use crate::scratch::Scratch;
use crate::stats::{ABSENCE_THRESHOLD, decisive_trials};
use crate::verdict::{Outcome, Role, Tallies, Window};

/// A probe: one hazard and the arms that meet it.
#[derive(Debug)]
pub struct Probe {
    /// The hazard id, e.g. `flock-survival`.
    pub hazard: &'static str,
    /// One sentence: "Checks whether …".
    pub about: &'static str,
    /// Trials per arm in a deterministic window (fork-window, inherited, in-process).
    pub trials: u64,
    /// Time per arm in the posix-spawn race; the race goes on (up to three
    /// times as long) until it has the trials that make zero hits decisive.
    pub race: Duration,
    /// Controls first; each mitigation is judged against the control in its window.
    pub arms: &'static [Arm],
    /// For an observation probe: measures and returns its tables.
    pub observe: Option<fn(&Scratch, Settings) -> Vec<Table>>,
}

/// One way of writing the code that meets the hazard.
#[derive(Debug)]
pub struct Arm {
    /// The arm id, e.g. `unlock-then-close`.
    pub id: &'static str,
    /// Control or mitigation.
    pub role: Role,
    /// One sentence: what the arm's code does.
    pub about: &'static str,
    /// The windows it runs in.
    pub windows: &'static [Window],
    /// One trial: `Ok(true)` when the hazard showed.
    pub trial: fn(&mut Trial<'_>) -> Result<bool, Fault>,
}

/// Why a trial could not say whether the hazard showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The OS lacks the call or flag.
    Unsupported(String),
    /// Setup failed.
    Broken(String),
}

/// Attaches the failing step to an `io::Error`.
pub trait Context<T> {
    /// Any error means setup failed.
    fn ctx(self, step: &str) -> Result<T, Fault>;
    /// `ENOSYS`, `EINVAL` and `EOPNOTSUPP` mean the OS lacks the feature; other
    /// errors mean setup failed.
    fn ctx_feature(self, step: &str) -> Result<T, Fault>;
}

impl<T> Context<T> for io::Result<T> {
    fn ctx(self, step: &str) -> Result<T, Fault> {
        self.map_err(|e| Fault::Broken(format!("{step}: {e}")))
    }

    fn ctx_feature(self, step: &str) -> Result<T, Fault> {
        self.map_err(|e| match e.raw_os_error() {
            Some(libc::ENOSYS | libc::EINVAL | libc::EOPNOTSUPP) => {
                Fault::Unsupported(format!("{step}: {e}"))
            }
            _ => Fault::Broken(format!("{step}: {e}")),
        })
    }
}

/// What a trial function gets: its window, fresh scratch paths, and a place to
/// tally extra measurements.
#[derive(Debug)]
pub struct Trial<'a> {
    window: Window,
    scratch: &'a Scratch,
    tallies: &'a mut Tallies,
    /// Paths handed out, removed when the trial ends: tens of thousands of
    /// race trials must not pile up files for the scratch folder's removal.
    paths: std::cell::RefCell<Vec<std::path::PathBuf>>,
}

impl Trial<'_> {
    /// The window this trial runs in.
    pub fn window(&self) -> Window {
        self.window
    }

    /// A scratch path no other trial uses; whatever is created there is
    /// removed when the trial ends.
    pub fn fresh_path(&self, stem: &str) -> std::path::PathBuf {
        let path = self.scratch.fresh(stem);
        self.paths.borrow_mut().push(path.clone());
        path
    }

    /// Counts one trial's value of a named quantity (e.g. `"client" = "reset"`).
    pub fn tally(&mut self, quantity: &str, value: &str) {
        *self
            .tallies
            .entry(quantity.to_owned())
            .or_default()
            .entry(value.to_owned())
            .or_default() += 1;
    }

    /// Runs `act` while a child holds copies of this process's descriptors, as
    /// the window kind says: a child parked between fork and exec, an exec'd
    /// child holding those without close-on-exec, or (posix-spawn) the race
    /// thread already running. Create what the child must copy before calling.
    pub fn during_window<T>(&mut self, act: impl FnOnce() -> Result<T, Fault>) -> Result<T, Fault> {
        match self.window {
            Window::ForkWindow => {
                let held = HeldChild::hold().ctx("hold a child in the fork window")?;
                let result = act();
                held.release().ctx("release the held child")?;
                result
            }
            Window::Inherited => {
                let child = InheritingChild::spawn().ctx("spawn the inheriting child")?;
                let result = act();
                child.release().ctx("release the inheriting child")?;
                result
            }
            Window::PosixSpawn | Window::InProcess => act(),
        }
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Sets a flag on SIGINT and SIGTERM instead of dying, so every child is
/// reaped and every scratch path removed before the process exits.
pub fn catch_interrupts() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// Whether SIGINT or SIGTERM arrived since [`catch_interrupts`].
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Trial settings; the defaults come from the probe's declaration.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Trials per arm in a deterministic window.
    pub trials: u64,
    /// Time per arm in the posix-spawn race (at least `trials` trials are
    /// run, and more, up to three times as long, until zero hits are decisive).
    pub race: Duration,
    /// Also measure what only a thorough run measures (`--thorough`), e.g.
    /// the spawn cost swept over `RLIMIT_NOFILE`.
    pub thorough: bool,
}

#[derive(Parser, Debug)]
#[command(about = "An fdwindow probe: prints its report as JSON on stdout.")]
struct ProbeArgs {
    /// Trials per arm in a deterministic window (fork-window, inherited, in-process).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    trials: Option<u64>,
    /// Milliseconds per arm in the posix-spawn race.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    race_ms: Option<u64>,
    /// Run only these arms (repeatable).
    #[arg(long = "arm", value_name = "ARM")]
    arms: Vec<String>,
    /// Also make the slow observations a default run leaves out.
    #[arg(long)]
    thorough: bool,
}

/// A probe binary's `main`: parses the command line, runs the probe, prints
/// the report. Exit status 2 on bad input, 130 when interrupted.
pub fn main(probe: &Probe) -> ExitCode {
    let args = ProbeArgs::parse();
    if let Some(unknown) = args
        .arms
        .iter()
        .find(|a| !probe.arms.iter().any(|arm| arm.id == *a))
    {
        let known: Vec<_> = probe.arms.iter().map(|a| a.id).collect();
        eprintln!(
            "error: {} has no arm {unknown:?}; its arms: {}",
            probe.hazard,
            known.join(", ")
        );
        return ExitCode::from(2);
    }
    let settings = Settings {
        trials: args.trials.unwrap_or(probe.trials),
        race: args.race_ms.map_or(probe.race, Duration::from_millis),
        thorough: args.thorough,
    };
    catch_interrupts();
    match run(probe, settings, &args.arms) {
        Ok(report) => {
            let mut out = io::stdout().lock();
            let written = serde_json::to_writer_pretty(&mut out, &report)
                .map_err(io::Error::from)
                .and_then(|()| writeln!(out));
            match written {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: writing the report: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(RunError::Interrupted) => {
            eprintln!(
                "{}: interrupted; children reaped, scratch removed",
                probe.hazard
            );
            ExitCode::from(130)
        }
        Err(RunError::Setup(e)) => {
            eprintln!("error: {}: {e}", probe.hazard);
            ExitCode::FAILURE
        }
    }
}

/// Why a whole probe run stopped.
#[derive(Debug)]
pub enum RunError {
    /// SIGINT or SIGTERM.
    Interrupted,
    /// The scratch folder could not be made.
    Setup(io::Error),
}

/// Runs every arm (or those named in `only`) in every window it declares.
pub fn run(probe: &Probe, settings: Settings, only: &[String]) -> Result<ProbeReport, RunError> {
    let started = Instant::now();
    let started_at = utc_now();
    let scratch = Scratch::new(probe.hazard).map_err(RunError::Setup)?;
    let mut arms = Vec::new();
    for arm in probe
        .arms
        .iter()
        .filter(|a| only.is_empty() || only.iter().any(|o| o == a.id))
    {
        for &window in arm.windows {
            let outcome = run_arm(arm, window, settings, &scratch)?;
            arms.push(ArmReport {
                arm: arm.id.to_owned(),
                role: arm.role,
                window,
                about: arm.about.to_owned(),
                outcome,
            });
        }
    }
    if interrupted() {
        return Err(RunError::Interrupted);
    }
    let tables = probe
        .observe
        .map_or_else(Vec::new, |observe| observe(&scratch, settings));
    if interrupted() {
        return Err(RunError::Interrupted);
    }
    Ok(ProbeReport {
        schema: SCHEMA_VERSION,
        hazard: probe.hazard.to_owned(),
        about: probe.about.to_owned(),
        fdwindow_version: env!("CARGO_PKG_VERSION").to_owned(),
        platform: Platform::detect(),
        started_at,
        elapsed_ms: started.elapsed().as_millis() as u64,
        arms,
        tables,
    })
}

fn run_arm(
    arm: &Arm,
    window: Window,
    settings: Settings,
    scratch: &Scratch,
) -> Result<Outcome, RunError> {
    let mut tallies = Tallies::new();
    let (mut trials, mut hits) = (0u64, 0u64);
    // A race arm runs for its budget and then on, up to three budgets, until
    // it has enough trials for zero hits to be decisive at 1%. The race thread
    // ends by itself shortly after, should this thread never stop it.
    let started = Instant::now();
    let (race_end, race_cap) = (started + settings.race, started + settings.race * 3);
    let wanted = settings.trials.max(decisive_trials(ABSENCE_THRESHOLD));
    let race = match window {
        Window::PosixSpawn => match SpawnRace::start(race_cap + Duration::from_secs(60)) {
            Ok(race) => Some(race),
            Err(e) => {
                return Ok(Outcome::Broken {
                    error: format!("start the spawn race: {e}"),
                });
            }
        },
        _ => None,
    };
    loop {
        if interrupted() {
            return Err(RunError::Interrupted);
        }
        let enough = match &race {
            Some(race) => {
                let now = Instant::now();
                trials >= settings.trials
                    && race.spawns() > 0
                    && now >= race_end
                    && (trials >= wanted || now >= race_cap)
            }
            None => trials >= settings.trials,
        };
        if enough {
            break;
        }
        if let Some(race) = &race
            && !race.is_running()
        {
            break;
        }
        let mut trial = Trial {
            window,
            scratch,
            tallies: &mut tallies,
            paths: Default::default(),
        };
        let result = (arm.trial)(&mut trial);
        for path in trial.paths.take() {
            // Most are plain files; a trial may have made a folder; some paths
            // were never created. What is left goes with the scratch folder.
            if std::fs::remove_file(&path).is_err() {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
        match result {
            Ok(hit) => {
                trials += 1;
                hits += u64::from(hit);
            }
            Err(Fault::Unsupported(reason)) => return Ok(Outcome::Unsupported { reason }),
            Err(Fault::Broken(error)) => return Ok(Outcome::Broken { error }),
        }
    }
    if let Some(race) = race {
        match race.stop() {
            Ok(spawns) => {
                *tallies
                    .entry("race-spawns".into())
                    .or_default()
                    .entry("total".into())
                    .or_default() += spawns
            }
            Err(e) => {
                return Ok(Outcome::Broken {
                    error: format!("the spawn race failed: {e}"),
                });
            }
        }
    }
    Ok(Outcome::Observed {
        trials,
        hits,
        tallies,
    })
}
