//! A test that retires a listener by closing it and expects new connections to
//! be refused. It passes alone and fails under fork pressure: a child forked
//! while the listener was open holds a copy of the socket, which keeps
//! listening, so the kernel completes the handshake into its backlog. With
//! `--fix` it calls `shutdown(SHUT_RD)` before closing, which on Linux stops
//! the socket listening in every copy, and passes under pressure too. (On
//! macOS, see `fdwindow advise listener-survival` for what holds there.)
//!
//! ```text
//! target/release/fdwindow stress --runs 200 -- target/release/examples/retired_listener
//! target/release/fdwindow stress --runs 200 -- target/release/examples/retired_listener --fix
//! ```
//!
//! 1. Bind a listener on 127.0.0.1:0 and note its port.
//! 2. With `--fix`, `shutdown(fd, SHUT_RD)`; then drop the listener.
//! 3. Connect to the port: success is the failure a flaky test sees.
//!
//! Repeated `--rounds` times (default 1000) per run. Loopback only.

use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fix = args.iter().any(|a| a == "--fix");
    let rounds: u32 = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    for round in 0..rounds {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("local_addr");
        if fix {
            rustix::net::shutdown(&listener, rustix::net::Shutdown::Read).expect("shutdown");
        }
        drop(listener);
        match TcpStream::connect(addr) {
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {}
            // The client's ephemeral port can equal the dead listener's port:
            // TCP simultaneous open connects the socket to itself.
            Ok(s) if s.local_addr().ok() == Some(addr) => {}
            Ok(_) => {
                eprintln!("round {round}: the closed listener accepted a connection");
                return ExitCode::FAILURE;
            }
            Err(e) => panic!("connect: {e}"),
        }
    }
    ExitCode::SUCCESS
}
