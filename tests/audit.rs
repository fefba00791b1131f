//! `fdwindow audit` on the fixture suite (tests/fixtures/audit_suite.rs):
//! exactly the exposed tests are flagged, each with the class its diagnosis
//! found and a hazard set holding the right hazard; the cost test comes out
//! as load; the unaffected tests are never flagged.

mod common;

#[cfg(target_os = "linux")]
use common::fixture_command;
use common::{fdwindow, stderr};
#[cfg(target_os = "linux")]
use std::process::Command;

#[test]
fn usage_errors_exit_2() {
    // Each refused before anything runs: the command (a one-test libtest
    // stand-in) would audit fine, so exit 2 is the option's.
    for (args, names) in [
        (&["--pressure", "threads=0"][..], "--pressure"),
        (&["--pressure", "drop=file"], "drop="),
        (&["--pressure", "match=x*"], "match="),
        (&["--format", "xml"], "--format"),
        (&["--hold", "0s"], "--hold"),
        (&["--hold", "10m"], "--hold"),
        (&["--budget", "0s"], "--budget"),
        (&["--partition", "0/2"], "--partition"),
        (&["--partition", "3/2"], "--partition"),
        (&["--partition", "slice:1/2"], "--partition"),
        (&["--partition", "1"], "--partition"),
    ] {
        let out = fdwindow()
            .arg("audit")
            .args(args)
            .args(["--runs", "1", "--", "/bin/sh", "-c", LIBTEST_STAND_IN, "sh"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let text = stderr(&out);
        assert!(text.lines().count() <= 4, "not a short error: {text}");
        assert!(
            text.contains(names),
            "{args:?}: the error does not name {names}: {text}"
        );
    }
}

/// The fixture's tests that a held copy breaks: what the audit must flag.
#[cfg(target_os = "linux")]
const EXPOSED: [&str; 5] = [
    "abstract_name_rebinds",
    "bound_port_rebinds",
    "dropped_listener_refuses",
    "lock_released_by_close",
    "picked_port_binds",
];

/// Every test of the fixture, in libtest's order.
#[cfg(target_os = "linux")]
const FIXTURE_TESTS: [&str; 13] = [
    "abstract_name_rebinds",
    "arithmetic_holds",
    "bound_port_rebinds",
    "cargo_environment_is_there",
    "dropped_listener_refuses",
    "file_round_trip",
    "lock_released_by_close",
    "lock_released_by_unlock",
    "picked_port_binds",
    "server_binds_port_zero",
    "sorting_is_stable",
    "text_formats",
    "warm_rewrite_is_fault_free",
];

/// Runs `fdwindow audit ARGS -- COMMAND` with a JSON report, started as
/// from a user's shell (none of cargo's variables of this test process):
/// its exit status, report and stderr.
#[cfg(target_os = "linux")]
fn audit_json(args: &[&str], command: &[String]) -> (Option<i32>, serde_json::Value, String) {
    let out = common::without_cargo_env(&mut fdwindow())
        .arg("audit")
        .args(args)
        .args(["--format", "json", "--"])
        .args(command)
        .output()
        .unwrap();
    let report =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    (out.status.code(), report, stderr(&out))
}

/// The names of a report's tests whose verdict `keep` takes.
#[cfg(target_os = "linux")]
fn names_where(report: &serde_json::Value, keep: impl Fn(&str) -> bool) -> Vec<&str> {
    report["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| keep(t["verdict"].as_str().unwrap()))
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

/// The names of a report's tests with verdict `word`.
#[cfg(target_os = "linux")]
fn with_verdict<'a>(report: &'a serde_json::Value, word: &str) -> Vec<&'a str> {
    names_where(report, |v| v == word)
}

/// The names of all a report's tests, in its order.
#[cfg(target_os = "linux")]
fn test_names(report: &serde_json::Value) -> Vec<&str> {
    names_where(report, |_| true)
}

// The injector is preloaded by LD_PRELOAD (Linux); the fixture's cost test
// reads RUSAGE_THREAD, which is Linux's.
#[cfg(target_os = "linux")]
#[test]
fn audit_flags_exactly_the_exposed_fixture_tests() {
    // Ten screen runs; the exposed tests fail most pressured runs, so the
    // rule decides them in about ten pairs. The budget is room for a
    // loaded machine: the rule, not the budget, decides here.
    let (code, report, err) =
        audit_json(&["--runs", "10", "--budget", "900s"], &fixture_command(&[]));
    // Exit 1: some test is exposed.
    assert_eq!(code, Some(1), "{err}");
    // Nothing left out, and cargo's own environment learned (no fallback).
    assert_eq!(report["warnings"], serde_json::json!([]), "{report}");
    assert_eq!(report["schema"], "fdwindow-audit/4", "{report}");
    let tests = report["tests"].as_array().unwrap();
    let find = |name: &str| {
        tests
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} missing: {report}"))
    };
    assert_eq!(with_verdict(&report, "exposed"), EXPOSED, "{err}");
    // Named as nextest names the binary, each with its time alone.
    for t in tests {
        assert_eq!(t["binary"], "fdwindow::example/audit-fixture", "{t}");
        assert!(t["time_s"].as_f64().is_some(), "{t}");
    }
    let threshold = report["rule"]["false_rate"].as_f64().unwrap();
    assert!(threshold <= 0.001, "{report}");
    for (name, class, hazard, drop_line) in [
        ("lock_released_by_close", "file", "flock-survival", 74),
        (
            "dropped_listener_refuses",
            "listener",
            "listener-survival",
            90,
        ),
        ("picked_port_binds", "listener", "port-pick", 105),
        ("bound_port_rebinds", "bound", "port-pick", 123),
        (
            "abstract_name_rebinds",
            "bound",
            "unix-listener-survival",
            142,
        ),
    ] {
        let t = find(name);
        assert_eq!(t["hazard"], hazard, "{name}: {t}");
        // The line that dropped the descriptor is a call site held in every
        // failing run of the class, named first: where the test closes
        // nothing else of the class the only one; else the one whose
        // copies alone break the test.
        let sites = t["diagnosis"]["sites"].as_array().unwrap();
        let failing = |s: &serde_json::Value| s["failing"].as_u64().unwrap();
        let most = sites.iter().map(failing).max().unwrap_or(0);
        let at_drop = sites.iter().find(|s| {
            s["site"]["file"] == "tests/fixtures/audit_suite.rs" && s["site"]["line"] == drop_line
        });
        let at_drop = at_drop.unwrap_or_else(|| panic!("{name}: no site at line {drop_line}: {t}"));
        assert!(most > 0 && failing(at_drop) == most, "{name}: {t}");
        assert_eq!(at_drop["site"]["found"], "workspace", "{name}: {t}");
        assert_eq!(
            at_drop["site"]["function"],
            format!("audit_fixture::{name}"),
            "{name}: {t}"
        );
        assert_eq!(&sites[0], at_drop, "{name}: {t}");
        if class != "file" {
            assert_eq!(at_drop["only"], true, "{name}: {t}");
        } else {
            // Two sites of file closes: the scratch file created at line 49
            // (held, harmless) and the locked file dropped at line 74. Held
            // alone, only the latter breaks the test.
            let alone = |line: u64| {
                let site = sites.iter().find(|s| s["site"]["line"] == line);
                let site = site.unwrap_or_else(|| panic!("{name}: no site at line {line}: {t}"));
                let alone = &site["alone"];
                (
                    alone["failures"].as_u64().unwrap(),
                    alone["runs"].as_u64().unwrap(),
                    alone["held"].as_u64().unwrap(),
                )
            };
            let (failures, runs, held) = alone(drop_line);
            assert!(
                held > 0 && failures >= 2 && 2 * failures >= runs,
                "{name}: {t}"
            );
            let (failures, runs, held) = alone(49);
            assert!(held > 0 && runs > 0 && failures < 2, "{name}: {t}");
        }
        assert_eq!(
            t["diagnosis"]["cause"],
            format!("held {class}"),
            "{name}: {t}"
        );
        // The deterministic mode made it fail on its first run.
        let holds = t["diagnosis"]["holds"].as_array().unwrap();
        let held = holds.iter().find(|h| h["class"] == class).unwrap();
        assert_eq!(held["first_failure"], 1, "{name}: {t}");
        assert!(
            t["reruns"]["p"].as_f64().unwrap() <= threshold,
            "{name}: {t}"
        );
        assert_eq!(t["reruns"]["alone"]["failures"], 0, "{name}: {t}");
        assert!(t["reruns"]["spawns"].as_u64().unwrap() > 0, "{name}: {t}");
        assert!(t["message"].as_str().is_some_and(|m| !m.is_empty()), "{t}");
    }
    // Fork pressure breaks the cost test whatever its children hold: load,
    // with no hazard named.
    let load = find("warm_rewrite_is_fault_free");
    assert_eq!(load["verdict"], "load", "{load}");
    assert!(load["hazard"].is_null(), "{load}");
    assert_eq!(load["candidates"].as_array().unwrap().len(), 0, "{load}");
    for name in [
        "arithmetic_holds",
        "cargo_environment_is_there",
        "text_formats",
        "lock_released_by_unlock",
        "server_binds_port_zero",
        "file_round_trip",
        "sorting_is_stable",
    ] {
        let t = find(name);
        assert_eq!(t["verdict"], "not-exposed", "{name}: {t}");
        assert!(t["hazard"].is_null(), "{name}: {t}");
        assert_eq!(t["screen"]["runs"], 10, "{name}: {t}");
    }
    // Every pressured run loaded the injector.
    assert_eq!(report["pressured_runs"], report["pressure_started_runs"]);
    assert!(report["pressured_runs"].as_u64().unwrap() >= 10);
}

/// A screen whose share holds too few pressure rounds (10 s of a binary
/// that takes about 0.3 s alone: some 30 rounds, against the 230 that see
/// a 1% test) holds a copy of every closed descriptor first: each exposed
/// fixture test fails there, is decided by the held-copy window or the sign
/// rule, and is named with its hazard; the report counts the held runs and
/// copies, and every test ran in a held run with no close let through.
#[cfg(target_os = "linux")]
#[test]
fn a_short_screen_holds_copies_and_finds_every_exposed_test() {
    let (code, report, err) = audit_json(
        &["--duration", "10s", "--budget", "900s"],
        &fixture_command(&[]),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("close-hold=all"), "{err}");
    let screen = &report["screen_runs"][0];
    assert!(screen["held_runs"].as_u64().unwrap() >= 1, "{screen}");
    assert!(screen["held_copies"].as_u64().unwrap() >= 5, "{screen}");
    assert_eq!(with_verdict(&report, "exposed"), EXPOSED, "{err}");
    for t in report["tests"].as_array().unwrap() {
        assert_eq!(t["held_screened"], true, "{t}");
        if EXPOSED.contains(&t["name"].as_str().unwrap()) {
            assert!(t["screen_held"]["failures"].as_u64().unwrap() >= 1, "{t}");
            assert!(t["hazard"].is_string(), "{t}");
        }
    }
}

/// Two shards of the fixture, audited apart and merged, hold every test
/// once and flag what one unsharded audit flags ([`EXPOSED`]).
#[cfg(target_os = "linux")]
#[test]
fn shards_merge_into_the_unsharded_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for shard in ["1/2", "2/2"] {
        let (code, report, err) = audit_json(
            &["--runs", "10", "--budget", "900s", "--partition", shard],
            &fixture_command(&[]),
        );
        assert!(matches!(code, Some(0 | 1)), "{shard}: {err}");
        assert_eq!(report["partition"]["total"], 2, "{report}");
        let path = dir.path().join(format!("shard-{}.json", &shard[..1]));
        std::fs::write(&path, serde_json::to_vec(&report).unwrap()).unwrap();
        paths.push(path);
    }
    let merged = fdwindow()
        .args(["audit", "merge", "--format", "json"])
        .args(&paths)
        .output()
        .unwrap();
    assert_eq!(merged.status.code(), Some(1), "{}", stderr(&merged));
    let report: serde_json::Value = serde_json::from_slice(&merged.stdout).unwrap();
    let mut names = test_names(&report);
    names.sort();
    assert_eq!(names, FIXTURE_TESTS, "{report}");
    assert_eq!(with_verdict(&report, "exposed"), EXPOSED, "{report}");
    // A shard missing: exit 2, named.
    let one = fdwindow()
        .args(["audit", "merge"])
        .arg(&paths[0])
        .output()
        .unwrap();
    assert_eq!(one.status.code(), Some(2));
    assert!(
        stderr(&one).contains("missing shards: 2/2"),
        "{}",
        stderr(&one)
    );
    // The same shard twice, or a shard beside the merged report: exit 2.
    let twice = fdwindow()
        .args(["audit", "merge"])
        .args([&paths[0], &paths[0]])
        .output()
        .unwrap();
    assert_eq!(twice.status.code(), Some(2), "{}", stderr(&twice));
}

