//! The test server: one test stops it and checks that it is gone
//! (exposed through `kit::server::TestServer::stop`, labels.json); the
//! others only talk to it.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;

use kit::server::TestServer;

mod busy {
    include!(concat!(env!("OUT_DIR"), "/busy_tests.rs"));
}

fn busy(i: usize) {
    kit::busy::mixed(i);
}

fn echo(server: &TestServer) {
    let mut client = TcpStream::connect(server.addr()).unwrap();
    client.write_all(b"ping").unwrap();
    server.serve_one();
    let mut got = [0u8; 4];
    client.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"ping");
}

#[test]
fn stopped_server_refuses_connections() {
    let server = TestServer::start();
    echo(&server);
    let addr = server.stop();
    match TcpStream::connect(addr) {
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => {}
        Err(e) => panic!("connect to the stopped server {addr}: {e}"),
        Ok(_) => panic!("the stopped server on {addr} accepted a connection"),
    }
}

#[test]
fn server_answers_twice() {
    let server = TestServer::start();
    echo(&server);
    echo(&server);
    server.stop();
}
