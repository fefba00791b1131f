//! A clone on a machine the committed results have never seen: a default run
//! of another host build of the same kernel, whose id sorts before the
//! committed thorough run's, lands beside the committed files. The figures the
//! views quote, the claims check and every test's choice of file stay as they
//! were, and `make probe-linux`'s own folder is never read as committed.

mod common;

use std::fs;
use std::path::Path;

use fdwindow::evidence::query::quoted_file;
use fdwindow::report::ResultsFile;
use fdwindow::report::platform::{Platform, Virtualization};
use fdwindow::report::verdict::Kind;
use fdwindow::views::readme::{Inputs, SECTIONS};

/// The quoted file as a default run on another host build of its kernel
/// would write it: a release that sorts first among the real machines'
/// (same upstream version, so every claim on the version still applies),
/// and only the deterministic cells (fewer than the thorough run's).
fn new_host_build(quoted: &ResultsFile) -> ResultsFile {
    let mut f = quoted.clone();
    let p = &mut f.platform;
    // The numeric release alone, then "-0": it sorts before every host
    // build's suffix (`-fc-v657`, `-fc-v1300`), however many are committed.
    let upstream: String = p
        .kernel_upstream()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    p.kernel_release = format!("{upstream}-0-new-host-build");
    p.id = Platform::make_id(
        &p.os,
        &p.kernel_release,
        &p.upstream_version,
        &p.arch,
        &p.libc,
        &p.libc_version,
        p.virtualization,
    );
    for report in f.probes.values_mut() {
        report.platform = f.platform.clone();
        report.arms.retain(|a| a.kind == Kind::Deterministic);
        // Its cells are a subset no real run's scope names (a default run
        // also races the controls): recorded without one, as files from
        // before runs recorded their scope are, so check holds its cells
        // to the claims and not to a scope it does not have.
        report.scope = None;
    }
    f
}

/// The sections of the README that quote one results file, rendered.
fn quoting_sections(dir: &Path) -> Vec<(&'static str, String)> {
    let inputs = Inputs::load(dir, String::new()).unwrap();
    SECTIONS
        .iter()
        .filter(|s| ["verdict-example", "showed", "spawn-window"].contains(&s.name))
        .map(|s| (s.name, (s.render)(&inputs)))
        .collect()
}

