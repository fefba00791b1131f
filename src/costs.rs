//! What each mitigation costs next to its baseline: `results/costs-<platform-id>.json`.
//!
//! The criterion benches in `benches/` time every routine with their own clock
//! (criterion's `iter_custom`) and, after a `cargo bench` run, merge the median
//! time per iteration of each benchmark into this small file. Criterion's own
//! JSON under `target/criterion/` is private and never read here.
//!
//! [`LINKS`] says which benchmark measures which mitigation and which
//! benchmark is its baseline; the matrix shows the difference.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::platform::Platform;
use crate::results::BadResults;

/// The schema version this build writes and the newest it reads.
pub const COSTS_SCHEMA: u32 = 1;

/// A costs file's name starts with this; `results::load_dir` skips such files.
pub const COSTS_PREFIX: &str = "costs-";

/// Every benchmark's median for one platform.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostsFile {
    /// Schema version of this document.
    pub schema: u32,
    /// Where the benches ran.
    pub platform: Platform,
    /// By benchmark id, `<group>/<impl>/<param>` as criterion names it.
    pub benches: BTreeMap<String, BenchCost>,
}

/// One benchmark's result.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchCost {
    /// Median time per iteration, in nanoseconds.
    pub median_ns: f64,
    /// How many timed batches the median is taken over.
    pub samples: u64,
}

/// Which benchmark measures a mitigation, and which its baseline.
#[derive(Clone, Copy, Debug)]
pub struct CostLink {
    /// Hazard id.
    pub hazard: &'static str,
    /// Mitigation arm id.
    pub arm: &'static str,
    /// The benchmark of the code with the fix.
    pub bench: &'static str,
    /// The benchmark of the same code without it.
    pub baseline: &'static str,
}

const fn link(
    hazard: &'static str,
    arm: &'static str,
    bench: &'static str,
    baseline: &'static str,
) -> CostLink {
    CostLink {
        hazard,
        arm,
        bench,
        baseline,
    }
}

