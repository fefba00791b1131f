//! The command line: bad input gets a clear error and exit status 2, files are
//! left untouched, and a run writes results, the matrix and nothing else.

mod common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

use common::{assert_no_scratch_left, fdwindow, scratch, stderr};

fn assert_usage_error(args: &[&str], needle: &str) {
    let out = fdwindow().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    assert!(
        !stderr(&out).contains("panicked"),
        "{args:?}: {}",
        stderr(&out)
    );
}

/// A quick run into `dir` that must succeed: the results file it wrote.
fn quick_results(dir: &std::path::Path) -> std::path::PathBuf {
    let out = quick_run(dir);
    assert!(out.status.success(), "{}", stderr(&out));
    results_file(dir)
}

/// The one results file in `dir`.
fn results_file(dir: &std::path::Path) -> std::path::PathBuf {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap()
}

/// The longest per-probe timeout: a run that measures spawn-window takes
/// seconds idle and minutes at a load of 30, so a test that wants its results
/// gives no probe timeout of its own (the test runner's is the bound).
const NO_PROBE_TIMEOUT: [&str; 2] = ["--timeout", "3600"];

/// A quick run of the in-process probe into `dir`.
fn quick_run(dir: &std::path::Path) -> std::process::Output {
    run_only(dir, "7", &["posix-lock-drop"])
}

/// `fdwindow run` of `probes` into `dir`, with `trials` and 5 ms races.
fn run_only(dir: &std::path::Path, trials: &str, probes: &[&str]) -> std::process::Output {
    let mut cmd = fdwindow();
    cmd.args(["run", "--trials", trials, "--race-ms", "5"]);
    for probe in probes {
        cmd.args(["--only", probe]);
    }
    cmd.args(NO_PROBE_TIMEOUT)
        .arg("--results")
        .arg(dir)
        .output()
        .unwrap()
}

#[test]
fn bad_numbers_and_names() {
    assert_usage_error(&["run", "--trials", "0"], "--trials");
    assert_usage_error(&["run", "--trials", "abc"], "--trials");
    assert_usage_error(&["run", "--only", "no-such-hazard"], "no probe for hazard");
    for (args, needle) in [
        (&["--trials", "0"][..], "--trials"),
        (&["--trials", "abc"][..], "--trials"),
        (&["--arm", "nope"][..], "no arm"),
    ] {
        let out = common::probe("flock-survival").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn run_then_ask_for_verdicts() {
    let s = scratch("cli-run");
    let dir = s.dir().join("results");
    let out = quick_run(&dir);
    assert!(out.status.success(), "{}", stderr(&out));
    // The closing note names the time of each probe this run ran, and only those.
    let text = String::from_utf8_lossy(&out.stdout);
    let note = text
        .lines()
        .find(|l| l.starts_with("time per probe: "))
        .unwrap_or_else(|| panic!("no per-probe times in:\n{text}"));
    assert!(
        note.starts_with("time per probe: posix-lock-drop ") && note.ends_with(" s"),
        "{note}"
    );
    assert!(!note.contains(','), "{note}");
    // A folder without this platform's file: the user is told it is new.
    assert!(
        text.lines().any(|l| l.starts_with("wrote ")
            && l.contains("a platform the folder had no file of (the matrix gains its column)")),
        "{text}"
    );
    let mut names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != fdwindow::evidence::results::LOCK_FILE)
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    assert_eq!(names[0], "MATRIX.md");
    let d = dir.to_str().unwrap();

    let out = fdwindow()
        .args(["verdict", "posix-lock-drop", "flock", "--results", d])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let line = String::from_utf8(out.stdout).unwrap();
    assert!(line.starts_with("in-process valid 0/7 ("), "{line}");
    assert!(line.contains("p = 2.9e-4 vs close-other-fd"), "{line}");
    assert_eq!(line.lines().count(), 1);

    assert_usage_error(
        &["verdict", "nope", "flock", "--results", d],
        "unknown hazard",
    );
    assert_usage_error(
        &["verdict", "posix-lock-drop", "nope", "--results", d],
        "unknown arm",
    );
    assert_usage_error(
        &[
            "verdict",
            "posix-lock-drop",
            "flock",
            "--window",
            "nope",
            "--results",
            d,
        ],
        "unknown window",
    );
    assert_usage_error(
        &[
            "verdict",
            "posix-lock-drop",
            "flock",
            "--platform",
            "vax-1",
            "--results",
            d,
        ],
        "no results for platform",
    );

    let out = fdwindow()
        .args(["matrix", "--check", "--results", d])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    // A second run replaces its probe's report, and says "updated".
    let out = quick_run(&dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l.starts_with("updated ")), "{text}");
}

