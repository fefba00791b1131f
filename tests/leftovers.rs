//! Nothing outlives a killed fdwindow for long: SIGKILL of `fdwindow run`
//! takes its probe and the probe's children along at once, and what a killed
//! `fdwindow stress` or `fdwindow audit` leaves in the temp folder (its
//! private folder: the injector and the per-run reports) is removed by the
//! next start of either, which never touches a live run's.
//!
//! Every wait is a bounded poll with a generous deadline (these tests run
//! under `stress-ng --cpu 2` too), and every process a test starts, or that
//! a killed fdwindow left behind, is killed and waited for by the test's
//! [`Leftovers`] guard, panics included.

// /proc and LD_PRELOAD: the process scans and the preloaded `sh` are Linux's.
#![cfg(target_os = "linux")]

mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{fdwindow, stderr};

/// The variable that marks every process a test's fdwindow starts (each
/// inherits it), so the test finds them after their parent is gone.
const MARK_VAR: &str = "FDWINDOW_LEFTOVERS_TEST";

/// How long any one wait here may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(120);

/// How long the probe of a killed runner may outlive it: the probe asked for
/// here would run for hours on its own.
const PROBE_DEADLINE: Duration = Duration::from_secs(30);

/// Polls `f` with backoff until it gives `Some`, or `limit` passes.
fn poll<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        // Bounded polling with backoff: /proc has no event for another
        // process's birth or death.
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// A process as /proc/PID/stat shows it: its state and its group.
struct Stat {
    state: char,
    pgid: i32,
}

fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields follow
    // its last `)`.
    let mut fields = text[text.rfind(')')? + 2..].split(' ');
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgid = fields.next()?.parse().ok()?;
    Some(Stat { state, pgid })
}

/// Every pid in /proc.
fn pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// Whether the process still runs: a zombie has ended (it waits only for
/// its new parent, init or a subreaper, to reap it).
fn alive(pid: i32) -> bool {
    stat(pid).is_some_and(|s| s.state != 'Z' && s.state != 'X')
}

