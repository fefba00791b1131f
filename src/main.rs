//! The `fdwindow` command: run the probes, render the matrix, answer verdicts.
//!
//! Exit status: 0 success, 1 a probe or a write failed (stdout included: a
//! full disk), 2 bad input (unknown hazard, arm or platform, bad numbers,
//! a missing probe program, corrupt, older or future results files, an
//! unwritable results folder), 128+N stopped by signal N (130 SIGINT, 143
//! SIGTERM, 129 SIGHUP),
//! 141 stdout or stderr closed by its reader (quietly, as a shell pipeline
//! expects; a command at work winds down first, as on Ctrl-C). Every line
//! goes through one writer, `fdwindow::base::out`: no write panics.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use fdwindow::base::out;
use fdwindow::error::{Error, Result};
use fdwindow::evidence::query::{arm_verdict, cell_detail, cell_line};
use fdwindow::evidence::results;
use fdwindow::evidence::sources::{self, Source, Sources};
use fdwindow::report::ResultsFile;
use fdwindow::report::platform::Platform;
use fdwindow::report::verdict::Window;
use fdwindow::runner::{self, RunOptions, Written};
use fdwindow::{note, say};
use fdwindow_fix::base::interrupts;

mod cli;
// The probes live in the top-level probes/ folder, one file per behaviour.
#[path = "../probes/mod.rs"]
mod probes;

use cli::{audit, stress};

