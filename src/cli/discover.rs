//! From the audited command to the test binaries and tests to run directly:
//! a libtest binary as given; `cargo test …` built with `--no-run` and read
//! from cargo's JSON messages ([`cargo_metadata`]); `cargo nextest run …`
//! listed with `cargo nextest list --message-format json`
//! ([`nextest_metadata`]). Building first keeps cargo, rustc and nextest out
//! of the pressure, and one failing binary cannot stop the others.
//!
//! Every argument keeps its meaning: cargo's build options go to the build,
//! cargo's `TESTNAME` and everything after `--` to the binaries, nextest's
//! filters (names, `-E` filtersets, `--partition`) to its own listing. The
//! tests are what the binaries list with those filters (`--list --format
//! terse`), so a filter that matches nothing leaves nothing to audit, which
//! is an error, never a green report.
//!
//! # References
//! - <https://doc.rust-lang.org/cargo/commands/cargo-test.html> (`TESTNAME`,
//!   the options that take a value)
//! - <https://doc.rust-lang.org/cargo/reference/external-tools.html#json-messages>
//! - <https://doc.rust-lang.org/rustc/tests/index.html> (libtest's options)
//! - <https://nexte.st/docs/machine-readable/list/>

use fdwindow::error::{Error, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nextest_metadata::{RustBinaryId, RustBuildMetaSummary, RustTestBinaryKind, TestListSummary};

/// One test binary to audit.
#[derive(Debug, Clone)]
pub struct Binary {
    /// How reports name it: nextest's binary id (`pkg`, `pkg::test_target`,
    /// `pkg::bin/name`), or the file name of a binary given directly.
    pub name: String,
    /// The executable.
    pub path: PathBuf,
    /// Where it runs (cargo and nextest run tests in the package's folder).
    pub cwd: Option<PathBuf>,
    /// libtest options for every run (`--test-threads`, `--include-ignored`…):
    /// the user's, less the selection and the output options the audit
    /// reads for itself.
    pub options: Vec<String>,
    /// The user's selection (filters, `--exact`, `--skip`): applied when
    /// listing, so that [`Binary::tests`] is what it selects.
    pub selection: Vec<String>,
    /// The options and the selection in the user's order: what a run of
    /// the whole selection passes.
    pub args: Vec<String>,
    /// Run each test in its own process, as nextest does.
    pub per_test: bool,
    /// How many of its test processes run at once: nextest's test threads
    /// where each test is a process, else 1 (libtest runs its own threads).
    pub jobs: usize,
    /// The user's source tree: cargo's workspace root, else the current
    /// folder (`None`). Call sites in reports are relative to it.
    pub root: Option<PathBuf>,
    /// The tests to audit, in libtest's (sorted) order.
    pub tests: Vec<String>,
    /// Tests marked `#[ignore]` that the user asked to run (nextest's
    /// `--run-ignored`): each needs `--ignored` when run on its own.
    pub ignored: BTreeSet<String>,
    /// Whether [`Binary::tests`] is one shard of what the selection selects
    /// (`--partition`): runs then name their tests.
    pub partitioned: bool,
    /// When the selection leaves no test: how many tests, and how many of
    /// them `#[ignore]`d, the binary holds without it.
    pub unselected: Option<(usize, usize)>,
    /// The environment cargo or nextest gives its test processes
    /// (`CARGO_PKG_*`, `CARGO_MANIFEST_DIR`, the library path…), so a test
    /// that reads it passes here as it does under them.
    pub env: Vec<(String, String)>,
}

impl Binary {
    /// The arguments of a run of all its tests.
    pub fn suite_args(&self) -> Vec<String> {
        let mut args = self.options.clone();
        if !self.partitioned {
            return self.args.clone();
        }
        args.push("--exact".into());
        args.extend(self.tests.iter().cloned());
        args
    }

    /// The runs that run each of its tests once: one per test where each
    /// runs in its own process (nextest), with that test's index in
    /// [`Binary::tests`], else one of the whole suite.
    pub fn runs(&self) -> Vec<(Vec<String>, Option<usize>)> {
        if self.per_test {
            self.tests
                .iter()
                .enumerate()
                .map(|(i, t)| (self.exact_args(t), Some(i)))
                .collect()
        } else {
            vec![(self.suite_args(), None)]
        }
    }

    /// The runs that run exactly `tests` (names of [`Binary::tests`]) once:
    /// one run of them all, or one per test where each runs in its own
    /// process; each with the indexes (into `tests`) that it runs.
    pub fn group_runs(&self, tests: &[&str]) -> Vec<(Vec<String>, Vec<usize>)> {
        // All of them, in order: the suite's own run, as the command gives it.
        if !self.per_test && tests.len() == self.tests.len() && tests.iter().eq(self.tests.iter()) {
            return vec![(self.suite_args(), (0..tests.len()).collect())];
        }
        if self.per_test || tests.len() == 1 {
            return tests
                .iter()
                .enumerate()
                .map(|(i, t)| (self.exact_args(t), vec![i]))
                .collect();
        }
        let mut args = self.options.clone();
        if tests.iter().any(|t| self.ignored.contains(*t))
            && !args.iter().any(|a| is_ignore_flag(a))
        {
            // `--include-ignored`, not `--ignored`: the group may hold both.
            args.push("--include-ignored".into());
        }
        args.push("--exact".into());
        args.extend(tests.iter().map(|t| (*t).to_owned()));
        vec![(args, (0..tests.len()).collect())]
    }

    /// The arguments of a run of `test` alone.
    pub fn exact_args(&self, test: &str) -> Vec<String> {
        let mut args = self.options.clone();
        if self.ignored.contains(test) && !args.iter().any(|a| is_ignore_flag(a)) {
            args.push("--ignored".into());
        }
        args.extend([test.to_owned(), "--exact".into()]);
        args
    }
}

/// How the audited command builds its tests.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Binary,
    CargoTest,
    Nextest,
}

