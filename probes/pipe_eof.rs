//! Checks whether a reader sees end-of-file when the parent drops the last
//! write end of a pipe it knows of, while a child holds a copy of that end.
//!
//! A pipe reads end-of-file only once every write descriptor is closed, in
//! every process (pipe(7)). A process that reads a child's output "until EOF",
//! or a test that drops a writer and waits for its reader to finish, hangs
//! for as long as an unrelated child keeps a copy: until it execs (a
//! close-on-exec copy) or for its whole life (one without).
//!
//! Method: each trial makes a pipe with std's `io::pipe` (both ends
//! close-on-exec; in `inherited` the control clears it on the write end, as a
//! pipe made by `pipe(2)` or handed to a child has it), then:
//! 1. opens the window (a child parked between fork and exec, a posix_spawn
//!    race, or an exec'd child that inherited the write end);
//! 2. drops the write end;
//! 3. reads the (non-blocking) read end once. Closing the last writer wakes
//!    readers inside `close(2)` itself, so with no copy left the read returns
//!    0 (end-of-file) at once; `EAGAIN` means a copy still holds the pipe open:
//!    a hit. No waiting is involved.
//!
//! `fix-spawn` and its sham make their own exec'd child (`cat`) through
//! `fdwindow_fix::spawn`, with and without its close-on-exec step, while
//! the write end is inheritable: the inherited window's question asked of
//! the spawner rather than of the descriptor.
//!
//! Once the window has closed, the reader waits (`poll(2)`, bounded at 10 s)
//! for end-of-file; `eof-after-copy` tallies that it came.

use std::io::{self, PipeReader, PipeWriter, Read};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use fdwindow::harness::{ARM, Arm, Context, Fault, Probe, Trial};
use fdwindow::hazards::cloexec::{Holder, SpawnHow};
use fdwindow::hazards::spawn_lock::{SPAWN_LOCK, hold_in_gap};
use fdwindow::report::verdict::Role::{Control, Mitigation, Sham};
use fdwindow::report::verdict::Window::{self, ForkWindow, Inherited, PosixSpawn};
use fdwindow_fix::base::locks::set_cloexec;
use fdwindow_fix::base::sockets::{LOOPBACK_DEADLINE, poll_by};

const SPAWNS: &[Window] = &[ForkWindow, PosixSpawn, Inherited];

pub static PROBE: Probe = Probe {
    hazard: "pipe-eof",
    about: "Checks whether a pipe's reader sees end-of-file when the parent drops the write end while a child holds a copy.",
    // Deterministic windows decide in ten trials (a control at 10/10 against
    // a fix at 0/10).
    trials: 10,
    race: Duration::from_millis(150),
    arms: &[
        Arm {
            id: "drop-writer",
            role: Control,
            about: "drop the write end (close-on-exec as std makes it; not in the inherited window) and read.",
            windows: SPAWNS,
            trial: drop_writer,
            ..ARM
        },
        Arm {
            id: "cloexec-writer",
            role: Mitigation,
            about: "the write end close-on-exec in every window, then drop it and read: it helps only once the child has exec'd.",
            windows: &[ForkWindow, Inherited],
            trial: cloexec_writer,
            no_copy: &[Inherited],
            ..ARM
        },
        Arm {
            id: "fix-spawn",
            role: Mitigation,
            about: "the write end inheritable, as the control's in this window; the child is spawned by fdwindow_fix::spawn, which passes it only stdio. Sham-tested: its child comes from another spawn path than the control's.",
            windows: &[Inherited],
            trial: |t| fix_spawn(t, SpawnHow::Fix),
            no_copy: &[Inherited],
            ..ARM
        },
        Arm {
            id: "fix-spawn-sham",
            role: Sham,
            about: "fix-spawn's code with the fix switched off (fix::spawn without its close-on-exec step): the child inherits the write end.",
            windows: &[Inherited],
            trial: |t| fix_spawn(t, SpawnHow::FixSham),
            ..ARM
        },
        Arm {
            id: "spawn-lock",
            role: Mitigation,
            about: "the pipe made and its write end dropped under the shared side of fdwindow::hazards::spawn_lock::SPAWN_LOCK; forks under its exclusive side. Sham-tested: its thread choreography differs from the control.",
            windows: &[ForkWindow],
            trial: spawn_lock,
            no_copy: &[ForkWindow],
            ..ARM
        },
        Arm {
            id: "spawn-lock-sham",
            role: Sham,
            about: "spawn-lock's code with the lock switched off: the write end stays open until the child has forked.",
            windows: &[ForkWindow],
            trial: spawn_lock_sham,
            ..ARM
        },
    ],
    observe: None,
};

/// Runs this probe with `args` (those after `fdwindow probe pipe-eof`).
pub fn main(args: Vec<String>) -> std::process::ExitCode {
    fdwindow::harness::main(&PROBE, args)
}

/// A fresh pipe, both ends close-on-exec (std's `io::pipe`), the read end
/// non-blocking so one read answers "end-of-file or not yet" at once.
fn pipe() -> Result<(PipeReader, PipeWriter), Fault> {
    pipe_io().ctx("make the pipe")
}

fn pipe_io() -> io::Result<(PipeReader, PipeWriter)> {
    let (reader, writer) = io::pipe()?;
    set_nonblocking(&reader)?;
    Ok((reader, writer))
}

