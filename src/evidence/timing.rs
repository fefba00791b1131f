//! `results/timing-<platform-id>.json`: where a default `fdwindow run` spends
//! its time, per probe and per arm, over several runs, so the README's
//! run-time section is generated from committed data like every other figure.
//!
//! `make timing` regenerates it (`examples/run_timing.rs`): it runs the
//! default `fdwindow run` several times into scratch folders, recording the
//! load average at each start, the run's wall time and each probe's own
//! elapsed time from its report; then it runs every arm alone (`probe-X --arm
//! A`, the probe's process start included) as many times.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, usage};
use crate::report::platform::Platform;

/// The schema version this build writes and the only one it reads.
///
/// 2: each run also records the milliseconds of every cell (`cells`).
pub const TIMING_SCHEMA: u32 = 2;

pub use crate::evidence::results::TIMING_PREFIX;

/// The run-time measurements of one platform.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingFile {
    /// Schema version of this document.
    pub schema: u32,
    /// Where it was measured.
    pub platform: Platform,
    /// When the measurement started (UTC, RFC 3339).
    pub measured_at: String,
    /// The command that regenerates this file.
    pub command: String,
    /// One entry per full default run.
    pub runs: Vec<RunTiming>,
    /// Each arm run alone, in run order.
    pub arms: Vec<ArmTiming>,
}

/// One full default `fdwindow run`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunTiming {
    /// The 1-minute load average when the run started.
    pub load_at_start: f64,
    /// The run's wall time, milliseconds.
    pub wall_ms: u64,
    /// Each probe's own elapsed time from its report, milliseconds.
    pub probes: BTreeMap<String, u64>,
    /// Each cell's own time in that run (`<hazard> <arm> <window>`, from its
    /// report's `time-ms` tally), milliseconds.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cells: BTreeMap<String, u64>,
}

/// Each cell's own time in `report` (`<hazard> <arm> <window>` to
/// milliseconds), from the harness's `time-ms` tallies.
pub fn cell_times(report: &crate::report::ProbeReport) -> BTreeMap<String, u64> {
    report
        .arms
        .iter()
        .filter_map(|a| match &a.outcome {
            crate::report::verdict::Outcome::Observed { tallies, .. } => tallies
                .get(crate::report::tallies::TIME_TALLY)
                .and_then(|t| t.get("total"))
                .map(|ms| {
                    (
                        format!("{} {} {}", report.hazard, a.arm, a.window.id()),
                        *ms,
                    )
                }),
            _ => None,
        })
        .collect()
}

/// One arm run alone, several times.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArmTiming {
    /// The probe's hazard id.
    pub probe: String,
    /// The arm id.
    pub arm: String,
    /// Wall time of each run of `fdwindow probe <probe> --arm <arm>`, milliseconds.
    pub ms: Vec<u64>,
}

/// The median and range of a sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// The median (the mean of the middle two for an even count).
    pub median: f64,
    /// The smallest value.
    pub min: u64,
    /// The largest value.
    pub max: u64,
}