#[derive(Parser)]
#[command(
    version,
    about = "Measure descriptor-inheritance hazards and the fixes that hold, per OS."
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run every probe, merge into results/local/<platform>.json, regenerate its MATRIX.md.
    Run {
        /// The results folder (results/local/ is this machine's, git-ignored;
        /// `--results results` adds this machine to the committed matrix).
        #[arg(long, default_value = "results/local")]
        results: PathBuf,
        /// The program that runs each probe as `EXE probe HAZARD` (default:
        /// this one; for tests).
        #[arg(long, hide = true)]
        probe_exe: Option<PathBuf>,
        /// Most trials per arm in deterministic and in-process windows (a
        /// deterministic cell stops at 7 once its verdict is decided).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
        trials: Option<u64>,
        /// Milliseconds per arm in the posix-spawn race (a default run's
        /// time; a thorough run gives each arm up to 16 times this).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=600_000))]
        race_ms: Option<u64>,
        /// Also measure what only a thorough run measures: every mitigation
        /// in the posix-spawn race (a default run races the controls, whose
        /// rate it measures, and only the fixes no deterministic window
        /// tests), each until its verdict is decided or its budget is spent,
        /// and the RLIMIT_NOFILE sweep, which a later default run keeps. A
        /// default run's report replaces the thorough one's race cells.
        #[arg(long)]
        thorough: bool,
        /// Hard timeout per probe, in seconds.
        #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: u64,
        /// Run only this hazard's probe (repeatable).
        #[arg(long = "only", value_name = "HAZARD")]
        only: Vec<String>,
    },
    /// Regenerate MATRIX.md, the chart and the README's generated sections from the results files.
    Matrix {
        /// The results folder.
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// The README whose `<!-- fdwindow:begin NAME -->` sections to rewrite
        /// (default: ./README.md when --results is the default and it has sections).
        #[arg(long)]
        readme: Option<PathBuf>,
        /// Do not write: exit 1 if any generated file or section is not what the results give.
        #[arg(long)]
        check: bool,
    },
    /// Print one line per window, `<window> <verdict> <hits>/<trials> (<95% interval>)`
    /// (spawns in a race window, p against the control for a mitigation), for one arm.
    Verdict {
        /// Hazard id, e.g. flock-survival.
        hazard: String,
        /// Arm id, e.g. unlock-then-close.
        arm: String,
        /// One window (default: every window the arm ran in, one line each).
        #[arg(long)]
        window: Option<String>,
        /// Platform id (default: this machine's, or the only results file).
        #[arg(long)]
        platform: Option<String>,
        /// The results folder (default: this machine's results/local/, where
        /// `fdwindow run` writes, beside the committed results/; a platform
        /// in both is read from results/local/).
        #[arg(long)]
        results: Option<PathBuf>,
    },
    /// Advice for a review: the valid fixes, the invalid ones and why, with evidence.
    Advise {
        /// Hazard id (see --list).
        #[arg(required_unless_present = "list")]
        hazard: Option<String>,
        /// Which OS to advise on (default: this one).
        #[arg(long, value_parser = ["linux", "macos"])]
        os: Option<String>,
        /// Output format.
        #[arg(long, default_value = "md", value_parser = ["md", "json"])]
        format: String,
        /// List every hazard instead.
        #[arg(long, conflicts_with = "hazard")]
        list: bool,
        /// The results folder (default: this machine's results/local/, where
        /// `fdwindow run` writes, beside the committed results/; a platform
        /// in both is read from results/local/).
        #[arg(long)]
        results: Option<PathBuf>,
    },
    /// Merge results files (e.g. CI artifacts from several OSes) into one folder and regenerate MATRIX.md.
    Merge {
        /// Results files, or folders searched recursively for them.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// The results folder to merge into.
        #[arg(long, default_value = "results")]
        results: PathBuf,
    },
    /// Hold the encoded claims against every results file (exit 1 on a failure):
    /// for CI and the tests.
    Check {
        /// The results folder (default: this machine's results/local/, where
        /// `fdwindow run` writes, beside the committed results/; a platform
        /// in both is read from results/local/).
        #[arg(long)]
        results: Option<PathBuf>,
    },
    /// Print the verdict table of one platform.
    Summary {
        /// Platform id (default: this machine's, or the only results file).
        #[arg(long)]
        platform: Option<String>,
        /// The results folder (default: this machine's results/local/, where
        /// `fdwindow run` writes, beside the committed results/; a platform
        /// in both is read from results/local/).
        #[arg(long)]
        results: Option<PathBuf>,
    },
    /// Run a command N times alone and N times under fork pressure (injected),
    /// and compare failures: `k/N` with 95% intervals, time to first failure.
    Stress(stress::StressArgs),
    /// Boot each kernel under QEMU with the probes in an initramfs, and merge
    /// its results under the guest's platform (its release and accelerator).
    Vm {
        /// A kernel image, or a Debian/Ubuntu linux-image-*.deb (repeatable).
        #[arg(long = "kernel", value_name = "FILE", required = true, num_args = 1..)]
        kernels: Vec<PathBuf>,
        /// Run only this hazard's probe (repeatable).
        #[arg(long = "only", value_name = "HAZARD")]
        only: Vec<String>,
        /// The accelerator: auto tries KVM with a smoke boot, else TCG.
        #[arg(long, default_value = "auto", value_parser = ["auto", "kvm", "tcg"])]
        accel: String,
        /// The results folder.
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// Hard timeout per boot, in seconds.
        #[arg(long, default_value_t = 900, value_parser = clap::value_parser!(u64).range(1..=86_400))]
        timeout: u64,
    },
    /// Inside a guest of `fdwindow vm`: send the results down the results port.
    #[command(hide = true)]
    VmSend {
        /// The serial port of the results channel.
        #[arg(long)]
        port: PathBuf,
        /// `fdwindow run`'s exit status.
        #[arg(long, allow_negative_numbers = true)]
        status: i32,
        /// The guest's results folder (none for a smoke boot).
        #[arg(long)]
        results: Option<PathBuf>,
    },
    /// Audit a test suite: which tests fail under fork pressure and not alone,
    /// which class of inherited descriptor breaks them, and the fix.
    Audit(audit::AuditArgs),
    /// Write a preload library built into fdwindow (e.g. the injector) to a
    /// file, for LD_PRELOAD / DYLD_INSERT_LIBRARIES by hand.
    Preload {
        /// The library (`inject`).
        name: String,
        /// Where to write it.
        #[arg(long)]
        out: PathBuf,
    },
    /// Runs one probe in this process and prints its report (what `fdwindow
    /// run` starts once per probe, each in a process of its own).
    #[command(hide = true)]
    Probe {
        /// The hazard, e.g. flock-survival.
        hazard: String,
        /// The probe's own arguments (`--trials`, `--arm`, …).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The audit's own: cargo's test runner while the audit learns the
    /// environment cargo gives each test binary (see src/cli/discover.rs).
    #[command(name = "__record-env", hide = true)]
    RecordEnv {
        /// The file the record is appended to.
        file: PathBuf,
        /// The test binary and the arguments cargo would run it with.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 1..)]
        run: Vec<String>,
    },
}

