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

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nextest_metadata::{RustBinaryId, RustTestBinaryKind, TestListSummary};

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
    /// Run each test in its own process, as nextest does.
    pub per_test: bool,
    /// The tests to audit, in libtest's (sorted) order.
    pub tests: Vec<String>,
    /// Tests marked `#[ignore]` that the user asked to run (nextest's
    /// `--run-ignored`): each needs `--ignored` when run on its own.
    pub ignored: BTreeSet<String>,
    /// Whether [`Binary::tests`] is one shard of what the selection selects
    /// (`--partition`): runs then name their tests.
    pub partitioned: bool,
}

impl Binary {
    /// The arguments of a run of all its tests.
    pub fn suite_args(&self) -> Vec<String> {
        let mut args = self.options.clone();
        if self.partitioned {
            args.push("--exact".into());
            args.extend(self.tests.iter().cloned());
        } else {
            args.extend(self.selection.iter().cloned());
        }
        args
    }

    /// The arguments of a run of `test` alone.
    pub fn exact_args(&self, test: &str) -> Vec<String> {
        let mut args = self.options.clone();
        if self.ignored.contains(test) && !args.iter().any(|a| a == "--ignored") {
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
    // Skip a `+toolchain`.
    let sub = command
        .iter()
        .skip(1)
        .position(|a| !a.starts_with('+'))
        .map(|i| i + 1);
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

/// The test binaries of `command` with their tests; `Err` says why they
/// could not be learned, or that there is nothing to audit.
pub fn discover(command: &[String]) -> Result<Vec<Binary>, String> {
    let (kind, rest_at) = kind(command);
    let shown = command.join(" ");
    let binaries = match kind {
        Kind::Binary => {
            let path = PathBuf::from(&command[0]);
            let name = path
                .file_name()
                .map_or_else(|| command[0].clone(), |n| n.to_string_lossy().into_owned());
            let mut bin = libtest_binary(name, path, None, &command[1..])?;
            list(&mut bin)?;
            vec![bin]
        }
        Kind::CargoTest => cargo_test(command, rest_at)?,
        Kind::Nextest => nextest(command, rest_at)?,
    };
    let binaries: Vec<Binary> = binaries
        .into_iter()
        .filter(|b| !b.tests.is_empty())
        .collect();
    if binaries.is_empty() {
        return Err(match kind {
            Kind::Binary => format!(
                "nothing to audit: `{shown}` listed no test (`--list --format terse` printed no \
                 `NAME: test` line; is it a libtest test binary, and does its filter match?)"
            ),
            _ => format!("nothing to audit: `{shown}` selects no test"),
        });
    }
    Ok(binaries)
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
fn split_cargo(args: &[String]) -> Result<(Vec<String>, Option<String>), String> {
    let mut build = Vec::new();
    let mut testname = None;
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        let takes_value = CARGO_VALUE_OPTIONS.contains(&a.as_str());
        match a.as_str() {
            "--doc" => return Err("--doc: doctests have no test binary to audit".into()),
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
            return Err(format!(
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
) -> Result<Binary, String> {
    let mut options = Vec::new();
    let mut selection = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, attached) = match a.split_once('=') {
            Some((f, _)) if f.starts_with("--") => (f, true),
            _ => (a.as_str(), false),
        };
        let value = if LIBTEST_VALUE_OPTIONS.contains(&flag) && !attached {
            Some(
                it.next()
                    .ok_or_else(|| format!("{flag} needs a value"))?
                    .clone(),
            )
        } else {
            None
        };
        match flag {
            "--exact" | "--skip" => {
                selection.push(a.clone());
                selection.extend(value);
            }
            "--format" | "--color" | "-q" | "--quiet" | "--nocapture" | "--no-capture"
            | "--list" => {}
            "-h" | "--help" => return Err(format!("{name}: --help is not a run to audit")),
            "--bench" => {
                return Err(format!("{name}: --bench runs benchmarks, not tests"));
            }
            f if f.starts_with('-') => {
                options.push(a.clone());
                options.extend(value);
            }
            _ => selection.push(a.clone()),
        }
    }
    Ok(Binary {
        name,
        path,
        cwd,
        partitioned: false,
        options,
        selection,
        per_test: false,
        tests: Vec::new(),
        ignored: BTreeSet::new(),
    })
}

/// Lists `bin`'s tests with its options and selection: what a run of it
/// runs. Tests marked `#[ignore]` are left out unless the options run them.
fn list(bin: &mut Binary) -> Result<(), String> {
    let listing = |extra: &[&str]| -> Result<Vec<String>, String> {
        let mut cmd = Command::new(&bin.path);
        cmd.args(&bin.options)
            .args(&bin.selection)
            .args(extra)
            .args(["--list", "--format", "terse"])
            .stdin(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(dir) = &bin.cwd {
            cmd.current_dir(dir);
        }
        let out = cmd
            .output()
            .map_err(|e| format!("{}: {e}", bin.path.display()))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err.lines().rev().find(|l| !l.trim().is_empty());
            return Err(format!(
                "{} --list --format terse failed ({}){}",
                bin.path.display(),
                out.status,
                last.map(|l| format!(": {l}")).unwrap_or_default()
            ));
        }
        Ok(super::libtest::parse_list(&String::from_utf8_lossy(
            &out.stdout,
        )))
    };
    let listed = listing(&[])?;
    let runs_ignored = bin
        .options
        .iter()
        .any(|o| o == "--ignored" || o == "--include-ignored");
    let ignored: BTreeSet<String> = if runs_ignored || listed.is_empty() {
        BTreeSet::new()
    } else {
        listing(&["--ignored"])?.into_iter().collect()
    };
    bin.tests = listed
        .into_iter()
        .filter(|t| !ignored.contains(t))
        .collect();
    Ok(())
}

/// `cargo test …`: built with `--no-run`, each test artifact listed.
fn cargo_test(command: &[String], rest_at: usize) -> Result<Vec<Binary>, String> {
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
    for message in cargo_metadata::Message::parse_stream(stdout.as_bytes()) {
        let message = message.map_err(|e| format!("cargo's JSON messages: {e}"))?;
        if let cargo_metadata::Message::CompilerArtifact(a) = message
            && a.profile.test
            && a.executable.is_some()
        {
            artifacts.push(a);
        }
    }
    let names = package_names(command, &build_args, &artifacts);
    let bin_args: Vec<String> = testname.into_iter().chain(after.iter().cloned()).collect();
    let mut binaries = Vec::new();
    for a in artifacts {
        let exe = a.executable.clone().expect("kept only with one");
        let package = names
            .get(a.manifest_path.as_std_path())
            .cloned()
            .unwrap_or_else(|| a.target.name.clone());
        let name = RustBinaryId::from_parts(&package, &binary_kind(&a.target), &a.target.name)
            .as_str()
            .to_owned();
        let cwd = a.manifest_path.parent().map(|p| p.as_std_path().to_owned());
        let mut bin = libtest_binary(name, exe.into_std_path_buf(), cwd, &bin_args)?;
        list(&mut bin)?;
        binaries.push(bin);
    }
    Ok(binaries)
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

/// Package names by manifest path, from `cargo metadata --no-deps` of the
/// workspace the command builds: nextest's binary ids start with them.
fn package_names(
    command: &[String],
    build_args: &[String],
    artifacts: &[cargo_metadata::Artifact],
) -> BTreeMap<PathBuf, String> {
    let mut names = BTreeMap::new();
    let mut meta = cargo_metadata::MetadataCommand::new();
    meta.cargo_path(&command[0]).no_deps();
    if let Some(i) = build_args.iter().position(|a| a == "--manifest-path") {
        if let Some(p) = build_args.get(i + 1) {
            meta.manifest_path(p);
        }
    } else if let Some(p) = build_args
        .iter()
        .find_map(|a| a.strip_prefix("--manifest-path="))
    {
        meta.manifest_path(p);
    }
    let add = |names: &mut BTreeMap<PathBuf, String>, m: cargo_metadata::Metadata| {
        for p in m.packages {
            names.insert(p.manifest_path.into_std_path_buf(), p.name.to_string());
        }
    };
    if let Ok(m) = meta.exec() {
        add(&mut names, m);
    }
    // A package outside the workspace (`-p` of a path dependency).
    for a in artifacts {
        if !names.contains_key(a.manifest_path.as_std_path())
            && let Ok(m) = cargo_metadata::MetadataCommand::new()
                .cargo_path(&command[0])
                .manifest_path(a.manifest_path.as_std_path())
                .no_deps()
                .exec()
        {
            add(&mut names, m);
        }
    }
    names
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
fn nextest(command: &[String], rest_at: usize) -> Result<Vec<Binary>, String> {
    let mut list_args = Vec::new();
    let mut it = command[rest_at..].iter();
    let mut after_dashes = false;
    while let Some(a) = it.next() {
        if a == "--" {
            after_dashes = true;
        }
        let flag = a.split_once('=').map_or(a.as_str(), |(f, _)| f);
        match NEXTEST_RUN_ONLY.iter().find(|(f, _)| *f == flag) {
            Some((_, takes_value)) if !after_dashes => {
                if *takes_value && !a.contains('=') {
                    it.next();
                }
            }
            _ => list_args.push(a.clone()),
        }
    }
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
        .map_err(|e| format!("cargo nextest list gave no test list: {e}"))?;
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
        binaries.push(Binary {
            name: id.as_str().to_owned(),
            path: suite.binary.binary_path.into_std_path_buf(),
            cwd: Some(suite.cwd.into_std_path_buf()),
            options: Vec::new(),
            selection: Vec::new(),
            per_test: true,
            tests,
            ignored,
            partitioned: false,
        });
    }
    Ok(binaries)
}

/// Runs a build command, its progress on our stderr; its stdout.
fn build(mut cmd: Command) -> Result<String, String> {
    let shown = format!("{cmd:?}");
    // A closed stderr loses the line, never the build.
    let _ = writeln!(std::io::stderr().lock(), "fdwindow: building: {shown}");
    let out = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("{shown}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{shown} failed ({})", out.status));
    }
    String::from_utf8(out.stdout).map_err(|_| format!("{shown}: output is not UTF-8"))
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
        assert_eq!(b.suite_args(), v(&["--test-threads=1", "a"]));
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
    }

    #[test]
    fn a_plain_binary_that_lists_nothing_is_nothing_to_audit() {
        let err = discover(&v(&["/bin/true"])).unwrap_err();
        assert!(err.starts_with("nothing to audit"), "{err}");
        let err = discover(&v(&["/bin/sh", "-c", "exit 127"])).unwrap_err();
        assert!(err.contains("failed"), "{err}");
    }
}
