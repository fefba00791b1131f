//! Services started on picked ports: one binds the port `kit::ports`
//! picked (exposed, labels.json); the others let the kernel pick.

use std::net::{Ipv4Addr, UdpSocket};

mod busy {
    include!(concat!(env!("OUT_DIR"), "/busy_tests.rs"));
}

fn busy(i: usize) {
    kit::busy::mixed(i);
}

#[test]
fn metrics_exporter_binds_picked_port() {
    let port = kit::ports::free_udp_port();
    UdpSocket::bind((Ipv4Addr::LOCALHOST, port))
        .unwrap_or_else(|e| panic!("the exporter on picked port {port}: {e}"));
}

#[test]
fn exporter_on_kernel_port_answers() {
    let exporter = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let client = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    client
        .send_to(b"up?", exporter.local_addr().unwrap())
        .unwrap();
    let mut buf = [0u8; 8];
    let (n, _) = exporter.recv_from(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"up?");
}
