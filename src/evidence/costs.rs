//! What each mitigation costs next to its baseline: `results/costs-<platform-id>.json`.
//!
//! The criterion benches in `benches/` time every routine with their own clock
//! (criterion's `iter_custom`). After criterion's pass, each group times its
//! routines again in interleaved batches (one batch of each routine per
//! round, the order rotated every round), so that a change in the machine's
//! load falls on a fix and its baseline alike. Each batch gives one sample:
//! its time per iteration. The samples of every benchmark go into this file,
//! with, for each mitigation, the bootstrap 95% interval of the median
//! fix-minus-baseline difference over the rounds ([`Difference`]).
//! Criterion's own JSON under `target/criterion/` is private and never read.
//!
//! A cost is shown only when its interval excludes zero; otherwise the fix
//! makes "no measurable difference" ([`Cost::text`]), and `advise` ranks it
//! as free.
//!
//! [`LINKS`] says which benchmark measures which mitigation and which
//! benchmark is its baseline.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, usage};
use crate::report::platform::Platform;

/// The schema version this build writes and the newest it reads.
pub const COSTS_SCHEMA: u32 = 2;

pub use crate::evidence::results::COSTS_PREFIX;

/// Every benchmark's median for one platform.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostsFile {
    /// Schema version of this document.
    pub schema: u32,
    /// Where the benches ran.
    pub platform: Platform,
    /// By benchmark id, `<group>/<impl>/<param>` as criterion names it.
    pub benches: BTreeMap<String, BenchCost>,
    /// By `<hazard>/<arm>`: each linked mitigation's difference from its
    /// baseline, from the samples above.
    pub differences: BTreeMap<String, Difference>,
}

/// One benchmark's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchCost {
    /// Median time per iteration over the samples, in nanoseconds.
    pub median_ns: f64,
    /// Time per iteration of each interleaved batch (ns), in round order.
    pub samples: Vec<f64>,
}

impl BenchCost {
    /// A benchmark's entry from its samples; `None` without any.
    pub fn from_samples(samples: Vec<f64>) -> Option<BenchCost> {
        let median_ns = median_ns(&mut samples.clone())?;
        Some(BenchCost { median_ns, samples })
    }
}

/// A mitigation's difference from its baseline: the median over the rounds
/// of fix minus baseline (each round timed one batch of each), with its
/// bootstrap 95% percentile interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Difference {
    /// Median per-round difference, ns per iteration.
    pub estimate_ns: f64,
    /// Lower end of the 95% interval.
    pub low_ns: f64,
    /// Upper end of the 95% interval.
    pub high_ns: f64,
    /// Rounds (paired samples) it is computed from.
    pub rounds: usize,
}

/// Bootstrap resamples behind each interval.
const RESAMPLES: usize = 2000;

impl Difference {
    /// The difference of `fix` and `baseline`, samples paired by round (the
    /// benches time them in the same rounds); `None` unless both have the
    /// same number of rounds, at least 2.
    ///
    /// The interval is the 2.5th and 97.5th percentiles of the median of
    /// [`RESAMPLES`] resamples (rounds drawn with replacement), from a fixed
    /// seed so the same samples always give the same interval.
    ///
    /// # References
    /// - Efron & Tibshirani, *An Introduction to the Bootstrap* (1993), ch. 13 (percentile intervals)
    pub fn from_samples(fix: &[f64], baseline: &[f64]) -> Option<Difference> {
        if fix.len() != baseline.len() || fix.len() < 2 {
            return None;
        }
        let diffs: Vec<f64> = fix.iter().zip(baseline).map(|(f, b)| f - b).collect();
        let estimate_ns = median_ns(&mut diffs.clone())?;
        let mut rng = SplitMix(0x5eed_f00d_u64 ^ diffs.len() as u64);
        let mut medians = Vec::with_capacity(RESAMPLES);
        let mut resample = vec![0.0; diffs.len()];
        for _ in 0..RESAMPLES {
            for x in &mut resample {
                *x = diffs[(rng.next() % diffs.len() as u64) as usize];
            }
            medians.push(median_ns(&mut resample)?);
        }
        medians.sort_by(f64::total_cmp);
        let at =
            |q: f64| medians[((q * (RESAMPLES - 1) as f64).round() as usize).min(RESAMPLES - 1)];
        Some(Difference {
            estimate_ns,
            low_ns: at(0.025),
            high_ns: at(0.975),
            rounds: diffs.len(),
        })
    }

