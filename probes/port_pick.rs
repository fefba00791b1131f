//! Checks whether "bind port 0, read the port, drop the socket, bind that port
//! later" fails because a child's copy of the dropped socket still holds the
//! port.
//!
//! Method: each trial picks a port as the arm does (before the window, so the
//! child copies the picking socket), opens the window, drops the picking
//! socket, and binds the server with std's `TcpListener::bind` (which sets
//! `SO_REUSEADDR` and listens). A bind failing with `EADDRINUSE` is a hit; the
//! later bind's result is tallied by errno name. The picking socket is
//! close-on-exec, as std makes it, except in `inherited`.
//!
//! The UDP arms pick a UDP port the same way and re-bind it; `shutdown` does
//! not release a bound UDP socket, so crates that pick UDP ports meet the
//! same hazard. One hit definition for all UDP arms: the server's bind of the
//! port fails, or a datagram sent to the port (from a third socket, inside the
//! window, while a copy may still hold the picking socket) does not reach the
//! server within 200 ms. Which socket a datagram reaches when two share the
//! port is measured, never assumed; `udp-reuseaddr` also tallies whether a
//! foreign socket with `SO_REUSEADDR` could bind the same port.
//!
//! # References
//! - <https://man7.org/linux/man-pages/man7/socket.7.html> (`SO_REUSEADDR`:
//!   for UDP it lets several sockets bind the same address)
//! - <https://man7.org/linux/man-pages/man7/udp.7.html>

use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Trial};
use fdwindow::report::verdict::Role::{Control, Mitigation};
use fdwindow::report::verdict::Window::{self, ForkWindow, Inherited, PosixSpawn};
use fdwindow_fix::base::errno::outcome_name;
use fdwindow_fix::base::locks::set_cloexec;
use fdwindow_fix::base::sockets::{BindOptions, bound, local_addr, loopback_v4};

const SPAWNS: &[Window] = &[ForkWindow, PosixSpawn, Inherited];
const HELD: &[Window] = &[ForkWindow, Inherited];

pub static PROBE: Probe = Probe {
    hazard: "port-pick",
    about: "Checks whether a port picked by binding port 0 and dropping the socket is still held by a child's copy when the server binds it.",
    trials: 10,
    race: Duration::from_millis(150),
    arms: &[
        Arm {
            id: "pick-then-drop",
            role: Control,
            about: "TcpListener::bind(127.0.0.1:0), read the port, drop; later TcpListener::bind(127.0.0.1:port).",
            windows: SPAWNS,
            trial: |t| pick_then_bind(t, Pick::Listener(Ipv4Addr::LOCALHOST)),
            ..ARM
        },
        Arm {
            id: "bind-zero-in-server",
            role: Mitigation,
            about: "no picking: the server binds 127.0.0.1:0 itself and reports the port it got.",
            windows: HELD,
            trial: bind_zero_in_server,
            avoids: Some(
                "nothing is picked ahead: the server binds port 0 itself and reports the port, so no earlier socket exists for a child to hold",
            ),
            no_copy: HELD,
            ..ARM
        },
        Arm {
            id: "pick-on-wildcard",
            role: Mitigation,
            about: "TcpListener::bind(0.0.0.0:0), read the port, drop; later TcpListener::bind(0.0.0.0:port).",
            windows: HELD,
            trial: |t| pick_then_bind(t, Pick::Listener(Ipv4Addr::UNSPECIFIED)),
            ..ARM
        },
        Arm {
            id: "pick-unlistened",
            role: Mitigation,
            about: "pick with a socket that sets SO_REUSEADDR and binds 127.0.0.1:0 but never listens, drop; later TcpListener::bind(127.0.0.1:port).",
            windows: HELD,
            trial: |t| pick_then_bind(t, Pick::Unlistened),
            ..ARM
        },
        Arm {
            id: "udp-pick-then-drop",
            role: Control,
            about: "UdpSocket::bind(127.0.0.1:0), read the port, drop; the server binds UDP 127.0.0.1:port and must receive a datagram sent there.",
            windows: SPAWNS,
            trial: |t| udp_pick_then_bind(t, false),
            ..ARM
        },
        Arm {
            id: "udp-reuseaddr",
            role: Mitigation,
            about: "as udp-pick-then-drop, with SO_REUSEADDR on the picking and the server socket (on Linux both binds succeed: which socket the datagram reaches is measured; on macOS exact duplicate binds need SO_REUSEPORT).",
            windows: HELD,
            trial: |t| udp_pick_then_bind(t, true),
            // Differs from its control in the fix alone (SO_REUSEADDR on both
            // sockets): no sham.
            against: Some("udp-pick-then-drop"),
            ..ARM
        },
        Arm {
            id: "udp-bind-zero-in-server",
            role: Mitigation,
            about: "no picking: the server binds UDP 127.0.0.1:0 itself and receives on the port it got.",
            windows: HELD,
            trial: udp_bind_zero_in_server,
            against: Some("udp-pick-then-drop"),
            avoids: Some(
                "nothing is picked ahead: the server binds UDP port 0 itself, so no earlier socket exists for a child to hold",
            ),
            no_copy: HELD,
            ..ARM
        },
    ],
    observe: None,
};

