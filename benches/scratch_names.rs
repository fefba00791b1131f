//! Creating a scratch folder exclusively: a pid+timestamp name (the baseline,
//! which collides on a microsecond clock) versus the fixes `clock-collision`
//! shows valid. Each iteration creates the folder and removes it.

use std::time::{SystemTime, UNIX_EPOCH};

use criterion::{Criterion, criterion_group};
use fdwindow::fix::scratch::create_unique_dir;
use fdwindow::scratch::Scratch;

fn create(c: &mut Criterion) {
    let scratch = Scratch::new("bench-names").expect("scratch folder");
    let dir = scratch.dir();
    let pid = std::process::id();
    let mut group = c.benchmark_group("scratch-name");
    group.bench_function("pid-realtime-nanos", |b| {
        b.iter(|| {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("after 1970")
                .as_nanos();
            let path = dir.join(format!("f-{pid}-{nanos}"));
            std::fs::create_dir(&path).expect("create");
            std::fs::remove_dir(&path).expect("remove");
        })
    });
    group.bench_function("process-sequence", |b| {
        b.iter(|| {
            let path = create_unique_dir(dir, "f").expect("create");
            std::fs::remove_dir(&path).expect("remove");
        })
    });
    group.bench_function("tempfile", |b| {
        b.iter(|| {
            let d = tempfile::Builder::new()
                .prefix("f-")
                .tempdir_in(dir)
                .expect("create");
            d.close().expect("remove");
        })
    });
    group.finish();
}

criterion_group!(scratch_names, create);