fn kind(command: &[String]) -> (Kind, usize) {
    let is_cargo = Path::new(&command[0])
        .file_name()
        .is_some_and(|n| n == "cargo");
    if !is_cargo {
        return (Kind::Binary, 0);
    }
    // Skip a `+toolchain` and cargo's global options (`cargo --locked test`).
    let mut sub = None;
    let mut i = 1;
    while let Some(a) = command.get(i) {
        if CARGO_GLOBAL_VALUE_OPTIONS.contains(&a.as_str()) {
            i += 2;
        } else if a.starts_with('+') || a.starts_with('-') {
            i += 1;
        } else {
            sub = Some(i);
            break;
        }
    }
    match sub.map(|i| (i, command[i].as_str())) {
        Some((i, "test" | "t")) => (Kind::CargoTest, i + 1),
        Some((i, "nextest")) if command.get(i + 1).is_some_and(|a| a == "run" || a == "r") => {
            (Kind::Nextest, i + 2)
        }
        _ => (Kind::Binary, 0),
    }
}

/// Whether `command` is `cargo test …` or `cargo nextest run …` (after an
/// optional `+toolchain`): one that builds its test binaries.
pub fn builds_tests(command: &[String]) -> bool {
    !command.is_empty() && kind(command).0 != Kind::Binary
}

/// cargo's global options that take a value (`cargo --help`).
const CARGO_GLOBAL_VALUE_OPTIONS: &[&str] = &["--color", "--config", "-C", "-Z", "--explain"];

/// What [`discover`] found.
#[derive(Debug)]
pub struct Found {
    /// The binaries with tests to audit.
    pub binaries: Vec<Binary>,
    /// What the reader should know about the others (a binary that lists
    /// no test, one whose `--list` failed).
    pub warnings: Vec<String>,
}

/// The test binaries of `command` with their tests; `Err` says why they
/// could not be learned, or that there is nothing to audit.
pub fn discover(command: &[String]) -> Result<Found> {
    let (kind, rest_at) = kind(command);
    let shown = command.join(" ");
    let (binaries, mut warnings) = match kind {
        Kind::Binary => {
            let path = PathBuf::from(&command[0]);
            let name = path
                .file_name()
                .map_or_else(|| command[0].clone(), |n| n.to_string_lossy().into_owned());
            let mut bin = libtest_binary(name, path, None, &command[1..])?;
            list(&mut bin)?;
            (vec![bin], Vec::new())
        }
        Kind::CargoTest => cargo_test(command, rest_at)?,
        Kind::Nextest => nextest(command, rest_at)?,
    };
    let (binaries, empty): (Vec<Binary>, Vec<Binary>) =
        binaries.into_iter().partition(|b| !b.tests.is_empty());
    if binaries.is_empty() {
        let found = match kind {
            Kind::Binary => match empty.first().and_then(|b| b.unselected) {
                Some((all, ignored)) => {
                    format!("its filter selects none of its {all} tests ({ignored} #[ignore]d)")
                }
                None => "it listed no test (`--list --format terse` printed no `NAME: test` \
                         line: is it a libtest test binary?)"
                    .to_owned(),
            },
            _ => {
                let (all, ignored) = empty
                    .iter()
                    .filter_map(|b| b.unselected)
                    .fold((0, 0), |(a, i), (b, j)| (a + b, i + j));
                format!(
                    "it built {} test binaries holding {all} tests ({ignored} #[ignore]d), and \
                     its filters select none{}",
                    empty.len(),
                    warnings
                        .first()
                        .map(|w| format!("; {w}"))
                        .unwrap_or_default()
                )
            }
        };
        return Err(usage!("nothing to audit: `{shown}`: {found}"));
    }
    // A binary that lists no test at all with no filter of the user's (a
    // `harness = false` target, an empty one) is named, not dropped unseen.
    warnings.extend(
        empty
            .iter()
            .filter(|b| b.selection.is_empty() && !b.per_test)
            .map(|b| format!("{} lists no test: not audited", b.name)),
    );
    Ok(Found { binaries, warnings })
}

/// `cargo test`'s options that take a value (`cargo test --help`, cargo
/// 1.95). The ones whose value is optional (`-p`, `--test`…) take the next
/// argument unless it is an option, as cargo does.
const CARGO_VALUE_OPTIONS: &[&str] = &[
    "--message-format",
    "--color",
    "--config",
    "-Z",
    "-p",
    "--package",
    "--exclude",
    "--bin",
    "--example",
    "--test",
    "--bench",
    "-F",
    "--features",
    "-j",
    "--jobs",
    "--profile",
    "--target",
    "--target-dir",
    "--manifest-path",
    "--lockfile-path",
    "--artifact-dir",
];

/// Splits `cargo test`'s own arguments (before `--`) into the build's and
/// the `TESTNAME` filter, if any.
fn split_cargo(args: &[String]) -> Result<(Vec<String>, Option<String>)> {
    let mut build = Vec::new();
    let mut testname = None;
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        let takes_value = CARGO_VALUE_OPTIONS.contains(&a.as_str());
        match a.as_str() {
            "--doc" => return Err(Error::usage("--doc: doctests have no test binary to audit")),
            // The audit asks for these itself.
            "--no-run" => continue,
            "--message-format" => {
                it.next();
                continue;
            }
            s if s.starts_with("--message-format=") => continue,
            _ => {}
        }
        if takes_value {
            build.push(a.clone());
            if let Some(v) = it.next_if(|v| !v.starts_with('-')) {
                build.push(v.clone());
            }
        } else if a.starts_with('-') {
            build.push(a.clone());
        } else if testname.is_none() {
            testname = Some(a.clone());
        } else {
            return Err(usage!(
                "cargo test takes one TESTNAME; {a:?} is a second (more filters go after `--`)"
            ));
        }
    }
    Ok((build, testname))
}

/// libtest's options that take a value.
const LIBTEST_VALUE_OPTIONS: &[&str] = &[
    "--logfile",
    "--test-threads",
    "--skip",
    "--color",
    "--format",
    "-Z",
    "--shuffle-seed",
];

