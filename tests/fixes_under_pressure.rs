//! Every fix helper in `fdwindow_fix` holds while the fork-pressure
//! co-tenant starts children all around it (the spawn lock is held against a
//! racing spawner by the two-step-cloexec probe and its own unit test). Each check is one
//! that the naive code fails under the same pressure by chance (measured in
//! the matrix and by `fdwindow stress`); the fixes must pass every round, so
//! these assertions cannot depend on the children's timing.

use std::collections::HashSet;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use fdwindow_fix::base::locks::{flock, flock_is_held, open_rw, set_cloexec};
use fdwindow_fix::lock::{ExclusiveLock, unlock_then_close};
use fdwindow_fix::pressure::{Config, Pressure};
use fdwindow_fix::scratch::{create_unique_dir, unique_name};

const ROUNDS: usize = 200;

/// Pressure that has already started children.
fn pressure() -> Pressure {
    let pressure = Pressure::start(Config::default()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while pressure.stats().spawns == 0 && Instant::now() < deadline {
        std::thread::yield_now();
    }
    pressure
}

#[test]
fn lock_helpers_release_for_every_copy() {
    let dir = fdwindow_fix::base::scratch::Scratch::new("fix-pressure-lock").unwrap();
    let pressure = pressure();
    for round in 0..ROUNDS {
        let path = dir.fresh("lock");
        {
            let _guard = ExclusiveLock::acquire(&path).unwrap();
        }
        assert!(
            !flock_is_held(&path).unwrap(),
            "round {round}: ExclusiveLock's drop left it held"
        );
        let file = open_rw(&path).unwrap();
        set_cloexec(&file, false).unwrap(); // even a copy kept for a child's life
        flock(&file, libc::LOCK_EX).unwrap();
        unlock_then_close(file).unwrap();
        assert!(
            !flock_is_held(&path).unwrap(),
            "round {round}: unlock_then_close left it held"
        );
    }
    assert!(pressure.stop().unwrap().spawns > 0);
}

/// Linux only: elsewhere shutdown on a listener is refused (ENOTCONN on macOS).
#[cfg(target_os = "linux")]
#[test]
fn retired_listeners_refuse() {
    use fdwindow_fix::listener::{Retired, retire};
    let pressure = pressure();
    for round in 0..ROUNDS {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let retired = retire(listener);
        assert!(matches!(retired, Retired::EveryCopy), "{retired:?}");
        let connect = TcpStream::connect(addr);
        assert!(
            connect.is_err(),
            "round {round}: a retired listener accepted"
        );
    }
    assert!(pressure.stop().unwrap().spawns > 0);
}

#[test]
fn placeholders_refuse_until_they_listen() {
    use fdwindow_fix::listener::Placeholder;
    let pressure = pressure();
    for round in 0..ROUNDS {
        let placeholder = Placeholder::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = placeholder.local_addr().unwrap();
        let connect = TcpStream::connect(addr);
        assert!(connect.is_err(), "round {round}: a placeholder accepted");
        let listener = placeholder.listen(8).unwrap();
        assert_eq!(listener.local_addr().unwrap(), addr);
    }
    assert!(pressure.stop().unwrap().spawns > 0);
}

#[test]
fn scratch_names_never_repeat_across_threads() {
    let dir = fdwindow_fix::base::scratch::Scratch::new("fix-pressure-names").unwrap();
    let pressure = pressure();
    let names: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    (0..ROUNDS)
                        .map(|_| {
                            create_unique_dir(dir.dir(), "fixture").unwrap();
                            unique_name("fixture")
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let distinct: HashSet<&String> = names.iter().collect();
    assert_eq!(distinct.len(), names.len());
    assert!(pressure.stop().unwrap().spawns > 0);
}