    /// Whether the interval excludes zero: the fix measurably costs (or saves).
    pub fn measurable(&self) -> bool {
        self.low_ns > 0.0 || self.high_ns < 0.0
    }
}

/// SplitMix64: a small, fixed pseudo-random sequence for the bootstrap.
/// See: <https://prng.di.unimi.it/splitmix64.c>
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
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

/// A mitigation's measured cost: its median, its baseline's, and the
/// interval of their difference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    /// The fix, median ns per iteration.
    pub fix_ns: f64,
    /// The baseline, median ns per iteration.
    pub baseline_ns: f64,
    /// Fix minus baseline, with its 95% interval.
    pub difference: Difference,
}

/// `+1.2 µs`, `−350 ns`, `+0 ns`.
fn signed_ns(ns: f64) -> String {
    let sign = if ns < 0.0 { "−" } else { "+" };
    format!("{sign}{}", ns_text(ns.abs()))
}

impl Cost {
    /// `+1.2 µs (95% CI +1.0 µs to +1.4 µs, 1.30×)` when the interval
    /// excludes zero; `no measurable difference (95% CI −20 ns to +35 ns)`
    /// when it does not, so no noise is shown as a saving or a price.
    pub fn text(self) -> String {
        let d = self.difference;
        let ci = format!("95% CI {} to {}", signed_ns(d.low_ns), signed_ns(d.high_ns));
        if !d.measurable() {
            return format!("no measurable difference ({ci})");
        }
        let ratio = if self.baseline_ns > 0.0 {
            format!(", {:.2}×", self.fix_ns / self.baseline_ns)
        } else {
            String::new()
        };
        format!("{} ({ci}{ratio})", signed_ns(d.estimate_ns))
    }

    /// What `advise` ranks by: the difference where it is measurable, else
    /// zero (a fix with no measurable cost ranks as free).
    pub fn rank_ns(self) -> f64 {
        if self.difference.measurable() {
            self.difference.estimate_ns
        } else {
            0.0
        }
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
            difference: *self.differences.get(&format!("{hazard}/{arm}"))?,
        })
    }

    /// Recomputes [`CostsFile::differences`] from the benches' samples, for
    /// every link whose benchmark and baseline were timed in the same rounds.
    pub fn compute_differences(&mut self) {
        self.differences = LINKS
            .iter()
            .filter_map(|l| {
                let fix = self.benches.get(l.bench)?;
                let base = self.benches.get(l.baseline)?;
                let d = Difference::from_samples(&fix.samples, &base.samples)?;
                Some((format!("{}/{}", l.hazard, l.arm), d))
            })
            .collect();
    }

    /// Parses and checks a costs document.
    pub fn from_json(text: &str) -> Result<CostsFile> {
        use crate::evidence::strict_json;
        // Strictly: a bench merges into this file and rewrites it.
        let head = strict_json::parse(text)?;
        crate::evidence::results::check_schema(&head, COSTS_SCHEMA, "costs", "make bench-quick")?;
        let file: CostsFile = strict_json::typed(&head, "bad costs")?;
        let time = |t: f64| t.is_finite() && t >= 0.0;
        if let Some((id, c)) = file
            .benches
            .iter()
            .find(|(_, c)| !time(c.median_ns) || !c.samples.iter().all(|&t| time(t)))
        {
            return Err(usage!(
                "{id}: median {} or a sample is not a time",
                c.median_ns
            ));
        }
        if let Some((id, d)) = file.differences.iter().find(|(_, d)| {
            !(d.low_ns.is_finite() && d.high_ns.is_finite() && d.low_ns <= d.high_ns)
        }) {
            return Err(usage!(
                "{id}: interval {}..{} is not one",
                d.low_ns,
                d.high_ns
            ));
        }
        Ok(file)
    }
}

