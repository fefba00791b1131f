//! No data lost on malformed input: a results file that a rewrite would
//! cut down (a repeated key, an unknown field, a report under another
//! hazard's key or of another platform) is refused by every command that
//! rewrites or merges from it, with one line naming the file and the
//! problem, exit 2 and every file left byte for byte; and the folder
//! messages say what is wrong (not a directory, does not exist, permission
//! denied, a lock file that is a folder, interrupted while waiting for the
//! lock, a README without a generated section).
//!
//! Each test builds its own folder from a committed results file, retargeted
//! to this machine's platform: the file `fdwindow run` here would rewrite.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use common::{fdwindow, scratch, stderr};
use fdwindow_fix::base::scratch::Scratch;

/// A committed results file that holds bind-matrix and other probes, as a
/// document, moved onto this machine's platform (the file and each report).
fn template() -> Value {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let files = fdwindow::evidence::results::load_dir(&committed).unwrap();
    let file = files
        .iter()
        .find(|f| {
            !f.platform.emulated() && f.probes.len() > 2 && f.probes.contains_key("bind-matrix")
        })
        .expect("a committed results file of a real machine with bind-matrix and more");
    let path = committed.join(format!("{}.json", file.platform.id));
    let mut doc: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    let here = serde_json::to_value(fdwindow::report::platform::Platform::detect()).unwrap();
    doc["platform"] = here.clone();
    // On an emulated machine its statistical cells must say so.
    let emulated = fdwindow::report::platform::Platform::detect().emulated();
    for report in doc["probes"].as_object_mut().unwrap().values_mut() {
        report["platform"] = here.clone();
        for arm in report["arms"].as_array_mut().unwrap() {
            arm["emulated"] = json!(emulated && arm["kind"] == "statistical");
        }
    }
    doc
}

/// A fixture: a scratch folder holding one results file of this platform.
struct Fixture {
    _scratch: Scratch,
    /// The folder `--results` names.
    dir: PathBuf,
    /// The results file in it.
    file: PathBuf,
}

fn fixture(label: &str, text: &str) -> Fixture {
    let s = scratch(label);
    let dir = s.dir().join("results");
    fs::create_dir(&dir).unwrap();
    let id = fdwindow::report::platform::Platform::detect().id;
    let file = dir.join(format!("{id}.json"));
    fs::write(&file, text).unwrap();
    Fixture {
        _scratch: s,
        dir,
        file,
    }
}

/// Every file under `dir` with its bytes (nothing when it does not exist).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return files;
    };
    for e in entries {
        let path = e.unwrap().path();
        if path.is_dir() {
            files.insert(path.clone(), Vec::new());
            files.extend(snapshot(&path));
        } else {
            files.insert(path.clone(), fs::read(&path).unwrap());
        }
    }
    files
}

/// Runs `cmd` and asserts it refused: exit 2, exactly one line on stderr,
/// starting `error: <starts>` and holding `says`, and every file under each
/// of `dirs` byte-identical afterwards. The one file that may appear is an
/// empty `.fdwindow.lock`: `matrix` takes the folder's lock before it reads
/// (so that it reads what no writer is changing), which creates the file.
fn refused(cmd: &mut Command, dirs: &[&Path], starts: &str, says: &str) -> Output {
    let before: Vec<_> = dirs.iter().map(|d| snapshot(d)).collect();
    let out = cmd.output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{cmd:?}: not one line: {err}");
    assert!(
        err.starts_with(&format!("error: {starts}")) && err.contains(says),
        "{cmd:?}: wanted `error: {starts}…{says}…`, got {err}"
    );
    for (d, before) in dirs.iter().zip(before) {
        let mut after = snapshot(d);
        let lock = d.join(".fdwindow.lock");
        if !before.contains_key(&lock) && after.get(&lock).is_some_and(Vec::is_empty) {
            after.remove(&lock);
        }
        assert_eq!(after, before, "{cmd:?} changed {}", d.display());
    }
    out
}

/// `<path>: `, how a refusal of a file starts.
fn at(path: &Path) -> String {
    format!("{}: ", path.display())
}