fn main() -> ExitCode {
    // Help, version and usage errors through the writer too: clap's own
    // `exit` drops a failed write (`--help >/dev/full` would exit 0).
    let cli = match out::parse_args::<Cli>() {
        Ok(cli) => cli,
        Err(status) => return status,
    };
    // The commands that run others' processes kill them by process group;
    // its orphans come here to be reaped, so none outlives the command.
    if matches!(
        cli.command,
        Cmd::Run { .. } | Cmd::Stress(_) | Cmd::Vm { .. } | Cmd::Audit(_)
    ) && let Err(e) = fdwindow_fix::sys::adopt_orphans()
    {
        note!("warning: cannot adopt orphaned processes (PR_SET_CHILD_SUBREAPER): {e}");
    }
    let result = match cli.command {
        Cmd::Run {
            results,
            probe_exe,
            trials,
            race_ms,
            thorough,
            timeout,
            only,
        } => run(results, probe_exe, trials, race_ms, thorough, timeout, only),
        Cmd::Matrix {
            results,
            readme,
            check,
        } => matrix(&results, readme, check),
        Cmd::Verdict {
            hazard,
            arm,
            window,
            platform,
            results,
        } => verdict(
            results.as_deref(),
            platform.as_deref(),
            &hazard,
            &arm,
            window.as_deref(),
        ),
        Cmd::Advise {
            hazard,
            os,
            format,
            list,
            results,
        } => advise(results.as_deref(), hazard.as_deref(), os, &format, list),
        Cmd::Merge { inputs, results } => merge(&inputs, &results),
        Cmd::Check { results } => check(results.as_deref()),
        Cmd::Summary { platform, results } => summary(results.as_deref(), platform.as_deref()),
        Cmd::Stress(args) => stress::run(args),
        Cmd::Vm {
            kernels,
            only,
            accel,
            results,
            timeout,
        } => vm(kernels, only, &accel, results, timeout),
        Cmd::VmSend {
            port,
            status,
            results,
        } => match fdwindow::vm::send(&port, status, results.as_deref()) {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(e) => {
                note!("error: {e}");
                Ok(ExitCode::FAILURE)
            }
        },
        Cmd::Audit(args) => audit::run(args),
        Cmd::Preload { name, out } => write_preload(&name, &out),
        Cmd::Probe { hazard, args } => match probes::find(&hazard) {
            Some(main) => return main(args),
            None => Err(Error::Usage(format!(
                "no probe for hazard {hazard:?}; probes: {}",
                runner::PROBES.join(", ")
            ))),
        },
        Cmd::RecordEnv { file, run } => {
            cli::discover::record_env(&file, &run).map(|()| ExitCode::SUCCESS)
        }
    };
    // 141 after a closed pipe, 1 after another failed write (see base::out).
    out::status(result.unwrap_or_else(|e| {
        note!("error: {e}");
        e.exit_code()
    }))
}