/// Runs this probe with `args` (those after `fdwindow probe port-pick`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE, args)
}

enum Pick {
    /// std's `TcpListener` on this address, port 0.
    Listener(Ipv4Addr),
    /// A bound, never-listening socket with `SO_REUSEADDR`, on 127.0.0.1.
    Unlistened,
}

/// The later bind: `EADDRINUSE` is a hit, success is not, anything else is broken.
fn later_bind(t: &mut Trial<'_>, result: std::io::Result<TcpListener>) -> Result<bool, Fault> {
    t.tally("later-bind", &outcome_name(&result));
    match result {
        Ok(_) => Ok(false),
        Err(e) if e.raw_os_error() == Some(libc::EADDRINUSE) => Ok(true),
        Err(e) => Err(Fault::Broken(format!("the later bind: {e}"))),
    }
}

fn pick_then_bind(t: &mut Trial<'_>, pick: Pick) -> Result<bool, Fault> {
    let inherit = t.window() == Inherited;
    let (holder, addr): (Box<dyn AsFd>, SocketAddr) = match pick {
        Pick::Listener(ip) => {
            let l = TcpListener::bind((ip, 0)).ctx("pick: bind port 0")?;
            let addr = l.local_addr().ctx("pick: getsockname")?;
            (Box::new(l), addr)
        }
        Pick::Unlistened => {
            let opts = BindOptions {
                reuse_addr: true,
                ..BindOptions::default()
            };
            let s = bound(loopback_v4(0), opts).ctx("pick: bind port 0")?;
            let addr = local_addr(&s).ctx("pick: getsockname")?;
            (Box::new(s), addr)
        }
    };
    set_cloexec(holder.as_fd(), !inherit).ctx("set close-on-exec")?;
    let result = t.during_window(holder.as_fd().as_raw_fd(), || {
        drop(holder);
        Ok(TcpListener::bind(addr))
    })?;
    later_bind(t, result)
}

fn bind_zero_in_server(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let result = t.during_bare_window(|| Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))))?;
    if let Ok(l) = &result {
        let port = l.local_addr().ctx("getsockname")?.port();
        t.tally("port", if port == 0 { "zero" } else { "assigned" });
    }
    later_bind(t, result)
}

/// A UDP socket on `addr`, with `SO_REUSEADDR` when `reuse`.
fn udp_bind(addr: SocketAddr, reuse: bool) -> std::io::Result<UdpSocket> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None)?;
    s.set_reuse_address(reuse)?;
    s.bind(&addr.into())?;
    Ok(s.into())
}

/// Whether a datagram sent to `server`'s port from a fresh socket reaches
/// `server` within 200 ms (loopback delivers at once; the bound only ends a
/// wait for a datagram another socket took).
fn reaches(server: &UdpSocket) -> Result<bool, Fault> {
    let to = server.local_addr().ctx("server getsockname")?;
    let client = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).ctx("client bind")?;
    client.send_to(b"fdwindow", to).ctx("send a datagram")?;
    server
        .set_read_timeout(Some(Duration::from_millis(200)))
        .ctx("set a read timeout")?;
    let mut buf = [0u8; 16];
    match server.recv(&mut buf) {
        Ok(_) => Ok(true),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Ok(false)
        }
        Err(e) => Err(Fault::Broken(format!("server recv: {e}"))),
    }
}

fn udp_pick_then_bind(t: &mut Trial<'_>, reuse: bool) -> Result<bool, Fault> {
    let inherit = t.window() == Inherited;
    let picker = udp_bind(loopback_v4(0), reuse).ctx("pick: bind UDP port 0")?;
    let addr = picker.local_addr().ctx("pick: getsockname")?;
    set_cloexec(picker.as_fd(), !inherit).ctx("set close-on-exec")?;
    // Everything inside the window: the copy exists only while it is open.
    let (bind, reached, foreign) = t.during_window(picker.as_raw_fd(), || {
        drop(picker);
        let server = udp_bind(addr, reuse);
        let reached = match &server {
            Ok(s) => Some(reaches(s)?),
            Err(_) => None,
        };
        // After the datagram, so that it cannot take it: could a foreign
        // socket bind the port too?
        let foreign = (reuse && server.is_ok()).then(|| outcome_name(&udp_bind(addr, true)));
        Ok((server.map(drop), reached, foreign))
    })?;
    t.tally("later-bind", &outcome_name(&bind));
    if let Some(f) = foreign {
        t.tally("foreign-bind", &f);
    }
    match (bind, reached) {
        (Ok(()), Some(reached)) => {
            t.tally("datagram", if reached { "server" } else { "elsewhere" });
            Ok(!reached)
        }
        (Err(e), _) if e.raw_os_error() == Some(libc::EADDRINUSE) => Ok(true),
        (Err(e), _) => Err(Fault::Broken(format!("the later bind: {e}"))),
        (Ok(()), None) => unreachable!("a bound server is always checked"),
    }
}

fn udp_bind_zero_in_server(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let reached = t.during_bare_window(|| {
        let server = udp_bind(loopback_v4(0), false).ctx("server: bind UDP port 0")?;
        reaches(&server)
    })?;
    t.tally("datagram", if reached { "server" } else { "elsewhere" });
    Ok(!reached)
}