/// `fdwindow run --only bind-matrix` on `dir`.
fn run_bind_matrix(dir: &Path) -> Command {
    let mut cmd = fdwindow();
    cmd.args(["run", "--only", "bind-matrix", "--results"])
        .arg(dir);
    cmd
}

fn matrix(dir: &Path) -> Command {
    let mut cmd = fdwindow();
    cmd.args(["matrix", "--results"]).arg(dir);
    cmd
}

fn merge(input: &Path, into: &Path) -> Command {
    let mut cmd = fdwindow();
    cmd.arg("merge").arg(input).arg("--results").arg(into);
    cmd
}

/// A bad results file is refused by `run`, `matrix`, and `merge` both as an
/// input and in the folder merged into (which holds a good file besides).
fn refused_everywhere(label: &str, bad: &str, says: &str) {
    let f = fixture(label, bad);
    let file = at(&f.file);
    refused(&mut run_bind_matrix(&f.dir), &[&f.dir], &file, says);
    refused(&mut matrix(&f.dir), &[&f.dir], &file, says);
    let other = f.dir.with_file_name("other");
    fs::create_dir(&other).unwrap();
    refused(&mut merge(&f.dir, &other), &[&f.dir, &other], &file, says);
    let good = other.join("good.json");
    fs::write(&good, text(&template())).unwrap();
    refused(&mut merge(&good, &f.dir), &[&f.dir, &other], &file, says);
}

/// `{"k": v, …}` from entries (each value as JSON text) in order, repeats
/// and all.
fn object(entries: &[(&str, String)]) -> String {
    let members: Vec<String> = entries
        .iter()
        .map(|(k, v)| format!("{}: {v}", json!(k)))
        .collect();
    format!("{{\n{}\n}}\n", members.join(",\n"))
}