/// A run whose only probe failed measured nothing: it says so, exits 1 and
/// leaves the folder as it was, never "wrote …".
#[cfg(unix)]
#[test]
fn a_run_that_measured_nothing_says_so_and_writes_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let s = scratch("cli-nothing");
    let dir = s.dir().join("results");
    assert!(quick_run(&dir).status.success());
    let before: Vec<(String, Vec<u8>)> = folder_contents(&dir);
    // A probe program whose every probe fails.
    let failing = s.dir().join("failing-probe");
    fs::write(&failing, "#!/bin/sh\necho broken >&2\nexit 3\n").unwrap();
    fs::set_permissions(&failing, fs::Permissions::from_mode(0o755)).unwrap();
    let out = fdwindow()
        .args(["run", "--only", "posix-lock-drop", "--probe-exe"])
        .arg(&failing)
        .arg("--results")
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("wrote "), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("no probe reported: ") && l.contains(" unchanged in ")),
        "{text}"
    );
    assert!(stderr(&out).contains("posix-lock-drop"), "{}", stderr(&out));
    assert_eq!(folder_contents(&dir), before);
}

/// Every file of `dir` but the lock, by name, with its bytes.
fn folder_contents(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != fdwindow::evidence::results::LOCK_FILE)
        .map(|e| {
            (
                e.file_name().into_string().unwrap(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn corrupt_and_future_results_are_refused_untouched_and_older_replaced_by_a_full_run() {
    let s = scratch("cli-bad");
    let dir = s.dir().join("results");
    let file = quick_results(&dir);
    let good = fs::read_to_string(&file).unwrap();
    let schema = format!("\"schema\": {}", fdwindow::report::SCHEMA_VERSION);
    let future = good.replacen(&schema, "\"schema\": 99", 1);
    let negative = good.replacen(&schema, "\"schema\": -1", 1);
    assert_ne!(future, good);
    let older = good.replacen(&schema, "\"schema\": 1", 1);
    let overflowed = good.replacen("\"hits\": 7", "\"hits\": 18446744073709551615", 1);
    assert_ne!(overflowed, good);
    for (bad, needle) in [
        (&good[..good.len() / 2], "not JSON"),
        (future.as_str(), "newer"),
        (negative.as_str(), "-1, not a version number"),
        (older.as_str(), "make probe-linux"),
        (overflowed.as_str(), "hits in 7 trials"),
    ] {
        fs::write(&file, bad).unwrap();
        let out = quick_run(&dir);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{}", stderr(&out));
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            bad,
            "a refused file was changed"
        );
        assert_usage_error(
            &[
                "verdict",
                "posix-lock-drop",
                "flock",
                "--results",
                dir.to_str().unwrap(),
            ],
            needle,
        );
    }
    // The refusal of an older schema names `fdwindow run`: a full run then
    // replaces that file (its first read and its re-read under the folder
    // lock both accept it), where the partial runs above left it untouched.
    fs::write(&file, &older).unwrap();
    let out = fdwindow()
        .args(["run", "--trials", "1", "--race-ms", "4"])
        .args(NO_PROBE_TIMEOUT)
        .arg("--results")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let now = fs::read_to_string(&file).unwrap();
    assert!(now.contains(&schema), "not replaced: {now}");
}

#[test]
fn matrix_of_a_missing_folder_is_refused_and_creates_nothing() {
    let s = scratch("matrix-missing");
    let missing = s.dir().join("no-such-results");
    for check in [false, true] {
        let mut cmd = fdwindow();
        cmd.arg("matrix").arg("--results").arg(&missing);
        if check {
            cmd.arg("--check");
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
        assert!(!missing.exists(), "matrix created {}", missing.display());
    }
}

#[test]
fn unwritable_results_folder() {
    let s = scratch("cli-unwritable");
    // A file where the folder should be: refused even for root.
    let not_a_dir = s.dir().join("results");
    fs::write(&not_a_dir, b"").unwrap();
    let out = quick_run(&not_a_dir.join("sub"));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not writable"), "{}", stderr(&out));
}

#[test]
fn a_timed_out_probe_keeps_the_previous_results() {
    let s = scratch("cli-timeout");
    let dir = s.dir().join("results");
    let file = quick_results(&dir);
    let before = fs::read_to_string(&file).unwrap();
    let tmp = s.dir().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let out = fdwindow()
        // spawn-window's sweep takes seconds even at its default 12 samples
        // per point, and no verdict stops it early: it outlives the timeout
        // however busy the machine (a race or trial cap could be skipped or
        // decided early).
        .args([
            "run",
            "--trials",
            "1000000",
            "--timeout",
            "1",
            "--only",
            "spawn-window",
            "--results",
        ])
        .arg(&dir)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("timed out"), "{}", stderr(&out));
    let after: fdwindow::report::ResultsFile =
        serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
    let before: fdwindow::report::ResultsFile = serde_json::from_str(&before).unwrap();
    assert_eq!(
        after.probes, before.probes,
        "the old report must survive a failed probe"
    );
    assert_no_scratch_left(&tmp);
}

#[test]
fn ctrl_c_stops_the_run_and_changes_nothing() {
    let s = scratch("cli-sigint");
    let dir = s.dir().join("results");
    let tmp = s.dir().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let mut child = fdwindow()
        // Still sweeping when the signal comes (see the timeout test).
        .args([
            "run",
            "--trials",
            "1000000",
            "--only",
            "spawn-window",
            "--results",
        ])
        .arg(&dir)
        .env("TMPDIR", &tmp)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Wait (on the pipe, not a clock) until the probe has started.
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("probing spawn-window"), "{first}");
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        !dir.join("MATRIX.md").exists(),
        "an interrupted run wrote results"
    );
    assert_no_scratch_left(&tmp);
}

#[test]
fn merge_combines_artifacts_and_keeps_the_newest_report() {
    let s = scratch("cli-merge");
    let (a, b, out) = (s.dir().join("a"), s.dir().join("b"), s.dir().join("out"));
    quick_results(&a);
    // Pretend `b` came from another OS's runner: rename its platform.
    let file_b = quick_results(&b);
    let mut other: fdwindow::report::ResultsFile =
        serde_json::from_str(&fs::read_to_string(&file_b).unwrap()).unwrap();
    other.platform.id = "macos-15.3-aarch64-libsystem".into();
    other.platform.os = "macos".into();
    // Each report carries the platform it ran on, and merge files it there.
    for r in other.probes.values_mut() {
        r.platform = other.platform.clone();
    }
    fs::remove_file(&file_b).unwrap();
    fs::create_dir_all(b.join("nested")).unwrap();
    fs::write(
        b.join("nested/macos-15.3-aarch64-libsystem.json"),
        serde_json::to_string(&other).unwrap(),
    )
    .unwrap();

    let out_s = out.to_str().unwrap();
    let status = fdwindow()
        .arg("merge")
        .arg(&a)
        .arg(&b)
        .args(["--results", out_s])
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", stderr(&status));
    let merged = fdwindow::evidence::results::load_dir(&out).unwrap();
    assert_eq!(merged.len(), 2);
    let matrix = fs::read_to_string(out.join("MATRIX.md")).unwrap();
    assert!(
        matrix.contains("`macos-15.3-aarch64-libsystem`"),
        "{matrix}"
    );
    assert!(
        !matrix.contains("macos (reported)"),
        "a measured macOS replaces the reported column"
    );

    // A corrupt input is refused and changes nothing.
    fs::write(b.join("bad.json"), "{").unwrap();
    let before = fs::read_to_string(out.join("MATRIX.md")).unwrap();
    let status = fdwindow()
        .arg("merge")
        .arg(&b)
        .args(["--results", out_s])
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(2), "{}", stderr(&status));
    assert_eq!(fs::read_to_string(out.join("MATRIX.md")).unwrap(), before);
}

