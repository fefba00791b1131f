//! Naming a scratch file: pid plus the wall clock's nanoseconds (the baseline,
//! which collides where the clock is coarse) versus pid plus a process-wide
//! sequence, versus the tempfile crate. Each creates the file exclusively and
//! removes it, as a test would.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, criterion_group};
use fdwindow_fix::base::scratch::Scratch;

use super::support::Group;

fn create_remove(dir: &Path, name: String) {
    let path = dir.join(name);
    File::create_new(&path).expect("create_new");
    std::fs::remove_file(&path).expect("remove");
}

fn scratch_name(c: &mut Criterion) {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let scratch = Scratch::new("bench-scratch").expect("scratch folder");
    let dir = scratch.dir();
    let pid = std::process::id();
    let mut group = Group::new(c, "scratch-name", Duration::from_millis(800));
    group.bench("pid-realtime-nanos", "create-remove", || {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_nanos();
        create_remove(dir, format!("f-{pid}-{nanos}"))
    });
    group.bench("process-sequence", "create-remove", || {
        let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        create_remove(dir, format!("f-{pid}-{n}"))
    });
    group.bench("tempfile", "create-remove", || {
        // Dropping the NamedTempFile removes it.
        tempfile::Builder::new()
            .prefix("f-")
            .tempfile_in(dir)
            .expect("tempfile")
    });
    group.finish();
}

criterion_group!(scratch, scratch_name);
