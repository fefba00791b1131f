//! `cargo nextest run …`: listed (and so built) by `cargo nextest list`, with
//! nextest's own thread count and library path.

use fdwindow::error::Result;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use nextest_metadata::{RustBuildMetaSummary, TestListSummary};

use super::{binary::*, cargo::*, command::*};

/// `cargo nextest run`'s options that `cargo nextest list` does not take
/// (the runner's), with whether each takes a value (cargo-nextest 0.9.143).
pub(super) const NEXTEST_RUN_ONLY: &[(&str, bool)] = &[
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
pub(super) fn nextest(command: &[String], rest_at: usize) -> Result<(Vec<Binary>, Vec<String>)> {
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
pub(super) fn nextest_list_args(run_args: &[String]) -> (Vec<String>, Option<String>) {
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
pub(super) fn nextest_library_dirs(
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
pub(super) fn nextest_threads(
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
pub(super) fn threads_value(value: &str, from: &str, cpus: usize) -> Result<usize> {
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
pub(super) fn profile_threads(text: &str, profile: &str) -> Result<Option<String>> {
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
pub(super) fn nextest_run_only(arg: &str) -> Option<bool> {
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
