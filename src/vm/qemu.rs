//! One boot of one kernel under QEMU, bounded and cleaned up on every path.
//!
//! QEMU runs in its own process group (killed whole by [`wait_group`] on
//! timeout, on Ctrl-C, SIGTERM or SIGHUP, and when the guest is done) with a
//! parent-death signal, so even a SIGKILLed `fdwindow` leaves no QEMU behind.
//! The console (ttyS0) comes back on QEMU's stdout and is kept for its last
//! lines; the results come on ttyS1 into a file in the boot's scratch folder.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::channel::{self, Frame};
use crate::child::{GroupExit, wait_group};
use crate::harness::interrupted;

/// The console lines kept for a `broken` report.
pub const CONSOLE_TAIL: usize = 40;

/// The first line that says why a kernel died, kept even when the stack
/// dump after it pushes it out of the tail (its length varies per boot).
const PANIC_MARKERS: &[&str] = &["Kernel panic", "BUG:", "Oops"];

/// The line the guest's `/init` prints once it runs: boot is over.
const UP_MARKER: &str = "fdwindow-guest: kernel ";

/// How QEMU executes the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    /// Hardware virtualization: guest code runs on the CPU.
    Kvm,
    /// QEMU's Tiny Code Generator: every guest instruction emulated.
    Tcg,
}

impl Accel {
    /// Its name, as `-accel` and `fdwindow.accel=` take it.
    pub fn id(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }

    /// The virtualization a guest booted under it reports (the guest reads
    /// the `fdwindow.accel=` word this accelerator put on its command line).
    pub fn virtualization(self) -> crate::platform::Virtualization {
        match self {
            Accel::Kvm => crate::platform::Virtualization::KvmGuest,
            Accel::Tcg => crate::platform::Virtualization::Tcg,
        }
    }
}

/// One boot.
#[derive(Clone, Debug)]
pub struct Boot {
    /// The kernel image.
    pub kernel: PathBuf,
    /// The initramfs.
    pub initrd: PathBuf,
    /// The accelerator.
    pub accel: Accel,
    /// Extra kernel parameters (`fdwindow.only=…`, `fdwindow.smoke=1`).
    pub params: Vec<String>,
    /// Hard limit on the whole boot, guest work included.
    pub timeout: Duration,
    /// Guest memory, MiB.
    pub memory_mib: u32,
    /// Guest CPUs.
    pub cpus: u32,
    /// Echo the guest runner's progress lines (`fdwindow: probing …`) to stderr.
    pub progress: bool,
}

/// How a boot ended.
#[derive(Debug)]
pub enum Outcome {
    /// The guest sent its results.
    Delivered {
        /// The frame.
        frame: Frame,
        /// From QEMU's start to the guest's `/init` running, if it said so.
        boot_time: Option<Duration>,
        /// From QEMU's start to its exit.
        elapsed: Duration,
        /// The console's last lines.
        console_tail: Vec<String>,
    },
    /// No results: why, and the console's last lines.
    Broken {
        /// One line.
        why: String,
        /// The console's last lines.
        console_tail: Vec<String>,
        /// From QEMU's start to its end.
        elapsed: Duration,
    },
    /// Ctrl-C, SIGTERM or SIGHUP: QEMU killed, nothing to merge.
    Interrupted,
}

/// The QEMU program for this machine's architecture (`FDWINDOW_QEMU` overrides).
pub fn qemu_program() -> Result<String, String> {
    if let Ok(q) = std::env::var("FDWINDOW_QEMU") {
        return Ok(q);
    }
    match std::env::consts::ARCH {
        "x86_64" => Ok("qemu-system-x86_64".into()),
        other => Err(format!(
            "fdwindow vm boots x86_64 guests only so far; this is {other} \
             (set FDWINDOW_QEMU to a QEMU for it to try)"
        )),
    }
}

/// The kernel command line for `boot`.
pub fn kernel_params(boot: &Boot) -> String {
    let mut words = vec![
        "console=ttyS0".to_owned(),
        "quiet".to_owned(),
        // Reboot at once on a panic; -no-reboot turns that into QEMU's exit.
        "panic=-1".to_owned(),
        format!("{}={}", crate::platform::ACCEL_PARAM, boot.accel.id()),
    ];
    words.extend(boot.params.iter().cloned());
    words.join(" ")
}

