//! Criterion benches: each mitigation beside its baseline. Groups live one
//! topic per file; this file only lists them.

use criterion::criterion_main;

mod cloexec;
mod locks;
mod scratch_names;

criterion_main!(locks::locks, cloexec::cloexec, scratch_names::scratch_names);
