//! Provenance of the results folder: concurrent runs lose nothing, bad input
//! gets one line and exit status 2, a closed or full stdout never panics,
//! SIGHUP and SIGTERM stop a run like SIGINT, and no run's scratch folder
//! outlives it, not even one killed with SIGKILL.

mod common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{assert_no_scratch_left, fdwindow, scratch, stderr};
use fdwindow::report::ResultsFile;

/// A quick run of `hazard` into `dir`, scratch under `tmp`.
fn quick(hazard: &str, dir: &Path, tmp: &Path) -> Command {
    let mut cmd = fdwindow();
    cmd.args([
        "run",
        "--trials",
        "2",
        "--race-ms",
        "5",
        "--only",
        hazard,
        "--results",
    ])
    .arg(dir)
    .env("TMPDIR", tmp)
    .stdin(Stdio::null());
    cmd
}

fn the_results(dir: &Path) -> (std::path::PathBuf, ResultsFile) {
    let files = fdwindow::evidence::results::load_dir(dir).unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    let f = files.into_iter().next().unwrap();
    (dir.join(format!("{}.json", f.platform.id)), f)
}

fn one_line_error(out: &Output, code: i32, needle: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// The marker the test writes into every report before a pair of runs: a
/// report still carrying it after the pair was lost.
const MARK: &str = "2000-01-01T00:00:00Z";

#[test]
fn concurrent_runs_of_different_probes_both_land() {
    let s = scratch("prov-concurrent");
    let dir = s.dir().join("results");
    let tmp = s.dir().join("tmp");
    fs::create_dir(&tmp).unwrap();
    for pair in 0..5 {
        if pair > 0 {
            // Mark the reports the last pair wrote.
            let (path, mut f) = the_results(&dir);
            for r in f.probes.values_mut() {
                r.started_at = MARK.into();
            }
            fs::write(&path, serde_json::to_string_pretty(&f).unwrap()).unwrap();
        }
        let a = quick("flock-survival", &dir, &tmp)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let b = quick("bind-matrix", &dir, &tmp)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        assert!(a.status.success(), "pair {pair}: {}", stderr(&a));
        assert!(b.status.success(), "pair {pair}: {}", stderr(&b));
        let (_, f) = the_results(&dir);
        for hazard in ["flock-survival", "bind-matrix"] {
            let r = f
                .probes
                .get(hazard)
                .unwrap_or_else(|| panic!("pair {pair}: {hazard} lost"));
            assert_ne!(
                r.started_at, MARK,
                "pair {pair}: {hazard}'s new report was lost"
            );
        }
    }
    let out = fdwindow()
        .args(["matrix", "--check", "--results"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_no_scratch_left(&tmp);
}

#[test]
fn concurrent_runs_of_one_probe_keep_one_report() {
    let s = scratch("prov-same");
    let dir = s.dir().join("results");
    let tmp = s.dir().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let runs: Vec<_> = (0..2)
        .map(|_| {
            quick("posix-lock-drop", &dir, &tmp)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for r in runs {
        let out = r.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let (_, f) = the_results(&dir);
    assert_eq!(f.probes.len(), 1);
    assert_eq!(f.probes["posix-lock-drop"].platform.id, f.platform.id);
}

#[test]
fn bad_input_gets_one_line_and_exit_2() {
    let s = scratch("prov-bad");
    let dir = s.dir().join("results");
    let tmp = s.dir().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let out = fdwindow()
        .args(["run", "--probe-exe", "/nonexistent", "--results"])
        .arg(&dir)
        .output()
        .unwrap();
    one_line_error(&out, 2, "/nonexistent");
    assert!(!dir.exists(), "a refused run touched the results folder");

    let out = fdwindow()
        .args(["stress", "--duration", "0", "--", "/bin/true"])
        .output()
        .unwrap();
    one_line_error(&out, 2, "--duration");
    let out = fdwindow()
        .args([
            "stress",
            "--injector",
            "/etc/passwd",
            "--runs",
            "1",
            "--",
            "/bin/true",
        ])
        .output()
        .unwrap();
    let not_a_library = if cfg!(target_os = "macos") {
        "is not a Mach-O dylib"
    } else {
        "is not an ELF shared library"
    };
    one_line_error(&out, 2, not_a_library);

    // A hidden file in the folder is no results file: run and summary skip it.
    let out = quick("posix-lock-drop", &dir, &tmp).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    fs::write(dir.join(".hidden.json"), "{").unwrap();
    let out = quick("posix-lock-drop", &dir, &tmp).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = fdwindow()
        .args(["summary", "--results"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fs::read_to_string(dir.join(".hidden.json")).unwrap(), "{");

    // A full stdout: one line, non-zero, no panic. A closed one: quiet.
    let full = fs::OpenOptions::new().write(true).open("/dev/full");
    if let Ok(full) = full {
        let out = fdwindow()
            .args(["summary", "--results"])
            .arg(&dir)
            .stdout(full)
            .output()
            .unwrap();
        one_line_error(&out, 1, "write to stdout");
    }
    let out = fdwindow()
        .args(["summary", "--results"])
        .arg(&dir)
        .stdout(common::closed_pipe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141), "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

/// Starts a long run and waits (on its stderr, not a clock) until its probe
/// runs: spawn-window's sweep at a million samples per point, which no
/// verdict stops early (a probe of decided cells stops at 7 trials).
fn long_run(dir: &Path, tmp: &Path) -> std::process::Child {
    let mut child = fdwindow()
        .args([
            "run",
            "--trials",
            "1000000",
            "--only",
            "spawn-window",
            "--results",
        ])
        .arg(dir)
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("probing spawn-window"), "{first}");
    // Keep draining, so the run never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    child
}

#[test]
fn sighup_and_sigterm_stop_a_run_like_sigint() {
    for sig in [libc::SIGHUP, libc::SIGTERM] {
        let s = scratch("prov-signal");
        let dir = s.dir().join("results");
        let tmp = s.dir().join("tmp");
        fs::create_dir(&tmp).unwrap();
        let mut child = long_run(&dir, &tmp);
        // The child this test started and has not reaped.
        let pid = rustix::process::Pid::from_raw(child.id() as i32).expect("a child's pid");
        let signal = rustix::process::Signal::from_named_raw(sig).expect("a named signal");
        rustix::process::kill_process(pid, signal).unwrap();
        let status = child.wait().unwrap();
        // 128 + the signal, the shells' convention.
        assert_eq!(status.code(), Some(128 + sig), "signal {sig}");
        assert!(
            !dir.join("MATRIX.md").exists(),
            "signal {sig}: results written"
        );
        assert_eq!(
            fs::read_dir(&tmp).unwrap().count(),
            0,
            "signal {sig}: scratch left behind"
        );
    }
}

/// The processes whose environment names `needle` (Linux's /proc).
#[cfg(target_os = "linux")]
fn pids_with_env(needle: &str) -> Vec<i32> {
    fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .any(|v| String::from_utf8_lossy(v).contains(needle))
            })
        })
        .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn the_next_run_sweeps_a_killed_runs_scratch() {
    let s = scratch("prov-kill9");
    let dir = s.dir().join("results");
    let tmp = s.dir().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let mut child = long_run(&dir, &tmp);
    let pid = child.id();
    let prefix = format!("fdwindow-run-{pid}-");
    let left = || {
        fs::read_dir(&tmp)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .count()
    };
    assert_eq!(left(), 1, "the run's scratch folder is in place");
    // The child this test started and has not reaped.
    let child_pid = rustix::process::Pid::from_raw(pid as i32).expect("a child's pid");
    rustix::process::kill_process(child_pid, rustix::process::Signal::KILL).unwrap();
    child.wait().unwrap();
    // The probe ran in its own process group and outlives the runner: end
    // it and its group (it names the dead run's scratch folder).
    let scratch_var = tmp.join(&prefix);
    for probe in pids_with_env(&scratch_var.to_string_lossy()) {
        // The orphaned probe's group, which this test started; it may be gone.
        if let Some(group) = rustix::process::Pid::from_raw(probe) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
    assert_eq!(left(), 1, "SIGKILL leaves the folder behind");
    let out = quick("posix-lock-drop", &dir, &tmp).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(left(), 0, "the next run left the dead run's folder");
    assert_no_scratch_left(&tmp);
}

/// Copies the committed results folder (its files and `audits/`, not this
/// machine's `local/`) and README into `to`.
fn committed_copy(to: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let results = to.join("results");
    for sub in ["", "audits"] {
        fs::create_dir_all(results.join(sub)).unwrap();
        for e in fs::read_dir(root.join("results").join(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() && !p.file_name().unwrap().to_string_lossy().starts_with('.') {
                fs::copy(&p, results.join(sub).join(p.file_name().unwrap())).unwrap();
            }
        }
    }
    let readme = to.join("README.md");
    fs::copy(root.join("README.md"), &readme).unwrap();
    (results, readme)
}

fn check(results: &Path, readme: &Path) -> Output {
    fdwindow()
        .args(["matrix", "--check", "--results"])
        .arg(results)
        .arg("--readme")
        .arg(readme)
        .output()
        .unwrap()
}

#[test]
fn readme_sections_are_current_and_an_edited_figure_fails_the_check() {
    let s = scratch("prov-readme");
    let (results, readme) = committed_copy(s.dir());
    let out = check(&results, &readme);
    assert!(
        out.status.success(),
        "README.md's generated sections are stale: run `make matrix`: {}",
        stderr(&out)
    );
    let text = fs::read_to_string(&readme).unwrap();
    // Change the first digit inside the first section that has one.
    let begin = text.find("<!-- fdwindow:begin ").unwrap();
    let digit = begin + text[begin..].find(|c: char| c.is_ascii_digit()).unwrap();
    assert!(
        text[begin..digit].find("<!-- fdwindow:end ").is_none(),
        "the first section holds no figure"
    );
    let mut edited = text.clone().into_bytes();
    edited[digit] = if edited[digit] == b'9' {
        b'1'
    } else {
        edited[digit] + 1
    };
    fs::write(&readme, &edited).unwrap();
    let out = check(&results, &readme);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("README.md is stale"),
        "{}",
        stderr(&out)
    );
    // Rewriting restores it; prose outside the sections is left alone.
    let prose = text.replacen("# fdwindow", "# fdwindow (edited)", 1);
    fs::write(&readme, &prose).unwrap();
    assert!(check(&results, &readme).status.success());
    fs::write(&readme, &edited).unwrap();
    let out = fdwindow()
        .args(["matrix", "--results"])
        .arg(&results)
        .arg("--readme")
        .arg(&readme)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fs::read_to_string(&readme).unwrap(), text);
}

/// `advise two-step-cloexec` shows a cost only where its interval excludes
/// zero, and says "no measurable difference" where it spans zero.
#[test]
fn advice_shows_costs_only_where_the_interval_excludes_zero() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let costs = fdwindow::evidence::costs::load_dir(&dir).unwrap();
    let files = fdwindow::evidence::results::load_dir(&dir).unwrap();
    let Some(advice) = fdwindow::views::advise::advise(&files, &costs, "two-step-cloexec", "linux")
    else {
        panic!("no advice for two-step-cloexec");
    };
    let mut seen = 0;
    for arm in advice
        .valid
        .iter()
        .chain(&advice.invalid)
        .chain(&advice.undecided)
    {
        let Some(cost) = costs
            .iter()
            .filter(|c| c.platform.os == "linux")
            .find_map(|c| c.cost("two-step-cloexec", &arm.arm))
        else {
            continue;
        };
        seen += 1;
        let text = arm.cost.as_deref().unwrap();
        let d = cost.difference;
        if d.low_ns <= 0.0 && d.high_ns >= 0.0 {
            assert!(
                text.starts_with("no measurable difference"),
                "{}: {text}",
                arm.arm
            );
        } else {
            assert!(text.starts_with(['+', '−']), "{}: {text}", arm.arm);
        }
    }
    assert!(seen > 0, "no two-step-cloexec fix has a measured cost");
}

#[cfg(target_os = "linux")]
#[test]
fn stress_into_a_closed_pipe_exits_quietly() {
    let out = fdwindow()
        .args(["stress", "--runs", "1", "--", "/bin/true"])
        .stdout(common::closed_pipe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}
