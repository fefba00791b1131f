//! The injector shipped inside fdwindow (`shims/inject.c`) is a port of
//! `fdwindow_fix::pressure`: it reads the same spec syntax, accepts what
//! `Spec::from_str` accepts and refuses the rest with the same message.
#![cfg(target_os = "linux")]

mod common;

use std::process::{Command, Stdio};

use fdwindow_fix::pressure::Spec;

#[test]
fn injector_reads_the_spec_as_pressure_does() {
    let injector = common::injector();
    let scratch = common::scratch("preload-spec");
    let specs = [
        "",
        "threads=1",
        "threads=2,hold=250us,path=fork,for=2s",
        " threads=1 , path=spawn ,",
        "path=posix-spawn,max-alive=1,threads=2",
        "match=tru*,threads=1",
        "threads=0",
        "threads=1025",
        "threads",
        "hold=5",
        "hold=86401s",
        "hold=99999999999999999999s",
        "hold=2s,for=1s",
        "path=vfork",
        "colour=red",
        "match=",
        "drop=listener,path=fork,threads=1",
        "drop=none",
        "drop=sockets",
        "ctl=3",
        "controller=x",
        "controller=7",
        "controller=0@1",
        "controller=-1@1",
        "controller=7@1234567890123456789",
        "hold-by=clone",
    ];
    // A controller that is alive: this test process.
    let me = fdwindow_fix::pressure::ProcessId::this_process().unwrap();
    let alive = format!("threads=1,controller={me}");
    let specs = specs.iter().copied().chain([alive.as_str()]);
    for (i, text) in specs.enumerate() {
        let report = scratch.dir().join(format!("report-{i}"));
        let out = Command::new("/usr/bin/true")
            .env("LD_PRELOAD", injector.path())
            .env("FDWINDOW_PRESSURE", text)
            .env("FDWINDOW_PRESSURE_REPORT", &report)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{text:?}: {}", common::stderr(&out));
        assert!(out.stdout.is_empty(), "{text:?} wrote to stdout");
        let stderr = common::stderr(&out);
        match text.parse::<Spec>() {
            Ok(_) => {
                assert!(stderr.is_empty(), "{text:?}: {stderr}");
                // A line when pressure starts, then as it goes and at exit.
                let lines = std::fs::read_to_string(&report)
                    .unwrap_or_else(|e| panic!("{text:?}: no report line: {e}"));
                assert!(lines.lines().count() >= 1, "{text:?}");
                for line in lines.lines() {
                    let fields: Vec<&str> = line.split(' ').collect();
                    assert_eq!(fields.len(), 5, "{line}");
                    assert_eq!(fields[4], "true", "{line}");
                }
            }
            Err(e) => {
                assert!(
                    stderr.contains(&format!("FDWINDOW_PRESSURE: {e}; no pressure")),
                    "{text:?}: pressure says {e:?}, the injector {stderr:?}"
                );
                assert!(!report.exists(), "{text:?} started pressure");
            }
        }
    }
}

