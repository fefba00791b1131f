//! The parked-call interposer and its trial driver.
//!
//! The interposer must be preloaded when the process starts, so each check is
//! an `#[ignore]`d child test that its parent runs in a fresh copy of this
//! test binary with the library preloaded; the parent passes only when the
//! child's exact `... ok` line and `1 passed` are in its output, so a renamed
//! or missing child cannot pass silently.

use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fdwindow::cotenant::preload::{self, Library};
use fdwindow::harness::Fault;
use fdwindow::harness::parked::{self, Family, Interposer, Mode, StdCall, Waited};

mod common;

/// How long a child test may run before it counts as hung.
const CHILD_DEADLINE: Duration = Duration::from_secs(120);

/// Runs the ignored test `child` in a copy of this binary with the
/// interposer preloaded, and requires that it ran and passed.
fn in_preloaded_process(child: &str) {
    let scratch = common::scratch("parked-lib");
    let library = Library::PARKED_CALL.write().expect("write the interposer");
    let log = scratch.fresh("log");
    let mut run = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", child, "--ignored", "--test-threads=1"])
        .env(
            preload::variable().expect("a preload variable"),
            library.path(),
        )
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    // A hung child is killed, never waited for without bound: bounded
    // polling with backoff.
    let deadline = Instant::now() + CHILD_DEADLINE;
    let mut pause = Duration::from_millis(1);
    let status = loop {
        if let Some(status) = run.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = run.kill();
            let _ = run.wait();
            break None;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    };
    let text = std::fs::read_to_string(&log).unwrap();
    let status = status.unwrap_or_else(|| panic!("{child} hung; killed:\n{text}"));
    assert!(status.success(), "{child} failed:\n{text}");
    assert!(
        text.contains(&format!("test {child} ... ok")) && text.contains("1 passed"),
        "{child} did not run:\n{text}"
    );
}

/// A socket made with exactly `flags` (none: the first step of two), through
/// libc's `socket` so the interposer sees it: socket2's `new_raw` calls
/// `libc::socket` with the type as given and adds no flag (unlike its `new`,
/// which adds close-on-exec).
fn bare_socket(flags: libc::c_int) -> std::io::Result<OwnedFd> {
    let ty = socket2::Type::from(libc::SOCK_STREAM | flags);
    Ok(socket2::Socket::new_raw(socket2::Domain::UNIX, ty, None)?.into())
}

/// The second step: fcntl(F_SETFD, FD_CLOEXEC). The interposer wraps no
/// `F_SETFD` (it makes no descriptor), so rustix may make it.
fn set_cloexec(fd: &OwnedFd) -> std::io::Result<()> {
    rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::CLOEXEC)?;
    Ok(())
}

struct ReleaseOnDrop(Interposer);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.release();
    }
}

#[test]
fn without_the_interposer_a_trial_is_unsupported() {
    // This test process was started without the library.
    let got = parked::trial(Mode::Park, Family::Socket, || bare_socket(0));
    assert_eq!(
        got.unwrap_err(),
        Fault::Unsupported(parked::NOT_LOADED.into())
    );
}

#[test]
fn an_armed_thread_parks_and_resumes() {
    in_preloaded_process("child_an_armed_thread_parks_and_resumes");
}

#[test]
#[ignore = "run by an_armed_thread_parks_and_resumes with the interposer preloaded"]
fn child_an_armed_thread_parks_and_resumes() {
    let lot = Interposer::find().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        let creator = s.spawn(move || {
            lot.arm(Mode::Park, &[Family::Socket]).unwrap();
            tx.send(()).unwrap();
            let fd = bare_socket(0).unwrap();
            (fd.as_raw_fd(), lot.disarm())
        });
        // Released on every way out, so a failed check cannot leave the
        // creator parked while the scope joins it.
        let _release = ReleaseOnDrop(lot);
        rx.recv().unwrap();
        let park = match lot.wait(Duration::from_secs(30)) {
            Waited::Parked(park) => park,
            other => panic!("expected a park, got {other:?}"),
        };
        assert_eq!(park.call, "socket");
        assert!(!park.stripped);
        // Parked: the creator cannot have returned from socket(2).
        assert!(!creator.is_finished());
        lot.release();
        let (fd, parked) = creator.join().unwrap();
        assert!(parked, "the creator recorded no park");
        assert_eq!(park.fds, vec![fd]);
    });
}

#[test]
fn an_unarmed_thread_never_parks() {
    in_preloaded_process("child_an_unarmed_thread_never_parks");
}

