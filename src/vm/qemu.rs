//! One boot of one kernel under QEMU, bounded and cleaned up on every path.
//!
//! QEMU runs in its own process group (killed whole by [`wait_group`] on
//! timeout, on Ctrl-C, SIGTERM or SIGHUP, and when the guest is done) with a
//! parent-death signal, so even a SIGKILLed `fdwindow` leaves no QEMU behind.
//! The console (ttyS0) comes back on QEMU's stdout and is kept for its last
//! lines; the results come on ttyS1 into a file in the boot's scratch folder.

use crate::error::{Error, Result, usage};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::channel::{self, Frame};
use fdwindow_fix::base::child::{GroupExit, wait_group};
use fdwindow_fix::base::interrupts::interrupted;

/// The console lines kept for a `broken` report.
pub const CONSOLE_TAIL: usize = 40;

/// The first line that says why a kernel died, kept even when the stack
/// dump after it pushes it out of the tail (its length varies per boot).
const PANIC_MARKERS: &[&str] = &["Kernel panic", "BUG:", "Oops"];

/// The line the guest's `/init` prints once it runs: boot is over.
const UP_MARKER: &str = "fdwindow-guest: kernel ";

/// How long the results may go without a byte, once their frame began,
/// before the channel is called stalled and QEMU killed. The guest gives up
/// sending sooner than its own budget only when the port takes nothing.
pub const STALL: Duration = Duration::from_secs(60);

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
    pub fn virtualization(self) -> crate::report::platform::Virtualization {
        match self {
            Accel::Kvm => crate::report::platform::Virtualization::KvmGuest,
            Accel::Tcg => crate::report::platform::Virtualization::Tcg,
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
pub fn qemu_program() -> Result<String> {
    if let Ok(q) = std::env::var("FDWINDOW_QEMU") {
        return Ok(q);
    }
    match std::env::consts::ARCH {
        "x86_64" => Ok("qemu-system-x86_64".into()),
        other => Err(usage!(
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
        // PREEMPT_RT kernels thread the 8250's interrupt, and its spurious-IRQ
        // check then counts QEMU's UART interrupts as unhandled and disables
        // IRQ 3 after about 100 KiB on ttyS1: the results never arrive
        // (seen on Debian 12's 6.1.0-57-rt-amd64). The check guards against
        // broken hardware; this UART is emulated. kernel-parameters.txt.
        "noirqdebug".to_owned(),
        format!(
            "{}={}",
            crate::report::platform::ACCEL_PARAM,
            boot.accel.id()
        ),
    ];
    words.extend(boot.params.iter().cloned());
    words.join(" ")
}

/// Boots once; `scratch` is this boot's own folder (removed by the caller).
pub fn run(boot: &Boot, scratch: &Path) -> std::io::Result<Outcome> {
    let results_port = scratch.join("ttyS1");
    let mut cmd = qemu_command(boot, &results_port)?;
    fdwindow_fix::sys::die_with_parent(&mut cmd);
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
    let watch = std::cell::RefCell::new(ChannelWatch::new(&results_port, started));
    let exit = wait_group(&mut child, started + boot.timeout, || {
        interrupted() || watch.borrow_mut().stalled(Instant::now())
    });
    let elapsed = started.elapsed();
    // The group is dead: both pipes are at end-of-file.
    let _ = reader.join();
    let qemu_err = err_reader.join().unwrap_or_default();
    let console = std::mem::take(&mut *console.lock().unwrap_or_else(|e| e.into_inner()));
    let (tail, qemu_err) = console_tail(&console, &qemu_err);
    let broken = |why: String| Outcome::Broken {
        why,
        console_tail: tail.clone(),
        elapsed,
    };
    let sent = || std::fs::read(&results_port).unwrap_or_default();
    let arrived = |bytes: &[u8]| channel::progress(bytes, bytes.len() as u64);
    let status = match exit? {
        GroupExit::Stopped if interrupted() => return Ok(Outcome::Interrupted),
        GroupExit::Stopped => {
            let p = arrived(&sent()).unwrap_or(watch.borrow().last);
            return Ok(broken(format!(
                "the results channel stalled: {} of {} bytes arrived, then none for {} s; \
                 QEMU killed",
                p.received,
                p.expected,
                STALL.as_secs()
            )));
        }
        GroupExit::TimedOut => {
            return Ok(broken(match arrived(&sent()) {
                // The probes were done: the channel, not the probes, ran out.
                Some(p) => format!(
                    "the results were still arriving at the {} s limit: {} of {} bytes; \
                     QEMU killed",
                    boot.timeout.as_secs(),
                    p.received,
                    p.expected
                ),
                None => format!("timed out after {} s; QEMU killed", boot.timeout.as_secs()),
            }));
        }
        GroupExit::Exited(status) => status,
    };
    let sent = sent();
    // A frame whose header came but not all its payload.
    let cut_short = arrived(&sent).filter(|p| p.received < p.expected);
    match (channel::decode(&sent), cut_short) {
        (Ok(frame), _) => Ok(Outcome::Delivered {
            frame,
            boot_time: console.up,
            elapsed,
            console_tail: tail,
        }),
        (Err(_), Some(p)) => Ok(broken(format!(
            "the results channel stalled: {} of {} bytes arrived before QEMU exited \
             ({status})",
            p.received, p.expected
        ))),
        (Err(why), None) if !status.success() => Ok(broken(format!(
            "QEMU exited with {status}{}; {why}",
            qemu_err
                .first()
                .map_or(String::new(), |l| format!(" ({l})"))
        ))),
        (Err(why), None) => Ok(broken(why.to_string())),
    }
}

/// QEMU for `boot`: no devices but two serial ports, ttyS0 (the console) on
/// stdout and ttyS1 (the results) into `results_port`, in its own process
/// group.
fn qemu_command(boot: &Boot, results_port: &Path) -> std::io::Result<Command> {
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
    Ok(cmd)
}

/// What a broken run shows: the console's first panic line (when it has
/// scrolled away), its last lines, then QEMU's own complaints, one prefix
/// each. The second list is those complaints alone.
fn console_tail(console: &Console, qemu_err: &str) -> (Vec<String>, Vec<String>) {
    let mut tail: Vec<String> = Vec::new();
    if let Some(panic) = console.panic.clone().filter(|p| !console.lines.contains(p)) {
        tail.push(panic);
        tail.push("[…]".into());
    }
    tail.extend(console.lines.iter().cloned());
    let qemu_err: Vec<String> = qemu_err
        .lines()
        .filter(|l| !l.trim().is_empty())
        // QEMU starts its own lines with its program name: one prefix is enough.
        .map(|l| {
            format!(
                "qemu: {}",
                l.split_once(": ")
                    .filter(|(p, _)| p.starts_with("qemu"))
                    .map_or(l, |(_, rest)| rest)
            )
        })
        .collect();
    tail.extend(qemu_err.iter().cloned());
    (tail, qemu_err)
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

/// Watches the results port's file while QEMU runs: once a frame's header
/// is there, whether its bytes stopped coming for [`STALL`].
struct ChannelWatch {
    path: PathBuf,
    /// The payload's progress at the last growth.
    last: channel::Progress,
    /// The file's length then, and when.
    len: u64,
    since: Instant,
    /// Where the payload starts, once the header is whole.
    body: Option<u64>,
}

impl ChannelWatch {
    fn new(path: &Path, now: Instant) -> Self {
        ChannelWatch {
            path: path.to_owned(),
            last: channel::Progress {
                received: 0,
                expected: 0,
            },
            len: 0,
            since: now,
            body: None,
        }
    }

    /// Whether the frame began and nothing came for [`STALL`] up to `now`.
    /// A stat per poll; the file's head is read only until its header is whole.
    fn stalled(&mut self, now: Instant) -> bool {
        let len = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        if len != self.len {
            self.len = len;
            self.since = now;
            if self.body.is_none() {
                let mut head = Vec::new();
                if let Ok(f) = std::fs::File::open(&self.path) {
                    let _ =
                        std::io::Read::read_to_end(&mut std::io::Read::take(f, 4096), &mut head);
                }
                if let Some(p) = channel::progress(&head, len) {
                    self.body = Some(len - p.received);
                    self.last.expected = p.expected;
                }
            }
            if let Some(body) = self.body {
                self.last.received = (len - body).min(self.last.expected);
            }
            return false;
        }
        self.body.is_some() && now.duration_since(self.since) >= STALL
    }
}

/// Whether QEMU's KVM accelerator can work here: `/dev/kvm` opens for
/// reading and writing and answers `KVM_GET_API_VERSION` with 12, the
/// only stable API (Documentation/virt/kvm/api.rst, 4.1). The error says
/// what to do.
pub fn kvm_usable() -> Result<()> {
    /// `_IO(KVMIO, 0x00)`, KVMIO being 0xAE.
    const KVM_GET_API_VERSION: u64 = 0xAE00;
    const KVM_API_VERSION: libc::c_int = 12;
    let kvm = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::usage(
                "/dev/kvm does not exist: no KVM on this machine \
                 (the kvm module is not loaded, or a VM without nested virtualization); \
                 use --accel tcg or auto",
            ),
            std::io::ErrorKind::PermissionDenied => Error::usage(
                "/dev/kvm: permission denied (add this user to its group, often kvm, \
                 or use --accel tcg)",
            ),
            _ => usage!("/dev/kvm: {e}"),
        })?;
    // SAFETY: KVM_GET_API_VERSION takes no argument and writes no memory.
    let version = unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&kvm),
            KVM_GET_API_VERSION as _,
            0,
        )
    };
    if version == KVM_API_VERSION {
        Ok(())
    } else {
        Err(usage!(
            "/dev/kvm: KVM_GET_API_VERSION answered {version} ({}), not {KVM_API_VERSION}",
            std::io::Error::last_os_error()
        ))
    }
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
            crate::report::platform::accel_word(&line),
            Some(crate::report::platform::Virtualization::Tcg),
            "{line}"
        );
        assert!(line.starts_with("console=ttyS0 "), "{line}");
        assert!(line.split(' ').any(|w| w == "noirqdebug"), "{line}");
        assert!(line.ends_with(" fdwindow.only=flock-survival"), "{line}");
    }

    #[test]
    fn a_frame_that_stops_coming_is_a_stall_and_one_that_grows_is_not() {
        let dir = fdwindow_fix::base::scratch::Scratch::new("qemu-watch-test").unwrap();
        let port = dir.dir().join("ttyS1");
        let t0 = Instant::now();
        let mut watch = ChannelWatch::new(&port, t0);
        // No file, then no header: never a stall, however long.
        assert!(!watch.stalled(t0 + STALL * 2));
        std::fs::write(&port, b"\nboot noise").unwrap();
        assert!(!watch.stalled(t0));
        assert!(!watch.stalled(t0 + STALL * 2));
        let frame = channel::encode(&channel::Frame {
            status: 0,
            payload: vec![b'x'; 1000],
        });
        std::fs::write(&port, &frame[..300]).unwrap();
        let t1 = t0 + STALL * 3;
        assert!(!watch.stalled(t1), "it grew");
        assert!(!watch.stalled(t1 + STALL / 2));
        assert!(watch.stalled(t1 + STALL));
        let head_len = frame.len() as u64 - 1000 - 14;
        assert_eq!(watch.last.expected, 1000);
        assert_eq!(watch.last.received, 300 - head_len);
        std::fs::write(&port, &frame[..600]).unwrap();
        assert!(!watch.stalled(t1 + STALL * 2), "it grew again");
        assert_eq!(watch.last.received, 600 - head_len);
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
