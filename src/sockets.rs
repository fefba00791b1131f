//! The socket calls the socket probes (and users' fixes) are made of: loopback
//! listeners, placeholders that bind but never listen, non-blocking connects
//! that wait on `poll(2)` to a deadline, and what a peer sees next.
//!
//! Nothing here sleeps: every wait is a `poll` on the socket with a deadline,
//! and a deadline passing is reported as such, never taken as an answer.

use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

use crate::errno::error_name;

/// How long a loopback handshake, reset or FIN may take before the wait counts
/// as failed. Generous: under load a loopback answer can take seconds; on an
/// idle machine it takes microseconds.
pub const LOOPBACK_DEADLINE: Duration = Duration::from_secs(10);

/// `127.0.0.1:port`.
pub fn loopback_v4(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// Options set on a socket before it binds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BindOptions {
    /// `SO_REUSEADDR`.
    pub reuse_addr: bool,
    /// `SO_REUSEPORT`.
    pub reuse_port: bool,
    /// `IPV6_V6ONLY`, for an IPv6 socket: `Some(false)` makes a dual-stack socket.
    pub v6_only: Option<bool>,
}

/// A TCP socket bound to `addr` that never listens.
///
/// `bind(fd, addr, len)`—Bind a name to a socket. A bound TCP socket that has
/// not called `listen` is not in the kernel's listener lookup, so a SYN to its
/// address is answered with RST and `connect` fails with `ECONNREFUSED`, in
/// every process holding a copy. It still holds the address: a later bind of
/// the same port conflicts unless both set `SO_REUSEADDR` (see the bind-matrix
/// probe for what each OS allows).
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/bind.2.html>
/// - <https://man7.org/linux/man-pages/man7/socket.7.html> (`SO_REUSEADDR`, `SO_REUSEPORT`)
pub fn bound(addr: SocketAddr, opts: BindOptions) -> io::Result<Socket> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if opts.reuse_addr {
        sock.set_reuse_address(true)?;
    }
    if opts.reuse_port {
        crate::sys::set_reuse_port(&sock)?;
    }
    if let Some(only) = opts.v6_only {
        sock.set_only_v6(only)?;
    }
    sock.bind(&addr.into())?;
    Ok(sock)
}

/// A listening TCP socket on `addr` (port 0 picks one), like std's
/// `TcpListener::bind` (which also sets `SO_REUSEADDR` on Unix).
///
/// `listen(fd, backlog)`—Listen for connections on a socket. From then on the
/// kernel completes handshakes into the accept queue by itself: a client's
/// `connect` succeeds whether or not anyone will ever call `accept`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/listen.2.html>
pub fn listening(addr: SocketAddr, backlog: i32) -> io::Result<Socket> {
    let sock = bound(
        addr,
        BindOptions {
            reuse_addr: true,
            ..BindOptions::default()
        },
    )?;
    sock.listen(backlog)?;
    Ok(sock)
}

/// The address a socket is bound to.
pub fn local_addr(sock: &Socket) -> io::Result<SocketAddr> {
    sock.local_addr()?
        .as_socket()
        .ok_or_else(|| io::Error::other("not an inet socket"))
}

/// How a connect attempt ended.
#[derive(Debug)]
pub enum Connect {
    /// The handshake completed: the kernel queued the connection on a listener.
    Connected(Socket),
    /// The peer answered the SYN with RST (`ECONNREFUSED`).
    Refused,
    /// The handshake completed, then the peer reset the connection before the
    /// client looked (`ECONNRESET`: Linux's `tcp_reset` reports a reset in
    /// `SYN_SENT` as `ECONNREFUSED`, in a synchronized state as this).
    Reset,
}

/// Connects a fresh non-blocking client to `addr` and waits (on `poll`) until
/// the handshake completes or is refused. No answer by `deadline` is an error
/// of kind `TimedOut`.
pub fn connect_by(addr: SocketAddr, deadline: Instant) -> io::Result<Connect> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    sock.set_nonblocking(true)?;
    match sock.connect(&addr.into()) {
        Ok(()) => return Ok(Connect::Connected(sock)),
        Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => return Ok(Connect::Refused),
        Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => return Ok(Connect::Reset),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    if !poll_by(&sock, libc::POLLOUT, deadline)? {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("connect to {addr}: no answer by the deadline"),
        ));
    }
    match sock.take_error()? {
        None => Ok(Connect::Connected(sock)),
        Some(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => Ok(Connect::Refused),
        Some(e) if e.raw_os_error() == Some(libc::ECONNRESET) => Ok(Connect::Reset),
        Some(e) => Err(e),
    }
}

/// Waits until `fd` reports one of `events` (or an error or hang-up), at most
/// until `deadline`: `Ok(false)` when the deadline passed first.
pub fn poll_by(fd: impl AsFd, events: libc::c_short, deadline: Instant) -> io::Result<bool> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match crate::sys::poll_one(fd.as_fd(), events, left) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
            Ok(false) if left.is_zero() => return Ok(false),
            Ok(false) => continue,
            Ok(true) => return Ok(true),
        }
    }
}

