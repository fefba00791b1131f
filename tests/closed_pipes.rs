//! Every command writes through one writer (`fdwindow::base::out`): a full
//! stdout (`>/dev/full`) is one `error:` line and exit 1; a closed pipe
//! (`| head -c0` after `head` exits, on stdout or stderr) is a quiet exit
//! with 141, 128 + SIGPIPE; never a panic (exit 101). A command at work
//! (`run`'s probes, `stress`'s and `audit`'s test processes) winds down as
//! on Ctrl-C: no child and nothing in its TMPDIR is left.
//!
//! Before the writer, each of these failed: clap printed `--help` and
//! `--version` into `/dev/full` and exited 0; `vm` printed with `println!`
//! and `stress`, `audit` and every `error:` line with `eprintln!`, which
//! panic when the write fails.
//!
//! Some tests are Linux's: `/dev/full` is, the `/proc` scan for leaked
//! processes is, and `stress` and `audit` are tested there as in
//! tests/stress.rs and tests/audit.rs; `vm` boots x86_64 guests only.

mod common;

use std::path::Path;
#[cfg(target_os = "linux")]
use std::process::Command;
use std::process::{Output, Stdio};

use common::{closed_pipe, fdwindow, stderr};

/// A file open on `/dev/full`: every write fails with ENOSPC.
#[cfg(target_os = "linux")]
fn full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap()
}

/// Asserts exit 1 with stderr one line that names the failed write.
#[cfg(target_os = "linux")]
fn assert_one_line_write_error(what: &str, out: &Output) {
    let text = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{what}: {text}");
    assert_eq!(text.lines().count(), 1, "{what}: not one line: {text}");
    assert!(
        text.starts_with("error: write to stdout: "),
        "{what}: {text}"
    );
}

/// Asserts exit 141 and nothing on stderr (no panic, no message).
fn assert_quiet_141(what: &str, out: &Output) {
    assert_eq!(out.status.code(), Some(141), "{what}: {}", stderr(out));
    assert!(out.stderr.is_empty(), "{what}: not quiet: {}", stderr(out));
}

/// A command line for each command that reads the committed results folder
/// and prints: `summary`, `verdict` (of the first arm of a probe), `advise`.
fn reading_commands() -> Vec<Vec<String>> {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let files = fdwindow::evidence::results::load_dir(&results).unwrap();
    let file = files.first().expect("a committed results file");
    let (hazard, arm) = file
        .probes
        .iter()
        .find_map(|(h, r)| Some((h, &r.arms.first()?.arm)))
        .expect("a probe with an arm");
    let dir = results.display().to_string();
    let platform = file.platform.id.clone();
    [
        vec!["summary", "--platform", &platform, "--results", &dir],
        vec![
            "verdict",
            hazard,
            arm,
            "--platform",
            &platform,
            "--results",
            &dir,
        ],
        vec!["advise", hazard, "--os", "linux", "--results", &dir],
    ]
    .into_iter()
    .map(|args| args.into_iter().map(String::from).collect())
    .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn help_and_version_into_a_full_stdout_are_one_line_and_exit_1() {
    for args in [&["--help"][..], &["--version"], &["stress", "--help"]] {
        let out = fdwindow().args(args).stdout(full()).output().unwrap();
        assert_one_line_write_error(&format!("{args:?}"), &out);
    }
    // A probe's too: the harness parses through the writer.
    let out = common::probe("posix-lock-drop")
        .arg("--help")
        .stdout(full())
        .output()
        .unwrap();
    assert_one_line_write_error("probe --help", &out);
}

#[test]
fn help_and_version_into_a_closed_pipe_exit_141_quietly() {
    for args in [&["--help"][..], &["--version"], &["stress", "--help"]] {
        let out = fdwindow()
            .args(args)
            .stdout(closed_pipe())
            .output()
            .unwrap();
        assert_quiet_141(&format!("{args:?}"), &out);
    }
    // A usage error's message goes to stderr: closed, it is 141 too.
    let out = fdwindow()
        .arg("no-such-command")
        .stdout(Stdio::piped())
        .stderr(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141));
}

#[cfg(target_os = "linux")]
#[test]
fn summary_verdict_and_advise_into_a_full_stdout_are_one_line_and_exit_1() {
    for args in reading_commands() {
        let out = fdwindow().args(&args).stdout(full()).output().unwrap();
        assert_one_line_write_error(&args[0], &out);
    }
}

#[test]
fn summary_verdict_and_advise_into_a_closed_pipe_exit_141_quietly() {
    for args in reading_commands() {
        // The sham: to a pipe still read, each prints and exits 0.
        let read = fdwindow().args(&args).output().unwrap();
        assert!(read.status.success(), "{}: {}", args[0], stderr(&read));
        assert!(!read.stdout.is_empty(), "{}: printed nothing", args[0]);
        let out = fdwindow()
            .args(&args)
            .stdout(closed_pipe())
            .output()
            .unwrap();
        assert_quiet_141(&args[0], &out);
    }
}

