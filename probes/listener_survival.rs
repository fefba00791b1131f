//! Checks whether a listening socket the parent retired still completes new
//! connections because a child holds a copy of it.
//!
//! Method: each trial listens on 127.0.0.1 (port 0) and queues one early
//! connection (so `drain-then-close` has something to drain), then:
//! 1. opens the window (a child parked between fork and exec, a posix_spawn
//!    race, or an exec'd child that inherited the listener);
//! 2. retires the listener as the arm does (close; shutdown then close; accept
//!    what is queued then close; or it never listened);
//! 3. connects a new client, non-blocking, and polls it to a deadline. A
//!    completed handshake is a hit: the kernel queued the connection on a
//!    copy nobody will ever accept from (`ECONNRESET` from the connect counts
//!    too: the handshake completed and the copy went before the client
//!    looked). `ECONNREFUSED` is no hit.
//!
//! Once the window has closed (the copy is gone) a connected client reads
//! what it finally gets (`after-copy`: reset, eof). Each arm's `shutdown`
//! result is tallied by errno name. The listener is close-on-exec, as std
//! makes it, except in `inherited`, where the child must inherit it.

use std::net::Shutdown;
use std::time::{Duration, Instant};

use fdwindow::errno::outcome_name;
use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Trial};
use fdwindow::locks::set_cloexec;
use fdwindow::sockets::{
    BindOptions, Connect, LOOPBACK_DEADLINE, bound, connect_by, drain, listening, local_addr,
    loopback_v4, next_read, poll_by,
};
use fdwindow::verdict::Role::{Control, Mitigation};
use fdwindow::verdict::Window::{self, ForkWindow, Inherited, PosixSpawn};

const SPAWNS: &[Window] = &[ForkWindow, PosixSpawn, Inherited];
const HELD: &[Window] = &[ForkWindow, Inherited];

static PROBE: Probe = Probe {
    hazard: "listener-survival",
    about: "Checks whether a listener the parent retired still completes connections through a child's copy.",
    trials: 10,
    race: Duration::from_millis(300),
    arms: &[
        Arm {
            id: "close",
            role: Control,
            about: "close the listener (a connection is already queued on it).",
            windows: SPAWNS,
            trial: |t| trial(t, Retire::Close),
            ..ARM
        },
        Arm {
            id: "shutdown-rd",
            role: Mitigation,
            about: "shutdown(SHUT_RD), then close.",
            windows: HELD,
            trial: |t| trial(t, Retire::Shutdown(Shutdown::Read)),
            ..ARM
        },
        Arm {
            id: "shutdown-rdwr",
            role: Mitigation,
            about: "shutdown(SHUT_RDWR), then close.",
            windows: HELD,
            trial: |t| trial(t, Retire::Shutdown(Shutdown::Both)),
            ..ARM
        },
        Arm {
            id: "shutdown-wr",
            role: Mitigation,
            about: "shutdown(SHUT_WR), then close.",
            windows: HELD,
            trial: |t| trial(t, Retire::Shutdown(Shutdown::Write)),
            ..ARM
        },
        Arm {
            id: "drain-then-close",
            role: Mitigation,
            about: "accept every queued connection and close it, then close the listener.",
            windows: HELD,
            trial: |t| trial(t, Retire::Drain),
            ..ARM
        },
        Arm {
            id: "bound-unlistened",
            role: Mitigation,
            about: "a placeholder that binds the port but never listens, then is closed.",
            windows: HELD,
            trial: |t| trial(t, Retire::Unlistened),
            ..ARM
        },
    ],
    observe: None,
};

fn main() -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE)
}

#[derive(Clone, Copy)]
enum Retire {
    Close,
    Shutdown(Shutdown),
    Drain,
    Unlistened,
}

fn soon() -> Instant {
    Instant::now() + LOOPBACK_DEADLINE
}

fn trial(t: &mut Trial<'_>, retire: Retire) -> Result<bool, Fault> {
    let (sock, early) = match retire {
        Retire::Unlistened => (
            bound(loopback_v4(0), BindOptions::default()).ctx("bind the placeholder")?,
            None,
        ),
        _ => {
            let listener = listening(loopback_v4(0), 16).ctx("listen")?;
            let addr = local_addr(&listener).ctx("getsockname")?;
            let early = match connect_by(addr, soon()).ctx("connect the early client")? {
                Connect::Connected(c) => c,
                Connect::Refused | Connect::Reset => {
                    return Err(Fault::Broken("a fresh listener refused".into()));
                }
            };
            // The client side completes before the server side queues the
            // connection; wait until it is queued, so a drain finds it.
            if !poll_by(&listener, libc::POLLIN, soon()).ctx("poll the listener")? {
                return Err(Fault::Broken(
                    "the early connection never reached the accept queue".into(),
                ));
            }
            (listener, Some(early))
        }
    };
    set_cloexec(&sock, t.window() != Inherited).ctx("set close-on-exec")?;
    let addr = local_addr(&sock).ctx("getsockname")?;

    let (retired, client) = t.during_window(|| {
        let retired = match retire {
            Retire::Close | Retire::Unlistened => None,
            Retire::Shutdown(how) => Some(("shutdown", outcome_name(&sock.shutdown(how)))),
            Retire::Drain => Some(("drained", drain(&sock).ctx("drain")?.to_string())),
        };
        drop(sock);
        let client = connect_by(addr, soon()).ctx("connect a new client")?;
        Ok((retired, client))
    })?;
    drop(early);
    if let Some((quantity, value)) = retired {
        t.tally(quantity, &value);
    }
    match client {
        Connect::Connected(client) => {
            t.tally("client", "connected");
            // The copy is gone (the window closed, or the race child exec'd):
            // what does the queued connection get?
            let seen = next_read(&client, soon()).ctx("read the stranded client")?;
            t.tally("after-copy", seen.id());
            Ok(true)
        }
        // Reset before it looked: the handshake had completed (a hit), and
        // the copy went before the client could read.
        Connect::Reset => {
            t.tally("client", "connected-then-reset");
            Ok(true)
        }
        Connect::Refused => {
            t.tally("client", "refused");
            Ok(false)
        }
    }
}
