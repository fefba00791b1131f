//! A socket made in two steps leaks into a child spawned between the steps,
//! for the child's whole life, unless the spawn itself keeps it out.
//!
//! macOS has no `SOCK_CLOEXEC`, so std (and most C code) makes a socket with
//! `socket(2)` and flags it close-on-exec with `fcntl(2)` afterwards; a child
//! another thread spawns in between inherits it. Here the gap is held open on
//! purpose, on any OS, so the outcome is the same every run:
//!
//! 1. a thread makes a TCP socket without close-on-exec and parks;
//! 2. the main thread spawns a copy of this program that reports whether it
//!    holds that socket (same number, same device and inode);
//! 3. the thread sets `FD_CLOEXEC` (too late for that child) and closes it.
//!
//! Only step 2 differs between the modes: by default the child is started by
//! `fdwindow_fix::spawn` (close-on-exec for everything above stdio in the
//! child on Linux, `POSIX_SPAWN_CLOEXEC_DEFAULT` on macOS); with `--naive` by
//! `std::process::Command::spawn`.
//!
//! ```text
//! cargo run --release --example leak_free_spawn            # exit 0: the child held nothing
//! cargo run --release --example leak_free_spawn -- --naive # exit 1: says what leaked
//! ```
//!
//! Exit status: 0 when the child held nothing, 1 when it held the socket, 2
//! for bad arguments or a failed setup.

use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::process::ExitCode;
use std::sync::mpsc;

/// The child's side: `--child FD DEV INO` prints `held` or `free`.
fn child(args: &[String]) -> ExitCode {
    let parse = |i: usize| args.get(i).and_then(|s| s.parse::<u64>().ok());
    let (Some(fd), Some(dev), Some(ino)) = (parse(0), parse(1), parse(2)) else {
        eprintln!("usage: leak_free_spawn --child FD DEV INO");
        return ExitCode::from(2);
    };
    // /dev/fd/N is this process's descriptor N on Linux and macOS.
    let held =
        std::fs::metadata(format!("/dev/fd/{fd}")).is_ok_and(|m| m.dev() == dev && m.ino() == ino);
    println!("{}", if held { "held" } else { "free" });
    ExitCode::SUCCESS
}

/// `socket(2)` without `SOCK_CLOEXEC`: the first of the two steps (socket2's
/// `new_raw` is libc's socket with no flag added).
fn socket_without_cloexec() -> std::io::Result<OwnedFd> {
    let sock = socket2::Socket::new_raw(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    Ok(sock.into())
}

/// `fcntl(F_SETFD, FD_CLOEXEC)`: the second step.
fn set_cloexec(fd: &OwnedFd) -> std::io::Result<()> {
    Ok(rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::CLOEXEC)?)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        return child(&args[1..]);
    }
    let naive = match args.as_slice() {
        [] => false,
        [flag] if flag == "--naive" => true,
        _ => {
            eprintln!("usage: leak_free_spawn [--naive]");
            return ExitCode::from(2);
        }
    };
    match run(naive) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("leak_free_spawn: {e}");
            ExitCode::from(2)
        }
    }
}

/// The child's report, to end-of-file.
fn read_all(pipe: Option<impl Read>) -> std::io::Result<String> {
    let mut out = String::new();
    if let Some(mut p) = pipe {
        p.read_to_string(&mut out)?;
    }
    Ok(out)
}

fn run(naive: bool) -> std::io::Result<ExitCode> {
    let exe = std::env::current_exe()?;
    let (made_tx, made_rx) = mpsc::channel::<std::io::Result<(RawFd, u64, u64)>>();
    let (spawned_tx, spawned_rx) = mpsc::channel::<()>();
    let creator = std::thread::spawn(move || -> std::io::Result<()> {
        let made = socket_without_cloexec().and_then(|sock| {
            let meta = std::fs::metadata(format!("/dev/fd/{}", sock.as_raw_fd()))?;
            Ok((sock, meta.dev(), meta.ino()))
        });
        let sock = match made {
            Ok((sock, dev, ino)) => {
                let _ = made_tx.send(Ok((sock.as_raw_fd(), dev, ino)));
                sock
            }
            Err(e) => {
                let _ = made_tx.send(Err(e));
                return Ok(());
            }
        };
        // Parked between the two steps until the child has been spawned (or
        // the main thread gave up: the channel closed).
        let _ = spawned_rx.recv();
        set_cloexec(&sock)
        // The socket closes here; a child that inherited it keeps its copy.
    });
    let (fd, dev, ino) = made_rx
        .recv()
        .map_err(|_| std::io::Error::other("the creating thread died"))??;
    let child_args = [
        "--child".to_owned(),
        fd.to_string(),
        dev.to_string(),
        ino.to_string(),
    ];
    let (how, report) = if naive {
        let child = std::process::Command::new(&exe)
            .args(&child_args)
            .stdout(std::process::Stdio::piped())
            .spawn();
        let _ = spawned_tx.send(());
        let report = child.and_then(|mut c| {
            let out = read_all(c.stdout.take());
            let status = c.wait()?; // reaped whatever the read gave
            Ok((c.id(), out?, status.success()))
        });
        ("std::process::Command::spawn", report)
    } else {
        let child = fdwindow_fix::spawn::Command::new(&exe)
            .args(&child_args)
            .stdout(fdwindow_fix::spawn::Stdio::Piped)
            .spawn();
        let _ = spawned_tx.send(());
        let report = child.and_then(|mut c| {
            let out = read_all(c.stdout.take());
            let status = c.wait()?; // reaped whatever the read gave
            Ok((c.id(), out?, status.success()))
        });
        ("fdwindow_fix::spawn", report)
    };
    creator
        .join()
        .map_err(|_| std::io::Error::other("the creating thread panicked"))??;
    let (pid, out, ok) = report?;
    match (ok, out.trim()) {
        (true, "free") => {
            println!("{how}: child {pid} held nothing (socket fd {fd} stayed in the parent)");
            Ok(ExitCode::SUCCESS)
        }
        (true, "held") => {
            println!(
                "{how}: LEAKED socket fd {fd} (device {dev}, inode {ino}), made without \
                 close-on-exec and flagged after the spawn, into child {pid} for its whole life"
            );
            Ok(ExitCode::FAILURE)
        }
        _ => Err(std::io::Error::other(format!(
            "the child {pid} did not report: {out:?}"
        ))),
    }
}