/// A libtest binary with the user's arguments split into options and
/// selection. The output options go: the audit reads libtest's plain
/// (`pretty`) output with its captured failure sections.
fn libtest_binary(
    name: String,
    path: PathBuf,
    cwd: Option<PathBuf>,
    args: &[String],
) -> Result<Binary> {
    let mut options = Vec::new();
    let mut selection = Vec::new();
    let mut kept = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, attached) = match a.split_once('=') {
            Some((f, _)) if f.starts_with("--") => (f, true),
            _ => (a.as_str(), false),
        };
        let value = if LIBTEST_VALUE_OPTIONS.contains(&flag) && !attached {
            Some(
                it.next()
                    .ok_or_else(|| usage!("{flag} needs a value"))?
                    .clone(),
            )
        } else {
            None
        };
        match flag {
            "--exact" | "--skip" => {
                selection.push(a.clone());
                selection.extend(value.clone());
            }
            "--format" | "--color" | "-q" | "--quiet" | "--nocapture" | "--no-capture"
            | "--list" => continue,
            "-h" | "--help" => return Err(usage!("{name}: --help is not a run to audit")),
            "--bench" => {
                return Err(usage!("{name}: --bench runs benchmarks, not tests"));
            }
            f if f.starts_with('-') => {
                options.push(a.clone());
                options.extend(value.clone());
            }
            _ => selection.push(a.clone()),
        }
        kept.push(a.clone());
        kept.extend(value);
    }
    Ok(Binary {
        name,
        path,
        cwd,
        partitioned: false,
        env: Vec::new(),
        unselected: None,
        args: kept,
        options,
        selection,
        per_test: false,
        jobs: 1,
        root: None,
        tests: Vec::new(),
        ignored: BTreeSet::new(),
    })
}

/// Whether libtest's `a` runs `#[ignore]`d tests (`--ignored`, `--include-ignored`).
fn is_ignore_flag(a: &str) -> bool {
    a == "--ignored" || a == "--include-ignored"
}

/// Lists `bin`'s tests with its options and selection: what a run of it
/// runs. Tests marked `#[ignore]` are left out unless the options run them,
/// and those kept are in [`Binary::ignored`].
fn list(bin: &mut Binary) -> Result<()> {
    let only_ignored = bin.options.iter().any(|o| o == "--ignored");
    let runs_ignored = bin.options.iter().any(|o| is_ignore_flag(o));
    let listed = listing(bin, &bin.args, &[])?;
    // libtest refuses --ignored twice, or beside --include-ignored.
    let ignored: BTreeSet<String> = if only_ignored || listed.is_empty() {
        listed.iter().cloned().collect()
    } else {
        let args: Vec<String> = bin
            .args
            .iter()
            .filter(|o| !is_ignore_flag(o))
            .cloned()
            .collect();
        listing(bin, &args, &["--ignored"])?.into_iter().collect()
    };
    // The ignored listing has the same selection, so the ignored tests the
    // options run are all in `tests`; options that run none leave none.
    bin.tests = listed
        .into_iter()
        .filter(|t| runs_ignored || !ignored.contains(t))
        .collect();
    bin.ignored = if runs_ignored {
        ignored
    } else {
        BTreeSet::new()
    };
    if bin.tests.is_empty() && !bin.selection.is_empty() {
        let all = listing(bin, &[], &[])?.len();
        let ignored = listing(bin, &[], &["--ignored"])?.len();
        bin.unselected = Some((all, ignored));
    }
    Ok(())
}

