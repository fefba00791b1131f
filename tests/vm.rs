//! VM tests: each boots a kernel under QEMU (TCG, so they run anywhere), so
//! they are `#[ignore]`d: `make test` lists them as skipped and `make test-vm`
//! runs them. They need `qemu-system-x86_64`, busybox-static, and a kernel
//! `.deb`: `$FDWINDOW_TEST_KERNEL`, else the newest `linux-image-*.deb` in
//! `~/.cache/fdwindow/kernels` (`make kernel-deb` fetches Debian 12's).
//! `$FDWINDOW_VM_BIN` names the `fdwindow` to run (its probes beside it);
//! `make test-vm` points it at the release build, which TCG runs faster.

#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{processes_mentioning, scratch};
use fdwindow::vm::{Accel, initramfs, kernel, qemu};

const IGNORE: &str = "boots a VM; run by `make test-vm`";

fn kernel_deb() -> PathBuf {
    if let Some(k) = std::env::var_os("FDWINDOW_TEST_KERNEL") {
        return k.into();
    }
    let dir = fdwindow::vm::default_cache_dir().join("kernels");
    let mut debs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    debs.retain(|p| {
        p.extension().is_some_and(|e| e == "deb")
            && p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("linux-image-"))
    });
    debs.sort();
    debs.pop().unwrap_or_else(|| {
        panic!(
            "no kernel .deb in {}: run `make kernel-deb` or set FDWINDOW_TEST_KERNEL",
            dir.display()
        )
    })
}

fn fdwindow_bin() -> PathBuf {
    std::env::var_os("FDWINDOW_VM_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_fdwindow")),
        PathBuf::from,
    )
}

fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

/// `fdwindow vm` with its scratch (TMPDIR) and cache in `root`, so a test can
/// see both that no QEMU mentions them and that nothing is left in them.
fn vm_command(root: &Path, args: &[&str]) -> Command {
    let tmp = root.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = Command::new(fdwindow_bin());
    cmd.arg("vm")
        .arg("--kernel")
        .arg(kernel_deb())
        .args(args)
        .env("TMPDIR", &tmp)
        .env("XDG_CACHE_HOME", root.join("cache"));
    cmd
}

