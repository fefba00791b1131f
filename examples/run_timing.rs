//! Measures where a default `fdwindow run` spends its time and writes
//! `results/timing-<platform-id>.json` (see `fdwindow::evidence::timing`).
//!
//! ```text
//! cargo build --release --bins && cargo run --release --example run_timing -- [--runs N] [--results DIR] [--idle LOAD]
//! ```
//!
//! 1. N times: with `--idle`, wait until the 1-minute load average is
//!    below LOAD (`make timing` asks for 0.5, the budget's "idle"); note the load, run `fdwindow run --results
//!    <scratch>` (a fresh folder, so the committed results are untouched),
//!    time it, and read each probe's elapsed time from its report.
//! 2. N times per arm of the last run: `fdwindow probe <hazard> --arm <arm>`, timed.
//! 3. Write the file atomically and regenerate the matrix and README.
//!
//! Say what load the machine was under: the file records it per run.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use fdwindow::evidence::timing::{ArmTiming, RunTiming, TIMING_PREFIX, TIMING_SCHEMA, TimingFile};
use fdwindow::report::platform::Platform;
use fdwindow::report::{ResultsFile, utc_now};

fn main() -> ExitCode {
    // Through the writer: 141 after a closed stderr, 1 after a full one.
    fdwindow::base::out::status(match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            fdwindow::note!("error: {e}");
            ExitCode::from(2)
        }
    })
}

fn run() -> Result<(), String> {
    let mut runs = 5u32;
    let mut results = PathBuf::from("results");
    let mut idle: Option<f64> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => {
                runs = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n| (1..=100).contains(&n))
                    .ok_or("--runs takes a count from 1 to 100")?
            }
            "--results" => results = args.next().ok_or("--results takes a folder")?.into(),
            "--idle" => {
                idle = Some(
                    args.next()
                        .and_then(|v| v.parse().ok())
                        .filter(|l: &f64| (0.01..=64.0).contains(l))
                        .ok_or("--idle takes a load average from 0.01 to 64")?,
                )
            }
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: run_timing [--runs N] [--results DIR] [--idle LOAD]"
                ));
            }
        }
    }
    // target/release/examples/run_timing -> target/release
    let bin_dir = std::env::current_exe()
        .map_err(|e| e.to_string())?
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot find the binaries' folder")?
        .to_owned();
    let fdwindow = bin_dir.join("fdwindow");
    if !fdwindow.exists() {
        return Err(format!(
            "{} is missing: run `cargo build --release --bins` first",
            fdwindow.display()
        ));
    }
    let measured_at = utc_now();
    let mut timings = Vec::new();
    let mut last: Option<ResultsFile> = None;
    for i in 0..runs {
        let scratch = tempfile::Builder::new()
            .prefix("fdwindow-timing-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        if let Some(limit) = idle {
            wait_for_idle(limit)?;
        }
        let load = load_average();
        fdwindow::note!("run {}/{runs} (load {load:.2}) …", i + 1);
        let started = Instant::now();
        let status = Command::new(&fdwindow)
            .arg("run")
            .arg("--results")
            .arg(scratch.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| format!("run fdwindow: {e}"))?;
        let wall_ms = started.elapsed().as_millis() as u64;
        if !status.success() {
            return Err(format!("fdwindow run failed: {status}"));
        }
        let file = read_results(scratch.path())?;
        timings.push(RunTiming {
            load_at_start: load,
            wall_ms,
            probes: file
                .probes
                .iter()
                .map(|(h, r)| (h.clone(), r.elapsed_ms))
                .collect(),
            cells: file
                .probes
                .values()
                .flat_map(fdwindow::evidence::timing::cell_times)
                .collect(),
        });
        last = Some(file);
    }
    let last = last.ok_or("no run")?;
    let mut arms = Vec::new();
    for (hazard, report) in &last.probes {
        let mut ids: Vec<&str> = report.arms.iter().map(|a| a.arm.as_str()).collect();
        ids.dedup();
        for arm in ids {
            let mut ms = Vec::new();
            for _ in 0..runs {
                let started = Instant::now();
                let status = Command::new(&fdwindow)
                    .args(["probe", hazard, "--arm", arm])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .map_err(|e| format!("run fdwindow probe {hazard}: {e}"))?;
                if !status.success() {
                    return Err(format!(
                        "fdwindow probe {hazard} --arm {arm} failed: {status}"
                    ));
                }
                ms.push(started.elapsed().as_millis() as u64);
            }
            fdwindow::note!("{hazard} {arm}: {ms:?}");
            arms.push(ArmTiming {
                probe: hazard.clone(),
                arm: arm.to_owned(),
                ms,
            });
        }
    }
    let platform = Platform::detect();
    let file = TimingFile {
        schema: TIMING_SCHEMA,
        platform: platform.clone(),
        measured_at,
        command: format!("cargo run --release --example run_timing -- --runs {runs}"),
        runs: timings,
        arms,
    };
    let path = results.join(format!("{TIMING_PREFIX}{}.json", platform.id));
    let json = serde_json::to_string_pretty(&file).map_err(|e| e.to_string())? + "\n";
    fdwindow::evidence::results::write_atomic(&path, json.as_bytes()).map_err(|e| e.to_string())?;
    fdwindow::note!("wrote {}", path.display());
    Ok(())
}

/// The single results file a run wrote into `dir`.
fn read_results(dir: &Path) -> Result<ResultsFile, String> {
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.ends_with(".json") && !name.starts_with('.') && !name.starts_with("costs-") {
            let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
            return fdwindow::evidence::results::parse(&text)
                .map_err(|e| format!("{}: {e}", path.display()));
        }
    }
    Err(format!("no results file in {}", dir.display()))
}

/// The 1-minute load average (getloadavg(3)'s first value).
fn load_average() -> f64 {
    fdwindow::report::platform::load_average().unwrap_or(f64::NAN)
}

/// Waits until the 1-minute load average is below `limit` (the previous
/// run's own load decays with it), polling every 2 s for at most 5 minutes:
/// a machine that stays busy is an error, not a slower measurement.
fn wait_for_idle(limit: f64) -> Result<(), String> {
    let deadline = Instant::now() + std::time::Duration::from_secs(300);
    loop {
        let load = load_average();
        if load.is_nan() {
            return Err("--idle: this OS gives no load average".into());
        }
        if load < limit {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the load average stayed above {limit} for 5 minutes (now {load:.2}): not idle"
            ));
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
}