fn set_nonblocking(reader: &PipeReader) -> io::Result<()> {
    use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
    let flags = fcntl_getfl(reader)?;
    fcntl_setfl(reader, flags | OFlags::NONBLOCK)?;
    Ok(())
}

/// One non-blocking read: `Ok(true)` on end-of-file, `Ok(false)` while some
/// write end is still open. Nothing is ever written, so data is a fault.
fn at_eof(mut reader: &PipeReader) -> Result<bool, Fault> {
    let mut byte = [0u8; 1];
    loop {
        match reader.read(&mut byte) {
            Ok(0) => return Ok(true),
            Ok(_) => return Err(Fault::Broken("the pipe had data nobody wrote".into())),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Fault::Broken(format!("read the pipe: {e}"))),
        }
    }
}

/// After the window: the reader waits (bounded) for end-of-file and tallies it.
fn eof_after_copy(t: &mut Trial<'_>, reader: &PipeReader) -> Result<(), Fault> {
    let deadline = Instant::now() + LOOPBACK_DEADLINE;
    loop {
        if at_eof(reader)? {
            t.tally("eof-after-copy", "seen");
            return Ok(());
        }
        if !poll_by(reader, libc::POLLIN, deadline).ctx("poll the read end")? {
            return Err(Fault::Broken(
                "no end-of-file 10 s after the window closed".into(),
            ));
        }
    }
}

/// Drop the writer inside the window and read once; a copy that keeps the
/// pipe open is a hit.
fn drop_and_read(t: &mut Trial<'_>, cloexec: bool) -> Result<bool, Fault> {
    let (reader, writer) = pipe()?;
    set_cloexec(&writer, cloexec).ctx("set close-on-exec")?;
    let eof = t.during_window(writer.as_raw_fd(), || {
        drop(writer);
        at_eof(&reader)
    })?;
    t.tally("read-after-drop", if eof { "eof" } else { "EAGAIN" });
    eof_after_copy(t, &reader)?;
    Ok(!eof)
}

fn drop_writer(t: &mut Trial<'_>) -> Result<bool, Fault> {
    let cloexec = t.window() != Inherited;
    drop_and_read(t, cloexec)
}

fn cloexec_writer(t: &mut Trial<'_>) -> Result<bool, Fault> {
    drop_and_read(t, true)
}

/// The writer is inheritable (as the control's in the inherited window); the
/// child, `cat`, is spawned through `how` and has exec'd (it echoed a byte)
/// before the writer is dropped, so what it holds then it holds for its life.
fn fix_spawn(t: &mut Trial<'_>, how: SpawnHow) -> Result<bool, Fault> {
    // The holder spawned by the fix's own path is this trial's window.
    t.own_spawn();
    let (reader, writer) = pipe()?;
    set_cloexec(&writer, false).ctx("clear close-on-exec")?;
    let holder = Holder::spawn(how).ctx("spawn the holder")?;
    t.child_holds(holder.pid() as u32, &[writer.as_raw_fd()])?;
    drop(writer);
    let eof = at_eof(&reader);
    holder.release().ctx("release the holder")?;
    let eof = eof?;
    t.tally("read-after-drop", if eof { "eof" } else { "EAGAIN" });
    eof_after_copy(t, &reader)?;
    Ok(!eof)
}

fn spawn_lock(t: &mut Trial<'_>) -> Result<bool, Fault> {
    locked_trial(t, true)
}

fn spawn_lock_sham(t: &mut Trial<'_>) -> Result<bool, Fault> {
    locked_trial(t, false)
}

/// How long a trial waits for its spawner before the gap counts as unconfirmed.
const GAP_DEADLINE: Duration = Duration::from_secs(30);

/// 1. The pipe is made, and its write end lives, under the shared side (with
///    `locked`). 2. A spawner asks for the exclusive side to fork a child that
///    parks before exec. 3. The writer waits until that child is parked (the
///    sham) or the spawner waits for the lock (the fix); then drops the write
///    end and lets go. 4. With the child parked, the reader reads once.
fn locked_trial(t: &mut Trial<'_>, locked: bool) -> Result<bool, Fault> {
    // The child parked in the gap is this trial's own window.
    t.own_spawn();
    let mut copy_check = Ok(false);
    let ((reader, writer), held, _gap) = hold_in_gap(
        &SPAWN_LOCK,
        locked,
        Instant::now() + GAP_DEADLINE,
        || pipe_io().map(|(r, w)| (r, Some(w))),
        |pid, (_, writer)| {
            copy_check = t.child_holds(pid, writer.as_ref().map(AsRawFd::as_raw_fd).as_slice());
        },
        |(_, writer)| {
            drop(writer.take());
            Ok(())
        },
    )
    .map_err(|e| match e.kind() {
        io::ErrorKind::TimedOut => Fault::NotConfirmed(e.to_string()),
        _ => Fault::Broken(format!("the spawn-lock gap: {e}")),
    })?;
    copy_check?;
    debug_assert!(writer.is_none());
    let eof = at_eof(&reader);
    held.release().ctx("release the held child")?;
    let eof = eof?;
    t.tally("read-after-drop", if eof { "eof" } else { "EAGAIN" });
    eof_after_copy(t, &reader)?;
    Ok(!eof)
}
