//! The VM stage, the top of the library: takes in kernel images or packages
//! and the `fdwindow` binary (which runs every probe); gives out each guest kernel's results, merged
//! through the [`runner`](crate::runner) into the results folder.
//!
//! `fdwindow vm`: the probes inside a VM, one boot per kernel, each kernel's
//! results merged into the results folder under the guest's own platform
//! (its `uname -r` and the accelerator).
//!
//! - [`kernel`]: the kernel file checked before anything is built or
//!   booted: its boot header, its config; [`deb`] takes it out of a
//!   `linux-image-*.deb`.
//! - [`initramfs`]: the guest, built once per set of inputs and cached.
//! - [`qemu`]: one bounded boot; the console for a `broken` report, the
//!   results on a port of their own ([`channel`]).
//!
//! Under TCG every guest instruction is emulated, so only deterministic
//! windows measure the guest kernel (DESIGN.md, Platforms).

pub mod channel;
pub mod deb;
pub mod initramfs;
pub mod kernel;
pub mod qemu;

use std::path::{Path, PathBuf};

use std::time::{Duration, Instant};

use crate::error::{Error, Result, failed};
use crate::evidence::results;
use crate::report::platform::Platform;
use fdwindow_fix::base::scratch::Scratch;
pub use qemu::Accel;

/// Whether `platform` ran under emulation (QEMU's TCG): its virtualization,
/// decided first by the `fdwindow.accel=` word `fdwindow vm` puts on a
/// guest's command line (see `src/report/platform.rs`).
pub fn under_tcg(platform: &Platform) -> bool {
    platform.emulated()
}

/// The rule that flags an arm `emulated` lives with the verdict rules, which
/// the harness applies below this layer; it is re-exported here, where
/// `fdwindow vm` users look for it.
pub use crate::report::verdict::emulated;

/// The `--accel` choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccelChoice {
    /// KVM when a short smoke boot works, else TCG with a notice.
    Auto,
    /// This one, or fail.
    Only(Accel),
}

/// What `fdwindow vm` was asked to do.
#[derive(Clone, Debug)]
pub struct VmOptions {
    /// Kernel images or `linux-image-*.deb` files.
    pub kernels: Vec<PathBuf>,
    /// Run only these hazards (all when empty).
    pub only: Vec<String>,
    /// The accelerator.
    pub accel: AccelChoice,
    /// The results folder.
    pub results_dir: PathBuf,
    /// Hard limit per boot.
    pub timeout: Duration,
    /// Where `fdwindow` and the probes to put in the guest are.
    pub bin_dir: PathBuf,
    /// Where the initramfs is cached.
    pub cache_dir: PathBuf,
}

/// `broken`: why, and the console's last lines.
pub type Broken = (String, Vec<String>);

/// One kernel's outcome.
#[derive(Debug)]
pub struct KernelRun {
    /// The `--kernel` argument.
    pub source: PathBuf,
    /// The accelerator it ran under.
    pub accel: Accel,
    /// Where its results went, when it sent any.
    pub results_path: Option<PathBuf>,
    /// `broken`: why, with the console's last lines; empty when every probe ran.
    pub broken: Option<Broken>,
    /// From QEMU's start to the guest's `/init`.
    pub boot_time: Option<Duration>,
    /// The whole boot.
    pub elapsed: Duration,
}

/// The default cache: `$XDG_CACHE_HOME/fdwindow`, else `~/.cache/fdwindow`
/// (XDG Base Directory Specification).
pub fn default_cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("fdwindow")
}

/// Guest memory and CPUs: the probes' deterministic windows need two CPUs
/// only for the races, and tmpfs lives in this memory.
const MEMORY_MIB: u32 = 2048;
const CPUS: u32 = 2;
/// The smoke boot `auto` makes under KVM.
const SMOKE_TIMEOUT: Duration = Duration::from_secs(60);

