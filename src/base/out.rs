//! The one writer every command, probe and tool prints through: stdout and
//! stderr lines that never panic ([`say!`](crate::say) and
//! [`note!`](crate::note), where `println!` and `eprintln!` panic on a
//! failed write), and the exit status that what they met calls for
//! ([`status`]).
//!
//! A write that fails is never retried, and the stream it failed on takes
//! no more writes (each would fail the same way). What happens then:
//!
//! 1. **A closed pipe** (`EPIPE`: `fdwindow summary | head -1` after `head`
//!    exits, on stdout or stderr). Rust ignores SIGPIPE, so the write
//!    fails instead of killing the process. The writer records SIGPIPE in
//!    [`interrupts`](super::interrupts) as if it had arrived and returns:
//!    [`interrupted`](fdwindow_fix::base::interrupts::interrupted) turns true, so a
//!    command in the middle of its work (`run`'s probes, `stress`'s and
//!    `audit`'s test processes, `vm`'s QEMU) winds down as on Ctrl-C: it
//!    kills its children, removes its scratch and exits with
//!    [`exit_code`](fdwindow_fix::base::interrupts::exit_code), 141 (128 + SIGPIPE), as
//!    a shell pipeline expects of a process the signal ended. The writer
//!    says nothing (the reader has gone); a command's own Ctrl-C note still
//!    reaches a stderr that is open.
//! 2. **Any other failure on stdout** (`>/dev/full`: ENOSPC, EIO): one line
//!    on stderr, `error: write to stdout: …`, and exit status 1. The work
//!    goes on (the results files are a command's real output, stdout its
//!    report of them).
//! 3. **Any other failure on stderr**: there is nowhere to say it. It is
//!    recorded, and the process exits 1 at the end all the same.
//!
//! The writer never exits itself: a process ended inside a print would skip
//! the guards that kill its children and remove its temporary files. Each
//! `main` passes its exit status through [`status`] instead, which gives
//! 128 + the first signal recorded (141 for a closed pipe, 130 when Ctrl-C
//! came first), else 1 after a failed write, else the status unchanged.
//! [`parse_args`] gives clap's help, version and usage errors the same
//! treatment (clap's own `exit` drops a failed write and exits 0 or 2).
//!
//! # References
//! - `write(2)`, EPIPE: <https://man7.org/linux/man-pages/man2/write.2.html>
//! - `pipe(7)`: <https://man7.org/linux/man-pages/man7/pipe.7.html>
//! - Rust's SIGPIPE: <https://github.com/rust-lang/rust/issues/62569>

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};

/// Where a write goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// The command's output.
    Stdout,
    /// Errors, warnings and progress.
    Stderr,
}

/// A stream that takes writes.
const OPEN: u8 = 0;
/// Its reader has gone (EPIPE).
const CLOSED: u8 = 1;
/// A write failed otherwise.
const FAILED: u8 = 2;

/// The state of stdout and of stderr, in [`Stream`]'s order.
static STATE: [AtomicU8; 2] = [AtomicU8::new(OPEN), AtomicU8::new(OPEN)];

fn state(stream: Stream) -> &'static AtomicU8 {
    match stream {
        Stream::Stdout => &STATE[0],
        Stream::Stderr => &STATE[1],
    }
}

/// Writes `text` to `stream` and flushes it, as one write under the
/// stream's lock (lines from several threads do not interleave); a failure
/// is dealt with as the module says.
pub fn write(stream: Stream, text: &str) {
    if state(stream).load(Ordering::Relaxed) != OPEN {
        return;
    }
    // `write_all` retries EINTR, which the interrupt handlers (installed
    // without SA_RESTART) may cause.
    let written = match stream {
        Stream::Stdout => {
            let mut out = io::stdout().lock();
            out.write_all(text.as_bytes()).and_then(|()| out.flush())
        }
        Stream::Stderr => {
            let mut err = io::stderr().lock();
            err.write_all(text.as_bytes()).and_then(|()| err.flush())
        }
    };
    if let Err(e) = written {
        failed(stream, &e);
    }
}

/// Deals with a write to `stream` that failed with `e` as the module says.
fn failed(stream: Stream, e: &io::Error) {
    if e.kind() == io::ErrorKind::BrokenPipe {
        state(stream).store(CLOSED, Ordering::Relaxed);
        fdwindow_fix::base::interrupts::record(libc::SIGPIPE);
        return;
    }
    let first = state(stream)
        .compare_exchange(OPEN, FAILED, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok();
    if first && stream == Stream::Stdout {
        write(Stream::Stderr, &format!("error: write to stdout: {e}\n"));
    }
}

/// Writes `args` and a newline to `stream`: what [`say!`](crate::say) and
/// [`note!`](crate::note) call.
pub fn line(stream: Stream, args: fmt::Arguments<'_>) {
    let mut text = args.to_string();
    text.push('\n');
    write(stream, &text);
}

/// Writes `text` to stdout (no newline added).
pub fn stdout(text: &str) {
    write(Stream::Stdout, text);
}

/// Writes `text` to stderr (no newline added).
pub fn stderr(text: &str) {
    write(Stream::Stderr, text);
}

/// Whether every write to stdout so far went through: a note about what
/// was printed (where an answer came from) is worth writing only then.
pub fn stdout_written() -> bool {
    state(Stream::Stdout).load(Ordering::Relaxed) == OPEN
}

/// Whether every write so far went through.
fn all_written() -> bool {
    STATE.iter().all(|s| s.load(Ordering::Relaxed) == OPEN)
}

/// The exit status for a process that would exit with `code`, given the
/// writes so far: `code` when all went through; else 128 + the first
/// signal recorded (141 for a closed pipe, as its reader's shell expects);
/// else 1.
pub fn status(code: ExitCode) -> ExitCode {
    if all_written() {
        code
    } else if fdwindow_fix::base::interrupts::signal().is_some() {
        fdwindow_fix::base::interrupts::exit_code()
    } else {
        ExitCode::FAILURE
    }
}

/// `P::parse()` through the writer: help and version on stdout, a usage
/// error on stderr, as clap prints them, then `Err` with the status to
/// exit with (0 or 2 from clap, through [`status`]).
pub fn parse_args<P: clap::Parser>() -> Result<P, ExitCode> {
    parse_args_from(std::env::args_os())
}

/// [`parse_args`] of `args` (the program's name first).
pub fn parse_args_from<P: clap::Parser, I, T>(args: I) -> Result<P, ExitCode>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    P::try_parse_from(args).map_err(|e| {
        let stream = if e.use_stderr() {
            Stream::Stderr
        } else {
            Stream::Stdout
        };
        // Plain text: clap is built without its `color` feature.
        write(stream, &e.render().to_string());
        status(ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)))
    })
}

/// A line on stdout: `println!` through the writer ([`crate::base::out`]),
/// which never panics.
#[macro_export]
macro_rules! say {
    () => {
        $crate::base::out::stdout("\n")
    };
    ($($arg:tt)*) => {
        $crate::base::out::line($crate::base::out::Stream::Stdout, ::std::format_args!($($arg)*))
    };
}

/// A line on stderr: `eprintln!` through the writer ([`crate::base::out`]),
/// which never panics.
#[macro_export]
macro_rules! note {
    () => {
        $crate::base::out::stderr("\n")
    };
    ($($arg:tt)*) => {
        $crate::base::out::line($crate::base::out::Stream::Stderr, ::std::format_args!($($arg)*))
    };
}

// Here too, so the library's modules name them through their layer
// (`crate::base::out::note!`: tests/layers.rs); users and the binary have
// them at the crate root (`fdwindow::note!`).
pub use {note, say};