/// Boots once; `scratch` is this boot's own folder (removed by the caller).
pub fn run(boot: &Boot, scratch: &Path) -> std::io::Result<Outcome> {
    let results_port = scratch.join("ttyS1");
    let mut cmd = Command::new(qemu_program().map_err(std::io::Error::other)?);
    cmd.args([
        "-nodefaults",
        "-display",
        "none",
        "-monitor",
        "none",
        "-no-reboot",
    ]);
    match boot.accel {
        Accel::Kvm => cmd.args(["-accel", "kvm", "-cpu", "host"]),
        Accel::Tcg => cmd.args(["-accel", "tcg", "-cpu", "max"]),
    };
    cmd.arg("-m")
        .arg(boot.memory_mib.to_string())
        .arg("-smp")
        .arg(boot.cpus.to_string())
        .arg("-kernel")
        .arg(&boot.kernel)
        .arg("-initrd")
        .arg(&boot.initrd)
        .arg("-append")
        .arg(kernel_params(boot))
        // ttyS0, the console, on stdout; ttyS1, the results, into a file.
        .args(["-serial", "stdio", "-serial"])
        .arg(format!("file:{}", results_port.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    crate::sys::die_with_parent(&mut cmd);
    let started = Instant::now();
    let mut child = cmd.spawn().map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("start QEMU: {e} (install qemu-system-x86)"),
        )
    })?;
    let console = Arc::new(Mutex::new(Console::default()));
    let stdout = child.stdout.take().expect("piped");
    let progress = boot.progress;
    let reader = {
        let console = Arc::clone(&console);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).split(b'\n') {
                let Ok(line) = line else { break };
                let line = String::from_utf8_lossy(&line)
                    .trim_end_matches('\r')
                    .to_owned();
                let mut c = console.lock().unwrap_or_else(|e| e.into_inner());
                if c.up.is_none() && line.contains(UP_MARKER) {
                    c.up = Some(started.elapsed());
                }
                if progress && line.starts_with("fdwindow: ") {
                    crate::base::out::note!("  guest {line}");
                }
                c.push(line);
            }
        })
    };
    let stderr = child.stderr.take().expect("piped");
    let err_reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut text);
        text
    });
    let exit = wait_group(&mut child, started + boot.timeout, interrupted);
    let elapsed = started.elapsed();
    // The group is dead: both pipes are at end-of-file.
    let _ = reader.join();
    let qemu_err = err_reader.join().unwrap_or_default();
    let console = std::mem::take(&mut *console.lock().unwrap_or_else(|e| e.into_inner()));
    let mut tail: Vec<String> = Vec::new();
    if let Some(panic) = console.panic.filter(|p| !console.lines.contains(p)) {
        tail.push(panic);
        tail.push("[…]".into());
    }
    tail.extend(console.lines);
    let qemu_err: Vec<String> = qemu_err
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("qemu: {l}"))
        .collect();
    tail.extend(qemu_err.iter().cloned());
    let broken = |why: String| Outcome::Broken {
        why,
        console_tail: tail.clone(),
        elapsed,
    };
    let status = match exit? {
        GroupExit::Stopped => return Ok(Outcome::Interrupted),
        GroupExit::TimedOut => {
            return Ok(broken(format!(
                "timed out after {} s; QEMU killed",
                boot.timeout.as_secs()
            )));
        }
        GroupExit::Exited(status) => status,
    };
    let sent = std::fs::read(&results_port).unwrap_or_default();
    match channel::decode(&sent) {
        Ok(frame) => Ok(Outcome::Delivered {
            frame,
            boot_time: console.up,
            elapsed,
            console_tail: tail,
        }),
        Err(why) if !status.success() => Ok(broken(format!(
            "QEMU exited with {status}{}; {why}",
            qemu_err
                .first()
                .map_or(String::new(), |l| format!(" ({l})"))
        ))),
        Err(why) => Ok(broken(why)),
    }
}

/// The console's last lines, the first panic line, and when `/init` said it runs.
#[derive(Default)]
struct Console {
    lines: std::collections::VecDeque<String>,
    panic: Option<String>,
    up: Option<Duration>,
}

impl Console {
    fn push(&mut self, line: String) {
        if self.panic.is_none() && PANIC_MARKERS.iter().any(|m| line.contains(m)) {
            self.panic = Some(line.clone());
        }
        if self.lines.len() == CONSOLE_TAIL {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }
}

/// Whether this process may open `/dev/kvm` for reading and writing, which
/// QEMU's KVM accelerator needs.
pub fn kvm_openable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_names_the_accelerator_and_console() {
        let boot = Boot {
            kernel: "k".into(),
            initrd: "i".into(),
            accel: Accel::Tcg,
            params: vec!["fdwindow.only=flock-survival".into()],
            timeout: Duration::from_secs(1),
            memory_mib: 512,
            cpus: 1,
            progress: false,
        };
        let line = kernel_params(&boot);
        assert_eq!(
            crate::platform::accel_word(&line),
            Some(crate::platform::Virtualization::Tcg),
            "{line}"
        );
        assert!(line.starts_with("console=ttyS0 "), "{line}");
        assert!(line.ends_with(" fdwindow.only=flock-survival"), "{line}");
    }

    #[test]
    fn the_console_keeps_its_last_lines() {
        let mut c = Console::default();
        for i in 0..CONSOLE_TAIL + 5 {
            c.push(i.to_string());
        }
        assert_eq!(c.lines.len(), CONSOLE_TAIL);
        assert_eq!(c.lines.front().map(String::as_str), Some("5"));
        c.push("[ 2.9] Kernel panic - not syncing: Attempted to kill init!".into());
        for i in 0..CONSOLE_TAIL {
            c.push(format!("stack {i}"));
        }
        assert_eq!(
            c.panic.as_deref(),
            Some("[ 2.9] Kernel panic - not syncing: Attempted to kill init!")
        );
    }
}
