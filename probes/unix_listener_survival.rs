//! Checks whether a Unix-domain stream listener the parent retired still
//! takes connections at its path because a child holds a copy of it.
//!
//! Method: each trial makes a short private folder (paths within the 103
//! bytes macOS allows, see `fdwindow_fix::base::sockets::SocketDir`) and listens at a
//! path in it (or only binds there, for `bound-unlistened`), then:
//! 1. opens the window (a child parked between fork and exec, a posix_spawn
//!    race, or an exec'd child that inherited the listener);
//! 2. retires the listener as the arm does (close; shutdown then close; unlink
//!    the path then close; or it never listened);
//! 3. connects a new non-blocking client to the path. A connection taken into
//!    a queue is a hit: it sits on a copy nobody will ever accept from.
//!
//! What the connect got is tallied as `connect`: `connected`, `ECONNREFUSED`,
//! or `ENOENT`. `ENOENT` (no file at the path) is no hit, but it is not a
//! refusal either: a check that wants a dead listener to answer
//! `ECONNREFUSED` fails on it. Once the window has closed, a connected client
//! reads what it finally gets (`after-copy`). Each `shutdown` and `unlink`
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
    LOOPBACK_DEADLINE, SocketDir, UnixConnect, next_read, unix_bound, unix_connect, unix_listening,
};

const SPAWNS: &[Window] = &[ForkWindow, PosixSpawn, Inherited];
const HELD: &[Window] = &[ForkWindow, Inherited];

pub static PROBE: Probe = Probe {
    hazard: "unix-listener-survival",
    about: "Checks whether a Unix-domain listener the parent retired still takes connections at its path through a child's copy.",
    // Deterministic windows: the copy is there or not in every trial, so ten
    // decide (a control at 10/10 against a fix at 0/10).
    trials: 10,
    race: Duration::from_millis(150),
    arms: &[
        Arm {
            id: "close",
            role: Control,
            about: "close the listener; the socket file stays at the path.",
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
            id: "bound-unlistened",
            role: Mitigation,
            about: "a placeholder bound at the path that never listens, then is closed.",
            windows: HELD,
            trial: |t| trial(t, Retire::Unlistened),
            ..ARM
        },
        Arm {
            id: "unlink-then-close",
            role: Mitigation,
            about: "unlink the path, then close: a connect then fails with ENOENT, not ECONNREFUSED.",
            windows: HELD,
            trial: |t| trial(t, Retire::Unlink),
            ..ARM
        },
    ],
    observe: None,
};

/// Runs this probe with `args` (those after `fdwindow probe unix-listener-survival`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE, args)
}

#[derive(Clone, Copy)]
enum Retire {
    Close,
    Shutdown(Shutdown),
    Unlistened,
    Unlink,
}

fn soon() -> Instant {
    Instant::now() + LOOPBACK_DEADLINE
}

fn trial(t: &mut Trial<'_>, retire: Retire) -> Result<bool, Fault> {
    // One folder per trial, removed (with the socket file) when it drops, on
    // every path out of this function.
    let dir = SocketDir::new().ctx("make the socket folder")?;
    let path = dir.path("listener").ctx("build the socket path")?;
    let sock = match retire {
        Retire::Unlistened => unix_bound(&path).ctx("bind the placeholder")?,
        _ => unix_listening(&path, 16).ctx("listen")?,
    };
    set_cloexec(&sock, t.window() != Inherited).ctx("set close-on-exec")?;

    let (retired, client) = t.during_window(sock.as_raw_fd(), || {
        let retired = match retire {
            Retire::Close | Retire::Unlistened => None,
            Retire::Shutdown(how) => Some(("shutdown", outcome_name(&sock.shutdown(how)))),
            Retire::Unlink => Some(("unlink", outcome_name(&std::fs::remove_file(&path)))),
        };
        drop(sock);
        let client = unix_connect(&path, soon()).ctx("connect a new client")?;
        Ok((retired, client))
    })?;
    if let Some((quantity, value)) = retired {
        t.tally(quantity, &value);
    }
    t.tally("connect", client.id());
    match client {
        UnixConnect::Connected(client) => {
            // The copy is gone (the window closed, or the race child exec'd):
            // what does the queued connection get?
            let seen = next_read(&client, soon()).ctx("read the stranded client")?;
            t.tally("after-copy", seen.id());
            Ok(true)
        }
        UnixConnect::Refused | UnixConnect::Missing => Ok(false),
    }
}