/// The mitigations with a measured cost.
///
/// A spawn fix that needs `pre_exec` (`close-range-in-child`) is held against
/// std's default spawn, since the hook also costs std its posix_spawn path; a
/// fix that is a posix_spawn file action or attribute is held against the same
/// direct posix_spawn call without it. The spawn lock costs the creating
/// thread its read lock; what it costs spawns while creators run is the
/// `spawn-with-4-creators` group, used for `etxtbsy`, whose creator is a writer.
pub const LINKS: &[CostLink] = &[
    link(
        "flock-survival",
        "unlock-then-close",
        "flock-release/unlock-then-close/regular-file",
        "flock-release/close/regular-file",
    ),
    link(
        "flock-survival",
        "std-unlock",
        "flock-release/std-unlock/regular-file",
        "flock-release/close/regular-file",
    ),
    link(
        "flock-survival",
        "fs2-unlock",
        "flock-release/fs2-unlock/regular-file",
        "flock-release/close/regular-file",
    ),
    link(
        "ofd-lock-survival",
        "unlock-then-close",
        "ofd-release/unlock-then-close/regular-file",
        "ofd-release/close/regular-file",
    ),
    link(
        "posix-lock-drop",
        "flock",
        "lock-kind/flock/lock-unlock",
        "lock-kind/posix-fcntl/lock-unlock",
    ),
    link(
        "posix-lock-drop",
        "ofd-lock",
        "lock-kind/ofd-lock/lock-unlock",
        "lock-kind/posix-fcntl/lock-unlock",
    ),
    link(
        "listener-survival",
        "shutdown-rd",
        "listener-retire/shutdown-rd/tcp-loopback",
        "listener-retire/close/tcp-loopback",
    ),
    link(
        "listener-survival",
        "shutdown-rdwr",
        "listener-retire/shutdown-rdwr/tcp-loopback",
        "listener-retire/close/tcp-loopback",
    ),
    link(
        "listener-survival",
        "shutdown-wr",
        "listener-retire/shutdown-wr/tcp-loopback",
        "listener-retire/close/tcp-loopback",
    ),
    link(
        "listener-survival",
        "drain-then-close",
        "listener-retire/drain-then-close/tcp-loopback",
        "listener-retire/close/tcp-loopback",
    ),
    link(
        "peer-fin-with-clone",
        "shutdown-write",
        "stream-close/shutdown-write/tcp-loopback",
        "stream-close/drop/tcp-loopback",
    ),
    link(
        "two-step-cloexec",
        "spawn-lock",
        "socket-create/spawn-lock/udp-loopback",
        "socket-create/no-lock/udp-loopback",
    ),
    link(
        "two-step-cloexec",
        "close-range-in-child",
        "spawn/close-range-in-child/16",
        "spawn/posix-spawn/16",
    ),
    link(
        "two-step-cloexec",
        "fix-spawn",
        "fix-spawn/fix-spawn/16",
        "fix-spawn/std-command/16",
    ),
    link(
        "two-step-cloexec",
        "closefrom-file-action",
        "spawn/closefrom-file-action/16",
        "spawn/libc-posix-spawn/16",
    ),
    link(
        "two-step-cloexec",
        "spawn-cloexec-default",
        "spawn/spawn-cloexec-default/16",
        "spawn/libc-posix-spawn/16",
    ),
    link(
        "etxtbsy",
        "spawn-lock",
        "spawn-with-4-creators/spawn-lock/udp-loopback",
        "spawn-with-4-creators/no-lock/udp-loopback",
    ),
    link(
        "clock-collision",
        "process-sequence",
        "scratch-name/process-sequence/create-remove",
        "scratch-name/pid-realtime-nanos/create-remove",
    ),
    link(
        "clock-collision",
        "tempfile",
        "scratch-name/tempfile/create-remove",
        "scratch-name/pid-realtime-nanos/create-remove",
    ),
    link(
        "two-step-cloexec",
        "atomic-flag",
        "cloexec-create/atomic-flag/socket",
        "cloexec-create/two-step/socket",
    ),
    // O_CLOEXEC in the open call itself, against setting the flag afterwards.
    link(
        "flock-survival",
        "cloexec",
        "cloexec-create/atomic-flag/open",
        "cloexec-create/two-step/open",
    ),
    link(
        "listener-survival",
        "bound-unlistened",
        "listener-retire/bound-unlistened/tcp-loopback",
        "listener-retire/close/tcp-loopback",
    ),
    link(
        "port-pick",
        "bind-zero-in-server",
        "port-pick/bind-zero-in-server/tcp-loopback",
        "port-pick/pick-then-drop/tcp-loopback",
    ),
    link(
        "port-pick",
        "pick-unlistened",
        "port-pick/pick-unlistened/tcp-loopback",
        "port-pick/pick-then-drop/tcp-loopback",
    ),
    link(
        "env-race",
        "std-env-only",
        "env-read/std-env-only/one-variable",
        "env-read/libc-getenv/one-variable",
    ),
    link(
        "env-race",
        "one-env-guard",
        "env-read/one-env-guard/one-variable",
        "env-read/libc-getenv/one-variable",
    ),
    link(
        "env-race",
        "pass-explicitly",
        "env-read/pass-explicitly/one-variable",
        "env-read/libc-getenv/one-variable",
    ),
    // Running the scan in a process of its own, as the write-up's fix did.
    link(
        "holder-scan",
        "run-isolated",
        "run-test/own-process/flock-take-release",
        "run-test/in-process/flock-take-release",
    ),
];

/// A mitigation's measured cost: its median and its baseline's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    /// The fix, ns per iteration.
    pub fix_ns: f64,
    /// The baseline, ns per iteration.
    pub baseline_ns: f64,
}

impl Cost {
    /// `+1.2 µs (1.3×)`: the difference and the ratio to the baseline.
    pub fn text(self) -> String {
        let delta = self.fix_ns - self.baseline_ns;
        let sign = if delta < 0.0 { "−" } else { "+" };
        let ratio = if self.baseline_ns > 0.0 {
            format!(" ({:.2}×)", self.fix_ns / self.baseline_ns)
        } else {
            String::new()
        };
        format!("{sign}{}{ratio}", ns_text(delta.abs()))
    }
}

