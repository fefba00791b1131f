//! Criterion benches: each mitigation beside its baseline. Groups live one
//! topic per file; this file only lists them. `support::write_costs`, last,
//! writes the medians to `results/costs-<platform>.json` for the matrix.

use criterion::criterion_main;

mod benchmarks;

use benchmarks::{
    creation, env, fix_spawn, isolate, listeners, locks, scratch, sockets, spawn, support,
};

criterion_main!(
    // First: a child started by the run-test group runs its test and exits here.
    isolate::serve_child,
    spawn::spawns,
    fix_spawn::fix_spawns,
    creation::creation,
    env::env,
    sockets::sockets,
    locks::locks,
    listeners::listeners,
    scratch::scratch,
    isolate::isolate,
    support::write_costs,
);