/// Boots every kernel in turn; `report` hears of each as it ends.
pub fn run(opts: &VmOptions, mut report: impl FnMut(&KernelRun)) -> Result<Vec<KernelRun>> {
    if let Some(unknown) = opts
        .only
        .iter()
        .find(|h| !crate::runner::PROBES.contains(&h.as_str()))
    {
        return Err(Error::Usage(format!(
            "no probe for hazard {unknown:?}; probes: {}",
            crate::runner::PROBES.join(", ")
        )));
    }
    if let Some(missing) = opts.kernels.iter().find(|k| !k.is_file()) {
        return Err(Error::Usage(format!(
            "{}: no such kernel file",
            missing.display()
        )));
    }
    results::check_writable(&opts.results_dir)
        .map_err(|e| Error::Usage(format!("results folder is not writable: {e}")))?;
    results::load_dir(&opts.results_dir)?;

    remove_stale_scratch(&std::env::temp_dir());
    let scratch = Scratch::new("vm").map_err(|e| Error::Failed(e.to_string()))?;
    // Every kernel checked before any tool is looked for, the initramfs
    // built or anything booted: a bad file is about that file.
    let mut kernels = Vec::new();
    for (n, source) in opts.kernels.iter().enumerate() {
        let boot_dir = Scratch::new_in(scratch.dir(), &format!("kernel-{n}"))
            .map_err(|e| Error::Failed(e.to_string()))?;
        let kernel = kernel::open(source, boot_dir.dir())?;
        if let Some(gaps) = config_gaps(&kernel) {
            return Err(Error::Usage(format!(
                "{}: kernel {} cannot run the guest: {}",
                source.display(),
                kernel.release,
                gaps.join("; ")
            )));
        }
        kernels.push((kernel, boot_dir));
    }
    qemu::qemu_program()?;
    if opts.accel == AccelChoice::Only(Accel::Kvm) {
        qemu::kvm_usable().map_err(|e| Error::Usage(format!("--accel kvm: {e}")))?;
    }
    let spec = initramfs::Spec::standard(&opts.bin_dir)?;
    let (initrd, built) = spec.cached(&opts.cache_dir, scratch.dir())?;
    crate::base::out::note!(
        "fdwindow: initramfs {} ({})",
        initrd.display(),
        if built { "built now" } else { "cached" }
    );
    let mut accel = match opts.accel {
        AccelChoice::Only(a) => Some(a),
        AccelChoice::Auto => None,
    };
    let mut runs = Vec::new();
    for (kernel, boot_dir) in &kernels {
        let accel =
            *accel.get_or_insert_with(|| pick_accel(&kernel.image, &initrd, boot_dir.dir()));
        if fdwindow_fix::base::interrupts::interrupted() {
            return Err(Error::Interrupted);
        }
        let run = boot_kernel(opts, kernel, boot_dir, &initrd, accel)?;
        report(&run);
        runs.push(run);
    }
    Ok(runs)
}

/// Boots `kernel` once under `accel` and merges what its probes sent into
/// the results folder.
fn boot_kernel(
    opts: &VmOptions,
    kernel: &kernel::Kernel,
    boot_dir: &Scratch,
    initrd: &Path,
    accel: Accel,
) -> Result<KernelRun> {
    let source = &kernel.source;
    let mut params = Vec::new();
    if !opts.only.is_empty() {
        params.push(format!("fdwindow.only={}", opts.only.join(",")));
    }
    let boot = qemu::Boot {
        kernel: kernel.image.clone(),
        initrd: initrd.to_path_buf(),
        accel,
        params,
        timeout: opts.timeout,
        memory_mib: MEMORY_MIB,
        cpus: CPUS,
        progress: true,
    };
    crate::base::out::note!(
        "fdwindow: booting {} under {} (at most {} s) …",
        kernel.release,
        accel.id(),
        opts.timeout.as_secs()
    );
    let outcome = qemu::run(&boot, boot_dir.dir()).map_err(|e| Error::Failed(e.to_string()))?;
    Ok(match outcome {
        qemu::Outcome::Interrupted => return Err(Error::Interrupted),
        qemu::Outcome::Broken {
            why,
            console_tail,
            elapsed,
        } => KernelRun {
            source: source.clone(),
            accel,
            results_path: None,
            broken: Some((why, console_tail)),
            boot_time: None,
            elapsed,
        },
        qemu::Outcome::Delivered {
            frame,
            boot_time,
            elapsed,
            console_tail,
        } => {
            let (results_path, broken) = merge_frame(
                &frame,
                accel,
                &kernel.release,
                &opts.results_dir,
                console_tail,
            )?;
            KernelRun {
                source: source.clone(),
                accel,
                results_path,
                broken,
                boot_time,
                elapsed,
            }
        }
    })
}

