//! Reading a setting: libc's `getenv` (the baseline, unsafe beside a
//! concurrent `setenv`), std's `env::var` (takes std's environment lock),
//! the same behind one process-wide guard, and passing the value explicitly.

use std::ffi::CString;
use std::hint::black_box;
use std::sync::Mutex;
use std::time::Duration;

use criterion::{Criterion, criterion_group};

use super::support::Group;

/// Read by every routine; set by none (benches run single-threaded).
const NAME: &str = "PATH";

fn env_read(c: &mut Criterion) {
    let name = CString::new(NAME).expect("no NUL");
    let guard = Mutex::new(());
    let explicit = std::env::var(NAME).unwrap_or_default();
    let mut group = Group::new(c, "env-read", Duration::from_millis(500));
    let param = "one-variable";
    group.bench("libc-getenv", param, || {
        // SAFETY: nothing in the bench process changes the environment.
        unsafe { libc::getenv(name.as_ptr()) }.is_null()
    });
    group.bench("std-env-only", param, || std::env::var_os(NAME));
    group.bench("one-env-guard", param, || {
        let _held = guard.lock().expect("guard");
        std::env::var_os(NAME)
    });
    group.bench("pass-explicitly", param, || black_box(&explicit).len());
    group.finish();
}

criterion_group!(env, env_read);
