//! Checks whether dropping one end of a TCP connection leaves the peer without
//! end-of-file because a second descriptor (a dup, or a child's copy) keeps
//! the connection open.
//!
//! Method: each trial connects a loopback TCP pair (`a` → `b`), gives `a` a
//! second descriptor, and closes `a` as the arm does (plain close, or
//! `shutdown(SHUT_WR)` first). A hit is "no FIN was sent", so `b` cannot see
//! end-of-file. Waiting on `b` cannot prove that absence (a FIN may just be
//! slow), so each window proves it by an event that a FIN would have to
//! precede or prevent:
//! - `in-process` (a `dup`): write a marker through the dup. Had a FIN gone
//!   out, the socket's send side would be shut for every descriptor and the
//!   write would fail with `EPIPE`; TCP delivers in order, so `b` reading the
//!   marker first proves no FIN preceded it. Portable.
//! - `fork-window`, `inherited` (a child's copy): read the sender's state from
//!   the kernel's TCP table right after the close. The kernel moves the socket
//!   out of `ESTABLISHED` inside the very call that sends a FIN, so
//!   `ESTABLISHED` there means none was sent. Linux reads `/proc/net/tcp`;
//!   elsewhere these windows report `unsupported`.
//!
//! Where a FIN was sent, `b` must then see end-of-file (a positive event,
//! polled to a deadline); once the copy is gone, `b` sees it in every arm.

use std::io::Write;
use std::net::Shutdown;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Trial};
use fdwindow::report::verdict::Kind;
use fdwindow::report::verdict::Role::{Control, Mitigation};
use fdwindow::report::verdict::Window::{self, ForkWindow, InProcess, Inherited};
use fdwindow_fix::base::errno::outcome_name;
use fdwindow_fix::base::locks::set_cloexec;
use fdwindow_fix::base::sockets::{
    LOOPBACK_DEADLINE, PeerSees, connected_pair, local_addr, next_read, tcp_state,
};

const WINDOWS: &[Window] = &[InProcess, ForkWindow, Inherited];

pub static PROBE: Probe = Probe {
    hazard: "peer-fin-with-clone",
    about: "Checks whether closing a TCP stream that has a second descriptor (dup or child's copy) leaves the peer without end-of-file.",
    trials: 10,
    race: Duration::from_millis(150),
    arms: &[
        Arm {
            id: "drop",
            role: Control,
            about: "close the stream's descriptor; the dup or the child's copy stays.",
            windows: WINDOWS,
            trial: |t| trial(t, false),
            kind: Some(Kind::Deterministic),
            ..ARM
        },
        Arm {
            id: "shutdown-write",
            role: Mitigation,
            about: "shutdown(SHUT_WR) first, then close.",
            windows: WINDOWS,
            trial: |t| trial(t, true),
            kind: Some(Kind::Deterministic),
            ..ARM
        },
    ],
    observe: None,
};

/// Runs this probe with `args` (those after `fdwindow probe peer-fin-with-clone`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE, args)
}

fn soon() -> Instant {
    Instant::now() + LOOPBACK_DEADLINE
}

fn trial(t: &mut Trial<'_>, shutdown_first: bool) -> Result<bool, Fault> {
    let (a, b) = connected_pair(soon()).ctx("connect a loopback pair")?;
    set_cloexec(&a, t.window() != Inherited).ctx("set close-on-exec")?;
    let close = |a: socket2::Socket| {
        let shut = shutdown_first.then(|| outcome_name(&a.shutdown(Shutdown::Write)));
        drop(a);
        shut
    };

    if t.window() == InProcess {
        let dup = a.try_clone().ctx("dup")?;
        let shut = close(a);
        let marker = (&dup).write(b"m");
        let first = next_read(&b, soon()).ctx("read the peer")?;
        if let Some(shut) = shut {
            t.tally("shutdown", &shut);
        }
        t.tally("marker-write", &outcome_name(&marker));
        t.tally("peer-first", first.id());
        let hit = match (&marker, first) {
            (Ok(1), PeerSees::Data) => true,
            (Err(_), PeerSees::Eof) => false,
            (marker, first) => {
                return Err(Fault::Broken(format!(
                    "the marker write gave {} but the peer read {}",
                    outcome_name(marker),
                    first.id()
                )));
            }
        };
        drop(dup);
        if hit {
            // The last descriptor is gone: the peer should now see end-of-file.
            t.tally(
                "after-copy",
                next_read(&b, soon()).ctx("read the peer")?.id(),
            );
        }
        return Ok(hit);
    }

    let (local, peer) = (
        local_addr(&a).ctx("getsockname")?,
        local_addr(&b).ctx("getsockname")?,
    );
    // Check the table reader before trusting a missing entry.
    match tcp_state(local, peer) {
        Ok(Some("ESTABLISHED")) => {}
        Ok(other) => {
            return Err(Fault::Broken(format!(
                "the TCP table shows the fresh connection as {other:?}"
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::Unsupported => {
            return Err(Fault::Unsupported(e.to_string()));
        }
        Err(e) => return Err(Fault::Broken(format!("read the TCP table: {e}"))),
    }
    let (shut, state, in_window) = t.during_window(a.as_raw_fd(), || {
        let shut = close(a);
        let state = tcp_state(local, peer).ctx("read the TCP table")?;
        // A FIN was sent: the peer must see it while the copy still lives.
        let in_window = match state {
            Some("ESTABLISHED") => None,
            _ => Some(next_read(&b, soon()).ctx("read the peer")?),
        };
        Ok((shut, state, in_window))
    })?;
    if let Some(shut) = shut {
        t.tally("shutdown", &shut);
    }
    t.tally("sender", state.unwrap_or("gone"));
    if let Some(seen) = in_window {
        t.tally("peer-in-window", seen.id());
    }
    let hit = state == Some("ESTABLISHED");
    if hit {
        t.tally(
            "after-copy",
            next_read(&b, soon()).ctx("read the peer")?.id(),
        );
    }
    Ok(hit)
}
