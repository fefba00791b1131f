//! Releasing a flock: close alone (the baseline) versus unlock then close.

use std::fs::OpenOptions;

use criterion::{BatchSize, Criterion, criterion_group};
use fdwindow::locks::flock;
use fdwindow::scratch::Scratch;

fn release(c: &mut Criterion) {
    let scratch = Scratch::new("bench-locks").expect("scratch folder");
    let path = scratch.fresh("lock");
    let open_locked = || {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .expect("open");
        flock(&f, libc::LOCK_EX).expect("flock");
        f
    };
    let mut group = c.benchmark_group("flock-release");
    group.bench_function("close", |b| {
        b.iter_batched(open_locked, drop, BatchSize::SmallInput)
    });
    group.bench_function("unlock-then-close", |b| {
        b.iter_batched(
            open_locked,
            |f| {
                flock(&f, libc::LOCK_UN).expect("unlock");
                drop(f)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(locks, release);
