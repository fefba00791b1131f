//! A probe's entry point: its command line, the runner it follows, and the
//! report printed as JSON on stdout.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use clap::builder::TypedValueParser as _;

use crate::base::out;
use fdwindow_fix::base::interrupts::catch_interrupts;
use fdwindow_fix::pressure::HoldBy;

use super::check::check;
use super::declare::{Probe, Settings};
use super::schedule::run;
use crate::error::Error;

#[derive(Parser, Debug)]
#[command(about = "An fdwindow probe: prints its report as JSON on stdout.")]
pub(super) struct ProbeArgs {
    /// Most trials per arm in a deterministic window (fork-window, inherited, parked-call,
    /// in-process); a deterministic cell stops at 7 once its verdict is decided.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    trials: Option<u64>,
    /// Milliseconds per arm in the posix-spawn race.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=600_000))]
    race_ms: Option<u64>,
    /// Run only these arms (repeatable).
    #[arg(long = "arm", value_name = "ARM")]
    arms: Vec<String>,
    /// Also make the slow observations a default run leaves out, and race
    /// every mitigation, not only those no deterministic window tests.
    #[arg(long)]
    thorough: bool,
    /// Start no race round (one block of each racing arm) later than this
    /// many milliseconds after the probe started (the runner passes most of
    /// its timeout).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    deadline_ms: Option<u64>,
    /// How the fork window holds each trial's descriptor: fork (a child
    /// parked between fork and exec) or pass (a copy passed to one holder
    /// process, the way `fdwindow audit` holds a close; for comparing them).
    #[arg(
        long,
        value_name = "HOW",
        default_value = "fork",
        value_parser = clap::builder::PossibleValuesParser::new(HoldBy::ALL.map(HoldBy::id))
            .map(|id| HoldBy::from_id(&id).expect("clap lets only the ids through"))
    )]
    hold_by: HoldBy,
}

/// The variable through which `fdwindow run` gives each probe its own pid:
/// the probe ends, with every child in its process group, when that runner
/// dies ([`fdwindow_fix::sys::exit_with_parent`]; on Linux the runner's
/// parent-death signal does it, and this variable is not needed).
pub const PARENT_ENV: &str = "FDWINDOW_RUNNER_PID";

/// Watches the runner that [`PARENT_ENV`] names, when it is this process's
/// parent (a child that inherited the variable has another parent).
pub(super) fn follow_runner() {
    let Some(runner) = std::env::var(PARENT_ENV)
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
    else {
        return;
    };
    // Where the watch cannot be set up, the probe runs as before: the
    // runner's timeout ends it while the runner lives.
    let _ = fdwindow_fix::sys::exit_with_parent(runner);
}

/// `fdwindow probe HAZARD`: this program again, running one probe in a
/// process of its own (the runner's way to keep one probe's descriptors and
/// children from another's measurement; a probe's own helpers re-execute it
/// the same way). Arguments follow.
pub fn probe_command(hazard: &str) -> std::io::Result<std::process::Command> {
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["probe", hazard]);
    Ok(cmd)
}

/// A probe's `main` (`fdwindow probe HAZARD ARGS`): parses `args`, runs the
/// probe, prints the report. Exit status 2 on bad input, 130 when
/// interrupted, 141 when stdout or stderr was closed by its reader, 1 after
/// another failed write (every line goes through [`crate::base::out`]).
pub fn main(probe: &Probe, args: Vec<String>) -> ExitCode {
    let name = format!("fdwindow probe {}", probe.hazard);
    let args = match out::parse_args_from::<ProbeArgs, _, _>(std::iter::once(name).chain(args)) {
        Ok(args) => args,
        Err(status) => return status,
    };
    if let Err(e) = check(probe) {
        out::note!("error: bad probe declaration: {e}");
        return out::status(ExitCode::FAILURE);
    }
    if let Some(unknown) = args
        .arms
        .iter()
        .find(|a| !probe.arms.iter().any(|arm| arm.id == *a))
    {
        let known: Vec<_> = probe.arms.iter().map(|a| a.id).collect();
        out::note!(
            "error: {} has no arm {unknown:?}; its arms: {}",
            probe.hazard,
            known.join(", ")
        );
        return out::status(ExitCode::from(2));
    }
    let settings = Settings {
        trials: args.trials.unwrap_or(probe.trials),
        race: args.race_ms.map_or(probe.race, Duration::from_millis),
        thorough: args.thorough,
        deadline: args
            .deadline_ms
            .map(|ms| Instant::now() + Duration::from_millis(ms)),
        hold_by: args.hold_by,
    };
    catch_interrupts();
    follow_runner();
    let status = match run(probe, settings, &args.arms) {
        Ok(report) => match serde_json::to_string_pretty(&report) {
            Ok(json) => {
                out::stdout(&(json + "\n"));
                ExitCode::SUCCESS
            }
            Err(e) => {
                out::note!("error: writing the report: {e}");
                ExitCode::FAILURE
            }
        },
        Err(Error::Interrupted) => {
            out::note!(
                "{}: interrupted; children reaped, scratch removed",
                probe.hazard
            );
            fdwindow_fix::base::interrupts::exit_code()
        }
        Err(e) => {
            out::note!("error: {}: {e}", probe.hazard);
            e.exit_code()
        }
    };
    out::status(status)
}