/// What `bin ARGS EXTRA --list --format terse` prints.
fn listing(bin: &Binary, args: &[String], extra: &[&str]) -> Result<Vec<String>> {
    let mut cmd = Command::new(&bin.path);
    cmd.args(args)
        .args(extra)
        .args(["--list", "--format", "terse"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .envs(bin.env.iter().map(|(k, v)| (k, v)));
    if let Some(dir) = &bin.cwd {
        cmd.current_dir(dir);
    }
    // The program and its arguments, not the environment it was given.
    let shown = std::iter::once(bin.path.display().to_string())
        .chain(args.iter().cloned())
        .chain(extra.iter().map(|e| (*e).to_owned()))
        .chain(["--list", "--format", "terse"].map(String::from))
        .collect::<Vec<_>>()
        .join(" ");
    let out = cmd.output().map_err(|e| usage!("{shown}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty());
        return Err(usage!(
            "{shown} failed ({}){}",
            out.status,
            last.map(|l| format!(": {l}")).unwrap_or_default()
        ));
    }
    Ok(super::libtest::parse_list(&String::from_utf8_lossy(
        &out.stdout,
    )))
}

/// `cargo test …`: built with `--no-run`, each test artifact listed. A
/// binary whose `--list` fails is named and left out, unless all fail.
fn cargo_test(command: &[String], rest_at: usize) -> Result<(Vec<Binary>, Vec<String>)> {
    let rest = &command[rest_at..];
    let (before, after) = match rest.iter().position(|a| a == "--") {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let (build_args, testname) = split_cargo(before)?;
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..rest_at])
        .args(["--no-run", "--message-format=json-render-diagnostics"])
        .args(&build_args);
    let stdout = build(cmd)?;
    let mut artifacts = Vec::new();
    // Build scripts' outputs, by package: the library search paths, OUT_DIR
    // and `cargo::rustc-env` variables cargo gives the package's tests.
    let mut scripts: BTreeMap<String, cargo_metadata::BuildScript> = BTreeMap::new();
    for message in cargo_metadata::Message::parse_stream(stdout.as_bytes()) {
        match message.map_err(|e| usage!("cargo's JSON messages: {e}"))? {
            cargo_metadata::Message::CompilerArtifact(a)
                if a.profile.test && a.executable.is_some() =>
            {
                artifacts.push(a);
            }
            cargo_metadata::Message::BuildScriptExecuted(b) => {
                scripts.insert(b.package_id.repr.clone(), b);
            }
            _ => {}
        }
    }
    let mut warnings = Vec::new();
    let packages = packages(
        command,
        &build_args,
        artifacts.iter().map(|a| a.manifest_path.as_std_path()),
        &mut warnings,
    );
    let native: Vec<PathBuf> = scripts
        .values()
        .flat_map(|b| &b.linked_paths)
        .map(|p| native_dir(p.as_str()))
        .collect();
    let bin_args: Vec<String> = testname.into_iter().chain(after.iter().cloned()).collect();
    let recorded = match cargo_envs(command, rest_at, &build_args) {
        Ok(r) => r,
        Err(e) => {
            warnings.push(format!(
                "{e}: the tests get the environment fdwindow computes (CARGO_PKG_*, \
                 OUT_DIR, the library path), not cargo's `[env]`"
            ));
            BTreeMap::new()
        }
    };
    let mut binaries = Vec::new();
    let mut failures = Vec::new();
    for a in artifacts {
        let exe = a.executable.clone().expect("kept only with one");
        let (package, root) = match packages.get(a.manifest_path.as_std_path()) {
            Some((p, root)) => (Some(p), Some(root.clone())),
            None => (None, None),
        };
        let package_name = package.map_or_else(|| a.target.name.clone(), |p| p.name.to_string());
        let name = RustBinaryId::from_parts(&package_name, &binary_kind(&a.target), &a.target.name)
            .as_str()
            .to_owned();
        let cwd = a.manifest_path.parent().map(|p| p.as_std_path().to_owned());
        let mut bin = libtest_binary(name, exe.clone().into_std_path_buf(), cwd, &bin_args)?;
        bin.root = root;
        if let Some(env) = recorded.get(exe.as_std_path()) {
            bin.env.clone_from(env);
        } else {
            let mut dirs: Vec<PathBuf> = exe
                .parent()
                .map(|d| d.as_std_path().to_owned())
                .into_iter()
                .collect();
            dirs.extend(native.iter().cloned());
            bin.env = runtime_env(
                &command[0],
                package,
                &a.manifest_path,
                &a.target.name,
                &dirs,
            );
            if let Some(script) = scripts.get(&a.package_id.repr) {
                bin.env.push(("OUT_DIR".into(), script.out_dir.to_string()));
                bin.env.extend(script.env.iter().cloned());
            }
        }
        match list(&mut bin) {
            Ok(()) => binaries.push(bin),
            Err(e) => failures.push(e),
        }
    }
    if binaries.is_empty() && !failures.is_empty() {
        return Err(failures.swap_remove(0));
    }
    warnings.extend(failures.into_iter().map(|e| format!("not audited: {e}")));
    Ok((binaries, warnings))
}

/// The environment cargo gives each test binary, learned from cargo itself:
/// `cargo test` with the same build options runs every binary through
/// `fdwindow __record-env` as its target runner, which records what it was
/// given and runs nothing. This holds all cargo sets (`CARGO_PKG_*`, the
/// library path, build scripts' variables, the config's `[env]`), as only
/// cargo knows it. Doctests are skipped (`RUSTDOC=true`).
///
/// # References
/// - <https://doc.rust-lang.org/cargo/reference/config.html#targetcfgrunner>
fn cargo_envs(
    command: &[String],
    rest_at: usize,
    build_args: &[String],
) -> Result<BTreeMap<PathBuf, Vec<(String, String)>>> {
    let me = std::env::current_exe().map_err(|e| usage!("fdwindow's own path: {e}"))?;
    let file = tempfile::Builder::new()
        .prefix("fdwindow-env-")
        .tempfile()
        .map_err(|e| usage!("a file for cargo's environment: {e}"))?;
    let quote = |s: &str| serde_json::to_string(s).expect("a string");
    let runner = format!(
        "target.'cfg(all())'.runner=[{}, \"__record-env\", {}]",
        quote(&me.to_string_lossy()),
        quote(&file.path().to_string_lossy())
    );
    // cargo refuses a flag given twice.
    let given = |flags: &[&str]| build_args.iter().any(|a| flags.contains(&a.as_str()));
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..rest_at]).args(["--config", &runner]);
    if !given(&["--no-fail-fast"]) {
        cmd.arg("--no-fail-fast");
    }
    if !given(&["-q", "--quiet"]) {
        cmd.arg("--quiet");
    }
    cmd.args(build_args)
        .env("RUSTDOC", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let status = cmd
        .status()
        .map_err(|e| usage!("cargo, to learn its test environment: {e}"))?;
    let text = std::fs::read_to_string(file.path()).unwrap_or_default();
    let mut envs = BTreeMap::new();
    let ours = std::env::var_os("RUSTDOC");
    for line in text.lines() {
        let Ok(record) = serde_json::from_str::<EnvRecord>(line) else {
            continue;
        };
        let env: Vec<(String, String)> = record
            .env
            .into_iter()
            // RUSTDOC was the capture's own, to skip doctests.
            .filter(|(k, _)| k != "RUSTDOC" || ours.is_some())
            .collect();
        envs.insert(record.program, env);
    }
    if envs.is_empty() {
        return Err(usage!(
            "cargo ran no test binary through fdwindow's recorder ({status}; a target runner \
             of the project's own takes precedence)"
        ));
    }
    Ok(envs)
}

/// The `[env]` table of cargo's configuration where the command runs, as
/// cargo applies it: a variable already set stays unless `force = true`.
/// (nextest applies it as cargo does; it runs its tests itself, so the
/// recorder of [`cargo_envs`] cannot learn it.) Read with `cargo config
/// get`, an unstable command, so `RUSTC_BOOTSTRAP=1` for that call only;
/// none when it fails. A `relative = true` value is taken as written.
///
/// # References
/// - <https://doc.rust-lang.org/cargo/reference/config.html#env>
fn cargo_config_env(command: &[String]) -> Vec<(String, String)> {
    let out = Command::new(&command[0])
        .args([
            "-Zunstable-options",
            "config",
            "get",
            "env",
            "--format",
            "json-value",
        ])
        .env("RUSTC_BOOTSTRAP", "1")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let Ok(out) = out else {
        return Vec::new();
    };
    let Ok(serde_json::Value::Object(table)) = serde_json::from_slice(&out.stdout) else {
        return Vec::new();
    };
    table
        .into_iter()
        .filter_map(|(key, entry)| {
            let (value, force) = match &entry {
                serde_json::Value::String(v) => (v.clone(), false),
                serde_json::Value::Object(t) => (
                    t.get("value")?.as_str()?.to_owned(),
                    t.get("force").and_then(serde_json::Value::as_bool) == Some(true),
                ),
                _ => return None,
            };
            (force || std::env::var_os(&key).is_none()).then_some((key, value))
        })
        .collect()
}

/// One test binary's run as cargo would start it.
#[derive(serde::Serialize, serde::Deserialize)]
struct EnvRecord {
    program: PathBuf,
    env: Vec<(String, String)>,
}

/// `fdwindow __record-env FILE PROGRAM ARGS…`: appends the environment this
/// process was given for `PROGRAM` to `FILE` as one JSON line (one write,
/// `O_APPEND`), and runs nothing.
pub fn record_env(file: &Path, run: &[String]) -> Result<()> {
    let program = run
        .first()
        .ok_or_else(|| Error::usage("__record-env: no program"))?;
    let record = EnvRecord {
        program: PathBuf::from(program),
        env: std::env::vars_os()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect(),
    };
    let mut line = serde_json::to_string(&record).expect("plain JSON");
    line.push('\n');
    std::fs::OpenOptions::new()
        .append(true)
        .open(file)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(|e| usage!("__record-env {}: {e}", file.display()))
}

/// A build script's `cargo::rustc-link-search=[KIND=]PATH` as a folder.
fn native_dir(path: &str) -> PathBuf {
    match path.split_once('=') {
        Some((kind, dir))
            if ["native", "crate", "dependency", "framework", "all"].contains(&kind) =>
        {
            dir.into()
        }
        _ => path.into(),
    }
}

/// The environment cargo gives a test process of `package` (cargo's
/// `Compilation::fill_env`): its manifest, its `CARGO_PKG_*` metadata, the
/// crate name, and the library path with `dirs` first.
///
/// # References
/// - <https://doc.rust-lang.org/cargo/reference/environment-variables.html#environment-variables-cargo-sets-for-crates>
fn runtime_env(
    cargo: &str,
    package: Option<&cargo_metadata::Package>,
    manifest: &cargo_metadata::camino::Utf8Path,
    target: &str,
    dirs: &[PathBuf],
) -> Vec<(String, String)> {
    let mut env = vec![
        (
            "CARGO".to_owned(),
            std::env::var("CARGO").unwrap_or_else(|_| cargo.to_owned()),
        ),
        ("CARGO_MANIFEST_PATH".to_owned(), manifest.to_string()),
        ("CARGO_CRATE_NAME".to_owned(), target.replace('-', "_")),
    ];
    if let Some(dir) = manifest.parent() {
        env.push(("CARGO_MANIFEST_DIR".into(), dir.to_string()));
    }
    if let Some(p) = package {
        let v = &p.version;
        let text = |o: Option<String>| o.unwrap_or_default();
        env.extend(
            [
                ("NAME", p.name.to_string()),
                ("VERSION", v.to_string()),
                ("VERSION_MAJOR", v.major.to_string()),
                ("VERSION_MINOR", v.minor.to_string()),
                ("VERSION_PATCH", v.patch.to_string()),
                ("VERSION_PRE", v.pre.to_string()),
                ("AUTHORS", p.authors.join(":")),
                ("DESCRIPTION", text(p.description.clone())),
                ("HOMEPAGE", text(p.homepage.clone())),
                ("REPOSITORY", text(p.repository.clone())),
                ("LICENSE", text(p.license.clone())),
                (
                    "LICENSE_FILE",
                    text(p.license_file.as_ref().map(|f| f.to_string())),
                ),
                (
                    "RUST_VERSION",
                    text(p.rust_version.as_ref().map(|r| r.to_string())),
                ),
                ("README", text(p.readme.as_ref().map(|r| r.to_string()))),
            ]
            .map(|(k, v)| (format!("CARGO_PKG_{k}"), v)),
        );
    }
    let var = if cfg!(target_os = "macos") {
        "DYLD_FALLBACK_LIBRARY_PATH"
    } else {
        "LD_LIBRARY_PATH"
    };
    let old = std::env::var_os(var);
    let paths = dirs
        .iter()
        .cloned()
        .chain(old.iter().flat_map(std::env::split_paths));
    if let Ok(joined) = std::env::join_paths(paths) {
        env.push((var.into(), joined.to_string_lossy().into_owned()));
    }
    env
}

/// nextest's kind of a cargo target: every library crate type is `lib`.
fn binary_kind(target: &cargo_metadata::Target) -> RustTestBinaryKind {
    use cargo_metadata::TargetKind as K;
    match target.kind.first() {
        Some(K::Lib | K::RLib | K::DyLib | K::CDyLib | K::StaticLib) | None => {
            RustTestBinaryKind::LIB
        }
        Some(K::ProcMacro) => RustTestBinaryKind::PROC_MACRO,
        Some(K::Test) => RustTestBinaryKind::TEST,
        Some(K::Bench) => RustTestBinaryKind::BENCH,
        Some(K::Example) => RustTestBinaryKind::EXAMPLE,
        Some(K::Bin) => RustTestBinaryKind::BIN,
        Some(other) => RustTestBinaryKind::new(other.to_string()),
    }
}

/// Packages by manifest path, from `cargo metadata --no-deps` of the
/// workspace the command builds (and of any other manifest in
/// `manifests`): nextest's binary ids start with their names, and their
/// metadata is the tests' `CARGO_PKG_*`. With each, its workspace root.
fn packages<'a>(
    command: &[String],
    build_args: &[String],
    manifests: impl Iterator<Item = &'a Path>,
    warnings: &mut Vec<String>,
) -> BTreeMap<PathBuf, (cargo_metadata::Package, PathBuf)> {
    let mut found = BTreeMap::new();
    let mut add =
        |meta: &mut cargo_metadata::MetadataCommand,
         found: &mut BTreeMap<PathBuf, (cargo_metadata::Package, PathBuf)>| {
            match meta.cargo_path(&command[0]).no_deps().exec() {
                Ok(m) => {
                    let root = m.workspace_root.into_std_path_buf();
                    for p in m.packages {
                        found.insert(
                            p.manifest_path.clone().into_std_path_buf(),
                            (p, root.clone()),
                        );
                    }
                }
                Err(e) => warnings.push(format!(
                    "cargo metadata: {e}: binaries are named by their targets, without CARGO_PKG_*"
                )),
            }
        };
    let mut meta = cargo_metadata::MetadataCommand::new();
    let manifest_path = build_args
        .iter()
        .position(|a| a == "--manifest-path")
        .and_then(|i| build_args.get(i + 1).map(String::as_str))
        .or_else(|| {
            build_args
                .iter()
                .find_map(|a| a.strip_prefix("--manifest-path="))
        });
    if let Some(p) = manifest_path {
        meta.manifest_path(p);
    }
    add(&mut meta, &mut found);
    // A package outside the workspace (`-p` of a path dependency).
    for m in manifests {
        if !found.contains_key(m) {
            add(
                cargo_metadata::MetadataCommand::new().manifest_path(m),
                &mut found,
            );
        }
    }
    found
}