/// What a connected socket reads next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerSees {
    /// Bytes: the other end is open and wrote.
    Data,
    /// End of file: the other end sent FIN.
    Eof,
    /// `ECONNRESET`: the other end sent RST.
    Reset,
    /// Nothing by the deadline.
    Nothing,
}

impl PeerSees {
    /// The value recorded in tallies.
    pub fn id(self) -> &'static str {
        match self {
            PeerSees::Data => "data",
            PeerSees::Eof => "eof",
            PeerSees::Reset => "reset",
            PeerSees::Nothing => "nothing-by-deadline",
        }
    }
}

/// Waits (to `deadline`) for `sock` to become readable, then reads one byte.
/// Any error other than a reset is returned, not classified.
pub fn next_read(sock: &Socket, deadline: Instant) -> io::Result<PeerSees> {
    if !poll_by(sock, libc::POLLIN, deadline)? {
        return Ok(PeerSees::Nothing);
    }
    let mut buf = [0u8; 1];
    loop {
        match (&*sock).read(&mut buf) {
            Ok(0) => return Ok(PeerSees::Eof),
            Ok(_) => return Ok(PeerSees::Data),
            Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => return Ok(PeerSees::Reset),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("read: {} ({e})", error_name(&e)),
                ));
            }
        }
    }
}

/// Accepts every connection already queued on a listener and closes each:
/// the count accepted. The listener is left non-blocking.
pub fn drain(listener: &Socket) -> io::Result<usize> {
    listener.set_nonblocking(true)?;
    let mut n = 0;
    loop {
        match listener.accept() {
            Ok((conn, _)) => {
                drop(conn);
                n += 1;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// A connected loopback TCP pair: `(client, server)`, both blocking.
pub fn connected_pair(deadline: Instant) -> io::Result<(Socket, Socket)> {
    let listener = listening(loopback_v4(0), 1)?;
    let client = match connect_by(local_addr(&listener)?, deadline)? {
        Connect::Connected(c) => c,
        Connect::Refused | Connect::Reset => {
            return Err(io::Error::other("a fresh listener refused or reset"));
        }
    };
    client.set_nonblocking(false)?;
    if !poll_by(&listener, libc::POLLIN, deadline)? {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the connection never reached the accept queue",
        ));
    }
    let (server, _) = listener.accept()?;
    server.set_nonblocking(false)?;
    Ok((client, server))
}

/// The kernel's state for the TCP connection `local` → `peer`, as the kernel
/// names it (`ESTABLISHED`, `FIN_WAIT1`, …): `None` when the table has no
/// such connection; `Err(Unsupported)` where this crate has no reader for the
/// OS's connection table (Linux reads `/proc/net/tcp`).
///
/// The state changes inside the syscall that sends a FIN (`close` of the last
/// reference, or `shutdown(SHUT_WR)`), so reading it right after the call
/// says whether that call sent one; no waiting is involved.
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/proc_pid_net.5.html> (`/proc/net/tcp`)
/// - Linux `include/net/tcp_states.h` (state numbers)
pub fn tcp_state(local: SocketAddr, peer: SocketAddr) -> io::Result<Option<&'static str>> {
    crate::sys::tcp_state(local, peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn soon() -> Instant {
        Instant::now() + LOOPBACK_DEADLINE
    }

    #[test]
    fn unlistened_refuses_listening_accepts() {
        let _serial = crate::test_serial();
        let placeholder = bound(loopback_v4(0), BindOptions::default()).unwrap();
        let addr = local_addr(&placeholder).unwrap();
        assert!(matches!(
            connect_by(addr, soon()).unwrap(),
            Connect::Refused
        ));
        let listener = listening(loopback_v4(0), 4).unwrap();
        let addr = local_addr(&listener).unwrap();
        assert!(matches!(
            connect_by(addr, soon()).unwrap(),
            Connect::Connected(_)
        ));
        assert!(poll_by(&listener, libc::POLLIN, soon()).unwrap());
        assert_eq!(drain(&listener).unwrap(), 1);
    }

    #[test]
    fn peer_sees_data_then_eof() {
        let _serial = crate::test_serial();
        let (client, server) = connected_pair(soon()).unwrap();
        std::io::Write::write_all(&mut &client, b"x").unwrap();
        assert_eq!(next_read(&server, soon()).unwrap(), PeerSees::Data);
        drop(client);
        assert_eq!(next_read(&server, soon()).unwrap(), PeerSees::Eof);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn tcp_state_follows_the_fin() {
        let _serial = crate::test_serial();
        let (client, server) = connected_pair(soon()).unwrap();
        let (local, peer) = (local_addr(&client).unwrap(), local_addr(&server).unwrap());
        assert_eq!(tcp_state(local, peer).unwrap(), Some("ESTABLISHED"));
        client.shutdown(std::net::Shutdown::Write).unwrap();
        let state = tcp_state(local, peer).unwrap();
        assert!(
            matches!(state, Some("FIN_WAIT1" | "FIN_WAIT2")),
            "{state:?}"
        );
        assert_eq!(tcp_state(local, loopback_v4(1)).unwrap(), None);
    }
}
