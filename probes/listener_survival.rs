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
//!    looked). `ECONNREFUSED` is no hit, and so is no answer at all: xnu
//!    drops a SYN that finds a bound socket which never listened (its tcpcb
//!    is `TCPS_CLOSED`: `goto drop`, no reset; bsd/netinet/tcp_input.c),
//!    where Linux resets it. A client with no answer after
//!    [`NO_ANSWER_AFTER`] counts as `no-answer` only when a fresh loopback
//!    handshake made right then completes well within that time (so a slow
//!    machine is not mistaken for a dropped SYN); otherwise the trial is
//!    broken.
//!
//! Once the window has closed (the copy is gone) a connected client reads
//! what it finally gets (`after-copy`: reset, eof). Each arm's `shutdown`
//! result is tallied by errno name. The listener is close-on-exec, as std
//! makes it, except in `inherited`, where the child must inherit it.

use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Trial};
use fdwindow::report::verdict::Role::{Control, Mitigation};
use fdwindow::report::verdict::Window::{self, ForkWindow, Inherited, PosixSpawn};
use fdwindow_fix::base::errno::outcome_name;
use fdwindow_fix::base::locks::set_cloexec;
use fdwindow_fix::base::sockets::{
    BindOptions, Connect, LOOPBACK_DEADLINE, bound, connect_by, connected_pair, drain, listening,
    local_addr, loopback_v4, next_read, poll_by,
};

const SPAWNS: &[Window] = &[ForkWindow, PosixSpawn, Inherited];
const HELD: &[Window] = &[ForkWindow, Inherited];

pub static PROBE: Probe = Probe {
    hazard: "listener-survival",
    about: "Checks whether a listener the parent retired still completes connections through a child's copy.",
    trials: 10,
    race: Duration::from_millis(150),
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

/// Runs this probe with `args` (those after `fdwindow probe listener-survival`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE, args)
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

/// How long the new client waits for any answer (handshake, reset, refusal)
/// before the reference handshake decides whether its SYN was dropped.
const NO_ANSWER_AFTER: Duration = Duration::from_secs(1);

/// A reference handshake slower than this makes a missing answer ambiguous.
const REFERENCE_WITHIN: Duration = Duration::from_millis(100);

/// What the new client got.
enum Answer {
    Got(Connect),
    /// Nothing by [`NO_ANSWER_AFTER`].
    None,
}

fn connect_new_client(addr: std::net::SocketAddr) -> Result<Answer, Fault> {
    match connect_by(addr, Instant::now() + NO_ANSWER_AFTER) {
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => Ok(Answer::None),
        r => Ok(Answer::Got(r.ctx("connect a new client")?)),
    }
}

/// Whether loopback answers fast right now: a fresh listener and client
/// complete their handshake within [`REFERENCE_WITHIN`].
fn loopback_answers_fast() -> Result<bool, Fault> {
    let started = Instant::now();
    let pair = connected_pair(soon()).ctx("reference handshake")?;
    drop(pair);
    Ok(started.elapsed() < REFERENCE_WITHIN)
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

    let (retired, client) = t.during_window(sock.as_raw_fd(), || {
        let retired = match retire {
            Retire::Close | Retire::Unlistened => None,
            Retire::Shutdown(how) => Some(("shutdown", outcome_name(&sock.shutdown(how)))),
            Retire::Drain => Some(("drained", drain(&sock).ctx("drain")?.to_string())),
        };
        drop(sock);
        let client = connect_new_client(addr)?;
        Ok((retired, client))
    })?;
    drop(early);
    if let Some((quantity, value)) = retired {
        t.tally(quantity, &value);
    }
    let client = match client {
        Answer::Got(c) => c,
        Answer::None if loopback_answers_fast()? => {
            t.tally("client", "no-answer");
            return Ok(false);
        }
        Answer::None => {
            return Err(Fault::Broken(format!(
                "the new client had no answer in {NO_ANSWER_AFTER:?} and a reference handshake \
                 took over {REFERENCE_WITHIN:?}: a dropped SYN cannot be told from a slow one"
            )));
        }
    };
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