/// Removes the scratch folders (`fdwindow-vm-<pid>-<n>`) of `fdwindow vm`
/// runs that were SIGKILLed (no handler runs then; their QEMU died with them,
/// by its parent-death signal): those whose pid no longer exists. A pid in
/// use again by another process keeps its folder until a later run.
pub fn remove_stale_scratch(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("fdwindow-vm-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<libc::pid_t>().ok())
            .filter(|&p| p > 0)
        else {
            continue;
        };
        if !fdwindow_fix::base::scratch::process_exists(pid)
            && entry.file_type().is_ok_and(|t| t.is_dir())
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The kernel's config gaps, when it has a config to check; a kernel without
/// one is booted and shows what it can.
fn config_gaps(kernel: &kernel::Kernel) -> Option<Vec<String>> {
    let Some(config) = kernel.config.as_ref() else {
        // Ubuntu ships boot/config-* in linux-modules-*, not linux-image-*.
        crate::base::out::note!(
            "fdwindow: no config for {} beside it or in its package: not checked; booting it anyway",
            kernel.release
        );
        return None;
    };
    let text = std::fs::read_to_string(config).ok()?;
    let gaps = kernel::config_gaps(&text);
    (!gaps.is_empty()).then_some(gaps)
}

/// `auto`: KVM when `/dev/kvm` opens and a smoke boot sends its frame, else
/// TCG, said in one line.
fn pick_accel(kernel: &Path, initrd: &Path, scratch: &Path) -> Accel {
    if let Err(why) = qemu::kvm_usable() {
        crate::base::out::note!(
            "fdwindow: {why}; using TCG (emulated: timed arms measure the emulator)"
        );
        return Accel::Tcg;
    }
    let smoke = qemu::Boot {
        kernel: kernel.to_owned(),
        initrd: initrd.to_owned(),
        accel: Accel::Kvm,
        params: vec!["fdwindow.smoke=1".into()],
        timeout: SMOKE_TIMEOUT,
        memory_mib: 256,
        cpus: 1,
        progress: false,
    };
    let started = Instant::now();
    let why = match qemu::run(&smoke, scratch) {
        Ok(qemu::Outcome::Delivered { frame, .. }) if frame.status == 0 => {
            crate::base::out::note!(
                "fdwindow: KVM smoke boot sent its frame in {:.1} s; using KVM",
                started.elapsed().as_secs_f64()
            );
            return Accel::Kvm;
        }
        Ok(qemu::Outcome::Delivered { frame, .. }) => {
            format!("the guest said status {}", frame.status)
        }
        Ok(qemu::Outcome::Broken {
            why, console_tail, ..
        }) => console_tail
            .iter()
            .rev()
            .find(|l| l.starts_with("qemu: "))
            .cloned()
            .unwrap_or(why),
        Ok(qemu::Outcome::Interrupted) => "interrupted".into(),
        Err(e) => e.to_string(),
    };
    crate::base::out::note!(
        "fdwindow: KVM smoke boot failed ({why}); using TCG (emulated: timed arms measure the emulator)"
    );
    Accel::Tcg
}

/// Merges what the guest sent into the results folder; returns the file
/// written and, when the guest's run failed, `broken` with why.
fn merge_frame(
    frame: &channel::Frame,
    accel: Accel,
    release: &str,
    dir: &Path,
    console_tail: Vec<String>,
) -> Result<(Option<PathBuf>, Option<Broken>)> {
    let text = String::from_utf8_lossy(&frame.payload);
    let file = match crate::evidence::results::parse(&text) {
        Ok(f) => f,
        Err(why) => {
            return Ok((
                None,
                Some((
                    format!(
                        "the guest's results are unreadable: {why} (its run exited {})",
                        frame.status
                    ),
                    console_tail,
                )),
            ));
        }
    };
    if file.platform.virtualization != accel.virtualization() {
        return Ok((
            None,
            Some((
                format!(
                    "the guest reports virtualization {}, not {}: results not merged",
                    file.platform.virtualization.id(),
                    accel.virtualization().id()
                ),
                console_tail,
            )),
        ));
    }
    // A package's file name gives its release; an image's name may not.
    if release.starts_with(|c: char| c.is_ascii_digit()) && file.platform.kernel_release != release
    {
        crate::base::out::note!(
            "fdwindow: note: the guest runs {}, the file name said {release}",
            file.platform.kernel_release
        );
    }
    let id = file.platform.id.clone();
    // Read, merge and write under the folder's lock (which creates a folder
    // that is not there yet: the first file of a run that measured).
    let _lock = results::FolderLock::acquire(dir, fdwindow_fix::base::interrupts::interrupted)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::Interrupted {
                Error::Interrupted
            } else {
                Error::Failed(e.to_string())
            }
        })?;
    let mut all = results::load_dir(dir)?;
    all.push(file);
    let merged = results::merge(all);
    let mine = merged
        .iter()
        .find(|f| f.platform.id == id)
        .expect("merged keeps every platform");
    let path = dir.join(format!("{id}.json"));
    let json = serde_json::to_string_pretty(mine).expect("results serialise") + "\n";
    results::write_atomic(&path, json.as_bytes()).map_err(|e| Error::Failed(e.to_string()))?;
    crate::runner::write_matrix(dir).map_err(|e| Error::Failed(e.to_string()))?;
    let broken = (frame.status != 0).then(|| {
        (
            format!(
                "the guest's `fdwindow run` exited {}: some probes failed (the others were merged)",
                frame.status
            ),
            console_tail,
        )
    });
    Ok((Some(path), broken))
}

