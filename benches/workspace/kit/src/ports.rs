//! A port picker, as test suites write them: bind port 0, read the port,
//! let the socket go, hand the number to whoever starts the real service.

use std::net::{Ipv4Addr, UdpSocket};

/// A UDP port that was free a moment ago. The probe socket is dropped
/// before the caller binds the port; a child's copy of it keeps the port
/// taken (port-pick).
pub fn free_udp_port() -> u16 {
    let probe = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    port
}
