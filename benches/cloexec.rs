//! Creating a descriptor close-on-exec: two steps (the baseline) versus the
//! atomic flag versus two steps under the spawn lock; and spawning a child
//! with std (the baseline) versus the child-side fixes that close inherited
//! descriptors.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group};
use fdwindow::cloexec::{Call, Flag, Holder, Maker, SpawnHow, has_addclosefrom_np};
use fdwindow::scratch::Scratch;
use fdwindow::spawn_lock::SPAWN_LOCK;

fn create(c: &mut Criterion) {
    let scratch = Scratch::new("bench-cloexec").expect("scratch folder");
    let mut group = c.benchmark_group("cloexec-create");
    for call in [Call::Socket, Call::Pipe, Call::Open] {
        let maker = Maker::new(call, &scratch.fresh("sock")).expect("maker");
        group.bench_with_input(BenchmarkId::new("two-step", call.id()), &maker, |b, m| {
            b.iter(|| {
                let made = m.make(Flag::TwoStep).expect("make");
                made.set_cloexec().expect("set the flag");
            })
        });
        // Linux has every atomic form; elsewhere a missing one is skipped.
        if maker.make(Flag::Atomic).is_ok() {
            group.bench_with_input(
                BenchmarkId::new("atomic-flag", call.id()),
                &maker,
                |b, m| b.iter(|| m.make(Flag::Atomic).expect("make")),
            );
        }
        group.bench_with_input(BenchmarkId::new("spawn-lock", call.id()), &maker, |b, m| {
            b.iter(|| {
                let _creating = SPAWN_LOCK.creating();
                let made = m.make(Flag::TwoStep).expect("make");
                made.set_cloexec().expect("set the flag");
            })
        });
    }
    group.finish();
}

fn spawn(c: &mut Criterion) {
    let mut group = c.benchmark_group("cloexec-spawn");
    // Each iteration starts, syncs with and reaps a child: slow, so few samples.
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(2));
    let mut hows = vec![("std", SpawnHow::Std)];
    if Holder::spawn(SpawnHow::CloseRangeInChild)
        .and_then(Holder::release)
        .is_ok()
    {
        hows.push(("close-range-in-child", SpawnHow::CloseRangeInChild));
    }
    if has_addclosefrom_np() {
        hows.push(("closefrom-file-action", SpawnHow::ClosefromFileAction));
    }
    if Holder::spawn(SpawnHow::CloexecDefault)
        .and_then(Holder::release)
        .is_ok()
    {
        hows.push(("spawn-cloexec-default", SpawnHow::CloexecDefault));
    }
    for (id, how) in hows {
        group.bench_function(id, |b| {
            b.iter(|| {
                Holder::spawn(how)
                    .and_then(Holder::release)
                    .expect("spawn and reap cat")
            })
        });
    }
    group.finish();
}

criterion_group!(cloexec, create, spawn);