/// The guest side of the channel (`fdwindow vm-send`): frames the results
/// file in `results_dir` (none for a smoke boot) with `status` and writes it
/// to `port`, a serial port set raw first so no byte is rewritten.
pub fn send(port: &Path, status: i32, results_dir: Option<&Path>) -> Result<()> {
    let payload = match results_dir {
        None => Vec::new(),
        Some(dir) => {
            let mut files = results::list(dir, |p| {
                p.extension().is_some_and(|e| e == "json")
                    && !p
                        .file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("costs-"))
            })
            .map_err(Error::failed)?;
            match files.len() {
                0 => Vec::new(),
                1 => std::fs::read(files.remove(0)).map_err(Error::failed)?,
                n => {
                    return Err(failed!(
                        "{}: {n} results files; expected one",
                        dir.display()
                    ));
                }
            }
        }
    };
    let bytes = channel::encode(&channel::Frame { status, payload });
    write_frame(port, &bytes, Instant::now() + send_budget(bytes.len()))
}

/// How long the guest may take to send `len` bytes: a minute, and a second
/// per KiB (QEMU's emulated UART moved 142 KB in 21 s on the slowest kernel
/// tried, a PREEMPT_RT one). The host calls the channel stalled after
/// [`qemu::STALL`] without a byte.
fn send_budget(len: usize) -> Duration {
    Duration::from_secs(60 + (len / 1024) as u64)
}