/// A time in ns as a short text: `850 ns`, `12.3 µs`, `4.56 ms`.
pub fn ns_text(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

impl CostsFile {
    /// The measured cost of `hazard`'s mitigation `arm`, when both its
    /// benchmark and its baseline were measured.
    pub fn cost(&self, hazard: &str, arm: &str) -> Option<Cost> {
        let l = LINKS.iter().find(|l| l.hazard == hazard && l.arm == arm)?;
        Some(Cost {
            fix_ns: self.benches.get(l.bench)?.median_ns,
            baseline_ns: self.benches.get(l.baseline)?.median_ns,
        })
    }

    /// Parses and checks a costs document.
    pub fn from_json(text: &str) -> Result<CostsFile, String> {
        let head: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        match head.get("schema").and_then(serde_json::Value::as_u64) {
            Some(v) if v > u64::from(COSTS_SCHEMA) => {
                return Err(format!(
                    "schema {v} is newer than this fdwindow reads ({COSTS_SCHEMA}); upgrade fdwindow"
                ));
            }
            Some(_) => {}
            None => return Err("no \"schema\" field: not an fdwindow costs file".into()),
        }
        let file: CostsFile =
            serde_json::from_value(head).map_err(|e| format!("bad costs: {e}"))?;
        if let Some((id, c)) = file
            .benches
            .iter()
            .find(|(_, c)| !(c.median_ns.is_finite() && c.median_ns >= 0.0))
        {
            return Err(format!("{id}: median {} is not a time", c.median_ns));
        }
        Ok(file)
    }
}

/// `<dir>/costs-<platform-id>.json`.
pub fn path_for(dir: &Path, platform_id: &str) -> PathBuf {
    dir.join(format!("{COSTS_PREFIX}{platform_id}.json"))
}

/// Loads one costs file; `Ok(None)` when it does not exist.
pub fn load(path: &Path) -> Result<Option<CostsFile>, BadResults> {
    crate::results::load_with(path, CostsFile::from_json)
}

/// Loads every `costs-*.json` in `dir`, sorted by platform id.
pub fn load_dir(dir: &Path) -> Result<Vec<CostsFile>, BadResults> {
    let paths = crate::results::list(dir, is_costs_file)?;
    let mut files = Vec::new();
    for path in paths {
        let file = load(&path)?.expect("listed file vanished");
        if path != path_for(dir, &file.platform.id) {
            return Err(BadResults {
                problem: format!(
                    "holds costs for {}, so it must be named {COSTS_PREFIX}{}.json",
                    file.platform.id, file.platform.id
                ),
                path,
            });
        }
        files.push(file);
    }
    files.sort_by(|a, b| a.platform.id.cmp(&b.platform.id));
    Ok(files)
}

/// Whether `path` is named like a costs file (`costs-*.json`).
pub fn is_costs_file(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "json")
        && path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(COSTS_PREFIX))
}

/// Merges `measured` into this platform's costs file in `dir` (benchmarks not
/// run this time keep their earlier values) and writes it atomically.
pub fn merge_and_write(
    dir: &Path,
    measured: BTreeMap<String, BenchCost>,
) -> Result<PathBuf, BadResults> {
    let platform = Platform::detect();
    let path = path_for(dir, &platform.id);
    let mut file = load(&path)?.unwrap_or_else(|| CostsFile {
        schema: COSTS_SCHEMA,
        platform: platform.clone(),
        benches: BTreeMap::new(),
    });
    file.schema = COSTS_SCHEMA;
    file.platform = platform;
    file.benches.extend(measured);
    let json = serde_json::to_string_pretty(&file).expect("costs serialise") + "\n";
    fs::create_dir_all(dir)
        .and_then(|()| crate::results::write_atomic(&path, json.as_bytes()))
        .map_err(|e| BadResults {
            path: path.clone(),
            problem: e.to_string(),
        })?;
    Ok(path)
}