/// The live members of process group `pgid`, with their names.
fn group(pgid: i32) -> Vec<(i32, String)> {
    pids()
        .into_iter()
        .filter(|&p| stat(p).is_some_and(|s| s.pgid == pgid) && alive(p))
        .map(|p| (p, comm(p)))
        .collect()
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The children of `pid`, from every thread's list.
fn children(pid: u32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|l| {
            l.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A process's environment, `NAME=value` entries.
fn environ(pid: i32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .map(|e| String::from_utf8_lossy(e).into_owned())
        .collect()
}

/// The live processes whose environment holds `MARK_VAR=mark`.
fn marked(mark: &str) -> Vec<i32> {
    let entry = format!("{MARK_VAR}={mark}");
    pids()
        .into_iter()
        .filter(|&p| alive(p) && environ(p).contains(&entry))
        .collect()
}

fn kill(pid: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

/// What a test started or a killed fdwindow left running: killed and
/// waited for on drop, so the test leaks nothing, even when it fails.
struct Leftovers {
    mark: String,
    children: Vec<Child>,
    /// Process groups to empty (a probe's).
    groups: Vec<i32>,
}

impl Leftovers {
    fn new(test: &str) -> Leftovers {
        Leftovers {
            mark: format!("{test}-{}", std::process::id()),
            children: Vec::new(),
            groups: Vec::new(),
        }
    }

    /// `fdwindow ARGS` with TMPDIR `tmp`, marked, quiet.
    fn command(&self, tmp: &Path, args: &[&str]) -> Command {
        let mut cmd = fdwindow();
        cmd.env("TMPDIR", tmp)
            .env(MARK_VAR, &self.mark)
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    /// Starts `cmd` (output discarded); its pid.
    fn spawn(&mut self, mut cmd: Command) -> u32 {
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        self.children.push(child);
        pid
    }

    /// SIGKILL to the child `pid` this guard started, and its reaping.
    fn kill_child(&mut self, pid: u32) {
        let at = self.children.iter().position(|c| c.id() == pid).unwrap();
        let mut child = self.children.remove(at);
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Waits until no marked process runs, killing none: a killed
    /// fdwindow's command died with it.
    fn wait_marked_gone(&self) {
        let gone = poll(DEADLINE, || marked(&self.mark).is_empty().then_some(()));
        assert!(
            gone.is_some(),
            "the command under test outlived its killed parent: {:?}",
            marked(&self.mark)
        );
    }

    /// Kills every marked process (what a killed run left running: the
    /// command it tested) and waits until none is left.
    fn kill_marked(&self) {
        let gone = poll(DEADLINE, || {
            let left = marked(&self.mark);
            left.iter().copied().for_each(kill);
            left.is_empty().then_some(())
        });
        assert!(gone.is_some(), "marked processes survived SIGKILL");
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        for mut child in self.children.drain(..) {
            let _ = child.kill();
            let _ = child.wait();
        }
        for &g in &self.groups {
            // Only a group that still has members is ours to signal.
            if !group(g).is_empty()
                && let Some(g) = rustix::process::Pid::from_raw(g)
            {
                let _ = rustix::process::kill_process_group(g, rustix::process::Signal::KILL);
            }
        }
        let _ = poll(DEADLINE, || {
            let left = marked(&self.mark);
            left.iter().copied().for_each(kill);
            let groups_left = self.groups.iter().any(|&g| !group(g).is_empty());
            (left.is_empty() && !groups_left).then_some(())
        });
    }
}

/// The names in `dir`.
fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// The names in `dir` of process `pid`'s private folders,
/// `fdwindow-<label>-<pid>-<n>`.
fn folders_of(dir: &Path, pid: u32) -> Vec<String> {
    entries(dir)
        .into_iter()
        .filter(|n| {
            n.strip_prefix("fdwindow-")
                .and_then(|r| r.split_once('-'))
                .is_some_and(|(_, r)| r.starts_with(&format!("{pid}-")))
        })
        .collect()
}

/// Waits until a process marked `mark` blocks under pressure: the `sleep`
/// that only a pressured run of [`BLOCKS_PRESSURED`] or [`BLOCKING_SUITE`]
/// starts.
fn wait_for_pressured_run(mark: &str) {
    let found = poll(DEADLINE, || {
        marked(mark).into_iter().find(|&p| comm(p) == "sleep")
    });
    assert!(found.is_some(), "no pressured run blocked");
}

/// Runs `cmd` to its end.
fn output(mut cmd: Command) -> Output {
    cmd.output().unwrap()
}

/// SIGKILL of `fdwindow run` kills the probe it runs (and every process in
/// the probe's group) within moments, where before the probe ran on to its
/// own end: seconds for a default spawn-window run, hours for this one.
#[test]
fn a_killed_run_takes_its_probe_and_the_probes_children_along() {
    let results = common::scratch("leftovers-results");
    let tmp = common::scratch("leftovers-run-tmp");
    let mut guard = Leftovers::new("run");
    let mut cmd = guard.command(tmp.dir(), &["run", "--only", "spawn-window"]);
    cmd.arg("--results")
        .arg(results.dir())
        // Samples enough for hours, at the sweep's first (4 MiB) point.
        .args(["--trials", "1000000", "--timeout", "3600"]);
    let runner = guard.spawn(cmd);
    // The probe, once it runs (`fdwindow probe spawn-window`, exec'd).
    let probe = poll(DEADLINE, || {
        children(runner).into_iter().find(|&p| {
            let wanted: &[u8] = b"\0probe\0spawn-window\0";
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| c.windows(wanted.len()).any(|w| w == wanted))
        })
    })
    .expect("the runner never started its probe");
    // The runner put it in a group of its own: the probe leads it, and its
    // children are in it.
    assert_eq!(stat(probe).map(|s| s.pgid), Some(probe));
    guard.groups.push(probe);
    let killed = Instant::now();
    guard.kill_child(runner);
    let gone = poll(PROBE_DEADLINE, || group(probe).is_empty().then_some(()));
    assert!(
        gone.is_some(),
        "{:?} after the runner's SIGKILL the probe's group still runs: {:?}",
        killed.elapsed(),
        group(probe)
    );
}

/// A libtest stand-in whose one test blocks while it is pressured, so the
/// test can kill an audit in the middle of a pressured run. (Pressured: the
/// injector is mapped. Its variables are no sign: the injector takes them
/// out of the environment as it starts.)
const BLOCKING_SUITE: &str = r#"case "$*" in *--ignored*--list*) ;; *--list*) echo "a: test";;
    *) if grep -q libfdwindow_inject "/proc/$$/maps"; then exec sleep 3600; fi
       echo "test a ... ok";; esac"#;

/// A libtest stand-in whose one test fails while the temp folder holds a
/// folder of process DEAD.
const CHECKING_SUITE: &str = r#"case "$*" in *--ignored*--list*) ;; *--list*) echo "a: test";;
    *) if ls -A "$TMPDIR" | grep -q '^fdwindow-[a-z]*-DEAD-'; then echo "test a ... FAILED"; exit 101; fi
       echo "test a ... ok";; esac"#;

/// A command that ends at once alone and blocks while it is pressured (as
/// [`BLOCKING_SUITE`]'s test).
const BLOCKS_PRESSURED: &str =
    r#"if grep -q libfdwindow_inject "/proc/$$/maps"; then exec sleep 3600; fi; exit 0"#;

/// A command that fails while the temp folder holds a folder of process DEAD.
const FAILS_ON_LEFTOVERS: &str = r#"! ls -A "$TMPDIR" | grep -q '^fdwindow-[a-z]*-DEAD-'"#;

/// The JSON summary a stress run printed.
fn summary(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(out)))
}

/// (failures, runs) of each arm of a stress summary.
fn arms(summary: &serde_json::Value) -> Vec<(u64, u64)> {
    summary["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["failures"].as_u64().unwrap(), a["runs"].as_u64().unwrap()))
        .collect()
}

/// A killed stress's private folder (the injector, the reports) stays only
/// until the next stress starts; a live one's is never taken.
#[test]
fn a_killed_stress_leaves_nothing_the_next_start_keeps() {
    let tmp = common::scratch("leftovers-stress-tmp");
    let mut guard = Leftovers::new("stress");
    // Run A blocks in its first pressured run.
    let mut a = guard.command(
        tmp.dir(),
        &["stress", "--runs", "1000", "--timeout", "3600", "--"],
    );
    a.args(["/bin/sh", "-c", BLOCKS_PRESSURED]);
    a_killed_run_is_swept_by_the_next(tmp.dir(), &mut guard, a, |guard, dead| {
        let mut cmd = guard.command(tmp.dir(), &["stress", "--runs", "1", "--"]);
        cmd.args(["/bin/sh", "-c", &FAILS_ON_LEFTOVERS.replace("DEAD", dead)]);
        let out = output(cmd);
        // Both arms ran and passed: its command saw no folder of `dead`
        // (the verdict, and so the exit status, is not the point).
        let arms = arms(&summary(&out));
        if arms == [(0, 1), (0, 1)] {
            Ok(())
        } else {
            Err(format!("arms {arms:?}: {}", stderr(&out)))
        }
    });
}

/// `fdwindow audit` of `suite`, a libtest stand-in, in a short run.
fn short_audit(guard: &Leftovers, tmp: &Path, suite: &str) -> Command {
    let mut cmd = guard.command(
        tmp,
        &["audit", "--runs", "1", "--no-diagnose", "--format", "json"],
    );
    cmd.args(["--", "/bin/sh", "-c", suite, "sh"]);
    cmd
}

/// The same for the audit: a killed audit's folder goes at the next start,
/// a live one's stays.
#[test]
fn a_killed_audit_leaves_nothing_the_next_start_keeps() {
    let tmp = common::scratch("leftovers-audit-tmp");
    let mut guard = Leftovers::new("audit");
    let mut a = guard.command(
        tmp.dir(),
        &[
            "audit",
            "--runs",
            "1000",
            "--budget",
            "600s",
            "--timeout",
            "3600",
            "--format",
            "json",
            "--",
        ],
    );
    a.args(["/bin/sh", "-c", BLOCKING_SUITE, "sh"]);
    a_killed_run_is_swept_by_the_next(tmp.dir(), &mut guard, a, |guard, dead| {
        let out = output(short_audit(
            guard,
            tmp.dir(),
            &CHECKING_SUITE.replace("DEAD", dead),
        ));
        match out.status.code() {
            Some(0) => Ok(()),
            code => Err(format!("exit {code:?}: {}", stderr(&out))),
        }
    });
}

/// What stress and audit share: run A (`a`, in TMPDIR `tmp`) blocks under
/// pressure with the built-in injector in its own folder; a run B started
/// while A lives leaves A's folder alone and nothing of its own; SIGKILL of
/// A (no clean-up) kills its command too but leaves the folder; run C, the
/// next start, removes it before its command runs and leaves nothing.
/// `later(guard, dead)` runs B or C to its end: `Ok` when its command saw
/// no folder of process `dead` ("0" for B, which no folder names), else
/// what it saw instead (its result and its stderr).
fn a_killed_run_is_swept_by_the_next(
    tmp: &Path,
    guard: &mut Leftovers,
    a: Command,
    later: impl Fn(&Leftovers, &str) -> Result<(), String>,
) {
    let a = guard.spawn(a);
    wait_for_pressured_run(&guard.mark);
    let of_a = folders_of(tmp, a);
    let Some(preload) = of_a.iter().find(|n| n.starts_with("fdwindow-preload-")) else {
        panic!("run A has no folder: {:?}", entries(tmp));
    };
    let folder = tmp.join(preload);
    assert!(
        folder.join("libfdwindow_inject.so").exists(),
        "the built-in injector is not in the run's folder: {:?}",
        entries(&folder)
    );

    // Run B, while A lives: A's folder stays, B's own goes with it.
    if let Err(saw) = later(guard, "0") {
        panic!("run B: {saw}");
    }
    assert_eq!(folders_of(tmp, a), of_a, "a live run's folder was taken");
    assert_eq!(entries(tmp), of_a, "run B left files behind");

    // SIGKILL: A runs no cleanup; its command, under pressure, dies with it.
    guard.kill_child(a);
    guard.wait_marked_gone();
    assert_eq!(folders_of(tmp, a), of_a);

    // Run C finds A's folder gone by the time its command runs, and leaves
    // nothing itself.
    if let Err(saw) = later(guard, &a.to_string()) {
        panic!("run C saw A's folder: {saw}");
    }
    assert_eq!(entries(tmp), Vec::<String>::new(), "left in TMPDIR");
}

/// Whatever moment a `fdwindow run` is killed at, what its probe wrote (the
/// two-step-cloexec probe writes its parked-call library and re-executes
/// itself with it preloaded) lies inside the run's own swept folder, so the
/// next run's start removes it. The delays only spread the kills over the
/// probe's start; the assertion holds at any moment.
#[test]
fn a_run_killed_at_any_moment_leaves_nothing_the_next_run_keeps() {
    let results = common::scratch("leftovers-kill-results");
    let tmp = common::scratch("leftovers-kill-tmp");
    let mut guard = Leftovers::new("run-kills");
    for delay_ms in (0..40).step_by(3) {
        let mut cmd = guard.command(tmp.dir(), &["run", "--only", "two-step-cloexec"]);
        cmd.arg("--results").arg(results.dir());
        let runner = guard.spawn(cmd);
        std::thread::sleep(Duration::from_millis(delay_ms));
        guard.kill_child(runner);
        guard.kill_marked();
    }
    let mut next = guard.command(tmp.dir(), &["run", "--only", "posix-lock-drop"]);
    next.arg("--results").arg(results.dir());
    let out = output(next);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(entries(tmp.dir()), Vec::<String>::new());
}
