//! The guard as a user's test uses it: a few lines around the code under test.
//! Under pressure, unlocking before close releases a flock for every copy a
//! forked child holds, so this passes whatever the children's timing (the
//! close-only version fails under the same pressure only by chance, so it is
//! measured by `fdwindow stress` on `examples/flock_handoff.rs`, not asserted).

use std::fs::OpenOptions;
use std::time::{Duration, Instant};

use fdwindow_fix::pressure::{Config, Pressure};

#[test]
fn unlock_before_close_holds_under_pressure() {
    let dir = fdwindow_fix::base::scratch::Scratch::new("pressure-guard").unwrap();
    let path = dir.fresh("lock");
    let open = || {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .unwrap()
    };
    let pressure = Pressure::start(Config::default()).unwrap();
    // Children are being started before the code under test runs.
    let deadline = Instant::now() + Duration::from_secs(60);
    while pressure.stats().spawns == 0 && Instant::now() < deadline {
        std::thread::yield_now();
    }
    for round in 0..500 {
        let owner = open();
        owner.lock().unwrap();
        owner.unlock().unwrap();
        drop(owner);
        let next = open();
        assert!(
            next.try_lock().is_ok(),
            "round {round}: the lock outlived unlock+close"
        );
        next.unlock().unwrap();
    }
    let stats = pressure.stop().unwrap();
    assert!(stats.spawns > 0, "{stats:?}");
}
