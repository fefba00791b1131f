//! What every bench group shares: timing each routine with our own clock
//! (criterion's `iter_custom`), and again in interleaved batches whose
//! samples go into `results/costs-<platform>.json`, without reading
//! criterion's private JSON.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion};

/// Per-iteration times (ns) of every interleaved batch, by `<group>/<impl>/<param>`.
static RECORDS: Mutex<BTreeMap<String, Vec<f64>>> = Mutex::new(BTreeMap::new());

/// A routine's timed batch: runs it `iters` times, returns the time taken.
type Batch<'r> = Box<dyn FnMut(u64) -> Duration + 'r>;

/// A criterion group that also times its routines in interleaved batches.
///
/// `bench` and `bench_batched` only register a routine; [`Group::measure`]
/// (called by [`Group::finish`], or earlier by a group whose routines need
/// state that ends sooner) runs criterion's pass over each, then the rounds
/// whose samples go into the costs file: every round times one batch of each
/// routine registered since the last `measure`, in an order rotated by one
/// each round, so load drift falls on a fix and its baseline alike.
pub struct Group<'c, 'r> {
    inner: BenchmarkGroup<'c, WallTime>,
    name: &'static str,
    measure: Duration,
    pending: Vec<(String, String, String, Batch<'r>)>,
}

impl<'c, 'r> Group<'c, 'r> {
    /// A group with short warm-up and measurement times, so that
    /// `make bench-quick` (criterion's `--quick`) stays short.
    pub fn new(c: &'c mut Criterion, name: &'static str, measure: Duration) -> Group<'c, 'r> {
        // `--quick` (make bench-quick) halves every time: criterion's pass
        // only informs, the costs come from the interleaved rounds.
        let measure = if quick() { measure / 2 } else { measure };
        let mut inner = c.benchmark_group(name);
        inner
            .warm_up_time(Duration::from_millis(if quick() { 100 } else { 200 }))
            .measurement_time(measure)
            .sample_size(20);
        Group {
            inner,
            name,
            measure,
            pending: Vec::new(),
        }
    }

    fn register(&mut self, imp: &str, param: &str, batch: Batch<'r>) {
        let id = format!("{}/{imp}/{param}", self.name);
        self.pending
            .push((id, imp.to_owned(), param.to_owned(), batch));
    }

    /// Benchmarks `routine` as `<impl>` at `param`.
    pub fn bench<R>(&mut self, imp: &str, param: &str, mut routine: impl FnMut() -> R + 'r) {
        self.register(
            imp,
            param,
            Box::new(move |iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(routine());
                }
                start.elapsed()
            }),
        );
    }

    /// Like [`Group::bench`], with an untimed `setup` before each timed call.
    pub fn bench_batched<S, R>(
        &mut self,
        imp: &str,
        param: &str,
        mut setup: impl FnMut() -> S + 'r,
        mut routine: impl FnMut(S) -> R + 'r,
    ) {
        self.register(
            imp,
            param,
            Box::new(move |iters| {
                let mut took = Duration::ZERO;
                for _ in 0..iters {
                    let input = setup();
                    let start = Instant::now();
                    let output = routine(input);
                    took += start.elapsed();
                    drop(black_box(output));
                }
                took
            }),
        );
    }

    /// Runs every routine registered since the last call: criterion's pass,
    /// then (in a real `cargo bench` run) the interleaved rounds.
    pub fn measure(&mut self) {
        let mut pending = std::mem::take(&mut self.pending);
        for (_, imp, param, batch) in &mut pending {
            self.inner
                .bench_function(BenchmarkId::new(imp.as_str(), param.as_str()), |b| {
                    b.iter_custom(&mut *batch)
                });
        }
        if !benchmarking() || pending.is_empty() {
            return;
        }
        let rounds = if quick() { QUICK_ROUNDS } else { ROUNDS };
        // Size each routine's batch so that all rounds together take about
        // the group's measurement time: one untimed call to warm it, one
        // timed call to size it.
        let per_batch = self.measure.as_secs_f64() / (rounds * pending.len()) as f64;
        let sizes: Vec<u64> = pending
            .iter_mut()
            .map(|(_, _, _, batch)| {
                batch(1);
                let one = batch(1).as_secs_f64().max(1e-9);
                ((per_batch / one) as u64).clamp(1, 1_000_000)
            })
            .collect();
        let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); pending.len()];
        for round in 0..rounds {
            for k in 0..pending.len() {
                let i = (k + round) % pending.len();
                let took = (pending[i].3)(sizes[i]);
                samples[i].push(took.as_nanos() as f64 / sizes[i] as f64);
            }
        }
        let mut records = RECORDS.lock().unwrap_or_else(|e| e.into_inner());
        for ((id, ..), s) in pending.iter().zip(samples) {
            records.insert(id.clone(), s);
        }
    }

    /// Measures what is left and ends the group.
    pub fn finish(mut self) {
        self.measure();
        self.inner.finish();
    }
}

/// Rounds of interleaved batches per routine in a full run, and with `--quick`.
const ROUNDS: usize = 100;
const QUICK_ROUNDS: usize = 40;

/// Whether criterion was asked for its `--quick` mode.
fn quick() -> bool {
    std::env::args().any(|a| a == "--quick")
}

/// Whether this is a real `cargo bench` run (cargo passes `--bench`), not
/// `cargo test --benches` (one untimed pass per benchmark) or `--list`.
fn benchmarking() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--list" || a == "--test")
}

/// Listed last in `criterion_main!`: merges the interleaved samples of every
/// benchmark run now into `$FDWINDOW_RESULTS/costs-<platform>.json` (default
/// `results/`, beside the manifest: cargo runs benches there), which adds
/// each linked fix's interval ([`fdwindow::evidence::costs::Difference`]).
pub fn write_costs() {
    if !benchmarking() {
        return;
    }
    let records = std::mem::take(&mut *RECORDS.lock().unwrap_or_else(|e| e.into_inner()));
    let measured: BTreeMap<String, fdwindow::evidence::costs::BenchCost> = records
        .into_iter()
        .filter_map(|(id, samples)| {
            fdwindow::evidence::costs::BenchCost::from_samples(samples).map(|c| (id, c))
        })
        .collect();
    if measured.is_empty() {
        return;
    }
    let dir = std::env::var_os("FDWINDOW_RESULTS")
        .map_or_else(|| PathBuf::from("results"), PathBuf::from);
    match fdwindow::evidence::costs::merge_and_write(&dir, measured) {
        Ok(path) => eprintln!("fdwindow: wrote {}", path.display()),
        Err(e) => {
            eprintln!("error: writing the costs: {e}");
            std::process::exit(1);
        }
    }
}
