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
//! 3. A run fails when it exits non-zero, dies by a signal, or outlives
//!    `--timeout` (it is then killed).
//! 4. Each arm reports `k/N` with a 95% Wilson interval, the run time summed
//!    until its first failure, and the median of that time over its failures
//!    (the time between failures, each counted from the previous one).
//!
//! Progress goes to stderr; the summary, as JSON, to stdout.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use fdwindow::child::{GroupExit, wait_group};
use fdwindow::preload;
use fdwindow::pressure::{self, ENV_VAR, Spec};
use fdwindow::stats::Count;

/// The variable the injector appends its per-process line to.
const REPORT_VAR: &str = "FDWINDOW_PRESSURE_REPORT";

/// The arguments of `fdwindow stress`.
#[derive(clap::Args, Debug)]
pub struct StressArgs {
    /// Runs per arm.
    #[arg(long, conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    runs: Option<u64>,
    /// Run for this long in all (both arms, alternating), e.g. 30s, 500ms.
    #[arg(long, value_parser = pressure::parse_duration)]
    duration: Option<Duration>,
    /// The pressure: threads=N,hold=D,path=fork|spawn|mix (see fdwindow::pressure::Spec).
    #[arg(long, default_value = "")]
    pressure: String,
    /// Pressure only processes whose executable's file name matches this glob
    /// (`*` only), e.g. 'mycrate-*' for cargo's test binaries.
    #[arg(long = "match", value_name = "GLOB")]
    exe_match: Option<String>,
    /// A preload library to use instead of the injector built into fdwindow.
    #[arg(long)]
    injector: Option<PathBuf>,
    /// Kill a run after this many seconds and count it as failed.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    timeout: u64,
    /// Let the command's stdout and stderr through (default: discarded).
    #[arg(long)]
    show_output: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, num_args = 1..)]
    command: Vec<String>,
}

/// One arm's tally.
#[derive(Default)]
struct Arm {
    count: Count,
    /// Summed run time of this arm.
    time: Duration,
    /// Summed run time at each failure.
    failures_at: Vec<Duration>,
    first_failure_run: Option<u64>,
}

impl Arm {
    fn record(&mut self, failed: bool, took: Duration) {
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
            "failures": self.count.hits,
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
        format!(
            "{id:<9} {}/{} failed (95% CI {:.1}%–{:.1}%), {first}",
            self.count.hits,
            self.count.trials,
            ci.low * 100.0,
            ci.high * 100.0
        )
    }
}

/// Removes the injector's report file on every path out.
struct ReportFile(PathBuf);