#[test]
#[ignore = "run by an_unarmed_thread_never_parks with the interposer preloaded"]
fn child_an_unarmed_thread_never_parks() {
    let lot = Interposer::find().unwrap();
    let (armed_tx, armed_rx) = mpsc::channel();
    std::thread::scope(|s| {
        // Inside the scope, so a failed check drops it and the armed thread
        // ends before the scope joins it.
        let (go_tx, go_rx) = mpsc::channel::<()>();
        // An armed thread that makes no call until the end: the lot is armed
        // while the unarmed thread works.
        let armed = s.spawn(move || {
            lot.arm(Mode::Park, &Family::ALL).unwrap();
            armed_tx.send(()).unwrap();
            let _ = go_rx.recv();
            lot.disarm()
        });
        armed_rx.recv().unwrap();
        let unarmed = s.spawn(|| {
            let socket = bare_socket(0).unwrap();
            let pair = std::os::unix::net::UnixStream::pair().unwrap();
            let (r, w) = std::io::pipe().unwrap();
            let file = std::fs::File::open("/dev/null").unwrap();
            let copy = file.try_clone().unwrap();
            drop((socket, pair, r, w, file, copy));
        });
        // Bounded polling: a park would show here within one interval; the
        // unarmed thread finishing ends the loop.
        while !unarmed.is_finished() {
            if let Waited::Parked(park) = lot.wait(Duration::from_millis(20)) {
                lot.release();
                panic!("an unarmed thread parked in {}", park.call);
            }
        }
        unarmed.join().unwrap();
        assert_eq!(lot.wait(Duration::ZERO), Waited::TimedOut);
        go_tx.send(()).unwrap();
        assert!(!armed.join().unwrap(), "the armed thread made no call");
        assert_eq!(lot.wait(Duration::ZERO), Waited::NotParked);
    });
}

#[test]
fn a_raw_syscall_is_not_interposed_and_the_trial_is_broken() {
    in_preloaded_process("child_a_raw_syscall_is_not_interposed_and_the_trial_is_broken");
}

#[test]
#[ignore = "run by a_raw_syscall_is_not_interposed_and_the_trial_is_broken with the interposer preloaded"]
fn child_a_raw_syscall_is_not_interposed_and_the_trial_is_broken() {
    // Before any call parked in this process, the interposer itself is
    // suspect (a loader that maps it but routes no call through it).
    match parked::trial(Mode::Park, Family::Socket, raw_socket) {
        Err(Fault::NotConfirmed(why)) => {
            assert!(why.contains("no call has parked in this process"), "{why}")
        }
        other => panic!("expected an unconfirmed trial, got {other:?}"),
    }
    // Once a call through libc parked, the code under test is.
    assert!(parked::trial(Mode::Park, Family::Socket, || bare_socket(0)).is_ok());
    match parked::trial(Mode::Park, Family::Socket, raw_socket) {
        Err(Fault::NotConfirmed(why)) => {
            assert!(
                why.contains("no call parked") && why.contains("raw syscall"),
                "{why}"
            )
        }
        other => panic!("expected an unconfirmed trial, got {other:?}"),
    }
}

/// socket(2) as a raw system call, past libc's `socket`, which the
/// interposer wraps. Linux: rustix's Linux backend (linux_raw, its default
/// here) makes the system call itself, and no `unsafe` is needed.
#[cfg(target_os = "linux")]
fn raw_socket() -> std::io::Result<OwnedFd> {
    use rustix::net::{AddressFamily, SocketType, socket};
    Ok(socket(AddressFamily::UNIX, SocketType::STREAM, None)?)
}

/// macOS: rustix goes through libc there, so libc's `syscall(2)` makes it,
/// as system call 97 (`SYS_socket` in XNU's bsd/kern/syscalls.master; the
/// libc crate has no constant for it).
#[cfg(target_os = "macos")]
fn raw_socket() -> std::io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    const SYS_SOCKET: libc::c_int = 97;
    // SAFETY: socket(2) takes three ints and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(SYS_SOCKET, libc::AF_UNIX, libc::SOCK_STREAM, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor the call just made, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[test]
fn a_second_step_after_the_park_is_missing_in_the_child() {
    in_preloaded_process("child_a_second_step_after_the_park_is_missing_in_the_child");
}