/// `cargo nextest run`'s options that `cargo nextest list` does not take
/// (the runner's), with whether each takes a value (cargo-nextest 0.9.143).
const NEXTEST_RUN_ONLY: &[(&str, bool)] = &[
    ("-R", true),
    ("--rerun", true),
    ("-j", true),
    ("--test-threads", true),
    ("--retries", true),
    ("--flaky-result", true),
    ("--max-fail", true),
    ("--debugger", true),
    ("--tracer", true),
    ("--no-tests", true),
    ("--stress-count", true),
    ("--stress-duration", true),
    ("--failure-output", true),
    ("--success-output", true),
    ("--status-level", true),
    ("--final-status-level", true),
    ("--max-progress-running", true),
    ("--message-format", true),
    ("--message-format-version", true),
    ("--no-run", false),
    ("--fail-fast", false),
    ("--no-fail-fast", false),
    ("--no-capture", false),
    ("--nocapture", false),
    ("--no-output-indent", false),
    ("--hide-progress-bar", false),
    ("--no-input-handler", false),
];

/// `cargo nextest run …`: listed (and so built) by `cargo nextest list`
/// with the same filters.
fn nextest(command: &[String], rest_at: usize) -> Result<(Vec<Binary>, Vec<String>)> {
    let (list_args, threads) = nextest_list_args(&command[rest_at..]);
    let dashes_at = list_args.iter().position(|a| a == "--");
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..rest_at - 1]).arg("list");
    match dashes_at {
        Some(i) => cmd
            .args(&list_args[..i])
            .args(["--message-format", "json"])
            .args(&list_args[i..]),
        None => cmd.args(&list_args).args(["--message-format", "json"]),
    };
    let stdout = build(cmd)?;
    let list: TestListSummary = serde_json::from_str(stdout.trim())
        .map_err(|e| usage!("cargo nextest list gave no test list: {e}"))?;
    let mut warnings = Vec::new();
    let packages = packages(command, &list_args, std::iter::empty(), &mut warnings);
    let config_env = cargo_config_env(command);
    let meta = &list.rust_build_meta;
    let build_dir = meta
        .build_directory
        .as_ref()
        .unwrap_or(&meta.target_directory);
    let mut binaries = Vec::new();
    for (id, suite) in list.rust_suites {
        let mut tests = Vec::new();
        let mut ignored = BTreeSet::new();
        for (name, case) in &suite.test_cases {
            if case.filter_match.is_match() {
                tests.push(name.as_str().to_owned());
                if case.ignored {
                    ignored.insert(name.as_str().to_owned());
                }
            }
        }
        let unselected = tests.is_empty().then(|| {
            let all = &suite.test_cases;
            (all.len(), all.values().filter(|c| c.ignored).count())
        });
        let (package, root) = match packages
            .values()
            .find(|(p, _)| p.id.repr == suite.binary.package_id)
        {
            Some((p, root)) => (Some(p), Some(root.clone())),
            None => (None, None),
        };
        let manifest =
            package.map_or_else(|| suite.cwd.join("Cargo.toml"), |p| p.manifest_path.clone());
        let dirs = nextest_library_dirs(&suite.binary.binary_path, meta, build_dir);
        let mut env = runtime_env(
            &command[0],
            package,
            &manifest,
            &suite.binary.binary_name,
            &dirs,
        );
        if let Some(out) = meta.build_script_out_dirs.get(&suite.binary.package_id) {
            env.push(("OUT_DIR".into(), build_dir.join(out).to_string()));
        }
        // The build script's `cargo::rustc-env` variables (nextest 0.9.131+).
        if let Some(info) = meta
            .build_script_info
            .as_ref()
            .and_then(|i| i.get(&suite.binary.package_id))
        {
            env.extend(info.envs.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        env.extend(config_env.iter().cloned());
        env.extend([
            ("NEXTEST".to_owned(), "1".to_owned()),
            (
                "NEXTEST_EXECUTION_MODE".to_owned(),
                "process-per-test".to_owned(),
            ),
        ]);
        binaries.push(Binary {
            name: id.as_str().to_owned(),
            path: suite.binary.binary_path.into_std_path_buf(),
            cwd: Some(suite.cwd.into_std_path_buf()),
            options: Vec::new(),
            selection: Vec::new(),
            args: Vec::new(),
            per_test: true,
            jobs: 1,
            root: root.clone(),
            tests,
            ignored,
            partitioned: false,
            unselected,
            env,
        });
    }
    let root = binaries.iter().find_map(|b| b.root.clone());
    let jobs = nextest_threads(threads.as_deref(), &list_args, root.as_deref())?;
    for b in &mut binaries {
        b.jobs = jobs;
    }
    Ok((binaries, warnings))
}

/// `cargo nextest run`'s arguments as `cargo nextest list` takes them: the
/// run-only options dropped (before any `--`), and the thread count they
/// named, if any (`-j N`, `-jN`, `--test-threads=N`).
fn nextest_list_args(run_args: &[String]) -> (Vec<String>, Option<String>) {
    let mut list_args = Vec::new();
    let mut threads = None;
    let mut it = run_args.iter();
    let mut after_dashes = false;
    while let Some(a) = it.next() {
        if a == "--" {
            after_dashes = true;
        }
        if !after_dashes && let Some(takes_value) = nextest_run_only(a) {
            let value = if takes_value {
                it.next().cloned()
            } else {
                a.split_once('=').map(|(_, v)| v.to_owned()).or_else(|| {
                    // `-j4`
                    (a.starts_with("-j") && a.len() > 2).then(|| a[2..].to_owned())
                })
            };
            if a.starts_with("-j") || a.starts_with("--test-threads") {
                threads = value;
            }
            continue;
        }
        list_args.push(a.clone());
    }
    (list_args, threads)
}

/// nextest's library path for a test binary: the binary's folder, the
/// output folders, the build scripts' linked paths (relative to the build
/// folder).
fn nextest_library_dirs(
    binary: &cargo_metadata::camino::Utf8Path,
    meta: &RustBuildMetaSummary,
    build_dir: &cargo_metadata::camino::Utf8Path,
) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = binary
        .parent()
        .map(|d| d.as_std_path().to_owned())
        .into_iter()
        .collect();
    dirs.extend(
        meta.base_output_directories
            .iter()
            .map(|d| build_dir.join(d).into_std_path_buf()),
    );
    dirs.extend(
        meta.linked_paths
            .iter()
            .map(|p| build_dir.join(p).into_std_path_buf()),
    );
    dirs
}