/// A process in which pressure starts removes the injector's variables from
/// its own environment, so its children start none of their own; a process
/// that `match=` excludes passes them on.
#[test]
fn a_pressured_process_hides_the_injector_from_its_children() {
    let injector = common::injector();
    let env_of_child = |spec: &str| {
        let out = Command::new("/bin/sh")
            .args(["-c", "env"])
            .env("LD_PRELOAD", injector.path())
            .env("FDWINDOW_PRESSURE", spec)
            .env("FDWINDOW_PRESSURE_REPORT", "/dev/null")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let pressured = env_of_child("threads=1");
    for var in [
        "FDWINDOW_PRESSURE=",
        "FDWINDOW_PRESSURE_REPORT=",
        "LD_PRELOAD=",
    ] {
        assert!(
            !pressured.lines().any(|l| l.starts_with(var)),
            "{var} reached the child: {pressured}"
        );
    }
    let excluded = env_of_child("threads=1,match=no-such-exe");
    for var in [
        "FDWINDOW_PRESSURE=",
        "FDWINDOW_PRESSURE_REPORT=",
        "LD_PRELOAD=",
    ] {
        assert!(
            excluded.lines().any(|l| l.starts_with(var)),
            "{var} was not passed on: {excluded}"
        );
    }
}

/// The injector starts no pressure for a controller that is gone or whose
/// pid now names another process (its start time differs), and says
/// nothing: the run that wanted the pressure is over.
#[test]
fn a_controller_gone_or_reused_starts_no_pressure() {
    let injector = common::injector();
    let scratch = common::scratch("preload-controller");
    let me = fdwindow_fix::pressure::ProcessId::this_process().unwrap();
    let mut gone = Command::new("/bin/true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    for (i, controller) in [
        // This process's pid with another start: a reused pid.
        format!("{}@{}", me.pid, me.start + 1),
        // A process reaped above (its pid is free unless reused since).
        format!("{gone_pid}@{}", me.start),
    ]
    .iter()
    .enumerate()
    {
        let report = scratch.dir().join(format!("report-{i}"));
        let out = Command::new("/usr/bin/true")
            .env("LD_PRELOAD", injector.path())
            .env(
                "FDWINDOW_PRESSURE",
                format!("threads=1,controller={controller}"),
            )
            .env("FDWINDOW_PRESSURE_REPORT", &report)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{controller}: {}",
            common::stderr(&out)
        );
        assert!(
            out.stderr.is_empty(),
            "{controller}: {}",
            common::stderr(&out)
        );
        assert!(!report.exists(), "{controller}: pressure started");
    }
}

/// `cat` given one file 50 times (it opens and closes each in turn) under
/// the injector's `spec`: the injector's report, and the file (removed with
/// its folder; its path stays a marker to look for in command lines).
fn cat_fifty_times(spec: &str) -> (String, std::path::PathBuf) {
    let injector = common::injector();
    let scratch = common::scratch("preload-cat");
    let report = scratch.dir().join("report");
    let file = scratch.dir().join("cat-fifty-times");
    std::fs::write(&file, "x").unwrap();
    let out = Command::new("/bin/cat")
        .args(std::iter::repeat_n(&file, 50))
        .env("LD_PRELOAD", injector.path())
        .env("FDWINDOW_PRESSURE", spec)
        .env("FDWINDOW_PRESSURE_REPORT", &report)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(out.stdout.len(), 50);
    (std::fs::read_to_string(&report).unwrap(), file)
}

/// close-hold=…,hold-by=fork's accounting has no silent gap: with room for 4
/// copies held for 5 s, `cat` given one file 50 times (it opens and closes
/// each in turn) gets exactly 4 held copies, and the other 46 closes are
/// counted as unheld.
#[test]
fn every_close_of_the_class_is_held_or_counted_unheld() {
    let started = std::time::Instant::now();
    let (text, _) = cat_fifty_times("close-hold=file,hold=5s,max-alive=4,hold-by=fork");
    // The holders were killed at exit, not waited for.
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let held = text.lines().filter(|l| l.starts_with("held ")).count();
    let counts: Vec<u64> = text
        .lines()
        .find_map(|l| l.strip_prefix("holds "))
        .unwrap_or_else(|| panic!("no holds line: {text}"))
        .split(' ')
        .skip(1)
        .map(|n| n.parse().unwrap())
        .collect();
    assert_eq!(held, 4, "{text}");
    assert_eq!(counts, [4, 46], "{text}");
    // Each held close's stack follows its `held` line, innermost first and
    // above the injector's own frames: its first frame is cat's call of
    // close, in cat's executable, named by a `module` line.
    let cat = std::fs::canonicalize("/bin/cat").unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let module = |index: &str| {
        lines.iter().find_map(|l| {
            let rest = l.strip_prefix("module ")?;
            let mut f = rest.splitn(3, ' ');
            (f.nth(1) == Some(index)).then(|| f.next().unwrap_or(""))
        })
    };
    for (i, _) in lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("held "))
    {
        let site = lines[i + 1..]
            .iter()
            .find(|l| l.starts_with("site ") || l.starts_with("held "))
            .filter(|l| l.starts_with("site "))
            .unwrap_or_else(|| panic!("no stack after line {i}: {text}"));
        let first = site.split(' ').nth(2).unwrap_or_else(|| panic!("{text}"));
        let (index, addr) = first.split_once(':').unwrap();
        assert_eq!(module(index), cat.to_str(), "{text}");
        assert!(u64::from_str_radix(addr, 16).unwrap() > 0, "{text}");
    }
}

