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

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::AsFd;
use std::time::Duration;

use fdwindow::errno::outcome_name;
use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Trial};
use fdwindow::locks::set_cloexec;
use fdwindow::sockets::{BindOptions, bound, local_addr, loopback_v4};
use fdwindow::verdict::Role::{Control, Mitigation};
use fdwindow::verdict::Window::{self, ForkWindow, Inherited, PosixSpawn};

const SPAWNS: &[Window] = &[ForkWindow, PosixSpawn, Inherited];
const HELD: &[Window] = &[ForkWindow, Inherited];

static PROBE: Probe = Probe {
    hazard: "port-pick",
    about: "Checks whether a port picked by binding port 0 and dropping the socket is still held by a child's copy when the server binds it.",
    trials: 10,
    race: Duration::from_millis(300),
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
    ],
    observe: None,
};

fn main() -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE)
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
    let result = t.during_window(|| {
        drop(holder);
        Ok(TcpListener::bind(addr))
    })?;
    later_bind(t, result)
}

fn bind_zero_in_server(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let result = t.during_window(|| Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))))?;
    if let Ok(l) = &result {
        let port = l.local_addr().ctx("getsockname")?.port();
        t.tally("port", if port == 0 { "zero" } else { "assigned" });
    }
    later_bind(t, result)
}
