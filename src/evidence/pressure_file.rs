//! `results/pressure-<platform-id>.json`: the fork-pressure measurements
//! behind the README's pressure tables, so those tables are generated from
//! committed data like every other figure.
//!
//! `make pressure` regenerates it (`examples/pressure_tables.rs`): each case
//! runs under `fdwindow stress` at each pressure setting, and
//! `examples/pressure_rate.rs` compares the co-tenant's spawn rate with a
//! plain loop's.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, usage};
use crate::report::platform::Platform;

/// The schema version this build writes and the only one it reads.
pub const PRESSURE_SCHEMA: u32 = 1;

pub use crate::evidence::results::PRESSURE_PREFIX;

/// The pressure measurements of one platform.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PressureFile {
    /// Schema version of this document.
    pub schema: u32,
    /// Where it was measured.
    pub platform: Platform,
    /// When the measurement started (UTC, RFC 3339).
    pub measured_at: String,
    /// The command that regenerates this file.
    pub command: String,
    /// One row per pressure setting and case.
    pub stress: Vec<StressCell>,
    /// The co-tenant's spawn rate beside a plain loop's.
    pub rate: Vec<RateRow>,
}

/// One `fdwindow stress` comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StressCell {
    /// The `--pressure` spec.
    pub pressure: String,
    /// The case (a column of the README table), e.g. `flock close-only`.
    pub case: String,
    /// Runs per arm.
    pub runs: u64,
    /// Failures alone.
    pub alone_failures: u64,
    /// Failures under pressure.
    pub pressure_failures: u64,
    /// Median pressured run time between failures, seconds, when any failed.
    pub median_time_to_failure_s: Option<f64>,
}

/// One row of the spawn-rate comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateRow {
    /// `plain` or `pressure`.
    pub looped: String,
    /// `spawn` or `fork`.
    pub path: String,
    /// Spawning threads.
    pub threads: u64,
    /// Children per second (median of the alternating runs).
    pub spawns_per_s: f64,
    /// Children per CPU-second of the process and its children.
    pub spawns_per_cpu_s: f64,
}

impl PressureFile {
    /// Parses and checks a pressure document.
    pub fn from_json(text: &str) -> Result<PressureFile> {
        use crate::evidence::strict_json;
        let head = strict_json::parse(text)?;
        crate::evidence::results::check_schema(
            &head,
            PRESSURE_SCHEMA,
            "pressure",
            "make pressure",
        )?;
        let file: PressureFile = strict_json::typed(&head, "bad pressure file")?;
        if let Some(c) = file
            .stress
            .iter()
            .find(|c| c.alone_failures > c.runs || c.pressure_failures > c.runs)
        {
            return Err(usage!("{} {}: more failures than runs", c.pressure, c.case));
        }
        Ok(file)
    }
}

/// `<dir>/pressure-<platform-id>.json`.
pub fn path_for(dir: &Path, platform_id: &str) -> PathBuf {
    dir.join(format!("{PRESSURE_PREFIX}{platform_id}.json"))
}

/// Whether `path` is named like a pressure file (`pressure-*.json`).
pub fn is_pressure_file(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "json")
        && path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(PRESSURE_PREFIX))
}

/// Loads every `pressure-*.json` in `dir`, sorted by platform id.
pub fn load_dir(dir: &Path) -> Result<Vec<PressureFile>, Error> {
    crate::evidence::results::load_kind(
        dir,
        is_pressure_file,
        PressureFile::from_json,
        |f| &f.platform.id,
        (PRESSURE_PREFIX, "pressure measurements for"),
    )
}

/// Writes `file` into `dir` under the folder's lock, atomically.
pub fn write(dir: &Path, file: &PressureFile) -> std::io::Result<PathBuf> {
    let _lock = crate::evidence::results::FolderLock::acquire(dir, || false)?;
    let path = path_for(dir, &file.platform.id);
    let json = serde_json::to_string_pretty(file).expect("pressure file serialises") + "\n";
    fs::create_dir_all(dir)?;
    crate::evidence::results::write_atomic(&path, json.as_bytes())?;
    Ok(path)
}