/// The host half of the pass-mode tests below, which run this test binary
/// again with the injector loaded and `FDWINDOW_PRELOAD_HOST` naming what
/// to do; with the variable unset (any other run) it does nothing.
#[test]
fn preload_host() {
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;
    let Ok(what) = std::env::var("FDWINDOW_PRELOAD_HOST") else {
        return;
    };
    let answer = match what.as_str() {
        // An flock released by dropping its file, then taken again.
        "flock" => {
            let path = std::env::var("FDWINDOW_PRELOAD_FILE").unwrap();
            let f = std::fs::File::create(&path).unwrap();
            rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive).unwrap();
            drop(f);
            let g = std::fs::File::options().write(true).open(&path).unwrap();
            match rustix::fs::flock(&g, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => "relocked",
                Err(_) => "still held",
            }
        }
        // Every descriptor above 2 closed, then a listener dropped.
        "close-range" => {
            // SAFETY: close_range takes plain integers; this process owns
            // every descriptor it closes and uses none of them again.
            assert_eq!(unsafe { libc::close_range(3, u32::MAX, 0) }, 0);
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let at = listener.local_addr().unwrap();
            assert!(listener.as_raw_fd() > 2);
            drop(listener);
            match TcpStream::connect(at) {
                Ok(_) => "accepted",
                Err(_) => "refused",
            }
        }
        // A port picked with a listener, dropped, then bound again, the
        // error swallowed as a port picker's `is_free(port)` does.
        "pick-port" => {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            match TcpListener::bind(("127.0.0.1", port)) {
                Ok(_) => "free",
                Err(_) => "taken",
            }
        }
        other => panic!("FDWINDOW_PRELOAD_HOST={other}?"),
    };
    println!("host: {answer}");
}

/// Runs [`preload_host`] doing `what` under `spec` (none: no injector);
/// returns its answer and the injector's report.
fn host(what: &str, spec: Option<&str>, file: &std::path::Path) -> (String, String) {
    let injector = common::injector();
    let report = file.with_extension("report");
    let _ = std::fs::remove_file(&report);
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "preload_host", "--nocapture", "--test-threads=1"])
        .env("FDWINDOW_PRELOAD_HOST", what)
        .env("FDWINDOW_PRELOAD_FILE", file)
        .stdin(Stdio::null());
    if let Some(spec) = spec {
        cmd.env("LD_PRELOAD", injector.path())
            .env("FDWINDOW_PRESSURE", spec)
            .env("FDWINDOW_PRESSURE_REPORT", &report);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", common::stderr(&out));
    let answer = stdout
        .lines()
        .find_map(|l| l.split_once("host: ").map(|(_, answer)| answer))
        .unwrap_or_else(|| panic!("no answer: {stdout}"));
    (
        answer.to_owned(),
        std::fs::read_to_string(&report).unwrap_or_default(),
    )
}

/// The `holds PID HELD SKIPPED` counts of a report.
fn hold_counts(report: &str) -> Vec<u64> {
    report
        .lines()
        .find_map(|l| l.strip_prefix("holds "))
        .unwrap_or_else(|| panic!("no holds line: {report}"))
        .split(' ')
        .skip(1)
        .map(|n| n.parse().unwrap())
        .collect()
}

