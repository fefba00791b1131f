//! What the audited command is (a test binary, `cargo test`, `cargo nextest
//! run`), split into what builds and what runs, and the build itself.

use fdwindow::error::{Error, Result};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{binary::*, cargo::*, nextest::*};

/// How the audited command builds its tests.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Binary,
    CargoTest,
    Nextest,
}

pub(super) fn kind(command: &[String]) -> (Kind, usize) {
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
pub(super) const CARGO_GLOBAL_VALUE_OPTIONS: &[&str] =
    &["--color", "--config", "-C", "-Z", "--explain"];

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
pub(super) const CARGO_VALUE_OPTIONS: &[&str] = &[
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
pub(super) fn split_cargo(args: &[String]) -> Result<(Vec<String>, Option<String>)> {
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
pub(super) const LIBTEST_VALUE_OPTIONS: &[&str] = &[
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
pub(super) fn libtest_binary(
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

/// Runs a build command, its progress on our stderr; its stdout. The
/// build runs in its own process group: a signal to the audit ends it too
/// (killed with its group) instead of waiting for it to finish.
pub(super) fn build(mut cmd: Command) -> Result<String> {
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