/// An error line to a closed stderr (`2>&1 | head -c0`): 141, no panic.
#[test]
fn an_error_into_a_closed_stderr_exits_141() {
    let out = fdwindow()
        .args([
            "verdict",
            "no-such-hazard",
            "arm",
            "--results",
            "/nonexistent",
        ])
        .stdout(Stdio::piped())
        .stderr(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141));
    assert!(out.stdout.is_empty());
}

/// A bin folder for `fdwindow vm`: a copy of this fdwindow, which packs
/// itself into the initramfs.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn small_vm_bin(root: &Path) -> std::path::PathBuf {
    let bin = root.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let exe = bin.join("fdwindow");
    std::fs::copy(env!("CARGO_BIN_EXE_fdwindow"), &exe).unwrap();
    exe
}

/// `fdwindow vm` of a kernel whose boot header is whole but which no QEMU
/// boots (`FDWINDOW_QEMU` is `/bin/false`): it prints that kernel's `broken`
/// line on stdout without booting anything. Its TMPDIR, cache and results
/// are in `root`; `None` when this machine cannot build the initramfs
/// (no busybox): said, and the test skips.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn vm_of_an_unbootable_kernel(root: &Path, stdout: impl Into<Stdio>) -> Option<Output> {
    let exe = root.join("bin/fdwindow");
    let (tmp, results, kernel) = (root.join("tmp"), root.join("results"), root.join("bzImage"));
    for dir in [&tmp, &results] {
        std::fs::create_dir_all(dir).unwrap();
    }
    // The boot sector's 0xAA55, "HdrS", protocol 2.15; setup_sects 0 (four
    // sectors) and syssize 0: 2560 bytes make it whole.
    let mut image = vec![0u8; 4096];
    image[0x1FE..0x200].copy_from_slice(&0xAA55u16.to_le_bytes());
    image[0x202..0x206].copy_from_slice(b"HdrS");
    image[0x206..0x208].copy_from_slice(&0x020Fu16.to_le_bytes());
    std::fs::write(&kernel, image).unwrap();
    let out = Command::new(exe)
        .args(["vm", "--accel", "tcg", "--kernel"])
        .arg(&kernel)
        .arg("--results")
        .arg(&results)
        .env("TMPDIR", &tmp)
        .env("XDG_CACHE_HOME", root.join("cache"))
        .env("FDWINDOW_QEMU", "/bin/false")
        .stdout(stdout)
        .output()
        .unwrap();
    if out.status.code() == Some(2) && stderr(&out).contains("busybox") {
        eprintln!("skipped: {}", stderr(&out));
        return None;
    }
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    common::assert_no_scratch_left(&tmp);
    Some(out)
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn vm_into_a_full_stdout_is_one_error_line_and_exit_1() {
    let root = tempfile::tempdir().unwrap();
    small_vm_bin(root.path());
    // The sham: to a pipe, the kernel's line and exit 1 (a broken kernel).
    let Some(read) = vm_of_an_unbootable_kernel(root.path(), Stdio::piped()) else {
        return;
    };
    assert_eq!(read.status.code(), Some(1), "{}", stderr(&read));
    let line = String::from_utf8_lossy(&read.stdout);
    assert!(line.contains("bzImage: broken"), "{line}");
    let Some(out) = vm_of_an_unbootable_kernel(root.path(), full()) else {
        return;
    };
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{text}");
    assert!(errors[0].starts_with("error: write to stdout: "), "{text}");
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn vm_into_a_closed_pipe_exits_141() {
    let root = tempfile::tempdir().unwrap();
    small_vm_bin(root.path());
    let Some(out) = vm_of_an_unbootable_kernel(root.path(), closed_pipe()) else {
        return;
    };
    assert_eq!(out.status.code(), Some(141), "{}", stderr(&out));
    assert!(!stderr(&out).contains("error:"), "{}", stderr(&out));
}

/// A bad kernel path is a usage error on stderr; a closed stderr is 141.
#[test]
fn vm_usage_error_into_a_closed_stderr_exits_141() {
    let out = fdwindow()
        .args(["vm", "--kernel", "/nonexistent/vmlinuz"])
        .stderr(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141));
}

/// `stress` with a TMPDIR of its own: its injector's private file and the
/// per-run reports go there.
#[cfg(target_os = "linux")]
fn stress(tmp: &Path, runs: &str, command: &[&str]) -> Command {
    let mut cmd = fdwindow();
    cmd.args(["stress", "--runs", runs, "--"])
        .args(command)
        .env("TMPDIR", tmp)
        .stdin(Stdio::null());
    cmd
}

#[cfg(target_os = "linux")]
#[test]
fn stress_with_a_closed_stderr_stops_and_exits_141() {
    let tmp = tempfile::tempdir().unwrap();
    let out = stress(tmp.path(), "2", &["/bin/true"])
        .stdout(Stdio::piped())
        .stderr(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141));
    // Stopped as on Ctrl-C: the summary of what ran (nothing: the first
    // line failed), marked interrupted.
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["interrupted"], true, "{summary}");
    common::assert_no_scratch_left(tmp.path());

    // `2>&1 | head -2` after head exits: both streams the one closed pipe.
    let pipe = closed_pipe();
    let out = stress(tmp.path(), "2", &["/bin/true"])
        .stdout(pipe.try_clone().unwrap())
        .stderr(pipe)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141));
    common::assert_no_scratch_left(tmp.path());
}