/// hold-by=pass (the default) holds every close but a loop's while its copy
/// lives: `cat` given one file 50 times closes it 50 times at one call site
/// within the 5 s hold, so the first copy is held (with its stack), the
/// other 49 closes are let through as `loop`, none for any other reason,
/// and no holder outlives it.
#[test]
fn passed_copies_hold_every_close() {
    let (text, file) = cat_fifty_times("close-hold=file,hold=5s");
    let held: Vec<&str> = text.lines().filter(|l| l.starts_with("held ")).collect();
    assert_eq!(held.len(), 1, "{text}");
    assert!(
        held.iter().all(|l| l.ends_with(file.to_str().unwrap())),
        "{text}"
    );
    let sites = text.lines().filter(|l| l.starts_with("site ")).count();
    assert_eq!(sites, 1, "{text}");
    assert_eq!(hold_counts(&text), [1, 49], "{text}");
    let unheld: Vec<&str> = text.lines().filter(|l| l.starts_with("unheld ")).collect();
    assert_eq!(unheld.len(), 49, "{text}");
    assert!(unheld.iter().all(|l| l.ends_with(" loop")), "{text}");
    // The holder, a fork of cat (so its command line names the file), was
    // reaped before cat exited.
    assert_eq!(
        common::processes_mentioning(file.to_str().unwrap()),
        [] as [u32; 0]
    );
}

/// A passed copy keeps an flock as a forked child's copy does, and the
/// pass sham (the same message without the descriptor) keeps nothing.
#[test]
fn a_passed_copy_keeps_the_lock_and_its_sham_does_not() {
    let scratch = common::scratch("preload-pass-lock");
    let file = scratch.dir().join("lock");
    for (spec, want) in [
        (None, "relocked"),
        (Some("close-hold=file,hold=5s"), "still held"),
        (Some("close-hold=file,hold=5s,drop=all"), "relocked"),
        (Some("close-hold=file,hold=5s,hold-by=fork"), "still held"),
        (
            Some("close-hold=file,hold=5s,hold-by=fork,drop=all"),
            "relocked",
        ),
    ] {
        let (answer, report) = host("flock", spec, &file);
        assert_eq!(answer, want, "{spec:?}: {report}");
        if spec.is_some() {
            // The injector names the lock the copy keeps.
            let lock = format!("file {} [lock: flock]", file.display());
            assert!(
                report
                    .lines()
                    .any(|l| l.starts_with("held ") && l.ends_with(&lock)),
                "{spec:?}: {report}"
            );
        }
    }
}

/// A bind refused as in use while close-hold is armed is reported (`busy`),
/// once per refusal, so the diagnosis names port-pick where the test only
/// sees `false`; a bind that succeeds, or a run without close-hold, reports
/// none.
#[test]
fn a_refused_bind_is_reported_busy() {
    let scratch = common::scratch("preload-busy-bind");
    let file = scratch.dir().join("unused");
    for (spec, want, busy) in [
        (Some("close-hold=listener,hold=5s"), "taken", 1),
        (Some("close-hold=listener,hold=5s,drop=all"), "free", 0),
        (None, "free", 0),
    ] {
        let (answer, report) = host("pick-port", spec, &file);
        assert_eq!(answer, want, "{spec:?}: {report}");
        let lines = report.lines().filter(|l| l.starts_with("busy ")).count();
        assert_eq!(lines, busy, "{spec:?}: {report}");
    }
}

/// A test that closes every descriptor above 2 (close_range, through libc)
/// closes neither the injector's report nor the holder's socket: the
/// listener it drops afterwards is held and reported like any other.
#[test]
fn closing_every_descriptor_leaves_the_injector_holding() {
    let scratch = common::scratch("preload-close-range");
    let file = scratch.dir().join("unused");
    let (alone, _) = host("close-range", None, &file);
    assert_eq!(alone, "refused");
    let (held, report) = host("close-range", Some("close-hold=listener,hold=5s"), &file);
    assert_eq!(held, "accepted", "{report}");
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("held ") && l.contains(" listener tcp 127.0.0.1:")),
        "{report}"
    );
    let counts = hold_counts(&report);
    assert!(counts[0] >= 1 && counts[1] == 0, "{report}");
}
