//! The spawn lock (a `std::sync::RwLock`: creators of descriptors hold it for
//! reading, spawners for writing, so no spawn copies a descriptor between its
//! creation and its close-on-exec flag): what it costs a creator, and what it
//! costs spawns while four threads create sockets.

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use fdwindow::hazards::spawn::{Prepared, SpawnPath};

use super::support::Group;

static SPAWN_LOCK: RwLock<()> = RwLock::new(());

fn create(locked: bool) -> UdpSocket {
    let _guard = locked.then(|| SPAWN_LOCK.read().unwrap_or_else(|e| e.into_inner()));
    UdpSocket::bind("127.0.0.1:0").expect("bind a loopback socket")
}

fn socket_create(c: &mut Criterion) {
    let mut group = Group::new(c, "socket-create", Duration::from_millis(800));
    group.bench("no-lock", "udp-loopback", || create(false));
    group.bench("spawn-lock", "udp-loopback", || create(true));
    group.finish();
}

/// Four threads creating and dropping sockets until stopped (or, should the
/// bench never stop them, for ten minutes at most). They take the spawn lock
/// while `locked` is set: the routine being timed sets it, so the same four
/// threads serve both arms of the interleaved rounds.
struct Creators {
    stop: Arc<AtomicBool>,
    locked: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Creators {
    fn start() -> Creators {
        let stop = Arc::new(AtomicBool::new(false));
        let locked = Arc::new(AtomicBool::new(false));
        let deadline = Instant::now() + Duration::from_secs(600);
        let threads = (0..4)
            .map(|_| {
                let stop = Arc::clone(&stop);
                let locked = Arc::clone(&locked);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                        drop(create(locked.load(Ordering::Relaxed)));
                    }
                })
            })
            .collect();
        Creators {
            stop,
            locked,
            threads,
        }
    }
}

impl Drop for Creators {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn spawn_with_creators(c: &mut Criterion) {
    let creators = Creators::start();
    let mut group = Group::new(c, "spawn-with-4-creators", Duration::from_millis(1500));
    for (imp, locked) in [("no-lock", false), ("spawn-lock", true)] {
        let mut prepared = Prepared::new(SpawnPath::PosixSpawn).expect("std spawn");
        let mode = &creators.locked;
        group.bench(imp, "udp-loopback", move || {
            mode.store(locked, Ordering::Relaxed);
            let child = {
                let _guard = locked.then(|| SPAWN_LOCK.write().unwrap_or_else(|e| e.into_inner()));
                prepared.spawn().expect("spawn")
            };
            child.wait().expect("child")
        });
    }
    group.finish();
}

criterion_group!(sockets, socket_create, spawn_with_creators);
