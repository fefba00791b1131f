//! The helper crate's API, used as it is meant to be: each store opened
//! once per path, each server stopped and never called again, each picked
//! port bound by nobody else. Nothing here is exposed (labels.json).

use kit::ScratchDir;
use kit::server::TestServer;
use kit::store::with_store;

mod busy {
    include!(concat!(env!("OUT_DIR"), "/busy_tests.rs"));
}

fn busy(i: usize) {
    kit::busy::mixed(i);
}

#[test]
fn store_keeps_what_was_put() {
    let dir = ScratchDir::new("api-store");
    let path = dir.join("store");
    let got = with_store(&path, |s| {
        s.put("colour", "green");
        s.get("colour").map(str::to_owned)
    })
    .unwrap();
    assert_eq!(got.as_deref(), Some("green"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "colour=green\n");
}

#[test]
fn server_echoes_one_request() {
    use std::io::{Read, Write};
    let server = TestServer::start();
    let mut client = std::net::TcpStream::connect(server.addr()).unwrap();
    client.write_all(b"ping").unwrap();
    server.serve_one();
    let mut got = [0u8; 4];
    client.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"ping");
    server.stop();
}

#[test]
fn picked_port_is_not_zero() {
    assert_ne!(kit::ports::free_udp_port(), 0);
}