#[test]
#[ignore = "boots a VM; run by `make test-vm`"]
fn flock_survival_runs_in_the_guest_and_merges_under_its_platform() {
    let _ = IGNORE;
    let root = scratch("vm-flock");
    let results = root.dir().join("results");
    let started = Instant::now();
    let out = vm_command(root.dir(), &["--only", "flock-survival", "--accel", "tcg"])
        .arg("--results")
        .arg(&results)
        .args(["--timeout", "240"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "{stderr}{stdout}took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(out.status.success(), "{stderr}{stdout}");
    let files = fdwindow::evidence::results::load_dir(&results).unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    let platform = &files[0].platform;
    let host = fdwindow::report::platform::Platform::detect();
    // The guest's own kernel, not this machine's, and the accelerator.
    assert_ne!(platform.kernel_release, host.kernel_release);
    assert!(
        kernel_deb()
            .to_string_lossy()
            .contains(&platform.kernel_release),
        "{platform:?}"
    );
    assert_eq!(
        platform.virtualization,
        fdwindow::report::platform::Virtualization::Tcg
    );
    assert!(platform.id.ends_with("-tcg"), "{platform:?}");
    let verdict = |arm: &str| {
        let out = Command::new(fdwindow_bin())
            .args(["verdict", "flock-survival", arm, "--window", "fork-window"])
            .arg("--results")
            .arg(&results)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(
        verdict("close").starts_with("fork-window present "),
        "{}",
        verdict("close")
    );
    assert!(
        verdict("unlock-then-close").starts_with("fork-window valid "),
        "{}",
        verdict("unlock-then-close")
    );
    assert!(results.join("MATRIX.md").is_file());
    let tmp = root.dir().join("tmp");
    assert_eq!(
        processes_mentioning(&tmp.to_string_lossy()),
        Vec::<u32>::new()
    );
    assert!(is_empty_dir(&tmp), "scratch left in {}", tmp.display());
}

#[test]
#[ignore = "boots a VM; run by `make test-vm`"]
fn a_broken_initramfs_is_broken_with_the_consoles_last_lines() {
    let root = scratch("vm-broken");
    let kernel = kernel::open(&kernel_deb(), root.dir()).unwrap();
    // The standard guest, but its /init gives up: the kernel panics
    // ("Attempted to kill init") and, with panic=-1 and -no-reboot, QEMU exits.
    let bin_dir = fdwindow_bin().parent().unwrap().to_owned();
    let mut spec = initramfs::Spec::standard(&bin_dir).unwrap();
    spec.entries.insert(
        "/init".into(),
        initramfs::Entry::Bytes {
            data: b"#!/bin/sh\necho 'fdwindow-test: this init gives up'\nexit 3\n".to_vec(),
            mode: 0o755,
        },
    );
    let initrd = root.dir().join("broken.cpio");
    std::fs::write(&initrd, spec.build(root.dir()).unwrap()).unwrap();
    let boot = qemu::Boot {
        kernel: kernel.image.clone(),
        initrd,
        accel: Accel::Tcg,
        params: Vec::new(),
        timeout: Duration::from_secs(180),
        memory_mib: 512,
        cpus: 1,
        progress: false,
    };
    let outcome = qemu::run(&boot, root.dir()).unwrap();
    eprintln!("{outcome:#?}");
    let qemu::Outcome::Broken {
        why, console_tail, ..
    } = outcome
    else {
        panic!("a guest whose init exits must be broken: {outcome:?}");
    };
    assert!(why.contains("no results frame"), "{why}");
    let tail = console_tail.join("\n");
    // The panic line is kept however long the stack dump after it; exit 3
    // is this init's own exit status.
    assert!(
        tail.contains("Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000300"),
        "{tail}"
    );
}

#[test]
#[ignore = "boots a VM; run by `make test-vm`"]
fn a_boot_past_its_timeout_is_killed_and_broken() {
    let root = scratch("vm-timeout");
    let kernel = kernel::open(&kernel_deb(), root.dir()).unwrap();
    let bin_dir = fdwindow_bin().parent().unwrap().to_owned();
    let spec = initramfs::Spec::standard(&bin_dir).unwrap();
    let initrd = root.dir().join("guest.cpio");
    std::fs::write(&initrd, spec.build(root.dir()).unwrap()).unwrap();
    let port_dir = root.dir().join("qemu");
    std::fs::create_dir(&port_dir).unwrap();
    let boot = qemu::Boot {
        kernel: kernel.image.clone(),
        initrd,
        accel: Accel::Tcg,
        params: Vec::new(),
        // Far too short for the full probe set, however fast the machine.
        timeout: Duration::from_secs(2),
        memory_mib: 512,
        cpus: 1,
        progress: false,
    };
    let outcome = qemu::run(&boot, &port_dir).unwrap();
    let qemu::Outcome::Broken { why, .. } = &outcome else {
        panic!("must time out: {outcome:?}");
    };
    assert!(why.contains("timed out after 2 s"), "{why}");
    assert_eq!(
        processes_mentioning(&port_dir.to_string_lossy()),
        Vec::<u32>::new()
    );
}

/// Polls (with backoff, up to `limit`) until `f` is true.
fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_millis(10);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(500));
    }
    f()
}

#[test]
#[ignore = "boots a VM; run by `make test-vm`"]
fn a_signal_kills_the_vm_and_removes_the_scratch() {
    for (signal, code) in [
        (libc::SIGINT, Some(130)),
        (libc::SIGHUP, Some(129)),
        (libc::SIGKILL, None),
    ] {
        let root = scratch("vm-signal");
        let tmp = root.dir().join("tmp");
        let mut child = vm_command(root.dir(), &["--accel", "tcg", "--timeout", "600"])
            .arg("--results")
            .arg(root.dir().join("results"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let needle = tmp.to_string_lossy().into_owned();
        // QEMU is up once a process other than fdwindow names the scratch.
        let up = wait_until(Duration::from_secs(120), || {
            processes_mentioning(&needle)
                .iter()
                .any(|&p| p != child.id())
        });
        assert!(up, "QEMU never started");
        // Our child, not yet reaped: the pid names no other process.
        let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a child's pid");
        let sig = rustix::process::Signal::from_named_raw(signal).expect("a named signal");
        rustix::process::kill_process(pid, sig).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), code, "signal {signal}: {status}");
        let gone = wait_until(Duration::from_secs(30), || {
            processes_mentioning(&needle).is_empty()
        });
        assert!(gone, "signal {signal}: QEMU outlived fdwindow");
        if signal == libc::SIGKILL {
            // A SIGKILLed fdwindow cannot clean up; the next run removes it.
            fdwindow::vm::remove_stale_scratch(&tmp);
        }
        assert!(is_empty_dir(&tmp), "signal {signal}: scratch left");
    }
}