impl Drop for ReportFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs `fdwindow stress`; `Err` is bad input (exit status 2).
pub fn run(args: StressArgs) -> Result<ExitCode, String> {
    if args.duration.is_some_and(|d| d.is_zero()) {
        return Err("--duration must be longer than 0".into());
    }
    let mut spec: Spec = args
        .pressure
        .parse()
        .map_err(|e| format!("--pressure: {e}"))?;
    if args.exe_match.is_some() {
        spec.exe_match = args.exe_match.clone();
    }
    let Some(preload_var) = preload::variable() else {
        return Err("unsupported: this OS has no preload mechanism fdwindow knows".into());
    };
    // The injector built into this binary, written to a private file that is
    // removed on every path out (`written` lives to the end of the run).
    let written;
    let injector = match &args.injector {
        Some(p) => {
            std::fs::canonicalize(p).map_err(|e| format!("--injector {}: {e}", p.display()))?
        }
        None => {
            written = pressure::injector().map_err(|e| match e.kind() {
                std::io::ErrorKind::Unsupported => format!("unsupported: {e}"),
                _ => format!("cannot write the injector: {e}"),
            })?;
            written.path().to_owned()
        }
    };
    check_library(&injector)?;
    let report = ReportFile(
        std::env::temp_dir().join(format!("fdwindow-stress-{}.pressure", std::process::id())),
    );
    let preload = match std::env::var(preload_var) {
        Ok(old) if !old.is_empty() => format!("{}:{old}", injector.display()),
        _ => injector.display().to_string(),
    };
    let (program, rest) = args.command.split_first().expect("clap requires a command");
    let make = |pressured: bool| {
        let mut cmd = Command::new(program);
        cmd.args(rest).stdin(Stdio::null());
        if !args.show_output {
            cmd.stdout(Stdio::null()).stderr(Stdio::null());
        }
        if pressured {
            cmd.env(preload_var, &preload)
                .env(ENV_VAR, spec.to_string())
                .env(REPORT_VAR, &report.0);
        } else {
            cmd.env_remove(ENV_VAR);
        }
        cmd
    };
    let timeout = Duration::from_secs(args.timeout);
    let started = Instant::now();
    let total = args.runs;
    let budget = args.duration;
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (mut alone, mut pressured) = (Arm::default(), Arm::default());
    eprintln!(
        "fdwindow stress: {} {} with pressure {spec}",
        total.map_or_else(
            || format!(
                "for {:.1} s,",
                budget.unwrap_or(Duration::from_secs(60)).as_secs_f64()
            ),
            |n| format!("{n} runs per arm,")
        ),
        args.command.join(" ")
    );
    fdwindow::harness::catch_interrupts();
    let mut warned = false;
    let mut last_line = Instant::now();
    loop {
        let done = alone.count.trials;
        let more = match (total, budget) {
            (Some(n), _) => done < n,
            (None, Some(d)) => started.elapsed() < d,
            (None, None) => started.elapsed() < Duration::from_secs(60),
        };
        if !more || fdwindow::harness::interrupted() {
            break;
        }
        for (arm, pressured_run) in [(&mut alone, false), (&mut pressured, true)] {
            let (failed, took) =
                run_once(make(pressured_run), timeout).map_err(|e| format!("{program}: {e}"))?;
            if failed && fdwindow::harness::interrupted() {
                break; // Ctrl-C reached the run too: it did not fail on its own.
            }
            arm.record(failed, took);
            if fdwindow::harness::interrupted() {
                break;
            }
        }
        if !warned && !report.0.exists() {
            warned = true;
            eprintln!(
                "\nwarning: no pressured process reported back (no executable matched {:?}, \
                 or the loader ignored {preload_var}): nothing may be under pressure",
                spec.exe_match.as_deref().unwrap_or("*")
            );
        }
        let n = alone.count.trials;
        let status = format!(
            "run {n}{}  alone {}/{n}  pressure {}/{n}",
            total.map_or(String::new(), |t| format!("/{t}")),
            alone.count.hits,
            pressured.count.hits
        );
        if tty {
            eprint!("\r{status}   ");
        } else if last_line.elapsed() >= Duration::from_secs(1)
            || total.is_some_and(|t| n % (t / 10).max(1) == 0)
        {
            // Not a terminal (a CI log): a line a second or every tenth.
            eprintln!("{status}");
            last_line = Instant::now();
        }
    }
    if tty {
        eprintln!();
    }
    let (processes, spawns) = read_report(&report.0);
    eprintln!("{}", alone.line("alone"));
    eprintln!("{}", pressured.line("pressure"));
    eprintln!("pressure ran in {processes} processes and spawned {spawns} children");
    let summary = serde_json::json!({
        "command": args.command,
        "platform": fdwindow::platform::Platform::detect(),
        "fdwindow_version": env!("CARGO_PKG_VERSION"),
        "pressure": spec.to_string(),
        // The built-in injector's file is gone by the time anyone reads this.
        "injector": args.injector.as_ref().map_or_else(
            || "built-in".to_owned(),
            |p| p.display().to_string()
        ),
        "pressured_processes": processes,
        "pressure_spawns": spawns,
        "interrupted": fdwindow::harness::interrupted(),
        "arms": [alone.json("alone"), pressured.json("pressure")],
    });
    crate::emit(&(serde_json::to_string_pretty(&summary).expect("plain JSON") + "\n"));
    Ok(if fdwindow::harness::interrupted() {
        ExitCode::from(130)
    } else if processes == 0 && pressured.count.trials > 0 {
        // The "pressure" arm ran without pressure: its k/N compares nothing.
        eprintln!(
            "error: no pressured process reported back; the pressure arm was not under pressure"
        );
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Fails unless `path` is a shared library the loader could preload: an ELF
/// shared object (`e_type` `ET_DYN`) or a Mach-O dylib (`MH_DYLIB`, or a
/// universal file). Anything else would run every command unpressured.
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/elf.5.html>
/// - <https://github.com/apple-oss-distributions/xnu/blob/main/EXTERNAL_HEADERS/mach-o/loader.h>
fn check_library(path: &Path) -> Result<(), String> {
    use std::io::Read;
    let mut head = [0u8; 20];
    let read = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|e| format!("injector {}: {e}", path.display()))?;
    let head = &head[..read];
    let is_library = match head {
        // ELF: e_type at 16, in the byte order EI_DATA (byte 5) names.
        [0x7f, b'E', b'L', b'F', _, data, ..] if head.len() >= 18 => {
            let t = [head[16], head[17]];
            let e_type = if *data == 2 {
                u16::from_be_bytes(t)
            } else {
                u16::from_le_bytes(t)
            };
            e_type == 3
        }
        // 64-bit Mach-O, little-endian: filetype at 12.
        [0xcf, 0xfa, 0xed, 0xfe, ..] if head.len() >= 16 => {
            u32::from_le_bytes([head[12], head[13], head[14], head[15]]) == 6
        }
        // A universal (fat) file: slices of several architectures.
        [0xca, 0xfe, 0xba, 0xbe, ..] => true,
        _ => false,
    };
    if is_library {
        Ok(())
    } else {
        Err(format!(
            "injector {} is not a shared library; build it with `cargo build --release -p fdwindow-inject`",
            path.display()
        ))
    }
}

/// Runs the command once: whether it failed, and how long it took.
fn run_once(mut cmd: Command, timeout: Duration) -> std::io::Result<(bool, Duration)> {
    let start = Instant::now();
    // Its own process group, so a timeout or Ctrl-C also ends what the
    // command started (a test binary under cargo, with its pressure threads);
    // the terminal's Ctrl-C reaches only us, and wait_group passes it on.
    let mut child = cmd.process_group(0).spawn()?;
    let failed = match wait_group(&mut child, start + timeout, fdwindow::harness::interrupted)? {
        GroupExit::Exited(status) => !status.success(),
        // A killed run is a failed run whatever its status; one that Ctrl-C
        // stopped is set aside by the caller, which sees `interrupted()`.
        GroupExit::TimedOut | GroupExit::Stopped => true,
    };
    Ok((failed, start.elapsed()))
}

/// The injector's lines: `pid spawns elapsed covered exe`. (processes, spawns).
fn read_report(path: &Path) -> (u64, u64) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().fold((0, 0), |(p, s), line| {
        let spawns = line
            .split(' ')
            .nth(1)
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        (p + 1, s + spawns)
    })
}