/// Reads `child`'s stderr up to its first line, which starts with `prefix`,
/// then closes it (the reader goes, as `| head -1` does) and waits for the
/// child: its output.
#[cfg(target_os = "linux")]
fn close_stderr_after_first_line(mut child: std::process::Child, prefix: &str) -> Output {
    use std::io::BufRead;
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.starts_with(prefix), "{first}");
    drop(lines);
    child.wait_with_output().unwrap()
}

/// Closed mid-run: stderr is read up to its first line, then its reader
/// goes. The next progress line ends the runs; no run's process is left.
#[cfg(target_os = "linux")]
#[test]
fn stress_whose_stderr_closes_mid_run_winds_down_with_141() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = format!("fdwindow-closed-pipes-{}", std::process::id());
    // Each run a process that names the marker: a leaked one would show.
    // Runs enough to outlast reading one line, few enough that a stress
    // the closed stderr did not stop ends soon.
    let script = "sleep 0.01";
    let child = stress(tmp.path(), "1000", &["/bin/sh", "-c", script, &marker])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = close_stderr_after_first_line(child, "fdwindow stress:");
    assert_eq!(out.status.code(), Some(141));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["interrupted"], true, "{summary}");
    let runs = summary["arms"][0]["runs"].as_u64().unwrap();
    assert!(runs < 1000, "{summary}");
    assert_eq!(common::processes_mentioning(&marker), Vec::<u32>::new());
    common::assert_no_scratch_left(tmp.path());
}

/// A shell stand-in for a libtest binary with one passing test `a`, not
/// `#[ignore]`d; each run of it takes a moment.
#[cfg(target_os = "linux")]
const LIBTEST_STAND_IN: &str = r#"case "$*" in *--ignored*--list*) ;; *--list*) echo "a: test";; *) sleep 0.01; echo "test a ... ok";; esac"#;

/// The fixture suite (tests/fixtures/audit_suite.rs) under cargo, its
/// stderr closed from the start: the first line (`fdwindow: building: …`)
/// fails, the build is stopped, and the audit exits 141 with nothing left.
#[cfg(target_os = "linux")]
#[test]
fn audit_of_the_fixture_with_a_closed_stderr_exits_141() {
    let tmp = tempfile::tempdir().unwrap();
    let out = common::without_cargo_env(&mut fdwindow())
        .args(["audit", "--runs", "1", "--no-diagnose", "--format", "json"])
        .arg("--")
        .args(common::fixture_command(&["lock_released"]))
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141));
    common::assert_no_scratch_left(tmp.path());
}

/// Closed mid-audit: stderr is read up to its first line, then its reader
/// goes. The next line (`--show-output` copies each run's) stops the audit
/// as Ctrl-C would: its report of what ran (interrupted) on stdout, 141, no
/// test process and nothing in its TMPDIR left.
#[cfg(target_os = "linux")]
#[test]
fn audit_whose_stderr_closes_mid_screen_winds_down_with_141() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = format!("fdwindow-closed-pipes-audit-{}", std::process::id());
    let child = fdwindow()
        // Runs enough for the screen to outlast reading one line, few
        // enough that an audit the closed stderr did not stop ends soon.
        .args(["audit", "--runs", "500", "--budget", "600s"])
        .args(["--show-output", "--format", "json", "--"])
        .args(["/bin/sh", "-c", LIBTEST_STAND_IN, &marker])
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = close_stderr_after_first_line(child, "fdwindow audit:");
    assert_eq!(out.status.code(), Some(141));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["interrupted"], true, "{report}");
    assert_eq!(common::processes_mentioning(&marker), Vec::<u32>::new());
    common::assert_no_scratch_left(tmp.path());
}

/// `run` with a closed stderr: its first line (`fdwindow: probing …`)
/// fails, the probe it starts is killed, and nothing is written.
#[cfg(target_os = "linux")]
#[test]
fn run_with_a_closed_stderr_kills_its_probe_and_writes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let (tmp, results) = (root.path().join("tmp"), root.path().join("results"));
    for dir in [&tmp, &results] {
        std::fs::create_dir(dir).unwrap();
    }
    let out = fdwindow()
        .args([
            "run",
            "--trials",
            "1",
            "--only",
            "spawn-window",
            "--results",
        ])
        .arg(&results)
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141));
    common::assert_no_scratch_left(&tmp);
    common::assert_no_scratch_left(&results);
}

/// A probe binary prints its report last: into a closed pipe, 141; into a
/// full stdout, one line and 1.
#[cfg(target_os = "linux")]
#[test]
fn a_probe_into_a_closed_or_full_stdout() {
    let out = common::probe("posix-lock-drop")
        .args(["--trials", "1"])
        .stdout(closed_pipe())
        .output()
        .unwrap();
    assert_quiet_141("probe", &out);
    let out = common::probe("posix-lock-drop")
        .args(["--trials", "1"])
        .stdout(full())
        .output()
        .unwrap();
    assert_one_line_write_error("probe", &out);
}