#[test]
#[ignore = "needs cpio; run by `make test-vm`"]
fn cpio_lists_the_initramfs_as_the_kernel_reads_it() {
    let root = scratch("vm-cpio");
    let bin_dir = fdwindow_bin().parent().unwrap().to_owned();
    let spec = initramfs::Spec::standard(&bin_dir).unwrap();
    let archive = root.dir().join("guest.cpio");
    std::fs::write(&archive, spec.build(root.dir()).unwrap()).unwrap();
    // GNU cpio reads newc with -i (copy-in) -t (list) -v (modes).
    let out = Command::new("cpio")
        .args(["-itv", "--quiet", "-F"])
        .arg(&archive)
        .output()
        .expect("cpio runs (make vm-tools installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listing = String::from_utf8_lossy(&out.stdout);
    let line = |name: &str| {
        listing
            .lines()
            .find(|l| l.ends_with(&format!(" {name}")) || l.contains(&format!(" {name} -> ")))
            .unwrap_or_else(|| panic!("{name} missing from:\n{listing}"))
            .to_owned()
    };
    assert!(line("init").starts_with("-rwxr-xr-x"), "{}", line("init"));
    assert!(
        line("dev/console").starts_with("crw-------"),
        "{}",
        line("dev/console")
    );
    assert!(
        line("bin/sh").starts_with("lrwxrwxrwx"),
        "{}",
        line("bin/sh")
    );
    // One binary runs every probe (`fdwindow probe HAZARD`): no other.
    assert!(line("opt/fdwindow/fdwindow").starts_with("-rwxr-xr-x"));
    assert!(!listing.contains("probe-"), "{listing}");
    for library in fdwindow::cotenant::preload::Library::ALL {
        line(&format!("opt/fdwindow/{}", library.file_name()));
    }
    line("usr/bin/true");
    line("bin/cat");
    line("bin/busybox");
}

// Bad input needs no VM: these run in `make test`.

fn usage_error(args: &[&str], needle: &str) {
    let root = scratch("vm-usage");
    let out = Command::new(env!("CARGO_BIN_EXE_fdwindow"))
        .arg("vm")
        .args(args)
        .arg("--results")
        .arg(root.dir().join("results"))
        .env("XDG_CACHE_HOME", root.dir().join("cache"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Refused before anything was built or written.
    assert!(!root.dir().join("cache").exists(), "{args:?}");
}

#[test]
fn bad_vm_input_is_a_usage_error() {
    usage_error(&["--kernel", "/nonexistent/vmlinuz"], "no such kernel file");
    usage_error(
        &["--kernel", "/proc/self/exe", "--only", "no-such-hazard"],
        "no probe for hazard \"no-such-hazard\"",
    );
    usage_error(
        &["--kernel", "/proc/self/exe", "--accel", "hvf"],
        "invalid value",
    );
    usage_error(&["--only", "flock-survival"], "--kernel");
    usage_error(&["--kernel", "/proc/self/exe", "--timeout", "0"], "timeout");
}

/// Each bad kernel file is one line that names it, exit 2, before any tool
/// is looked for (PATH holds none: no busybox, no QEMU) and with nothing
/// built or left behind: no cache, no results folder, no scratch.
#[test]
fn a_bad_kernel_file_is_named_before_any_tool_is_needed() {
    let root = scratch("vm-bad-kernel");
    let dir = root.dir();
    let text = dir.join("notes.txt");
    std::fs::write(&text, "hello\n").unwrap();
    let empty = dir.join("vmlinuz-0");
    std::fs::write(&empty, "").unwrap();
    let garbage = dir.join("linux-image-x.deb");
    std::fs::write(&garbage, vec![0x5a; 4096]).unwrap();
    // An ar archive whose data member claims more than the file holds.
    let cut = dir.join("linux-image-cut.deb");
    let mut ar = b"!<arch>\n".to_vec();
    ar.extend_from_slice(
        format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            "data.tar.xz", 0, 0, 0, 100644, 70_000_000
        )
        .as_bytes(),
    );
    ar.extend_from_slice(&[0; 512]);
    std::fs::write(&cut, ar).unwrap();
    let cases = [
        (&text, "no Linux boot header"),
        (&empty, "empty file"),
        (&garbage, "not a .deb"),
        (&cut, "cut short"),
        // An ELF executable, as a vmlinux would be.
        (&PathBuf::from(env!("CARGO_BIN_EXE_fdwindow")), "ELF file"),
    ];
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let no_tools = dir.join("empty-path");
    std::fs::create_dir_all(&no_tools).unwrap();
    for (file, needle) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_fdwindow"))
            .arg("vm")
            .arg("--kernel")
            .arg(file)
            .arg("--results")
            .arg(dir.join("results"))
            .env("PATH", &no_tools)
            .env("TMPDIR", &tmp)
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {stderr}", file.display());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains(&format!("{}: ", file.display())) && stderr.contains(needle),
            "{}: {stderr}",
            file.display()
        );
        assert!(!stderr.contains("busybox"), "{stderr}");
        assert!(!dir.join("cache").exists(), "{}", file.display());
        assert!(!dir.join("results").exists(), "{}", file.display());
        common::assert_no_scratch_left(&tmp);
    }
}