/// `<dir>/costs-<platform-id>.json`.
pub fn path_for(dir: &Path, platform_id: &str) -> PathBuf {
    dir.join(format!("{COSTS_PREFIX}{platform_id}.json"))
}

/// Loads one costs file; `Ok(None)` when it does not exist.
pub fn load(path: &Path) -> Result<Option<CostsFile>, Error> {
    crate::evidence::results::load_with(path, CostsFile::from_json)
}

/// Loads every `costs-*.json` in `dir`, sorted by platform id.
pub fn load_dir(dir: &Path) -> Result<Vec<CostsFile>, Error> {
    crate::evidence::results::load_kind(
        dir,
        is_costs_file,
        CostsFile::from_json,
        |f| &f.platform.id,
        (COSTS_PREFIX, "costs for"),
    )
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
) -> Result<PathBuf, Error> {
    let platform = Platform::detect();
    let path = path_for(dir, &platform.id);
    // Read, merge and write under the folder's lock, like every writer.
    let _lock = crate::evidence::results::FolderLock::acquire(dir, || false).map_err(|e| {
        Error::BadFile {
            path: dir.to_owned(),
            problem: e.to_string(),
        }
    })?;
    let mut file = load(&path)?.unwrap_or_else(|| CostsFile {
        schema: COSTS_SCHEMA,
        platform: platform.clone(),
        benches: BTreeMap::new(),
        differences: BTreeMap::new(),
    });
    file.schema = COSTS_SCHEMA;
    file.platform = platform;
    file.benches.extend(measured);
    file.compute_differences();
    let json = serde_json::to_string_pretty(&file).expect("costs serialise") + "\n";
    fs::create_dir_all(dir)
        .and_then(|()| crate::evidence::results::write_atomic(&path, json.as_bytes()))
        .map_err(|e| Error::BadFile {
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
    use fdwindow_fix::base::scratch::Scratch;

    /// `n` samples around `centre`, spread by ±`spread` in a fixed pattern.
    fn samples(n: usize, centre: f64, spread: f64) -> Vec<f64> {
        (0..n)
            .map(|i| centre + spread * (((i * 7) % 11) as f64 / 5.0 - 1.0))
            .collect()
    }

    fn bench(s: Vec<f64>) -> BenchCost {
        BenchCost::from_samples(s).unwrap()
    }

    #[test]
    fn round_trip_merge_and_lookup() {
        let s = Scratch::new("costs").unwrap();
        let first: BTreeMap<_, _> = [
            (
                "flock-release/close/regular-file".to_owned(),
                bench(samples(30, 1000.0, 20.0)),
            ),
            (
                "flock-release/unlock-then-close/regular-file".to_owned(),
                bench(samples(30, 1600.0, 20.0)),
            ),
        ]
        .into();
        let path = merge_and_write(s.dir(), first).unwrap();
        assert!(is_costs_file(&path));
        // A later run of another benchmark keeps these values.
        let second: BTreeMap<_, _> = [(
            "lock-kind/flock/lock-unlock".to_owned(),
            bench(samples(30, 500.0, 5.0)),
        )]
        .into();
        assert_eq!(merge_and_write(s.dir(), second).unwrap(), path);
        let files = load_dir(s.dir()).unwrap();
        assert_eq!(files.len(), 1);
        let f = &files[0];
        assert_eq!(f.benches.len(), 3);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(CostsFile::from_json(&text).unwrap(), *f);
        let c = f.cost("flock-survival", "unlock-then-close").unwrap();
        assert_eq!((c.fix_ns, c.baseline_ns), (1600.0, 1000.0));
        assert!(c.text().starts_with("+600 ns (95% CI +"), "{}", c.text());
        assert_eq!(c.rank_ns(), 600.0);
        assert_eq!(
            f.cost("flock-survival", "std-unlock"),
            None,
            "no bench, no cost"
        );
        // Costs files are not results files, and the other way round.
        assert!(
            crate::evidence::results::load_dir(s.dir())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn interval_decides_between_a_cost_and_no_measurable_difference() {
        let base = samples(40, 1000.0, 50.0);
        // A fix 100 ns dearer in every round: the interval excludes zero.
        let dearer: Vec<f64> = base.iter().map(|b| b + 100.0 + (b % 3.0)).collect();
        let d = Difference::from_samples(&dearer, &base).unwrap();
        assert!(
            d.measurable() && d.low_ns > 90.0 && d.high_ns < 110.0,
            "{d:?}"
        );
        // A saving is measurable too, and shown with its sign.
        let cheaper: Vec<f64> = base.iter().map(|b| b - 100.0).collect();
        let d = Difference::from_samples(&cheaper, &base).unwrap();
        assert!(d.measurable() && d.high_ns < 0.0, "{d:?}");
        let cost = Cost {
            fix_ns: 900.0,
            baseline_ns: 1000.0,
            difference: d,
        };
        assert!(cost.text().starts_with("−100 ns ("), "{}", cost.text());
        assert!(cost.rank_ns() < 0.0);
        // Noise either way: rounds where the fix is faster and rounds where
        // it is slower by as much. The interval spans zero.
        let noisy: Vec<f64> = base
            .iter()
            .enumerate()
            .map(|(i, b)| if i % 2 == 0 { b + 80.0 } else { b - 75.0 })
            .collect();
        let d = Difference::from_samples(&noisy, &base).unwrap();
        assert!(
            !d.measurable() && d.low_ns < 0.0 && d.high_ns > 0.0,
            "{d:?}"
        );
        let cost = Cost {
            fix_ns: 1002.0,
            baseline_ns: 1000.0,
            difference: d,
        };
        assert!(
            cost.text()
                .starts_with("no measurable difference (95% CI −"),
            "{}",
            cost.text()
        );
        assert_eq!(cost.rank_ns(), 0.0);
        // The same samples always give the same interval.
        assert_eq!(Difference::from_samples(&noisy, &base), Some(d));
        // Unpaired or too few rounds: no interval at all.
        assert_eq!(Difference::from_samples(&noisy[..5], &base), None);
        assert_eq!(Difference::from_samples(&[1.0], &[2.0]), None);
    }

    #[test]
    fn refuses_bad_documents() {
        assert!(
            CostsFile::from_json("{\"schema\": 99}")
                .unwrap_err()
                .to_string()
                .contains("newer")
        );
        assert!(
            CostsFile::from_json("{\"schema\": 1}")
                .unwrap_err()
                .to_string()
                .contains("make bench-quick")
        );
        assert!(
            CostsFile::from_json("{\"schema\": -1}")
                .unwrap_err()
                .to_string()
                .contains("not a version number")
        );
        assert!(
            CostsFile::from_json("[")
                .unwrap_err()
                .to_string()
                .contains("not JSON")
        );
        let mut f = CostsFile {
            schema: COSTS_SCHEMA,
            platform: Platform::detect(),
            benches: [("x".to_owned(), bench(vec![1.0, -1.0, 2.0]))].into(),
            differences: BTreeMap::new(),
        };
        let err = CostsFile::from_json(&serde_json::to_string(&f).unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a time"), "{err}");
        f.benches.clear();
        assert!(CostsFile::from_json(&serde_json::to_string(&f).unwrap()).is_ok());
    }

    #[test]
    fn texts_and_medians() {
        assert_eq!(ns_text(850.4), "850 ns");
        assert_eq!(ns_text(12_345.0), "12.3 µs");
        assert_eq!(ns_text(4_560_000.0), "4.56 ms");
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