#[test]
#[ignore = "run by a_second_step_after_the_park_is_missing_in_the_child with the interposer preloaded"]
fn child_a_second_step_after_the_park_is_missing_in_the_child() {
    // Two steps: the flag comes after the park, so the child holds the socket.
    let two_step = parked::trial(Mode::Park, Family::Socket, || {
        let fd = bare_socket(0)?;
        set_cloexec(&fd)?;
        Ok(fd)
    })
    .unwrap();
    assert_eq!(two_step.park.call, "socket");
    assert!(two_step.hit(), "{two_step:?}");
    // One step, where the OS has it: nothing to hold.
    #[cfg(target_os = "linux")]
    {
        let atomic = parked::trial(Mode::Park, Family::Socket, || {
            bare_socket(libc::SOCK_CLOEXEC)
        })
        .unwrap();
        assert!(!atomic.hit(), "{atomic:?}");
        // The sham strips the flag: the same call leaks.
        let sham = parked::trial(Mode::Sham, Family::Socket, || {
            bare_socket(libc::SOCK_CLOEXEC)
        })
        .unwrap();
        assert!(sham.park.stripped && sham.hit(), "{sham:?}");
    }
}

#[test]
fn std_constructors_park_and_their_shams_leak() {
    in_preloaded_process("child_std_constructors_park_and_their_shams_leak");
}

#[test]
#[ignore = "run by std_constructors_park_and_their_shams_leak with the interposer preloaded"]
fn child_std_constructors_park_and_their_shams_leak() {
    let scratch = common::scratch("parked-std");
    for call in StdCall::ALL {
        let real = parked::std_trial(Mode::Park, call, &scratch.fresh("sock"))
            .unwrap_or_else(|e| panic!("{call:?}: {e:?}"));
        let sham = parked::std_trial(Mode::Sham, call, &scratch.fresh("sock"))
            .unwrap_or_else(|e| panic!("{call:?} sham: {e:?}"));
        // The sham always leaks: the window sees a missing flag.
        assert!(sham.hit(), "{call:?} sham: {sham:?}");
        // std asks for the atomic flag on Linux (socket(2), pipe2(2), accept4(2),
        // open(2), fcntl(2) F_DUPFD_CLOEXEC): nothing to hold, and the sham
        // had a flag to strip.
        #[cfg(target_os = "linux")]
        assert!(
            !real.hit() && sham.park.stripped,
            "{call:?}: {real:?} / {sham:?}"
        );
        let _ = real;
    }
}

/// An arm whose creating call bypasses libc: every trial is unconfirmed.
fn raw_syscall_arm(t: &mut fdwindow::harness::Trial<'_>) -> Result<bool, Fault> {
    let _ = t.window();
    parked::trial(Mode::Park, Family::Socket, raw_socket).map(|seen| seen.hit())
}

static RAW_PROBE: fdwindow::harness::Probe = fdwindow::harness::Probe {
    hazard: "raw-syscall",
    about: "Checks that a creating call the interposer never sees leaves the parked-call cell broken.",
    trials: 7,
    race: Duration::from_millis(1),
    arms: &[fdwindow::harness::Arm {
        id: "raw-socket",
        role: fdwindow::report::verdict::Role::Control,
        about: "socket(2) by syscall(2), past libc.",
        windows: &[fdwindow::report::verdict::Window::ParkedCall],
        trial: raw_syscall_arm,
        ..fdwindow::harness::ARM
    }],
    observe: None,
};

#[test]
fn a_cell_whose_calls_bypass_libc_is_broken() {
    in_preloaded_process("child_a_cell_whose_calls_bypass_libc_is_broken");
}

#[test]
#[ignore = "run by a_cell_whose_calls_bypass_libc_is_broken with the interposer preloaded"]
fn child_a_cell_whose_calls_bypass_libc_is_broken() {
    let settings = fdwindow::harness::Settings {
        trials: 7,
        race: Duration::from_millis(1),
        thorough: false,
        deadline: None,
        hold_by: fdwindow_fix::pressure::HoldBy::Fork,
    };
    let report = fdwindow::harness::run(&RAW_PROBE, settings, &[]).unwrap();
    let cell = &report.arms[0];
    // No trial was confirmed, none counted as a miss; the cell is broken.
    assert_eq!(cell.outcome.count().map(|c| c.trials), Some(0), "{cell:?}");
    assert!(cell.outcome.broken_trials() >= 7, "{cell:?}");
    assert_eq!(
        fdwindow::report::verdict::control_verdict(&cell.outcome, cell.kind),
        fdwindow::report::verdict::Verdict::Broken,
        "a never-parked cell must be broken, not absent: {cell:?}"
    );
}
