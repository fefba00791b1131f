//! The process's interrupt flag: SIGINT, SIGTERM and SIGHUP set a flag
//! instead of killing the process, so that every loop that checks it (the
//! harness's trials, the runner, `fix::isolate`'s wait) stops, reaps its
//! children and removes its scratch paths before the process exits. A
//! write to a closed pipe sets it too (SIGPIPE, recorded by the writer,
//! [`super::out`]): the process winds down as on Ctrl-C.

use std::sync::atomic::{AtomicI32, Ordering};

/// The first signal that arrived, 0 for none.
static INTERRUPTED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    let _ = INTERRUPTED.compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed);
}

/// Sets a flag on SIGINT, SIGTERM and SIGHUP (a closed terminal) instead of
/// dying, so every child is reaped and every scratch path removed before the
/// process exits.
pub fn catch_interrupts() {
    // No flags (no SA_RESTART: a blocking call returns EINTR, so a wait
    // loop sees the flag); every signal blocked while the handler runs,
    // which only stores to an atomic.
    let action = crate::sys::sigaction_of(
        on_signal as *const () as libc::sighandler_t,
        crate::sys::SigSet::all(),
        0,
    );
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installs a handler that only stores to an atomic, which is
        // async-signal-safe.
        unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) };
    }
}

/// Records `sig` as if it had arrived (kept only when it is the first):
/// the writer's closed pipe. Rust ignores SIGPIPE, so a write to a pipe
/// whose reader has gone fails with EPIPE instead of ending the process;
/// the writer records the signal that would have ended it.
pub fn record(sig: libc::c_int) {
    on_signal(sig);
}

/// Whether SIGINT, SIGTERM or SIGHUP arrived since [`catch_interrupts`], or
/// a write met a closed pipe (SIGPIPE).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed) != 0
}

/// The first of SIGINT, SIGTERM, SIGHUP and a closed pipe's SIGPIPE that
/// arrived, if any.
pub fn signal() -> Option<i32> {
    Some(INTERRUPTED.load(Ordering::Relaxed)).filter(|&s| s != 0)
}

/// The exit status of a process that a signal stopped: 128 plus the
/// signal's number, the shells' convention (130 for SIGINT, 143 for
/// SIGTERM, 129 for SIGHUP, 141 for SIGPIPE); 130 when none is recorded.
pub fn exit_code() -> std::process::ExitCode {
    let sig = signal().unwrap_or(libc::SIGINT);
    std::process::ExitCode::from(u8::try_from(128 + sig).unwrap_or(130))
}
