//! Releasing and taking file locks: close alone (the baseline) versus unlock
//! then close, for flock and OFD locks; and what each lock kind costs to take
//! and release next to a traditional POSIX record lock.

use std::fs::File;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group};
use fdwindow_fix::base::locks::{RecordLock, flock, open_rw, record_lock};
use fdwindow_fix::base::scratch::Scratch;

use super::support::Group;

fn locked_with(path: &Path, lock: impl Fn(&File)) -> File {
    let f = open_rw(path).expect("open");
    lock(&f);
    f
}

fn flock_release(c: &mut Criterion) {
    let scratch = Scratch::new("bench-locks").expect("scratch folder");
    let path = scratch.fresh("lock");
    let take = |f: &File| flock(f, libc::LOCK_EX).expect("flock");
    let mut group = Group::new(c, "flock-release", Duration::from_millis(800));
    group.bench_batched("close", "regular-file", || locked_with(&path, take), drop);
    group.bench_batched(
        "unlock-then-close",
        "regular-file",
        || locked_with(&path, take),
        |f| {
            flock(&f, libc::LOCK_UN).expect("unlock");
            drop(f)
        },
    );
    group.bench_batched(
        "std-unlock",
        "regular-file",
        || locked_with(&path, |f| f.lock().expect("File::lock")),
        |f| {
            f.unlock().expect("File::unlock");
            drop(f)
        },
    );
    group.bench_batched(
        "fs2-unlock",
        "regular-file",
        || {
            locked_with(&path, |f| {
                fs2::FileExt::lock_exclusive(f).expect("fs2 lock")
            })
        },
        |f| {
            fs2::FileExt::unlock(&f).expect("fs2 unlock");
            drop(f)
        },
    );
    group.finish();
}

/// Whether this kernel has OFD locks (`EINVAL` where it does not).
fn ofd_supported(path: &Path) -> bool {
    let f = open_rw(path).expect("open");
    record_lock(&f, RecordLock::Ofd, libc::F_WRLCK as libc::c_int).is_ok()
}

fn ofd_release(c: &mut Criterion) {
    let scratch = Scratch::new("bench-locks").expect("scratch folder");
    let path = scratch.fresh("lock");
    if !ofd_supported(&path) {
        eprintln!("ofd-release: skipped: no OFD locks here");
        return;
    }
    let take =
        |f: &File| record_lock(f, RecordLock::Ofd, libc::F_WRLCK as libc::c_int).expect("lock");
    let mut group = Group::new(c, "ofd-release", Duration::from_millis(800));
    group.bench_batched("close", "regular-file", || locked_with(&path, take), drop);
    group.bench_batched(
        "unlock-then-close",
        "regular-file",
        || locked_with(&path, take),
        |f| {
            record_lock(&f, RecordLock::Ofd, libc::F_UNLCK as libc::c_int).expect("unlock");
            drop(f)
        },
    );
    group.finish();
}

fn lock_kind(c: &mut Criterion) {
    let scratch = Scratch::new("bench-locks").expect("scratch folder");
    let path = scratch.fresh("lock");
    let f = open_rw(&path).expect("open");
    let (wr, un) = (libc::F_WRLCK as libc::c_int, libc::F_UNLCK as libc::c_int);
    let mut group = Group::new(c, "lock-kind", Duration::from_millis(800));
    group.bench("posix-fcntl", "lock-unlock", || {
        record_lock(&f, RecordLock::Posix, wr).expect("lock");
        record_lock(&f, RecordLock::Posix, un).expect("unlock");
    });
    group.bench("flock", "lock-unlock", || {
        flock(&f, libc::LOCK_EX).expect("lock");
        flock(&f, libc::LOCK_UN).expect("unlock");
    });
    if ofd_supported(&path) {
        group.bench("ofd-lock", "lock-unlock", || {
            record_lock(&f, RecordLock::Ofd, wr).expect("lock");
            record_lock(&f, RecordLock::Ofd, un).expect("unlock");
        });
    }
    group.finish();
}

criterion_group!(locks, flock_release, ofd_release, lock_kind);