/// The median of per-iteration times (ns) of timed batches.
pub fn median_ns(per_iteration: &mut [f64]) -> Option<f64> {
    if per_iteration.is_empty() {
        return None;
    }
    per_iteration.sort_by(f64::total_cmp);
    let n = per_iteration.len();
    Some(if n % 2 == 1 {
        per_iteration[n / 2]
    } else {
        (per_iteration[n / 2 - 1] + per_iteration[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scratch::Scratch;

    fn cost(ns: f64) -> BenchCost {
        BenchCost {
            median_ns: ns,
            samples: 10,
        }
    }

    #[test]
    fn round_trip_merge_and_lookup() {
        let s = Scratch::new("costs").unwrap();
        let first: BTreeMap<_, _> = [
            ("flock-release/close/regular-file".to_owned(), cost(1000.0)),
            (
                "flock-release/unlock-then-close/regular-file".to_owned(),
                cost(1500.0),
            ),
        ]
        .into();
        let path = merge_and_write(s.dir(), first).unwrap();
        assert!(is_costs_file(&path));
        // A later run of one benchmark keeps the other's value.
        let second: BTreeMap<_, _> =
            [("flock-release/close/regular-file".to_owned(), cost(900.0))].into();
        assert_eq!(merge_and_write(s.dir(), second).unwrap(), path);
        let files = load_dir(s.dir()).unwrap();
        assert_eq!(files.len(), 1);
        let f = &files[0];
        assert_eq!(f.benches.len(), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(CostsFile::from_json(&text).unwrap(), *f);
        let c = f.cost("flock-survival", "unlock-then-close").unwrap();
        assert_eq!((c.fix_ns, c.baseline_ns), (1500.0, 900.0));
        assert_eq!(c.text(), "+600 ns (1.67×)");
        assert_eq!(
            f.cost("flock-survival", "std-unlock"),
            None,
            "no bench, no cost"
        );
        // Costs files are not results files, and the other way round.
        assert!(crate::results::load_dir(s.dir()).unwrap().is_empty());
    }

    #[test]
    fn refuses_bad_documents() {
        assert!(
            CostsFile::from_json("{\"schema\": 99}")
                .unwrap_err()
                .contains("newer")
        );
        assert!(CostsFile::from_json("[").unwrap_err().contains("not JSON"));
        let mut f = CostsFile {
            schema: COSTS_SCHEMA,
            platform: Platform::detect(),
            benches: [("x".to_owned(), cost(-1.0))].into(),
        };
        let err = CostsFile::from_json(&serde_json::to_string(&f).unwrap()).unwrap_err();
        assert!(err.contains("not a time"), "{err}");
        f.benches.clear();
        assert!(CostsFile::from_json(&serde_json::to_string(&f).unwrap()).is_ok());
    }

    #[test]
    fn texts_and_medians() {
        assert_eq!(ns_text(850.4), "850 ns");
        assert_eq!(ns_text(12_345.0), "12.3 µs");
        assert_eq!(ns_text(4_560_000.0), "4.56 ms");
        let c = Cost {
            fix_ns: 800.0,
            baseline_ns: 1000.0,
        };
        assert_eq!(c.text(), "−200 ns (0.80×)");
        assert_eq!(median_ns(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median_ns(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median_ns(&mut []), None);
    }

    #[test]
    fn links_are_unique_and_name_their_group() {
        for (i, a) in LINKS.iter().enumerate() {
            assert_eq!(a.bench.split('/').count(), 3, "{a:?}");
            assert_eq!(
                a.bench.split('/').next(),
                a.baseline.split('/').next(),
                "a fix is measured in its baseline's group: {a:?}"
            );
            assert!(
                LINKS[i + 1..]
                    .iter()
                    .all(|b| (a.hazard, a.arm) != (b.hazard, b.arm)),
                "{a:?} twice"
            );
        }
    }
}