/// A spawn-window run writes the chart beside MATRIX.md and links it; a
/// costs file adds a cost column; `matrix --check` notices a stale chart.
#[cfg(target_os = "linux")]
#[test]
fn spawn_window_chart_and_costs_reach_the_matrix() {
    let s = scratch("cli-chart");
    let dir = s.dir().join("results");
    let out = run_only(&dir, "1", &["spawn-window", "posix-lock-drop"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = fs::read_to_string(dir.join("spawn-window.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("fork-exec at 1024"));
    let matrix = fs::read_to_string(dir.join("MATRIX.md")).unwrap();
    assert!(matrix.contains("[spawn-window.svg](spawn-window.svg)"));
    assert!(!matrix.contains("cost on"), "no costs file yet");

    let out = fdwindow()
        .args([
            "verdict",
            "spawn-window",
            "fork-exec/rss-1024MiB",
            "--results",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(
        line.starts_with("observed ") && line.contains("median µs="),
        "{line}"
    );

    // The costs of one fix and its baseline, as `make bench` would write them.
    let costs = [
        ("lock-kind/posix-fcntl/lock-unlock", 1000.0),
        ("lock-kind/flock/lock-unlock", 1250.0),
    ]
    .map(|(id, ns)| {
        // Ten interleaved rounds, in one fixed pattern of ±5 ns.
        let samples = (0..10)
            .map(|i| ns + if i % 2 == 0 { 5.0 } else { -5.0 })
            .collect();
        (
            id.to_owned(),
            fdwindow::evidence::costs::BenchCost::from_samples(samples).unwrap(),
        )
    });
    fdwindow::evidence::costs::merge_and_write(&dir, costs.into()).unwrap();
    let check = || {
        fdwindow()
            .args(["matrix", "--check", "--results"])
            .arg(&dir)
            .output()
            .unwrap()
    };
    assert!(
        !check().status.success(),
        "a new costs file makes the matrix stale"
    );
    assert!(
        fdwindow()
            .args(["matrix", "--results"])
            .arg(&dir)
            .status()
            .unwrap()
            .success()
    );
    assert!(check().status.success());
    let matrix = fs::read_to_string(dir.join("MATRIX.md")).unwrap();
    assert!(
        matrix.contains("| cost on `") && matrix.contains("## Costs"),
        "{matrix}"
    );
    assert!(matrix.contains("| `lock-kind/posix-fcntl/lock-unlock` | 1.0 µs | 10 |"));
    assert!(
        matrix.lines().any(
            |l| l.starts_with("| `flock` | mitigation (vs `close-other-fd`) |")
                && l.ends_with("| +250 ns (95% CI +250 ns to +250 ns, 1.25×) |")
        ),
        "{matrix}"
    );

    fs::write(dir.join("spawn-window.svg"), "<svg/>").unwrap();
    let out = check();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("spawn-window.svg is stale"),
        "{}",
        stderr(&out)
    );
}

/// The committed results: `verdict` prints one line per window, window first,
/// never a sum; `check` passes on them and fails, naming the cell, when a
/// claimed-valid fix shows the hazard.
#[test]
fn verdict_per_window_and_check_on_the_committed_results() {
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    // The committed Linux file the views quote: "this machine's" file would
    // depend on the machine the test runs on.
    let files = fdwindow::evidence::results::load_dir(&committed).unwrap();
    let platform = fdwindow::evidence::query::quoted_file(&files, "linux")
        .expect("a committed results file of a Linux machine")
        .platform
        .id
        .clone();
    let out = fdwindow()
        .args([
            "verdict",
            "flock-survival",
            "close",
            "--platform",
            &platform,
        ])
        .arg("--results")
        .arg(&committed)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let windows: Vec<&str> = text.lines().map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(
        windows,
        ["fork-window", "posix-spawn", "inherited"],
        "{text}"
    );
    assert!(text.lines().nth(1).unwrap().contains(" spawns"), "{text}");

    let out = fdwindow()
        .args(["check", "--results"])
        .arg(&committed)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let (_s, file) = committed_copy("cli-check");
    let text = edit_then_check(
        &file,
        "flock-survival",
        "unlock-then-close",
        "inherited",
        |arm| {
            arm.outcome = fdwindow::report::verdict::Outcome::observed(1, 10);
        },
    );
    assert!(
        text.lines().any(|l| l
            .starts_with("FAIL contradiction: flock-survival unlock-then-close inherited")
            && l.contains("claimed valid")
            && l.contains("measured invalid 1/10")),
        "{text}"
    );

    // A fix judged against another control than its probe names (std's dup
    // against the socket control, which a file could pick for a count that
    // suits it) fails, whatever the counts say.
    let text = edit_then_check(&file, "two-step-cloexec", "std-dup", "parked-call", |arm| {
        assert_eq!(arm.against.as_deref(), Some("two-step-dup"));
        arm.against = Some("two-step-socket".into());
    });
    assert!(
        text.lines().any(|l| l
            .starts_with("FAIL not as its probe declares: two-step-cloexec std-dup parked-call")
            && l.contains("claimed mitigation vs two-step-dup")
            && l.contains("measured mitigation vs two-step-socket")),
        "{text}"
    );
}

/// Edits one cell of the results `file`, runs `fdwindow check` on its
/// folder, and returns what it printed, having seen it exit 1.
fn edit_then_check(
    file: &std::path::Path,
    hazard: &str,
    arm: &str,
    window: &str,
    edit: impl FnOnce(&mut fdwindow::report::ArmReport),
) -> String {
    edit_report_then_check(file, hazard, |report| {
        let cell = report
            .arms
            .iter_mut()
            .find(|a| a.arm == arm && a.window.id() == window)
            .unwrap();
        edit(cell);
    })
}

/// A copy of the committed results in a scratch folder, with the path of
/// the Linux file the README quotes (the tests' template) in it.
fn committed_copy(label: &str) -> (fdwindow_fix::base::scratch::Scratch, std::path::PathBuf) {
    let s = scratch(label);
    let dir = s.dir().join("results");
    common::copy_committed_results(&dir);
    let files = fdwindow::evidence::results::load_dir(&dir).unwrap();
    let quoted = fdwindow::evidence::query::quoted_file(&files, "linux")
        .expect("a committed results file of a Linux machine");
    let file = dir.join(format!("{}.json", quoted.platform.id));
    (s, file)
}

/// Edits one probe's report in the results `file`, runs `fdwindow check` on
/// its folder, and returns what it printed, having seen it exit 1.
fn edit_report_then_check(
    file: &std::path::Path,
    hazard: &str,
    edit: impl FnOnce(&mut fdwindow::report::ProbeReport),
) -> String {
    let mut results =
        fdwindow::report::ResultsFile::from_json(&fs::read_to_string(file).unwrap()).unwrap();
    edit(results.probes.get_mut(hazard).unwrap());
    fs::write(file, serde_json::to_string_pretty(&results).unwrap()).unwrap();
    let out = fdwindow()
        .args(["check", "--results"])
        .arg(file.parent().unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    String::from_utf8(out.stdout).unwrap()
}

/// A results file is held to its run's scope: a cell the run measured and
/// the file lost, a cell the race rule races but the file lists as left
/// out, and a probe of the run whose whole report the file lost, each fail
/// `check`; the run as written names none.
#[test]
fn check_holds_a_run_to_its_scope() {
    let s = scratch("cli-scope");
    let dir = s.dir().join("results");
    let out = run_only(&dir, "7", &["flock-survival", "pipe-eof"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = results_file(&dir);
    let check = || {
        let out = fdwindow()
            .args(["check", "--results"])
            .arg(&dir)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let scoped = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("FAIL missing from the run's scope"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(scoped(&check()), Vec::<String>::new());
    let edit = |change: &dyn Fn(&mut fdwindow::report::ProbeReport)| {
        let mut results =
            fdwindow::report::ResultsFile::from_json(&fs::read_to_string(&file).unwrap()).unwrap();
        change(results.probes.get_mut("flock-survival").unwrap());
        fs::write(&file, serde_json::to_string_pretty(&results).unwrap()).unwrap();
    };
    let original = fs::read_to_string(&file).unwrap();
    edit(&|r| {
        r.arms
            .retain(|a| !(a.arm == "std-unlock" && a.window.id() == "inherited"))
    });
    let lost = scoped(&check());
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert!(
        lost[0].contains("flock-survival std-unlock inherited")
            && lost[0].contains("neither measured nor left out"),
        "{lost:?}"
    );
    // A thorough run races every fix: its left-out cells are lost ones.
    fs::write(&file, &original).unwrap();
    edit(&|r| r.scope.as_mut().unwrap().thorough = true);
    let raced = scoped(&check());
    assert!(
        !raced.is_empty()
            && raced
                .iter()
                .all(|l| l.contains("left out, but the race rule races it")),
        "{raced:?}"
    );
    assert!(
        raced
            .iter()
            .any(|l| l.contains("flock-survival unlock-then-close posix-spawn")),
        "{raced:?}"
    );
    // A probe's whole report lost: the other report of its run names it.
    fs::write(&file, &original).unwrap();
    let mut results =
        fdwindow::report::ResultsFile::from_json(&fs::read_to_string(&file).unwrap()).unwrap();
    results.probes.remove("pipe-eof").unwrap();
    fs::write(&file, serde_json::to_string_pretty(&results).unwrap()).unwrap();
    let gone = scoped(&check());
    assert_eq!(gone.len(), 1, "{gone:?}");
    assert!(
        gone[0].contains("pipe-eof (every cell)")
            && gone[0].contains("the run that wrote flock-survival ran it"),
        "{gone:?}"
    );
}

/// A results file's trials are bound to the trial's own descriptor: a
/// fork-window control whose file lost its `child-copy` tally, or counts a
/// trial without the copy, fails `check`; the run as written (its cloexec
/// fix declared `no_copy` in the inherited window, its child holding none)
/// names none.
#[test]
fn check_fails_a_trial_without_the_childs_copy() {
    let s = scratch("cli-copy");
    let dir = s.dir().join("results");
    let out = run_only(&dir, "7", &["flock-survival"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = results_file(&dir);
    let out = fdwindow()
        .args(["check", "--results"])
        .arg(&dir)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains("without the child's copy"),
        "the run as written: {text}"
    );
    let copies = |held: Option<u64>| {
        move |cell: &mut fdwindow::report::ArmReport| {
            let fdwindow::report::verdict::Outcome::Observed { tallies, .. } = &mut cell.outcome
            else {
                panic!("the control was not observed: {cell:?}");
            };
            let tally = tallies.remove("child-copy");
            assert!(tally.is_some(), "no child-copy tally to forge");
            if let Some(held) = held {
                tallies.insert("child-copy".into(), [("held".to_owned(), held)].into());
            }
        }
    };
    let original = fs::read_to_string(&file).unwrap();
    for (held, counts) in [(None, "held in 0 of"), (Some(6), "held in 6 of")] {
        fs::write(&file, &original).unwrap();
        let text = edit_then_check(
            &file,
            "flock-survival",
            "close",
            "fork-window",
            copies(held),
        );
        let failed: Vec<_> = text
            .lines()
            .filter(|l| l.starts_with("FAIL a trial without the child's copy"))
            .collect();
        assert_eq!(failed.len(), 1, "{text}");
        assert!(
            failed[0].contains("flock-survival close fork-window") && failed[0].contains(counts),
            "{text}"
        );
    }
}

/// Table answers are held to their claims: on a committed file, a second
/// bind that changed its errno, a row lost from exec-while-open and a lost
/// looked-up table each fail `check`, naming the answer.
#[test]
fn check_holds_table_answers_to_their_claims() {
    let (_s, file) = committed_copy("cli-answers");
    let original = fs::read_to_string(&file).unwrap();
    let table = |report: &mut fdwindow::report::ProbeReport, id: &str| -> usize {
        report.tables.iter().position(|t| t.id == id).unwrap()
    };
    let failed = |text: &str, start: &str, cell: &str| {
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("FAIL")).collect();
        assert_eq!(lines.len(), 1, "{text}");
        assert!(
            lines[0].starts_with(start) && lines[0].contains(cell),
            "{text}"
        );
        lines[0].to_owned()
    };

    let text = edit_report_then_check(&file, "bind-matrix", |r| {
        let i = table(r, "second-bind");
        let row = r.tables[i]
            .rows
            .iter_mut()
            .find(|row| row[0] == "v4/specific/bound/reuseport")
            .unwrap();
        assert_eq!(row[1], "ok");
        row[1] = "EADDRINUSE".into();
    });
    let line = failed(
        &text,
        "FAIL contradiction",
        "bind-matrix second-bind \"v4/specific/bound/reuseport\" second bind: specific",
    );
    assert!(
        line.contains("claimed ok") && line.contains("measured EADDRINUSE"),
        "{line}"
    );

    fs::write(&file, &original).unwrap();
    let text = edit_report_then_check(&file, "etxtbsy", |r| {
        let i = table(r, "exec-while-open");
        r.tables[i]
            .rows
            .retain(|row| row[0] != "write descriptor open");
    });
    failed(
        &text,
        "FAIL claim without evidence",
        "etxtbsy exec-while-open \"write descriptor open\" exec",
    );

    fs::write(&file, &original).unwrap();
    let text = edit_report_then_check(&file, "two-step-cloexec", |r| {
        let i = table(r, "looked-up");
        r.tables.remove(i);
    });
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(
        !lines.is_empty()
            && lines
                .iter()
                .all(|l| l.starts_with("FAIL claim without evidence")
                    && l.contains("two-step-cloexec looked-up \"*\" in this C library")
                    && l.contains("the table is missing")),
        "{text}"
    );
}

/// The forged files of issue 28, each made from the committed file the
/// README quotes (a run that recorded its scope): the 25 parked-call cells
/// deleted, a fix the race rule races replaced by a left-out entry, a fix's
/// 0/7 cut to 0/5 against a 10/10 control: each fails `check` (exit 1)
/// naming its cells. A KVM cell marked emulated, and a left-out control,
/// are refused as the file is read (exit 2), naming the cell.
#[test]
fn forged_committed_files_fail_check_naming_the_cell() {
    use fdwindow::report::verdict::{Outcome, Window};
    let (_s, file) = committed_copy("cli-forged");
    let dir = file.parent().unwrap();
    let original = fs::read_to_string(&file).unwrap();
    let quoted = fdwindow::report::ResultsFile::from_json(&original).unwrap();
    assert!(
        quoted.probes.values().all(|r| r.scope.is_some()),
        "the quoted file records its run's scope"
    );
    let fails = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("FAIL"))
            .map(str::to_owned)
            .collect()
    };

    let mut parked = 0;
    let text = edit_report_then_check(&file, "two-step-cloexec", |r| {
        parked = r
            .arms
            .iter()
            .filter(|a| a.window == Window::ParkedCall)
            .count();
        r.arms.retain(|a| a.window != Window::ParkedCall);
    });
    let failed = fails(&text);
    assert_eq!(parked, 25);
    assert_eq!(failed.len(), parked, "{text}");
    assert!(
        failed.iter().all(|l| l
            .starts_with("FAIL missing from the run's scope: two-step-cloexec ")
            && l.contains(" parked-call on ")),
        "{text}"
    );

    // A fix a default run races (its only window) replaced by a left-out
    // entry; a control so replaced is refused as the file is read (below).
    let leave_out = |r: &mut fdwindow::report::ProbeReport, arm: &str| {
        let i = r
            .arms
            .iter()
            .position(|a| a.arm == arm && a.window == Window::PosixSpawn)
            .unwrap();
        let cell = r.arms.remove(i);
        r.left_out.push(fdwindow::report::LeftOut {
            arm: cell.arm,
            role: cell.role,
            window: cell.window,
            against: cell.against,
            why: "not raced".into(),
        });
    };
    fs::write(&file, &original).unwrap();
    let text = edit_report_then_check(&file, "etxtbsy", |r| leave_out(r, "retry-on-etxtbsy"));
    assert!(
        fails(&text)
            .iter()
            .any(|l| l.contains("etxtbsy retry-on-etxtbsy posix-spawn")
                && l.contains("left out, but the race rule races it")),
        "{text}"
    );

    fs::write(&file, &original).unwrap();
    let text = edit_report_then_check(&file, "flock-survival", |r| {
        for a in &mut r.arms {
            if a.window == Window::ForkWindow {
                match a.arm.as_str() {
                    "close" => a.outcome = Outcome::observed(10, 10),
                    "unlock-then-close" => a.outcome = Outcome::observed(0, 5),
                    _ => {}
                }
            }
        }
    });
    assert!(
        fails(&text).iter().any(
            |l| l.contains("flock-survival unlock-then-close fork-window")
                && l.contains("measured inconclusive 0/5")
        ),
        "{text}"
    );

    // Refused as the file is read, naming the cell.
    let refused = |edit: &dyn Fn(&mut fdwindow::report::ProbeReport), says: &str| {
        let mut results = fdwindow::report::ResultsFile::from_json(&original).unwrap();
        edit(results.probes.get_mut("flock-survival").unwrap());
        fs::write(&file, serde_json::to_string_pretty(&results).unwrap()).unwrap();
        let out = fdwindow()
            .args(["check", "--results"])
            .arg(dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = stderr(&out);
        assert!(err.lines().count() == 1 && err.contains(says), "{err}");
    };
    refused(
        &|r| {
            let cells = r.arms.iter_mut();
            cells
                .filter(|a| a.arm == "cloexec" && a.window == Window::ForkWindow)
                .for_each(|a| a.emulated = true);
        },
        "flock-survival: arm cloexec in window fork-window: marked emulated",
    );
    refused(
        &|r| leave_out(r, "close"),
        "flock-survival: left-out arm close in window posix-spawn: a run races every control",
    );
}