/// How many tests `cargo nextest run` runs at once, as it decides:
/// `-j`/`--test-threads`, else `NEXTEST_TEST_THREADS`, else the profile's
/// `test-threads` in the workspace's `.config/nextest.toml` (`--profile`,
/// else `NEXTEST_PROFILE`, else `default`), else the CPU count. A value is
/// a count, `num-cpus`, or a negative count taken from the CPU count.
/// See: <https://nexte.st/docs/configuration/#profiles> and
/// <https://nexte.st/docs/running/#controlling-parallelism>.
fn nextest_threads(
    given: Option<&str>,
    list_args: &[String],
    root: Option<&Path>,
) -> Result<usize> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if let Some(v) = given {
        return threads_value(v, "--test-threads", cpus);
    }
    if let Ok(v) = std::env::var("NEXTEST_TEST_THREADS") {
        return threads_value(&v, "NEXTEST_TEST_THREADS", cpus);
    }
    let profile = list_args
        .iter()
        .position(|a| a == "--profile" || a == "-P")
        .and_then(|i| list_args.get(i + 1).cloned())
        .or_else(|| {
            list_args
                .iter()
                .find_map(|a| a.strip_prefix("--profile=").map(str::to_owned))
        })
        .or_else(|| std::env::var("NEXTEST_PROFILE").ok())
        .unwrap_or_else(|| "default".to_owned());
    let Some(config) = root.map(|r| r.join(".config/nextest.toml")) else {
        return Ok(cpus);
    };
    let Ok(text) = std::fs::read_to_string(&config) else {
        return Ok(cpus);
    };
    let from = config.display().to_string();
    match profile_threads(&text, &profile).map_err(|e| usage!("{from}: {e}"))? {
        Some(v) => threads_value(&v, &from, cpus),
        None => Ok(cpus),
    }
}

