//! `fdwindow stress`'s arguments, exit statuses and help texts.

use std::path::PathBuf;
use std::time::Duration;

use fdwindow_fix::pressure::{self};

use crate::cli::pressure_help::PRESSURE_KEYS;

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

/// `--runs`' help: it states [`DEFAULT_DURATION`].
pub(super) fn runs_help() -> String {
    format!(
        "Runs per arm. With neither --runs nor --duration, stress runs for {} s",
        DEFAULT_DURATION.as_secs()
    )
}

/// `--duration`'s help: it states [`DEFAULT_DURATION`].
pub(super) fn duration_help() -> String {
    format!(
        "Run for this long in all (both arms, alternating), e.g. 30s, 500ms. With neither \
         --duration nor --runs, stress runs for {} s",
        DEFAULT_DURATION.as_secs()
    )
}

/// `--pressure`'s long help: every key with its default and unit.
pub(super) fn pressure_help() -> String {
    format!(
        "The fork pressure: comma-separated KEY=VALUE pairs, any subset, e.g.\n\
         threads=8,hold=20ms,path=fork. Keys:\n\n{PRESSURE_KEYS}"
    )
}

/// `--fail-if-exposed`'s help: it states [`EXIT_EXPOSED`].
pub(super) fn fail_if_exposed_help() -> String {
    format!("Exit {EXIT_EXPOSED} when the verdict is exposed (without it, exposed exits {EXIT_OK})")
}

/// `--help`'s closing text: the verdicts and every exit status.
pub(super) fn after_help() -> String {
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
    pub(super) runs: Option<u64>,
    #[arg(long, help = duration_help(), value_parser = pressure::parse_duration)]
    pub(super) duration: Option<Duration>,
    /// The pressure, KEY=VALUE pairs: threads, hold, path, max-alive, for,
    /// match, drop (--help lists each with its unit and default)
    #[arg(long, value_name = "SPEC", long_help = pressure_help())]
    pub(super) pressure: Option<String>,
    /// Pressure only processes whose executable's file name matches this glob
    /// (`*` only), e.g. 'locks-*' for an integration test `locks` run by a script
    /// (`cargo test` and `cargo nextest run` need none: their test binaries run directly).
    #[arg(long = "match", value_name = "GLOB")]
    pub(super) exe_match: Option<String>,
    /// A preload library to use instead of the injector built into fdwindow.
    #[arg(long)]
    pub(super) injector: Option<PathBuf>,
    /// Kill a run after this many seconds and count it as failed.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub(super) timeout: u64,
    /// Copy the command's stdout and stderr to stderr, each line marked with
    /// its run and arm (default: discarded). The JSON summary stays alone on stdout.
    #[arg(long)]
    pub(super) show_output: bool,
    /// Keep each failing or timed-out run's output in this folder (created if missing).
    #[arg(long, value_name = "DIR")]
    pub(super) keep_failures: Option<PathBuf>,
    #[arg(long, help = fail_if_exposed_help())]
    pub(super) fail_if_exposed: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, num_args = 1..)]
    pub(super) command: Vec<String>,
}
