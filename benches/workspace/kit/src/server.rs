//! A test server on a loopback port, started and stopped by the tests that
//! talk to it.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};

/// A server listening on a port the kernel picked.
pub struct TestServer {
    listener: TcpListener,
    addr: SocketAddr,
}

impl TestServer {
    pub fn start() -> TestServer {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        TestServer { listener, addr }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Accepts one connection and echoes one 4-byte request.
    pub fn serve_one(&self) {
        let (mut conn, _) = self.listener.accept().unwrap();
        let mut buf = [0u8; 4];
        conn.read_exact(&mut buf).unwrap();
        conn.write_all(&buf).unwrap();
    }

    /// Stops the server: its port refuses connections from now on, unless a
    /// child holds a copy of the listener (listener-survival).
    pub fn stop(self) -> SocketAddr {
        let addr = self.addr;
        drop(self.listener);
        addr
    }
}