/// A test-threads value: a count, `num-cpus`, or a negative count taken
/// from `cpus` (at least 1).
fn threads_value(value: &str, from: &str, cpus: usize) -> Result<usize> {
    match value.trim() {
        "num-cpus" => Ok(cpus),
        v => match v.parse::<i64>() {
            Ok(n) if n > 0 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
            Ok(n) if n < 0 => Ok(cpus
                .saturating_sub(usize::try_from(-n).unwrap_or(usize::MAX))
                .max(1)),
            _ => Err(usage!(
                "{from}: {v:?} is not a number of test threads (a count, num-cpus, or a negative \
                 count)"
            )),
        },
    }
}

/// A nextest config's `test-threads` for `profile` (a profile inherits
/// what it leaves out from `default`), as text.
fn profile_threads(text: &str, profile: &str) -> Result<Option<String>> {
    let table: toml::Table = text
        .parse()
        .map_err(|e| usage!("not TOML nextest reads: {e}"))?;
    let threads = |name: &str| {
        table
            .get("profile")
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("test-threads"))
            .cloned()
    };
    match threads(profile).or_else(|| threads("default")) {
        Some(toml::Value::Integer(n)) => Ok(Some(n.to_string())),
        Some(toml::Value::String(v)) => Ok(Some(v)),
        Some(other) => Err(usage!(
            "test-threads is a {}: expected a count or num-cpus",
            other.type_str()
        )),
        None => Ok(None),
    }
}

/// Whether `arg` is one of `cargo nextest run`'s own options (one `list`
/// refuses), and if so whether the value is the next argument: `-j 4`,
/// `-j4`, `--retries=2`.
fn nextest_run_only(arg: &str) -> Option<bool> {
    let (flag, attached) = match arg.split_once('=') {
        Some((f, _)) if f.starts_with("--") => (f, true),
        _ if !arg.starts_with("--") && arg.len() > 2 && arg.starts_with('-') => (&arg[..2], true),
        _ => (arg, false),
    };
    NEXTEST_RUN_ONLY
        .iter()
        .find(|(f, _)| *f == flag)
        .map(|(_, takes_value)| *takes_value && !attached)
}

