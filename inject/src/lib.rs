//! Runs fdwindow's fork-pressure co-tenant inside any process it is preloaded
//! into (`LD_PRELOAD` on Linux, `DYLD_INSERT_LIBRARIES` on macOS), configured
//! by `FDWINDOW_PRESSURE` (see `fdwindow::pressure::Spec`), e.g.
//!
//! ```text
//! FDWINDOW_PRESSURE=threads=4,hold=1ms,path=fork LD_PRELOAD=$PWD/target/release/libfdwindow_inject.so ./my-tests
//! ```
//!
//! 1. A constructor (`.init_array` / `__mod_init_func`) reads the variable; if
//!    it is unset or unparsable, or `match=` names another executable, it does
//!    nothing more (an unparsable spec says so on stderr, never stdout).
//! 2. It starts `fdwindow::pressure::Pressure`, whose threads block every
//!    signal and spawn `/usr/bin/true` with an empty environment, so no child
//!    carries the preload or the variable: pressure never cascades.
//! 3. An `atexit` hook stops the threads and reaps their children, waiting at
//!    most the hold plus five seconds so a host's exit never hangs; in a forked
//!    copy of the host (which has none of the threads) it does nothing.
//!
//! A host that execs loses its pressure threads with its old image (exec ends
//! every other thread); a child they left in its hold becomes the new image's
//! child and exits within the hold. A host that ends by `_exit` skips step 3
//! the same way. A forked copy of the host starts no pressure of its own.
//!
//! With `FDWINDOW_PRESSURE_REPORT=FILE` it appends one line per pressured
//! process at exit: `pid spawns elapsed_s covered_s exe`, which `fdwindow
//! stress` reads to show that pressure reached the processes it meant.

use std::io::Write;
use std::sync::Mutex;
use std::time::Duration;

use fdwindow::pressure::{ENV_VAR, Pressure, Spec};

/// Where to append the per-process report line at exit.
const REPORT_VAR: &str = "FDWINDOW_PRESSURE_REPORT";

struct Running {
    pressure: Pressure,
    pid: libc::pid_t,
    bound: Duration,
    exe: String,
}

static RUNNING: Mutex<Option<Running>> = Mutex::new(None);

// Run `start` when the library is loaded, before the host's main.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static CONSTRUCTOR: extern "C" fn() = start;

// See: https://github.com/apple-oss-distributions/dyld (`__mod_init_func` sections run at load).
#[cfg(target_os = "macos")]
#[used]
#[unsafe(link_section = "__DATA,__mod_init_func")]
static CONSTRUCTOR: extern "C" fn() = start;

extern "C" fn start() {
    // A panic must not unwind into the loader.
    let _ = std::panic::catch_unwind(start_pressure);
}

fn start_pressure() {
    let Ok(text) = std::env::var(ENV_VAR) else {
        return;
    };
    let spec: Spec = match text.parse() {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("fdwindow-inject: {ENV_VAR}: {e}; no pressure");
            return;
        }
    };
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    if !spec.applies_to(&exe) {
        return;
    }
    let bound = spec.config.hold + Duration::from_secs(5);
    match Pressure::start(spec.config) {
        Ok(pressure) => {
            let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
            *running = Some(Running {
                pressure,
                // SAFETY: getpid cannot fail.
                pid: unsafe { libc::getpid() },
                bound,
                exe,
            });
            // SAFETY: registers a plain extern "C" function.
            unsafe { libc::atexit(stop) };
        }
        Err(e) => eprintln!("fdwindow-inject: cannot start pressure: {e}"),
    }
}

extern "C" fn stop() {
    let _ = std::panic::catch_unwind(stop_pressure);
}

fn stop_pressure() {
    let Some(running) = RUNNING.lock().unwrap_or_else(|e| e.into_inner()).take() else {
        return;
    };
    // SAFETY: getpid cannot fail.
    if unsafe { libc::getpid() } != running.pid {
        // A forked copy of the host: the threads do not exist here, and their
        // children belong to the original.
        std::mem::forget(running.pressure);
        return;
    }
    let stats = running.pressure.stop_within(running.bound);
    if let (Some(stats), Some(path)) = (stats, std::env::var_os(REPORT_VAR)) {
        let line = format!(
            "{} {} {:.6} {:.6} {}\n",
            running.pid,
            stats.spawns,
            stats.elapsed.as_secs_f64(),
            stats.covered.as_secs_f64(),
            running.exe
        );
        // One short O_APPEND write: lines from concurrent processes do not interleave.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
}
