//! What every bench group shares: timing each routine with our own clock
//! (criterion's `iter_custom`), so that the medians can go into
//! `results/costs-<platform>.json` without reading criterion's private JSON.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion};

/// Per-iteration times (ns) of every timed batch, by `<group>/<impl>/<param>`.
static RECORDS: Mutex<BTreeMap<String, Vec<f64>>> = Mutex::new(BTreeMap::new());

fn record(id: &str, iters: u64, took: Duration) {
    if iters == 0 {
        return;
    }
    let mut records = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
    records
        .entry(id.to_owned())
        .or_default()
        .push(took.as_nanos() as f64 / iters as f64);
}

/// A criterion group that also records what it times.
pub struct Group<'a> {
    inner: BenchmarkGroup<'a, WallTime>,
    name: &'static str,
}

impl<'a> Group<'a> {
    /// A group with short warm-up and measurement times, so that
    /// `make bench-quick` (criterion's `--quick`) stays under two minutes.
    pub fn new(c: &'a mut Criterion, name: &'static str, measure: Duration) -> Group<'a> {
        let mut inner = c.benchmark_group(name);
        inner
            .warm_up_time(Duration::from_millis(200))
            .measurement_time(measure)
            .sample_size(20);
        Group { inner, name }
    }

    /// Benchmarks `routine` as `<impl>` at `param`.
    pub fn bench<R>(&mut self, imp: &str, param: &str, mut routine: impl FnMut() -> R) {
        let id = format!("{}/{imp}/{param}", self.name);
        self.inner
            .bench_function(BenchmarkId::new(imp, param), |b| {
                b.iter_custom(|iters| {
                    let start = Instant::now();
                    for _ in 0..iters {
                        black_box(routine());
                    }
                    let took = start.elapsed();
                    record(&id, iters, took);
                    took
                })
            });
    }

    /// Like [`Group::bench`], with an untimed `setup` before each timed call.
    pub fn bench_batched<S, R>(
        &mut self,
        imp: &str,
        param: &str,
        mut setup: impl FnMut() -> S,
        mut routine: impl FnMut(S) -> R,
    ) {
        let id = format!("{}/{imp}/{param}", self.name);
        self.inner
            .bench_function(BenchmarkId::new(imp, param), |b| {
                b.iter_custom(|iters| {
                    let mut took = Duration::ZERO;
                    for _ in 0..iters {
                        let input = setup();
                        let start = Instant::now();
                        let output = routine(input);
                        took += start.elapsed();
                        drop(black_box(output));
                    }
                    record(&id, iters, took);
                    took
                })
            });
    }

    /// Ends the group.
    pub fn finish(self) {
        self.inner.finish();
    }
}

/// Whether this is a real `cargo bench` run (cargo passes `--bench`), not
/// `cargo test --benches` (one untimed pass per benchmark) or `--list`.
fn benchmarking() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--list" || a == "--test")
}

/// Listed last in `criterion_main!`: merges the median per-iteration time of
/// every benchmark run now into `$FDWINDOW_RESULTS/costs-<platform>.json`
/// (default `results/`, beside the manifest: cargo runs benches there).
///
/// The median is taken over the later half of each benchmark's timed batches:
/// criterion's warm-up calls come first and are left out.
pub fn write_costs() {
    if !benchmarking() {
        return;
    }
    let records = std::mem::take(&mut *RECORDS.lock().unwrap_or_else(|e| e.into_inner()));
    let measured: BTreeMap<String, fdwindow::costs::BenchCost> = records
        .into_iter()
        .filter_map(|(id, per_iter)| {
            let mut later = per_iter[per_iter.len() / 2..].to_vec();
            let samples = later.len() as u64;
            fdwindow::costs::median_ns(&mut later)
                .map(|median_ns| (id, fdwindow::costs::BenchCost { median_ns, samples }))
        })
        .collect();
    if measured.is_empty() {
        return;
    }
    let dir = std::env::var_os("FDWINDOW_RESULTS")
        .map_or_else(|| PathBuf::from("results"), PathBuf::from);
    match fdwindow::costs::merge_and_write(&dir, measured) {
        Ok(path) => eprintln!("fdwindow: wrote {}", path.display()),
        Err(e) => {
            eprintln!("error: writing the costs: {e}");
            std::process::exit(1);
        }
    }
}
