//! One test binary to audit, and the tests it lists with the filters given.

use fdwindow::error::Result;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command, Stdio};

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

/// Whether libtest's `a` runs `#[ignore]`d tests (`--ignored`, `--include-ignored`).
pub(super) fn is_ignore_flag(a: &str) -> bool {
    a == "--ignored" || a == "--include-ignored"
}

/// Lists `bin`'s tests with its options and selection: what a run of it
/// runs. Tests marked `#[ignore]` are left out unless the options run them,
/// and those kept are in [`Binary::ignored`].
pub(super) fn list(bin: &mut Binary) -> Result<()> {
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
pub(super) fn listing(bin: &Binary, args: &[String], extra: &[&str]) -> Result<Vec<String>> {
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
    Ok(crate::cli::libtest::parse_list(&String::from_utf8_lossy(
        &out.stdout,
    )))
}