impl Spread {
    /// The spread of `values`; `None` when empty.
    pub fn of(values: &[u64]) -> Option<Spread> {
        let mut v = values.to_vec();
        v.sort_unstable();
        let n = v.len();
        if n == 0 {
            return None;
        }
        let median = if n % 2 == 1 {
            v[n / 2] as f64
        } else {
            (v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }
}

impl TimingFile {
    /// Parses and validates a timing document.
    pub fn from_json(text: &str) -> Result<TimingFile> {
        use crate::evidence::strict_json;
        let doc = strict_json::parse(text)?;
        let file: TimingFile = serde_json::from_value(doc.clone()).map_err(Error::usage)?;
        if file.schema != TIMING_SCHEMA {
            return Err(usage!(
                "timing schema {} is not {TIMING_SCHEMA}: regenerate it with `make timing`",
                file.schema
            ));
        }
        strict_json::kept(&doc, &file)?;
        Ok(file)
    }

    /// Per probe: the spread of its elapsed time over the runs, slowest first.
    pub fn per_probe(&self) -> Vec<(String, Spread)> {
        let mut samples: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        for run in &self.runs {
            for (probe, ms) in &run.probes {
                samples.entry(probe).or_default().push(*ms);
            }
        }
        let mut rows: Vec<(String, Spread)> = samples
            .into_iter()
            .filter_map(|(p, v)| Spread::of(&v).map(|s| (p.to_owned(), s)))
            .collect();
        rows.sort_by(|a, b| b.1.median.total_cmp(&a.1.median).then(a.0.cmp(&b.0)));
        rows
    }

    /// Per cell (`<hazard> <arm> <window>`): the spread of its own time over
    /// the runs, slowest first.
    pub fn per_cell(&self) -> Vec<(String, Spread)> {
        let mut samples: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        for run in &self.runs {
            for (cell, ms) in &run.cells {
                samples.entry(cell).or_default().push(*ms);
            }
        }
        let mut rows: Vec<(String, Spread)> = samples
            .into_iter()
            .filter_map(|(c, v)| Spread::of(&v).map(|s| (c.to_owned(), s)))
            .collect();
        rows.sort_by(|a, b| b.1.median.total_cmp(&a.1.median).then(a.0.cmp(&b.0)));
        rows
    }

    /// The spread of the runs' wall times.
    pub fn total(&self) -> Option<Spread> {
        Spread::of(&self.runs.iter().map(|r| r.wall_ms).collect::<Vec<_>>())
    }

    /// The README section: the run's median and range, the load it ran
    /// under, and the per-probe and slowest per-arm times.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let Some(total) = self.total() else {
            return "*(no timing runs recorded)*\n".into();
        };
        let loads: Vec<String> = self
            .runs
            .iter()
            .map(|r| format!("{:.2}", r.load_at_start))
            .collect();
        let _ = writeln!(
            out,
            "A default `fdwindow run` on `{}` ({} CPUs), {} runs measured {}: median {:.1} s \
             (range {:.1}–{:.1} s); 1-minute load average at each start: {}.",
            self.platform.id,
            self.platform.cpus,
            self.runs.len(),
            self.measured_at,
            total.median / 1000.0,
            total.min as f64 / 1000.0,
            total.max as f64 / 1000.0,
            loads.join(", ")
        );
        out.push('\n');
        out.push_str("| probe | median | range |\n|---|---:|---:|\n");
        for (probe, s) in self.per_probe() {
            let _ = writeln!(
                out,
                "| {probe} | {:.2} s | {:.2}–{:.2} s |",
                s.median / 1000.0,
                s.min as f64 / 1000.0,
                s.max as f64 / 1000.0
            );
        }
        let cells = self.per_cell();
        if !cells.is_empty() {
            out.push('\n');
            let _ = writeln!(
                out,
                "The ten slowest arms within those runs, per window (each cell's own time in its probe's report):"
            );
            out.push('\n');
            out.push_str("| probe | arm | window | median | range |\n|---|---|---|---:|---:|\n");
            for (cell, s) in cells.iter().take(10) {
                let mut words = cell.splitn(3, ' ');
                let (probe, arm, window) = (
                    words.next().unwrap_or(""),
                    words.next().unwrap_or(""),
                    words.next().unwrap_or(""),
                );
                let _ = writeln!(
                    out,
                    "| {probe} | {arm} | {window} | {:.2} s | {:.2}–{:.2} s |",
                    s.median / 1000.0,
                    s.min as f64 / 1000.0,
                    s.max as f64 / 1000.0
                );
            }
        }
        let mut arms: Vec<(&ArmTiming, Spread)> = self
            .arms
            .iter()
            .filter_map(|a| Spread::of(&a.ms).map(|s| (a, s)))
            .collect();
        arms.sort_by(|a, b| b.1.median.total_cmp(&a.1.median));
        if !arms.is_empty() {
            out.push('\n');
            let _ = writeln!(
                out,
                "The ten slowest arms, each run alone (`fdwindow probe <hazard> --arm <arm>`, process start included):"
            );
            out.push('\n');
            out.push_str("| probe | arm | median | range |\n|---|---|---:|---:|\n");
            for (a, s) in arms.iter().take(10) {
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.2} s | {:.2}–{:.2} s |",
                    a.probe,
                    a.arm,
                    s.median / 1000.0,
                    s.min as f64 / 1000.0,
                    s.max as f64 / 1000.0
                );
            }
        }
        out
    }
}

/// Whether `path` names a timing file.
pub fn is_timing_file(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with(TIMING_PREFIX))
}

/// Loads every `timing-*.json` in `dir`, sorted by platform id.
pub fn load_dir(dir: &Path) -> Result<Vec<TimingFile>> {
    let mut files = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(files),
        Err(e) => return Err(usage!("{}: {e}", dir.display())),
    };
    for entry in entries {
        let path: PathBuf = entry.map_err(Error::usage)?.path();
        if is_timing_file(&path) && path.extension().is_some_and(|x| x == "json") {
            let text = fs::read_to_string(&path).map_err(|e| usage!("{}: {e}", path.display()))?;
            files
                .push(TimingFile::from_json(&text).map_err(|e| usage!("{}: {e}", path.display()))?);
        }
    }
    files.sort_by(|a, b| a.platform.id.cmp(&b.platform.id));
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_lists_the_slowest_cells_of_the_runs() {
        let run = |ms: u64| RunTiming {
            load_at_start: 0.1,
            wall_ms: 5000 + ms,
            probes: [("flock-survival".to_owned(), 300 + ms)].into(),
            cells: [
                ("flock-survival close posix-spawn".to_owned(), 250 + ms),
                ("flock-survival close fork-window".to_owned(), 40),
            ]
            .into(),
        };
        let file = TimingFile {
            schema: TIMING_SCHEMA,
            platform: Platform::detect(),
            measured_at: "2026-01-01T00:00:00Z".into(),
            command: "make timing".into(),
            runs: vec![run(0), run(10), run(20)],
            arms: vec![],
        };
        let cells = file.per_cell();
        assert_eq!(cells[0].0, "flock-survival close posix-spawn");
        assert_eq!(cells[0].1.median, 260.0);
        let text = file.render();
        assert!(
            text.contains("| flock-survival | close | posix-spawn | 0.26 s | 0.25–0.27 s |"),
            "{text}"
        );
        // A file written before cells were recorded still reads.
        let mut json: serde_json::Value = serde_json::to_value(&file).unwrap();
        for r in json["runs"].as_array_mut().unwrap() {
            r.as_object_mut().unwrap().remove("cells");
        }
        let old = TimingFile::from_json(&json.to_string()).unwrap();
        assert!(old.per_cell().is_empty());
    }

    #[test]
    fn spread_takes_the_middle_and_the_ends() {
        assert_eq!(Spread::of(&[]), None);
        let odd = Spread::of(&[30, 10, 20]).unwrap();
        assert_eq!((odd.median, odd.min, odd.max), (20.0, 10, 30));
        let even = Spread::of(&[4, 1, 3, 2]).unwrap();
        assert_eq!((even.median, even.min, even.max), (2.5, 1, 4));
    }
}