/// A test binary without line tables (the fixture with its debug
/// information stripped, audited directly): the site is the test's function
/// from the symbol table, past std's drop.
#[cfg(target_os = "linux")]
#[test]
fn a_binary_without_line_tables_gets_the_function_and_the_hint() {
    // The fixture's executable, from cargo's JSON messages.
    let mut build = fixture_command(&["--no-run", "--message-format=json"]);
    build.retain(|a| a != "--quiet");
    let out = Command::new(&build[0]).args(&build[1..]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let exe = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|m| m["executable"].as_str().map(str::to_owned))
        .expect("cargo names the fixture's executable");
    let scratch = common::scratch("audit-no-debug");
    let stripped = scratch.dir().join("audit-fixture-stripped");
    let out = Command::new("objcopy")
        .arg("--strip-debug")
        .arg(&exe)
        .arg(&stripped)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let command = [
        stripped.display().to_string(),
        "--exact".into(),
        "dropped_listener_refuses".into(),
    ];
    let (code, report, err) = audit_json(&["--duration", "5s", "--budget", "900s"], &command);
    assert_eq!(code, Some(1), "{err}");
    let t = &report["tests"][0];
    let site = &t["diagnosis"]["sites"][0];
    assert_eq!(site["site"]["found"], "symbol", "{t}");
    assert_eq!(
        site["site"]["function"], "audit_fixture::dropped_listener_refuses",
        "{t}"
    );
    assert!(site["site"]["line"].is_null(), "{t}");
    // The markdown's hint for such a site: the_site_reaches_every_format.
}

