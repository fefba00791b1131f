//! The work of the suites' ordinary tests: files written and read back,
//! local connections, programs run. A held copy of anything they close
//! breaks none of them: none looks at a closed resource again, and no name
//! they use is reused (ports are the kernel's pick, paths are per call).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Command, Stdio};

use crate::ScratchDir;

/// One ordinary test, by index: what it does cycles through the kinds, so
/// every binary's busy tests open and close files, sockets and pipes and
/// start programs, as a real suite's do.
pub fn mixed(i: usize) {
    match i % 8 {
        0 | 4 => file(i),
        1 => tcp(i),
        2 | 6 => unix(i),
        3 => program_status(),
        5 => program_output(i),
        _ => {
            file(i);
            std::hint::black_box(checksum(30 + (i % 5) as u32));
        }
    }
}

/// A scratch file written, read back and removed.
pub fn file(i: usize) {
    let dir = ScratchDir::new("file");
    let path = dir.join("data");
    let body = format!("record {i}\n").repeat(64);
    std::fs::write(&path, &body).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), body);
    std::fs::remove_file(&path).unwrap();
}

/// One request and reply over loopback TCP, sized, so nothing waits for the
/// other side's close.
pub fn tcp(i: usize) {
    let server = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let mut client = TcpStream::connect(server.local_addr().unwrap()).unwrap();
    let (mut conn, _) = server.accept().unwrap();
    exchange(&mut client, &mut conn, i);
}

/// One request and reply over a Unix socket in a scratch folder.
pub fn unix(i: usize) {
    let dir = ScratchDir::new("unix");
    let server = UnixListener::bind(dir.join("sock")).unwrap();
    let mut client = UnixStream::connect(dir.join("sock")).unwrap();
    let (mut conn, _) = server.accept().unwrap();
    exchange(&mut client, &mut conn, i);
}

fn exchange(client: &mut impl ReadWrite, server: &mut impl ReadWrite, i: usize) {
    let request = (i as u32).to_le_bytes();
    client.write_all(&request).unwrap();
    let mut got = [0u8; 4];
    server.read_exact(&mut got).unwrap();
    server.write_all(&got).unwrap();
    let mut reply = [0u8; 4];
    client.read_exact(&mut reply).unwrap();
    assert_eq!(reply, request);
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// A program run for its exit status.
pub fn program_status() {
    let status = Command::new("true").stdin(Stdio::null()).status().unwrap();
    assert!(status.success());
}

/// A program run for its output: the reply ends when every copy of the
/// pipe's write end is closed, so a held copy delays it and breaks nothing.
pub fn program_output(i: usize) {
    let out = Command::new("echo")
        .arg(i.to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), i.to_string());
}

/// CPU work, `rounds` thousand mixing steps.
pub fn checksum(rounds: u32) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325_u64;
    for k in 0..rounds as u64 * 1000 {
        h = (h ^ k).wrapping_mul(0x0100_0000_01b3);
    }
    h
}