/// Runs a build command, its progress on our stderr; its stdout. The
/// build runs in its own process group: a signal to the audit ends it too
/// (killed with its group) instead of waiting for it to finish.
fn build(mut cmd: Command) -> Result<String> {
    use std::io::Read as _;
    use std::os::unix::process::CommandExt as _;
    let shown = format!("{cmd:?}");
    // Through the writer: a closed stderr ends the build below as Ctrl-C
    // would (the wait sees `interrupted()`).
    fdwindow::note!("fdwindow: building: {shown}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .map_err(|e| usage!("{shown}: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        stdout.read_to_end(&mut buf).map(|_| buf)
    });
    let far = std::time::Instant::now() + std::time::Duration::from_secs(86_400 * 365);
    let ended = fdwindow_fix::base::child::wait_group(
        &mut child,
        far,
        fdwindow_fix::base::interrupts::interrupted,
    )
    .map_err(|e| usage!("{shown}: {e}"))?;
    let out = reader
        .join()
        .map_err(|_| usage!("{shown}: its output reader panicked"))?
        .map_err(|e| usage!("{shown}: {e}"))?;
    match ended {
        fdwindow_fix::base::child::GroupExit::Exited(st) if st.success() => {}
        fdwindow_fix::base::child::GroupExit::Exited(st) => {
            return Err(usage!("{shown} failed ({st})"));
        }
        _ => return Err(usage!("{shown}: interrupted")),
    }
    String::from_utf8(out).map_err(|_| usage!("{shown}: output is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn kinds() {
        assert_eq!(kind(&v(&["./t-123"])).0, Kind::Binary);
        assert_eq!(kind(&v(&["cargo", "test", "--lib"])), (Kind::CargoTest, 2));
        assert_eq!(kind(&v(&["cargo", "+1.89", "test"])), (Kind::CargoTest, 3));
        assert_eq!(
            kind(&v(&["/usr/bin/cargo", "nextest", "run"])),
            (Kind::Nextest, 3)
        );
        assert_eq!(kind(&v(&["cargo", "nextest", "list"])).0, Kind::Binary);
        for no in [
            &["cargo", "build"][..],
            &["cargo"],
            &["sh", "-c", "cargo test"],
            &["target/debug/deps/cargo-test-1a2b"],
            &["cargo-test"],
        ] {
            assert!(!builds_tests(&v(no)), "{no:?}");
        }
        assert!(builds_tests(&v(&[
            "/home/u/.cargo/bin/cargo",
            "+nightly",
            "test",
            "-p",
            "x"
        ])));
        // cargo's global options before the subcommand.
        assert_eq!(
            kind(&v(&["cargo", "--locked", "-q", "test"])),
            (Kind::CargoTest, 4)
        );
        assert_eq!(
            kind(&v(&[
                "cargo", "--config", "a=1", "-C", "dir", "nextest", "run"
            ])),
            (Kind::Nextest, 7)
        );
    }

    #[test]
    fn nextest_runner_options_are_left_out_of_the_listing() {
        assert_eq!(nextest_run_only("-j4"), Some(false));
        assert_eq!(nextest_run_only("-j"), Some(true));
        assert_eq!(nextest_run_only("--retries=2"), Some(false));
        assert_eq!(nextest_run_only("--retries"), Some(true));
        assert_eq!(nextest_run_only("--no-fail-fast"), Some(false));
        assert_eq!(nextest_run_only("-E"), None);
        assert_eq!(nextest_run_only("--partition"), None);
    }

    #[test]
    fn cargo_keeps_its_options_and_gives_testname_to_the_binaries() {
        let (build, name) = split_cargo(&v(&[
            "--test",
            "locks",
            "arithmetic",
            "-p",
            "a",
            "--release",
        ]))
        .unwrap();
        assert_eq!(build, v(&["--test", "locks", "-p", "a", "--release"]));
        assert_eq!(name.as_deref(), Some("arithmetic"));
        // An optional value is not taken from an option.
        let (build, name) = split_cargo(&v(&["--test", "--lib", "-F", "x y"])).unwrap();
        assert_eq!(build, v(&["--test", "--lib", "-F", "x y"]));
        assert_eq!(name, None);
        let (build, _) = split_cargo(&v(&["--message-format", "short", "--no-run"])).unwrap();
        assert!(build.is_empty(), "{build:?}");
        assert!(split_cargo(&v(&["a", "b"])).is_err());
        assert!(split_cargo(&v(&["--doc"])).is_err());
    }

    #[test]
    fn libtest_arguments_split_into_options_and_selection() {
        let b = libtest_binary(
            "t".into(),
            "/x/t".into(),
            None,
            &v(&[
                "--test-threads",
                "2",
                "lock",
                "--skip",
                "slow",
                "--exact",
                "--format=json",
                "-q",
                "--include-ignored",
                "--color",
                "always",
            ]),
        )
        .unwrap();
        assert_eq!(b.options, v(&["--test-threads", "2", "--include-ignored"]));
        assert_eq!(b.selection, v(&["lock", "--skip", "slow", "--exact"]));
        assert!(libtest_binary("t".into(), "/x/t".into(), None, &v(&["--skip"])).is_err());
    }

    #[test]
    fn runs_of_a_selection_name_their_tests() {
        let mut b = libtest_binary(
            "t".into(),
            "/x/t".into(),
            None,
            &v(&["a", "--test-threads=1"]),
        )
        .unwrap();
        b.tests = v(&["a::one", "b::a"]);
        // The user's order, as given.
        assert_eq!(b.suite_args(), v(&["a", "--test-threads=1"]));
        assert_eq!(
            b.exact_args("b::a"),
            v(&["--test-threads=1", "b::a", "--exact"])
        );
        // A shard names its tests.
        b.partitioned = true;
        assert_eq!(
            b.suite_args(),
            v(&["--test-threads=1", "--exact", "a::one", "b::a"])
        );
        // One run of the suite, or one per test under nextest.
        assert_eq!(b.runs(), [(b.suite_args(), None)]);
        b.per_test = true;
        assert_eq!(
            b.runs(),
            [
                (b.exact_args("a::one"), Some(0)),
                (b.exact_args("b::a"), Some(1))
            ]
        );
    }

    /// A group of a binary's tests runs as one `--exact` run of their names
    /// (`--include-ignored` where one is `#[ignore]`d, so the group's other
    /// tests still run), or one run each under nextest; all of them, as the
    /// suite's run.
    #[test]
    fn a_group_of_tests_runs_exactly_those() {
        let mut b =
            libtest_binary("t".into(), "/x/t".into(), None, &v(&["--test-threads=4"])).unwrap();
        b.tests = v(&["a", "b", "c"]);
        assert_eq!(
            b.group_runs(&["a", "c"]),
            [(v(&["--test-threads=4", "--exact", "a", "c"]), vec![0, 1])]
        );
        assert_eq!(b.group_runs(&["b"]), [(b.exact_args("b"), vec![0])]);
        // All of them: the suite's own run, as the command gives it.
        assert_eq!(
            b.group_runs(&["a", "b", "c"]),
            [(b.suite_args(), vec![0, 1, 2])]
        );
        b.ignored.insert("c".into());
        assert_eq!(
            b.group_runs(&["a", "c"]),
            [(
                v(&["--test-threads=4", "--include-ignored", "--exact", "a", "c"]),
                vec![0, 1]
            )]
        );
        b.per_test = true;
        assert_eq!(
            b.group_runs(&["a", "c"]),
            [(b.exact_args("a"), vec![0]), (b.exact_args("c"), vec![1])]
        );
    }

    /// nextest's test threads, as it reads them: a count, `num-cpus`, a
    /// negative count off the CPU count; a profile's, else `default`'s.
    #[test]
    fn nextest_threads_are_read_as_nextest_reads_them() {
        assert_eq!(threads_value("3", "-j", 8).unwrap(), 3);
        assert_eq!(threads_value("num-cpus", "-j", 8).unwrap(), 8);
        assert_eq!(threads_value("-2", "-j", 8).unwrap(), 6);
        assert_eq!(threads_value("-20", "-j", 8).unwrap(), 1);
        assert!(
            threads_value("0", "-j", 8)
                .unwrap_err()
                .to_string()
                .contains("\"0\"")
        );
        assert!(threads_value("many", "-j", 8).is_err());
        let config = "[profile.default]\ntest-threads = 16\n[profile.ci]\nretries = 2\n\
                      [profile.slow]\ntest-threads = \"num-cpus\"\n";
        assert_eq!(
            profile_threads(config, "default").unwrap(),
            Some("16".into())
        );
        assert_eq!(profile_threads(config, "ci").unwrap(), Some("16".into()));
        assert_eq!(
            profile_threads(config, "slow").unwrap(),
            Some("num-cpus".into())
        );
        assert_eq!(profile_threads("[profile.ci]\n", "ci").unwrap(), None);
        assert!(profile_threads("[profile.default]\ntest-threads = true\n", "x").is_err());
        assert!(profile_threads("[profile", "default").is_err());
    }

    #[test]
    fn a_plain_binary_that_lists_nothing_is_nothing_to_audit() {
        let err = discover(&v(&["/bin/true"])).unwrap_err().to_string();
        assert!(err.starts_with("nothing to audit"), "{err}");
        let err = discover(&v(&["/bin/sh", "-c", "exit 127"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("failed"), "{err}");
    }
}