/// cargo's `TESTNAME` reaches the binaries: only the matching tests are
/// audited, and a filter that matches none is nothing to audit.
#[cfg(target_os = "linux")]
#[test]
fn a_cargo_filter_selects_what_is_audited() {
    let quick = ["--runs", "2", "--no-diagnose", "--budget", "900s"];
    let (_, report, err) = audit_json(&quick, &fixture_command(&["lock_released"]));
    let names = test_names(&report);
    assert_eq!(
        names,
        ["lock_released_by_close", "lock_released_by_unlock"],
        "{err}"
    );
    // After `--`, libtest's own selection: --exact and --skip.
    let (_, report, err) = audit_json(
        &quick,
        &fixture_command(&["--", "--exact", "text_formats", "file_round_trip"]),
    );
    assert_eq!(report["tests"].as_array().unwrap().len(), 2, "{err}");
    // --skip of every test: nothing to audit.
    let out = fdwindow()
        .args(["audit"])
        .args(quick)
        .arg("--")
        .args(fixture_command(&["--", "--skip", "_"]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// `cargo nextest run` is a runner too: its filterset selects the tests,
/// its runner-only options are left out of the listing, and each test runs
/// in its own process. Skipped, and says so, where nextest is missing.
#[cfg(target_os = "linux")]
#[test]
fn a_nextest_filterset_selects_what_is_audited() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let has_nextest = std::process::Command::new(&cargo)
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_nextest {
        eprintln!("SKIPPED: cargo-nextest is not installed");
        return;
    }
    let mut command = fixture_command(&[
        "-E",
        "test(=text_formats) | test(=arithmetic_holds) | test(=cargo_environment_is_there)",
    ]);
    // `cargo test` becomes `cargo nextest run --no-fail-fast`.
    command.splice(
        1..2,
        [
            "nextest".to_owned(),
            "run".to_owned(),
            "--no-fail-fast".to_owned(),
        ],
    );
    command.retain(|a| a != "--quiet");
    // nextest's `--profile` is its own; cargo's is `--cargo-profile`.
    for a in &mut command {
        if a == "--profile" {
            *a = "--cargo-profile".into();
        }
    }
    let (code, report, err) = audit_json(&["--runs", "2", "--no-diagnose"], &command);
    assert_eq!(code, Some(0), "{err}");
    let names = test_names(&report);
    // The environment test passes: nextest's variables reach it.
    assert_eq!(
        names,
        [
            "arithmetic_holds",
            "cargo_environment_is_there",
            "text_formats"
        ],
        "{err}"
    );
    assert_eq!(report["tests"][0]["screen"]["runs"], 2, "{report}");
}

/// A filter that matches nothing, or a command with no tests, is exit 2
/// with one line: never a green report about nothing.
#[cfg(target_os = "linux")]
#[test]
fn nothing_to_audit_is_an_error() {
    let mut commands: Vec<Vec<String>> = vec![
        vec!["/bin/true".into()],
        vec!["/bin/sh".into(), "-c".into(), "exit 127".into()],
        vec!["/bin/sh".into(), "-c".into(), "echo junk".into()],
    ];
    commands.push(fixture_command(&["no_test_has_this_name"]));
    for command in commands {
        let out = fdwindow()
            .args(["audit", "--runs", "1", "--"])
            .args(&command)
            .stdout(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{command:?}: {}", stderr(&out));
        let text = stderr(&out);
        let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{command:?}: {}", stderr(&out));
        assert!(
            errors[0].contains("nothing to audit") || errors[0].contains("failed"),
            "{command:?}: {}",
            errors[0]
        );
    }
}

/// A results folder that cannot give advice is bad input when named;
/// without one the advice says it comes from the encoded claims.
#[cfg(target_os = "linux")]
#[test]
fn results_must_load_when_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let truncated = dir.path().join("truncated");
    std::fs::create_dir(&truncated).unwrap();
    std::fs::write(truncated.join("linux-x.json"), "{\"platform\": {").unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for bad in [dir.path().join("missing"), file, truncated, empty] {
        let out = fdwindow()
            .args(["audit", "--results"])
            .arg(&bad)
            .args(["--", "/bin/sh", "-c", LIBTEST_STAND_IN, "sh"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("--results"), "{}", stderr(&out));
    }
    // No --results, and no ./results where it runs: the encoded claims.
    let out = fdwindow()
        .current_dir(dir.path())
        .args(["audit", "--runs", "1", "--"])
        .args(["/bin/sh", "-c", LIBTEST_STAND_IN, "sh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("Advice from fdwindow's encoded claims"), "{md}");
}

/// A report that cannot be written (stdout is `/dev/full`) is a one-line
/// error and exit 1, and the injector's private file and the report folder
/// are gone: the write comes after they are removed (it may end the process).
#[cfg(target_os = "linux")]
#[test]
fn a_failed_report_write_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let out = fdwindow()
        .env("TMPDIR", tmp.path())
        .args([
            "audit",
            "--runs",
            "1",
            "--",
            "/bin/sh",
            "-c",
            LIBTEST_STAND_IN,
            "sh",
        ])
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("error: write to stdout"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A shell stand-in for a libtest binary with one passing test `a`, not
/// `#[ignore]`d (`--ignored --list` lists nothing).
const LIBTEST_STAND_IN: &str = r#"case "$*" in *--ignored*--list*) ;; *--list*) echo "a: test";; *) echo "test a ... ok";; esac"#;

/// Progress goes to stderr; a closed stderr (`2>&1 | head -2` after `head`
/// exits) stops the audit as Ctrl-C would (`fdwindow::base::out`): the
/// report of what ran, marked interrupted, and 141 (128 + SIGPIPE), as a
/// shell pipeline expects; never a panic. (tests/closed_pipes.rs closes it
/// mid-audit.)
#[cfg(target_os = "linux")]
#[test]
fn a_closed_stderr_stops_the_audit_with_its_report_and_141() {
    let out = fdwindow()
        .args(["audit", "--runs", "3", "--format", "json", "--"])
        // A libtest stand-in: one test, `a`, that passes.
        .args(["/bin/sh", "-c", LIBTEST_STAND_IN, "sh"])
        .stderr(common::closed_pipe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(141), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["tests"][0]["name"], "a", "{report}");
    assert_eq!(report["interrupted"], true, "{report}");
}

/// SIGTERM stops an audit as the shells expect (exit 128 + 15), with the
/// report of what it ran and nothing left in its TMPDIR.
#[cfg(target_os = "linux")]
#[test]
fn sigterm_ends_an_audit_with_143_and_its_report() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let mut child = fdwindow()
        .env("TMPDIR", tmp.path())
        .args([
            "audit", "--runs", "100000", "--budget", "600s", "--format", "json",
        ])
        .args(["--", "/bin/sh", "-c", LIBTEST_STAND_IN, "sh"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait (on the pipe, not a clock) until the audit has started its screen.
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.starts_with("fdwindow audit:"), "{first}");
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    // Drain stderr so the audit never blocks on a full pipe.
    let drain = std::thread::spawn(move || lines.count());
    let out = child.wait_with_output().unwrap();
    drain.join().unwrap();
    assert_eq!(out.status.code(), Some(143));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["interrupted"], true, "{report}");
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "left in TMPDIR"
    );
}

/// Runs `fdwindow audit ARGS -- sh -c SCRIPT sh` with a JSON report.
#[cfg(target_os = "linux")]
fn audit_script(args: &[&str], script: &str) -> (Option<i32>, serde_json::Value, String) {
    let command = ["/bin/sh", "-c", script, "sh"].map(String::from);
    audit_json(args, &command)
}

/// A test that fails alone too is `fails-alone`, a JUnit error, exit 3.
#[cfg(target_os = "linux")]
#[test]
fn a_test_failing_alone_exits_3() {
    let always_fails = r#"case "$*" in *--ignored*--list*) ;; *--list*) echo "a: test";;
        *) echo "test a ... FAILED"; exit 101;; esac"#;
    let (code, report, err) = audit_script(&["--runs", "3", "--no-diagnose"], always_fails);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(report["tests"][0]["verdict"], "fails-alone", "{report}");
    assert_eq!(report["fails_alone"], 1, "{report}");
    let out = fdwindow()
        .args([
            "audit",
            "--runs",
            "3",
            "--no-diagnose",
            "--format",
            "junit",
            "--",
        ])
        .args(["/bin/sh", "-c", always_fails, "sh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let xml = String::from_utf8_lossy(&out.stdout);
    assert!(
        xml.contains("<error ") && xml.contains("type=\"fails-alone\""),
        "{xml}"
    );
}

/// `#[ignore]`d tests (those `--ignored --list` lists) are not audited
/// unless the command runs them.
#[cfg(target_os = "linux")]
#[test]
fn ignored_tests_are_audited_only_when_run() {
    let two = r#"case "$*" in *--ignored*--list*) echo "b: test";;
        *--list*) echo "a: test"; echo "b: test";;
        *--include-ignored*) echo "test a ... ok"; echo "test b ... ok";;
        *) echo "test a ... ok"; echo "test b ... ignored";; esac"#;
    let (code, report, err) = audit_script(&["--runs", "2"], two);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(test_names(&report), ["a"]);
    let command = ["/bin/sh", "-c", two, "sh", "--include-ignored"].map(String::from);
    let (code, report, err) = audit_json(&["--runs", "2"], &command);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(test_names(&report), ["a", "b"]);
    assert_eq!(report["tests"][1]["screen"]["runs"], 2, "{report}");
}

/// A preload library that loads but never starts pressure audits nothing:
/// exit 2, never a green report.
#[cfg(target_os = "linux")]
#[test]
fn pressure_that_never_started_is_an_error() {
    // A shared library that surely loads and starts nothing: this test's libc.
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let libc = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/libc.so") || p.contains("/libc-"))
        .expect("a dynamically linked test binary maps libc");
    let out = fdwindow()
        .args(["audit", "--runs", "2", "--injector", libc, "--"])
        .args(["/bin/sh", "-c", LIBTEST_STAND_IN, "sh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("pressure never started"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
}

/// A shard that holds none of the suite's tests (shards deal per binary, as
/// nextest's do: the fixture's `hash:1/3` is empty) is a report of no test,
/// exit 0, which says so: merge can then name every shard.
#[cfg(target_os = "linux")]
#[test]
fn an_empty_shard_is_a_report_of_no_test() {
    let (code, report, err) = audit_json(&["--partition", "hash:1/3"], &fixture_command(&[]));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(report["tests"].as_array().unwrap().len(), 0, "{report}");
    assert_eq!(report["partition"]["shard"], 1, "{report}");
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("holds none of the suite's 13 tests"),
        "{report}"
    );
}

/// `--pressure`'s help lists the keys a user may set with the audit's own
/// defaults, not stress's, and not the keys the audit sets itself.
#[test]
fn the_pressure_help_shows_the_audits_defaults() {
    let out = fdwindow().args(["audit", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    for shown in [
        "threads=N",
        "[default: 8]",
        "[default: 5ms]",
        "for=DURATION",
        "143 SIGTERM",
    ] {
        assert!(help.contains(shown), "{shown} missing: {help}");
    }
    for hidden in ["drop=", "match=", "[default: 4]", "default: \"\""] {
        assert!(!help.contains(hidden), "{hidden} shown: {help}");
    }
}