/// Writes `bytes` to the serial port `port`, set raw first so no byte is
/// rewritten, and waits until the port's queue is empty, all by `deadline`:
/// a port that stops taking bytes (its interrupt disabled, say) is an error
/// that says how far the frame got, not a guest that hangs until the host's
/// timeout.
fn write_frame(port: &Path, bytes: &[u8], deadline: Instant) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(port)
        .map_err(|e| failed!("open {}: {e}", port.display()))?;
    set_raw(&f).map_err(|e| failed!("{}: set raw: {e}", port.display()))?;
    let short = |sent: usize, why: &str| {
        failed!(
            "{}: sent {sent} of {} bytes: {why}",
            port.display(),
            bytes.len()
        )
    };
    let mut sent = 0;
    while sent < bytes.len() {
        match rustix::io::write(&f, &bytes[sent..]) {
            Ok(n) => sent += n,
            Err(rustix::io::Errno::AGAIN) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(short(sent, "the port stopped taking bytes"));
                }
                wait_writable(&f, left).map_err(|e| short(sent, &e.to_string()))?;
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(short(sent, &e.to_string())),
        }
    }
    drain(&f, deadline).map_err(|e| short(sent, &e.to_string()))
}

/// Waits up to `limit` for `port` to take bytes again.
fn wait_writable(port: &std::fs::File, limit: Duration) -> std::io::Result<()> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut fds = [PollFd::new(port, PollFlags::OUT)];
    let timeout = Timespec::try_from(limit.min(Duration::from_secs(1))).unwrap_or_default();
    match poll(&mut fds, Some(&timeout)) {
        Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Puts a terminal into raw mode (termios(3), `cfmakeraw`): no `\n` to
/// `\r\n` rewriting, no echo, eight-bit bytes as they are.
/// rustix's `Termios::make_raw` sets the flags `cfmakeraw` sets.
fn set_raw(port: &std::fs::File) -> std::io::Result<()> {
    use rustix::termios::{OptionalActions, tcgetattr, tcsetattr};
    let mut t = tcgetattr(port)?;
    t.make_raw();
    tcsetattr(port, OptionalActions::Now, &t)?;
    Ok(())
}

/// Waits, polling with backoff, until the bytes queued on `port`
/// (`TIOCOUTQ`, tty_ioctl(4)) have gone, so powering off cannot cut the frame
/// short; by `deadline`. `tcdrain(3)` would wait the same way but without
/// a limit. QEMU's UART hands each byte to its backend as the guest writes
/// the transmit register, so an empty queue is a delivered frame.
fn drain(port: &std::fs::File, deadline: Instant) -> Result<()> {
    let mut pause = Duration::from_millis(1);
    loop {
        let mut queued: libc::c_int = 0;
        // SAFETY: TIOCOUTQ writes one int, to `queued`.
        let rc = unsafe {
            libc::ioctl(
                std::os::fd::AsRawFd::as_raw_fd(port),
                libc::TIOCOUTQ as _,
                &mut queued,
            )
        };
        if rc != 0 {
            return Err(failed!("TIOCOUTQ: {}", std::io::Error::last_os_error()));
        }
        if queued == 0 {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(failed!("{queued} bytes still queued at the deadline"));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_scratch_of_dead_runs_goes_and_live_ones_stay() {
        let _serial = crate::test_serial();
        let root = Scratch::new("vm-stale-test").unwrap();
        // A pid that existed and is gone: a child, reaped.
        let mut child = std::process::Command::new(fdwindow_fix::base::child::TRUE_PROGRAM)
            .spawn()
            .unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = root.dir().join(format!("fdwindow-vm-{dead}-0"));
        let live = root
            .dir()
            .join(format!("fdwindow-vm-{}-0", std::process::id()));
        let other = root.dir().join(format!("fdwindow-run-{dead}-0"));
        for d in [&stale, &live, &other] {
            std::fs::create_dir_all(d.join("deb")).unwrap();
        }
        remove_stale_scratch(root.dir());
        assert!(
            !stale.exists() || fdwindow_fix::base::scratch::process_exists(dead as libc::pid_t)
        );
        assert!(live.exists() && other.exists());
    }
}