#[test]
fn a_new_host_build_beside_the_committed_files_changes_no_quoted_figure() {
    let s = common::scratch("new-machine");
    let dir = s.dir().join("results");
    common::copy_committed_results(&dir);
    let files = fdwindow::evidence::results::load_dir(&dir).unwrap();
    let quoted = quoted_file(&files, "linux")
        .expect("a committed Linux file of a real machine")
        .clone();
    let before = quoting_sections(&dir);
    assert!(
        before
            .iter()
            .all(|(_, text)| text.contains(&quoted.platform.id)),
        "each quoting section names its file: {before:?}"
    );

    let fake = new_host_build(&quoted);
    let real_ids: Vec<&str> = files
        .iter()
        .filter(|f| f.platform.os == "linux" && !f.platform.emulated())
        .map(|f| f.platform.id.as_str())
        .collect();
    assert!(
        real_ids.iter().all(|id| fake.platform.id.as_str() < *id),
        "{} sorts first among {real_ids:?}",
        fake.platform.id
    );
    fs::write(
        dir.join(format!("{}.json", fake.platform.id)),
        serde_json::to_string_pretty(&fake).unwrap(),
    )
    .unwrap();

    // A TCG guest's run of the same cells, measured later, is not quoted
    // either: its race cells time QEMU.
    let mut tcg = quoted.clone();
    tcg.platform.virtualization = Virtualization::Tcg;
    tcg.platform.id = Platform::make_id(
        &tcg.platform.os,
        &format!("{}-tcg-guest", tcg.platform.kernel_upstream()),
        "",
        &tcg.platform.arch,
        &tcg.platform.libc,
        &tcg.platform.libc_version,
        Virtualization::Tcg,
    );
    for report in tcg.probes.values_mut() {
        report.platform = tcg.platform.clone();
        report.started_at = "2999-01-01T00:00:00Z".into();
        for a in &mut report.arms {
            a.emulated = fdwindow::vm::emulated(&tcg.platform, a.kind, a.arm.contains("stall"));
        }
    }
    fs::write(
        dir.join(format!("{}.json", tcg.platform.id)),
        serde_json::to_string_pretty(&tcg).unwrap(),
    )
    .unwrap();

    let files = fdwindow::evidence::results::load_dir(&dir).unwrap();
    assert_eq!(
        quoted_file(&files, "linux").unwrap().platform.id,
        quoted.platform.id
    );
    assert_eq!(quoting_sections(&dir), before);
    // The tests' template is the same file.
    let mut files = files;
    assert_eq!(
        common::quoted_linux(&mut files).platform.id,
        quoted.platform.id
    );
    // Its cells agree with the claims, as the committed ones do.
    let out = common::fdwindow()
        .args(["check", "--results"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// `make probe-linux` writes `results/local/` (git-ignored); a results file
/// there is never loaded as one of the committed results.
#[test]
fn the_local_folder_is_not_read_as_committed_results() {
    let s = common::scratch("new-machine-local");
    let dir = s.dir().join("results");
    common::copy_committed_results(&dir);
    let committed = fdwindow::evidence::results::load_dir(&dir).unwrap().len();
    let local = dir.join("local");
    fs::create_dir(&local).unwrap();
    let files = fdwindow::evidence::results::load_dir(&dir).unwrap();
    let fake = new_host_build(quoted_file(&files, "linux").unwrap());
    fs::write(
        local.join(format!("{}.json", fake.platform.id)),
        serde_json::to_string_pretty(&fake).unwrap(),
    )
    .unwrap();
    assert_eq!(
        fdwindow::evidence::results::load_dir(&dir).unwrap().len(),
        committed
    );
    assert_eq!(
        fdwindow::evidence::results::load_dir(&local).unwrap().len(),
        1
    );

    let ignore =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "/results/local/"), "{ignore}");
    // What `make probe-linux` would run (make -n runs nothing).
    let runs = |extra: &[&str]| {
        let out = std::process::Command::new("make")
            .args(["-n", "--no-print-directory", "probe"])
            .args(extra)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            // Neither this environment's RESULTS nor one an outer make
            // passes down (`make test RESULTS=…` puts it in MAKEFLAGS).
            .env_remove("RESULTS")
            .env_remove("MAKEFLAGS")
            .env_remove("MFLAGS")
            .env_remove("MAKELEVEL")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let default = runs(&[]);
    assert!(
        default.contains("fdwindow run --results results/local\n"),
        "{default}"
    );
    let asked = runs(&["RESULTS=results"]);
    assert!(
        asked.contains("fdwindow run --results results\n"),
        "{asked}"
    );
}

/// After `make probe-linux` on a machine the committed results lack, the read
/// commands answer from its `results/local/` without being told: `verdict`
/// and `summary` print what they print with `--results results/local`, and
/// say which file answered; `advise` and `check` name this machine's file
/// among their sources, and say when it is missing. `fdwindow run` writes
/// there by default. Run from a scratch folder laid out as a clone.
#[test]
fn the_read_commands_answer_from_this_machines_run_by_default() {
    let s = common::scratch("new-machine-default");
    let root = s.dir();
    let committed = root.join("results");
    common::copy_committed_results(&committed);
    // A machine the committed results have never seen (this one may be
    // among them: its file goes).
    let here = Platform::detect();
    let _ = fs::remove_file(committed.join(format!("{}.json", here.id)));
    let cli = |args: &[&str]| {
        let out = common::fdwindow()
            .args(args)
            .current_dir(root)
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let (_, advice, _) = cli(&["advise", "flock-survival"]);
    assert!(
        advice.contains(&format!("this machine ({}) has no measurements", here.id)),
        "{advice}"
    );
    let (code, _, err) = cli(&["verdict", "flock-survival", "close"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("make probe-linux"), "{err}");

    // This machine's run, as `make probe-linux` leaves it: the quoted
    // file's cells measured here.
    let files = fdwindow::evidence::results::load_dir(&committed).unwrap();
    let mut mine = quoted_file(&files, "linux").unwrap().clone();
    mine.platform = here.clone();
    for report in mine.probes.values_mut() {
        report.platform = here.clone();
    }
    let local = committed.join("local");
    fs::create_dir(&local).unwrap();
    let mine_path = format!("results/local/{}.json", here.id);
    fs::write(
        root.join(&mine_path),
        serde_json::to_string_pretty(&mine).unwrap(),
    )
    .unwrap();
    let said = format!("{mine_path} (this machine)");
    for args in [&["verdict", "flock-survival", "close"][..], &["summary"]] {
        let (code, by_default, err) = cli(args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        let named = cli(&[args, &["--results", "results/local"]].concat());
        assert_eq!(by_default, named.1, "{args:?}");
        assert!(
            err.contains(&said) || by_default.contains(&said),
            "{args:?}: {err}{by_default}"
        );
    }
    for args in [&["advise", "flock-survival"][..], &["check"]] {
        let (code, out, err) = cli(args);
        assert!(matches!(code, Some(0 | 1)), "{args:?}: {err}");
        assert!(out.contains(&format!("read {said}")), "{args:?}: {out}");
        assert!(out.contains("read results/linux-"), "{args:?}: {out}");
        assert!(!out.contains("has no measurements"), "{args:?}: {out}");
    }
    // `--results DIR` is that folder alone.
    let (_, out, _) = cli(&["check", "--results", "results"]);
    assert!(!out.contains("read results/local"), "{out}");
    assert!(out.contains("has no measurements"), "{out}");

    // `fdwindow run` writes results/local by default, not the committed folder.
    let before = fdwindow::evidence::results::load_dir(&committed).unwrap();
    let out = common::fdwindow()
        .args(["run", "--only", "bind-matrix"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let after = fdwindow::evidence::results::load_dir(&local).unwrap();
    assert!(after[0].probes.contains_key("bind-matrix"));
    assert_eq!(
        fdwindow::evidence::results::load_dir(&committed).unwrap(),
        before
    );
}