/// `fdwindow preload NAME --out PATH`: the library's bytes, written atomically.
fn write_preload(name: &str, out: &Path) -> Result<ExitCode> {
    let names = || {
        let all: Vec<&str> = fdwindow::cotenant::preload::Library::ALL
            .iter()
            .map(|l| l.name())
            .collect();
        all.join(", ")
    };
    let library = fdwindow::cotenant::preload::Library::named(name).ok_or_else(|| {
        Error::Usage(format!(
            "no preload library {name:?}; fdwindow ships {}",
            names()
        ))
    })?;
    let bytes = library
        .bytes()
        .map_err(|e| Error::Usage(format!("unsupported: {e}")))?;
    results::write_atomic(out, bytes)
        .map_err(|e| Error::Usage(format!("cannot write {}: {e}", out.display())))?;
    note!(
        "wrote {} ({} bytes); preload it with {}",
        out.display(),
        bytes.len(),
        fdwindow::cotenant::preload::variable().unwrap_or("the loader's preload variable")
    );
    Ok(ExitCode::SUCCESS)
}

fn run(
    results_dir: PathBuf,
    probe_exe: Option<PathBuf>,
    trials: Option<u64>,
    race_ms: Option<u64>,
    thorough: bool,
    timeout: u64,
    only: Vec<String>,
) -> Result<ExitCode> {
    let exe = match probe_exe {
        Some(exe) => exe,
        None => std::env::current_exe().map_err(|e| {
            Error::Usage(format!("cannot locate this program to run the probes: {e}"))
        })?,
    };
    interrupts::catch_interrupts();
    let opts = RunOptions {
        results_dir,
        exe,
        trials,
        race_ms,
        thorough,
        timeout: Duration::from_secs(timeout),
        only,
    };
    match runner::run(&opts) {
        Ok(summary) => {
            let (path, matrix) = (
                summary.results_path.display(),
                opts.results_dir.join("MATRIX.md"),
            );
            let matrix = matrix.display();
            let what = match summary.written {
                Written::Created => format!(
                    "wrote {path}, a platform the folder had no file of (the matrix gains its column), and {matrix}"
                ),
                Written::Updated => format!("updated {path} and {matrix}"),
                Written::Unchanged => format!("no probe reported: {path} and {matrix} unchanged"),
            };
            out::stdout(&format!(
                "{}\n{what} in {:.1} s\n",
                summary_table(&summary.results, &path.to_string()),
                summary.elapsed.as_secs_f64()
            ));
            if summary.written != Written::Unchanged {
                let times = probe_times(&summary.results, &opts.only, &summary.failures);
                out::stdout(&format!("{times}\n"));
            }
            if summary.failures.is_empty() {
                Ok(ExitCode::SUCCESS)
            } else {
                for (hazard, why) in &summary.failures {
                    note!("error: {hazard}: {why} (its previous results were kept)");
                }
                Ok(ExitCode::FAILURE)
            }
        }
        Err(Error::Interrupted) => {
            note!("interrupted: probes killed, results unchanged");
            Ok(fdwindow_fix::base::interrupts::exit_code())
        }
        Err(e) => Err(e),
    }
}

fn vm(
    kernels: Vec<PathBuf>,
    only: Vec<String>,
    accel: &str,
    results_dir: PathBuf,
    timeout: u64,
) -> Result<ExitCode> {
    use fdwindow::vm::{self, Accel, AccelChoice};
    let bin_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_owned))
        .ok_or_else(|| Error::Usage("cannot locate this fdwindow to pack into the guest".into()))?;
    let accel = match accel {
        "kvm" => AccelChoice::Only(Accel::Kvm),
        "tcg" => AccelChoice::Only(Accel::Tcg),
        _ => AccelChoice::Auto,
    };
    interrupts::catch_interrupts();
    let opts = vm::VmOptions {
        kernels,
        only,
        accel,
        results_dir,
        timeout: Duration::from_secs(timeout),
        bin_dir,
        cache_dir: vm::default_cache_dir(),
    };
    let print = |run: &vm::KernelRun| {
        let boot = run
            .boot_time
            .map_or_else(String::new, |b| format!(", boot {:.1} s", b.as_secs_f64()));
        match (&run.results_path, &run.broken) {
            (Some(path), None) => say!(
                "{}: ok under {} in {:.1} s{boot}: {}",
                run.source.display(),
                run.accel.id(),
                run.elapsed.as_secs_f64(),
                path.display()
            ),
            (path, Some((why, tail))) => {
                say!(
                    "{}: broken under {} after {:.1} s{boot}: {why}{}",
                    run.source.display(),
                    run.accel.id(),
                    run.elapsed.as_secs_f64(),
                    path.as_ref()
                        .map_or_else(String::new, |p| format!(" ({} written)", p.display()))
                );
                if !tail.is_empty() {
                    say!("  console's last lines:");
                    for line in tail {
                        say!("  | {line}");
                    }
                }
            }
            (None, None) => say!("{}: no results", run.source.display()),
        }
    };
    match vm::run(&opts, print) {
        Ok(runs) if runs.iter().all(|r| r.broken.is_none()) => Ok(ExitCode::SUCCESS),
        Ok(_) => Ok(ExitCode::FAILURE),
        Err(Error::Interrupted) => {
            note!("interrupted: the VM was killed; kernels done before were merged");
            Ok(fdwindow_fix::base::interrupts::exit_code())
        }
        Err(e) => Err(e),
    }
}

