//! The exposed patterns and the CPU work that more than one binary runs,
//! each with its repetitions and its teardown as parameters: the small
//! binaries tune them to their calibrated rates, the seed binary runs them
//! at a low and a high repetition among its busy tests.

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::time::Duration;

use rustix::fs::FlockOperation;

use crate::{EofWait, read_to_eof_within, work, work_us};

/// A fixed amount of CPU work (an FNV-style hash over a buffer).
pub fn checksum(rounds: u32) -> u64 {
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 31) as u8).collect();
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for _ in 0..rounds {
        for &b in std::hint::black_box(&data) {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
    h
}

/// flock(2) on the file's descriptor.
pub fn flock(f: &File, op: FlockOperation) -> std::io::Result<()> {
    Ok(rustix::fs::flock(f, op)?)
}

/// A server stopped by dropping its listener must refuse a connect, checked
/// `teardown_us` after the drop; `iters` times, `work_ms` apart. A child's
/// copy of the listener keeps it listening (listener-survival).
pub fn stopped_server_refuses(iters: usize, teardown_us: u64, work_ms: u64) {
    for i in 0..iters {
        let server = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = server.local_addr().unwrap();
        drop(server);
        work_us(teardown_us);
        match TcpStream::connect(addr) {
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {}
            Err(e) => panic!("iteration {i}: connect to the stopped server {addr}: {e}"),
            Ok(_) => panic!("iteration {i}: the stopped server on {addr} accepted a connection"),
        }
        work(work_ms);
    }
}

/// A UDP port picked by binding port 0 and dropping the socket must bind
/// again `teardown_us` later; `iters` times, `work_ms` apart. A child's copy
/// of the picking socket still holds the port (port-pick, UDP).
pub fn picked_udp_port_binds(iters: usize, teardown_us: u64, work_ms: u64) {
    for i in 0..iters {
        let pick = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = pick.local_addr().unwrap().port();
        drop(pick);
        work_us(teardown_us);
        UdpSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)).unwrap_or_else(|e| {
            panic!("iteration {i}: the UDP service on picked port {port}: {e}")
        });
        work(work_ms);
    }
}

/// An exclusive flock on `path` released by closing the file must be free
/// at once for the next open; `iters` times, `work_ms` apart. A child's copy
/// of the first descriptor keeps the lock (flock-survival).
pub fn lock_handoff(path: &Path, iters: usize, work_ms: u64) {
    File::create(path).unwrap();
    for i in 0..iters {
        let first = File::options().write(true).open(path).unwrap();
        flock(&first, FlockOperation::LockExclusive).unwrap();
        drop(first);
        let next = File::options().write(true).open(path).unwrap();
        flock(&next, FlockOperation::NonBlockingLockExclusive).unwrap_or_else(|e| {
            panic!("iteration {i}: the lock released by close is still held: {e}")
        });
        drop(next);
        work(work_ms);
    }
}

/// A pipe's reader must see end-of-file within `wait` of the writer's drop;
/// `iters` times, `work_ms` apart. A child's copy of the write end holds
/// the end-of-file back (pipe-eof).
pub fn job_output_eof(iters: usize, wait: Duration, work_ms: u64) {
    for i in 0..iters {
        let (reader, mut writer) = std::io::pipe().unwrap();
        writer.write_all(b"job done\n").unwrap();
        drop(writer);
        match read_to_eof_within(&reader, wait) {
            Ok(out) => assert_eq!(out, b"job done\n"),
            Err(EofWait::TimedOut { read, waited }) => panic!(
                "iteration {i}: no end-of-file {waited:?} after the writer was dropped ({} bytes read)",
                read.len()
            ),
            Err(EofWait::Io(e)) => panic!("iteration {i}: reading the pipe: {e}"),
        }
        work(work_ms);
    }
}