fn text(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

/// The template itself is read by every command the tests run, so each
/// refusal below is the mutation's doing.
#[test]
fn the_unmutated_fixture_loads() {
    let doc = template();
    let f = fixture("bad-input-good", &text(&doc));
    let out = matrix(&f.dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let other = f.dir.with_file_name("other");
    let out = merge(&f.dir, &other).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let merged = fdwindow::evidence::results::load_dir(&other).unwrap();
    assert_eq!(
        merged[0].probes.len(),
        doc["probes"].as_object().unwrap().len()
    );
}

/// serde_json keeps the last of two `"probes"`: here the one with
/// bind-matrix alone, which a run would have written back in place of all.
#[test]
fn a_repeated_probes_key_is_refused() {
    let doc = template();
    let only = json!({"bind-matrix": doc["probes"]["bind-matrix"]});
    let file = object(&[
        ("schema", text(&doc["schema"])),
        ("platform", text(&doc["platform"])),
        ("probes", text(&doc["probes"])),
        ("probes", text(&only)),
    ]);
    refused_everywhere(
        "bad-input-dup-probes",
        &file,
        r#"duplicate key "probes" in the top-level object at line "#,
    );
}

#[test]
fn a_repeated_hazard_key_is_refused() {
    let doc = template();
    let probes = doc["probes"].as_object().unwrap();
    let mut entries: Vec<(&str, String)> =
        probes.iter().map(|(k, v)| (k.as_str(), text(v))).collect();
    entries.push(("bind-matrix", text(&probes["bind-matrix"])));
    let file = object(&[
        ("schema", text(&doc["schema"])),
        ("platform", text(&doc["platform"])),
        ("probes", object(&entries)),
    ]);
    refused_everywhere(
        "bad-input-dup-hazard",
        &file,
        r#"duplicate key "bind-matrix" in /probes at line "#,
    );
}

/// An unknown field is refused whatever it holds: one holding `0`, `null`,
/// `false` or `[]` looks like a known field the writer skips at its
/// default, and a rewrite would drop it all the same.
#[test]
fn an_unknown_field_is_refused() {
    for (n, value) in [
        json!("added by hand"),
        json!(0),
        json!(null),
        json!(false),
        json!([]),
    ]
    .into_iter()
    .enumerate()
    {
        let mut doc = template();
        let with_arms = doc["probes"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(_, r)| r["arms"].as_array().is_some_and(|a| !a.is_empty()))
            .map(|(h, _)| h.clone())
            .expect("a report with arms");
        let arm = &mut doc["probes"][&with_arms]["arms"][0];
        let place: &mut Value = match n {
            0 => &mut doc["probes"]["bind-matrix"]["tables"][0],
            1 => &mut doc,
            2 => arm,
            3 => &mut arm["outcome"],
            _ => &mut doc["probes"]["bind-matrix"],
        };
        place["note"] = value.clone();
        refused_everywhere(
            &format!("bad-input-unknown-{n}"),
            &text(&doc),
            "unknown field `note`",
        );
    }
}

#[test]
fn a_report_under_another_hazards_key_is_refused() {
    let mut doc = template();
    let hazards: Vec<String> = doc["probes"].as_object().unwrap().keys().cloned().collect();
    let other = hazards.iter().find(|h| *h != "bind-matrix").unwrap();
    doc["probes"][other] = doc["probes"]["bind-matrix"].clone();
    refused_everywhere(
        "bad-input-key",
        &text(&doc),
        &format!("entry {other} holds a report for bind-matrix"),
    );
}

#[test]
fn a_report_of_another_platform_is_refused() {
    let mut doc = template();
    let here = doc["platform"]["id"].as_str().unwrap().to_owned();
    let foreign = "linux-0.0.1-x86_64-glibc2.36-bare";
    doc["probes"]["bind-matrix"]["platform"]["id"] = json!(foreign);
    refused_everywhere(
        "bad-input-platform",
        &text(&doc),
        &format!("the bind-matrix report ran on platform {foreign}, not on this file's {here}"),
    );
}

/// A regular file named as a folder says so, for every command.
#[test]
fn a_file_given_as_a_folder_is_not_a_directory() {
    let f = fixture("bad-input-notdir", &text(&template()));
    let file = &f.file;
    let says = format!("{} is not a directory", file.display());
    // And the other way: a folder named as the probe program.
    let mut run = fdwindow();
    run.args(["run", "--only", "bind-matrix", "--results"])
        .arg(&f.dir)
        .arg("--probe-exe")
        .arg(&f.dir);
    let not_a_file = format!("{} is not a file", f.dir.display());
    refused(&mut run, &[&f.dir], "probe program ", &not_a_file);
    let mut cmds = vec![run_bind_matrix(file), matrix(file), merge(&f.dir, file)];
    for args in [
        &["verdict", "bind-matrix", "x"][..],
        &["summary"],
        &["advise", "flock-survival"],
        &["advise", "--list"],
        &["check"],
    ] {
        let mut cmd = fdwindow();
        cmd.args(args).arg("--results").arg(file);
        cmds.push(cmd);
    }
    for mut cmd in cmds {
        let out = refused(&mut cmd, &[&f.dir], "", &says);
        assert!(!stderr(&out).contains("does not exist"), "{}", stderr(&out));
    }
}

/// The read commands refuse a folder that is not there rather than take it
/// for an empty one (`advise` used to say nothing and exit 0).
#[test]
fn a_missing_results_folder_does_not_exist() {
    let s = scratch("bad-input-missing");
    let missing = s.dir().join("no-such-results");
    for args in [
        &["verdict", "flock-survival", "close"][..],
        &["summary"],
        &["advise", "flock-survival"],
        &["advise", "--list"],
        &["check"],
    ] {
        let mut cmd = fdwindow();
        cmd.args(args).arg("--results").arg(&missing);
        let says = format!("results folder {} does not exist", missing.display());
        let out = refused(&mut cmd, &[s.dir()], &says, "");
        assert!(
            !stderr(&out).contains("make probe-linux"),
            "{}",
            stderr(&out)
        );
        assert!(!missing.exists());
    }
}

/// A lock file that is a folder is found before any probe runs (the one
/// line says so: no `probing …` line before it), and before any write.
#[test]
fn a_lock_file_that_is_a_folder_is_found_first() {
    let f = fixture("bad-input-lockdir", &text(&template()));
    let lock = f.dir.join(".fdwindow.lock");
    fs::create_dir(&lock).unwrap();
    let says = &format!("open {}: Is a directory", lock.display());
    refused(&mut run_bind_matrix(&f.dir), &[&f.dir], "", says);
    refused(&mut matrix(&f.dir), &[&f.dir], "", says);
    let other = f.dir.with_file_name("other");
    fs::create_dir(&other).unwrap();
    let good = other.join("good.json");
    fs::write(&good, fs::read(&f.file).unwrap()).unwrap();
    refused(&mut merge(&good, &f.dir), &[&f.dir, &other], "", says);
}

#[test]
fn a_readme_without_sections_is_refused() {
    let f = fixture("bad-input-readme", &text(&template()));
    let readme = f.dir.with_file_name("README.md");
    fs::write(&readme, "# A readme\n\nNo generated section here.\n").unwrap();
    let mut cmd = matrix(&f.dir);
    cmd.arg("--readme").arg(&readme);
    refused(
        &mut cmd,
        &[f.dir.parent().unwrap()],
        &at(&readme),
        "no generated section",
    );
}

/// `matrix` stopped while it waits for the folder's lock says it was
/// interrupted and exits 128+N, writing nothing.
///
/// 1. The test holds the lock.
/// 2. It starts `matrix`, and polls (bounded, with backoff) until the
///    child holds the lock file open: it is then in its wait, with its
///    signal handlers installed before the open.
/// 3. It sends the signal, and the child ends.
///
/// Linux only: step 2 reads the child's descriptors in /proc.
#[cfg(target_os = "linux")]
#[test]
fn matrix_interrupted_waiting_for_the_lock_says_so() {
    let f = fixture("bad-input-sigint", &text(&template()));
    let lock_path = f.dir.join(".fdwindow.lock");
    let lock = fs::File::create(&lock_path).unwrap();
    // /proc's links name the resolved path.
    let lock_path = fs::canonicalize(&lock_path).unwrap();
    lock.lock().unwrap();
    let before = snapshot(&f.dir);
    for (sig, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let mut child = matrix(&f.dir)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let fds = PathBuf::from(format!("/proc/{}/fd", child.id()));
        let holds_lock = || {
            fs::read_dir(&fds).is_ok_and(|entries| {
                entries
                    .filter_map(Result::ok)
                    .any(|e| fs::read_link(e.path()).is_ok_and(|target| target == lock_path))
            })
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut pause = std::time::Duration::from_millis(1);
        while !holds_lock() {
            assert!(
                std::time::Instant::now() < deadline,
                "matrix never opened the lock"
            );
            assert!(child.try_wait().unwrap().is_none(), "matrix ended early");
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(50));
        }
        let pid = libc::pid_t::try_from(child.id()).unwrap();
        // SAFETY: kill has no memory preconditions; pid is our own child,
        // not yet reaped.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(code), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("interrupted"), "{err}");
        assert!(!err.contains("not writable"), "{err}");
        assert_eq!(snapshot(&f.dir), before);
    }
}

/// `verdict` on an observation (a probe of tables, no arms) names its rows
/// when asked for one it lacks, never an empty list of arms.
#[test]
fn an_unknown_row_of_an_observation_lists_the_rows() {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
    let files = fdwindow::evidence::results::load_dir(&committed).unwrap();
    let file = files
        .iter()
        .find(|f| {
            f.probes
                .get("spawn-window")
                .is_some_and(|r| r.arms.is_empty())
        })
        .expect("a committed spawn-window observation");
    let out = fdwindow()
        .args(["verdict", "spawn-window", "no-such-row", "--platform"])
        .arg(&file.platform.id)
        .arg("--results")
        .arg(&committed)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    let row = &file.probes["spawn-window"].tables[0].rows[0][0];
    assert!(
        err.contains("unknown row \"no-such-row\" for spawn-window; rows: ")
            && err.contains(row.as_str()),
        "{err}"
    );
}