fn matrix(dir: &Path, readme: Option<PathBuf>, check: bool) -> Result<ExitCode> {
    // A writer holds the folder's lock from reading to writing, so a run that
    // lands meanwhile is never overwritten by a matrix of the files before it.
    // The lock would create a missing folder: a mistyped --results must not
    // become a new, empty results folder with an empty matrix.
    results::check_folder(dir, false)?;
    // The README only when named, or when this is the project's own folder;
    // a named one without a section to rewrite is a mistake, said before
    // anything is written.
    let readme = match readme {
        Some(path) => {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
            if !fdwindow::views::readme::has_sections(&text) {
                return Err(Error::Usage(format!(
                    "{}: no generated section (`<!-- fdwindow:begin NAME -->`) to rewrite",
                    path.display()
                )));
            }
            Some((path, text))
        }
        // `results`, `./results/` or its full path alike.
        None if std::fs::canonicalize(dir)
            .is_ok_and(|d| std::fs::canonicalize("results").is_ok_and(|r| r == d)) =>
        {
            let default = Path::new("README.md");
            std::fs::read_to_string(default)
                .ok()
                .filter(|t| fdwindow::views::readme::has_sections(t))
                .map(|t| (default.to_owned(), t))
        }
        None => None,
    };
    let _lock = if check {
        None
    } else {
        interrupts::catch_interrupts();
        match results::FolderLock::acquire(dir, interrupts::interrupted) {
            Ok(lock) => Some(lock),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                note!("interrupted while waiting for the results folder's lock: nothing written");
                return Ok(fdwindow_fix::base::interrupts::exit_code());
            }
            Err(e) => return Err(Error::Usage(format!("results folder is not writable: {e}"))),
        }
    };
    let mut outputs: Vec<(PathBuf, String)> = runner::render_outputs(dir)?
        .into_iter()
        .map(|(name, text)| (dir.join(name), text))
        .collect();
    if let Some((path, text)) = readme {
        // The README quotes MATRIX.md as rendered above, from the same files.
        let matrix_md = outputs
            .iter()
            .find(|(p, _)| p.file_name() == Some(std::ffi::OsStr::new("MATRIX.md")))
            .map(|(_, text)| text.clone())
            .unwrap_or_default();
        let inputs = fdwindow::views::readme::Inputs::load(dir, matrix_md)?;
        let rendered = fdwindow::views::readme::rewrite(&text, &inputs)
            .map_err(|e| Error::Usage(format!("{}: {e}", path.display())))?;
        outputs.push((path, rendered));
    }
    if check {
        let mut stale = false;
        for (path, rendered) in &outputs {
            if std::fs::read_to_string(path).unwrap_or_default() != *rendered {
                note!(
                    "{} is stale: run `fdwindow matrix` (or `make matrix`)",
                    path.display()
                );
                stale = true;
            }
        }
        return Ok(if stale {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        });
    }
    for (path, rendered) in &outputs {
        if std::fs::read_to_string(path).is_ok_and(|t| t == *rendered) {
            continue;
        }
        if let Err(e) = results::write_atomic(path, rendered.as_bytes()) {
            return Err(Error::Usage(format!("cannot write: {e}")));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The results file for `--platform`, else this machine's, else the only
/// one, and where it was read.
fn pick_platform(named: Option<&Path>, platform: Option<&str>) -> Result<(ResultsFile, Source)> {
    let mut sources = Sources::load(named)?;
    let ids: Vec<String> = sources.read.iter().map(|s| s.platform.clone()).collect();
    let wanted = platform.map(str::to_owned).or_else(|| {
        let mine = sources.read.iter().find(|s| s.this_machine);
        match (mine, ids.as_slice()) {
            (Some(s), _) => Some(s.platform.clone()),
            (None, [only]) => Some(only.clone()),
            (None, _) => None,
        }
    });
    let folders = || match named {
        Some(dir) => dir.display().to_string(),
        None => format!("{} and {}", sources::LOCAL, sources::COMMITTED),
    };
    let Some(wanted) = wanted else {
        return Err(Error::Usage(format!(
            "{} {} no results for this machine ({}); run `make probe-linux` (it writes {}), pass --results DIR where a run wrote them, or --platform (one of: {})",
            folders(),
            if named.is_some() { "holds" } else { "hold" },
            sources.here,
            sources::LOCAL,
            if ids.is_empty() {
                "none".into()
            } else {
                ids.join(", ")
            }
        )));
    };
    let Some(i) = ids.iter().position(|id| *id == wanted) else {
        return Err(Error::Usage(format!(
            "no results for platform {wanted:?} in {}; have: {}",
            folders(),
            ids.join(", ")
        )));
    };
    Ok((sources.files.swap_remove(i), sources.read.swap_remove(i)))
}

/// Says on stderr which file answered (stdout stays one line per window),
/// once the answer is out: not after a closed or failed stdout.
fn said_from(source: &Source) {
    if out::stdout_written() {
        note!("from {}", read_from(source));
    }
}

/// `PATH` or `PATH (this machine)`: where an answer's file was read.
fn read_from(source: &Source) -> String {
    let mark = if source.this_machine {
        " (this machine)"
    } else {
        ""
    };
    format!("{}{mark}", source.file.display())
}

/// `fdwindow summary`: every arm's verdict on one platform.
fn summary(named: Option<&Path>, platform: Option<&str>) -> Result<ExitCode> {
    let (file, source) = pick_platform(named, platform)?;
    out::stdout(&summary_table(&file, &read_from(&source)));
    Ok(ExitCode::SUCCESS)
}

fn verdict(
    named: Option<&Path>,
    platform: Option<&str>,
    hazard: &str,
    arm: &str,
    window: Option<&str>,
) -> Result<ExitCode> {
    let window = window
        .map(|w| {
            Window::from_id(w).ok_or_else(|| {
                let all: Vec<_> = Window::ALL.iter().map(|w| w.id()).collect();
                Error::Usage(format!("unknown window {w:?}; windows: {}", all.join(", ")))
            })
        })
        .transpose()?;
    let (file, source) = pick_platform(named, platform)?;
    let Some(report) = file.probes.get(hazard) else {
        let known: Vec<_> = file.probes.keys().map(String::as_str).collect();
        return Err(Error::Usage(format!(
            "unknown hazard {hazard:?}; {} has: {}",
            file.platform.id,
            known.join(", ")
        )));
    };
    let arms: Vec<_> = report.arms.iter().filter(|a| a.arm == arm).collect();
    // An observation has no verdict: print the row's measured values instead.
    if let Some((table, row)) = report.tables.iter().find_map(|t| {
        t.rows
            .iter()
            .find(|r| r.first().is_some_and(|k| k == arm))
            .map(|r| (t, r))
    }) {
        let cells: Vec<String> = table
            .columns
            .iter()
            .zip(row)
            .skip(1)
            .map(|(c, v)| format!("{c}={v}"))
            .collect();
        out::stdout(&format!("observed {}\n", cells.join(" ")));
        said_from(&source);
        return Ok(ExitCode::SUCCESS);
    }
    // Cells the run left out on purpose (a default run's race windows hold
    // no mitigation that a deterministic window decides) say so.
    let left_out: Vec<String> = report
        .left_out
        .iter()
        .filter(|l| l.arm == arm && window.is_none_or(|w| l.window == w))
        .map(|l| format!("{} {}\n", l.window.id(), l.why))
        .collect();
    if arms.is_empty() && left_out.is_empty() {
        let mut known: Vec<_> = report.arms.iter().map(|a| a.arm.as_str()).collect();
        known.dedup();
        // An observation's rows are what it can be asked for.
        let mut rows: Vec<&str> = Vec::new();
        for row in report.tables.iter().flat_map(|t| &t.rows) {
            if let Some(key) = row.first().filter(|k| !rows.contains(&k.as_str())) {
                rows.push(key);
            }
        }
        return Err(Error::Usage(match (known.is_empty(), rows.is_empty()) {
            (true, false) => format!(
                "unknown row {arm:?} for {hazard}; rows: {}",
                rows.join(", ")
            ),
            _ => format!(
                "unknown arm {arm:?} for {hazard}; arms: {}",
                known.join(", ")
            ),
        }));
    }
    let chosen: Vec<_> = arms
        .into_iter()
        .filter(|a| window.is_none_or(|w| a.window == w))
        .collect();
    if chosen.is_empty() && left_out.is_empty() {
        return Err(Error::Usage(format!(
            "{hazard} {arm} did not run in window {}",
            window.map_or("", Window::id)
        )));
    }
    // One line per window, window first: counts from different windows are
    // never added together.
    let lines: String = chosen
        .into_iter()
        .map(|a| format!("{} {}\n", a.window.id(), cell_line(report, a)))
        .chain(left_out)
        .collect();
    out::stdout(&lines);
    said_from(&source);
    Ok(ExitCode::SUCCESS)
}

fn check(named: Option<&Path>) -> Result<ExitCode> {
    let sources = Sources::load(named)?;
    if sources.files.is_empty() {
        return Err(Error::Usage(format!(
            "{} no results files; run `make probe-linux` first",
            named.map_or_else(
                || format!("{} and {} hold", sources::LOCAL, sources::COMMITTED),
                |d| format!("{} holds", d.display())
            )
        )));
    }
    let mut report = fdwindow::evidence::knowledge::check(&sources.files);
    let declared: Vec<_> = crate::probes::ALL.iter().map(|(probe, _)| *probe).collect();
    report
        .failures
        .extend(fdwindow::evidence::knowledge::undeclared(
            &sources.files,
            &declared,
        ));
    let read: String = sources
        .describe(None)
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    out::stdout(&format!("{read}{report}"));
    Ok(if report.failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn merge(inputs: &[PathBuf], dir: &Path) -> Result<ExitCode> {
    // Read every input first: one bad input changes nothing.
    let mut incoming = Vec::new();
    for input in inputs {
        incoming.extend(results::collect(input)?);
    }
    results::check_folder(dir, true)?;
    results::load_dir(dir)?;
    results::check_writable(dir)
        .map_err(|e| Error::Usage(format!("results folder is not writable: {e}")))?;
    interrupts::catch_interrupts();
    // Read, merge and write under the folder's lock, so a run that finishes
    // meanwhile loses nothing.
    let lock = match results::FolderLock::acquire(dir, interrupts::interrupted) {
        Ok(lock) => lock,
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
            note!("interrupted: nothing merged");
            return Ok(fdwindow_fix::base::interrupts::exit_code());
        }
        Err(e) => {
            note!("error: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut all = results::load_dir(dir)?;
    all.extend(incoming);
    let merged = results::merge(all);
    let mut lines = String::new();
    for file in &merged {
        let json = serde_json::to_string_pretty(file).expect("results serialise") + "\n";
        let path = dir.join(format!("{}.json", file.platform.id));
        if let Err(e) = results::write_atomic(&path, json.as_bytes()) {
            note!("error: {e}");
            return Ok(ExitCode::FAILURE);
        }
        lines.push_str(&format!(
            "{}: {} probes\n",
            path.display(),
            file.probes.len()
        ));
    }
    let matrix = runner::write_matrix(dir);
    drop(lock);
    match matrix {
        Ok(()) => {
            out::stdout(&lines);
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            note!("error: {e}");
            Ok(ExitCode::FAILURE)
        }
    }
}

fn advise(
    named: Option<&Path>,
    hazard: Option<&str>,
    os: Option<String>,
    format: &str,
    list: bool,
) -> Result<ExitCode> {
    let sources = Sources::load(named)?;
    let files = &sources.files;
    if list {
        let lines: String = fdwindow::views::advise::hazards(files)
            .into_iter()
            .map(|(id, about)| format!("{id:<22} {about}\n"))
            .collect();
        out::stdout(&lines);
        return Ok(ExitCode::SUCCESS);
    }
    let hazard = hazard.expect("clap requires a hazard without --list");
    let os = os.unwrap_or_else(|| Platform::detect().os);
    let costs = sources.costs()?;
    let Some(mut advice) = fdwindow::views::advise::advise(files, &costs, hazard, &os) else {
        let known: Vec<String> = fdwindow::views::advise::hazards(files)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        return Err(Error::Usage(format!(
            "unknown hazard {hazard:?}; hazards: {}",
            known.join(", ")
        )));
    };
    advice.sources = sources.describe(Some(&os));
    match format {
        "json" => {
            out::stdout(&(serde_json::to_string_pretty(&advice).expect("advice serialises") + "\n"))
        }
        _ => out::stdout(&fdwindow::views::advise::markdown(&advice)),
    }
    Ok(ExitCode::SUCCESS)
}

/// A plain-text table of every arm's verdict on one platform.
fn summary_table(file: &ResultsFile, from: &str) -> String {
    let mut rows = vec![[
        "hazard".to_owned(),
        "arm".into(),
        "window".into(),
        "verdict".into(),
        "hits/trials (95% CI)".into(),
    ]];
    for (hazard, report) in &file.probes {
        for a in &report.arms {
            let detail = cell_detail(report, a);
            rows.push([
                hazard.clone(),
                a.arm.clone(),
                a.window.id().into(),
                arm_verdict(report, a).id().into(),
                detail,
            ]);
        }
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = format!("\nplatform {}, from {from}\n", file.platform.id);
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The closing note's per-probe times, slowest first: each probe's own
/// elapsed time from the report this run wrote (a probe that failed kept
/// its previous report, so it is left out).
fn probe_times(
    results: &fdwindow::report::ResultsFile,
    only: &[String],
    failures: &[(String, String)],
) -> String {
    let mut times: Vec<(&str, u64)> = runner::PROBES
        .iter()
        .filter(|h| only.is_empty() || only.iter().any(|o| o == *h))
        .filter(|h| !failures.iter().any(|(f, _)| f == *h))
        .filter_map(|h| results.probes.get(*h).map(|r| (*h, r.elapsed_ms)))
        .collect();
    times.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let parts: Vec<String> = times
        .iter()
        .map(|(h, ms)| format!("{h} {:.1} s", *ms as f64 / 1000.0))
        .collect();
    // Per arm and window: each cell's own time (its `time-ms` tally).
    let mut cells: Vec<(String, u64)> = times
        .iter()
        .filter_map(|(h, _)| results.probes.get(*h))
        .flat_map(fdwindow::evidence::timing::cell_times)
        .collect();
    cells.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let slowest: Vec<String> = cells
        .iter()
        .take(8)
        .map(|(c, ms)| format!("{c} {:.2} s", *ms as f64 / 1000.0))
        .collect();
    let mut note = format!("time per probe: {}", parts.join(", "));
    if !slowest.is_empty() {
        note.push_str(&format!(
            "\nslowest arms (per window): {}",
            slowest.join(", ")
        ));
    }
    note
}
