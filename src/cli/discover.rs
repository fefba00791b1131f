//! From the audited command to the test binaries to run directly: a libtest
//! binary as given, `cargo test …` built with `--no-run
//! --message-format=json`, `cargo nextest run …` listed with `cargo nextest
//! list --message-format json`. Building first keeps cargo, rustc and nextest
//! out of the pressure, and one failing binary cannot stop the others.
//!
//! # References
//! - <https://doc.rust-lang.org/cargo/reference/external-tools.html#json-messages>
//!   (`compiler-artifact`: `executable`, `profile.test`, `manifest_path`)
//! - <https://nexte.st/docs/machine-readable/list/> (`rust-suites`, `binary-path`, `cwd`, `testcases`)

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One test binary to audit.
#[derive(Debug, Clone)]
pub struct Binary {
    /// How the report names it: cargo's target name and kind, or the file name.
    pub name: String,
    /// The executable.
    pub path: PathBuf,
    /// Where it runs (cargo and nextest run tests in the package's folder).
    pub cwd: Option<PathBuf>,
    /// Arguments for every whole-binary run (what followed `--` in `cargo test`).
    pub args: Vec<String>,
    /// Run each test in its own process, as nextest does.
    pub per_test: bool,
    /// The tests nextest listed (per-test binaries only).
    pub tests: Vec<String>,
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
        Some((i, "test")) => (Kind::CargoTest, i + 1),
        Some((i, "nextest")) if command.get(i + 1).is_some_and(|a| a == "run") => {
            (Kind::Nextest, i + 2)
        }
        _ => (Kind::Binary, 0),
    }
}

/// The binaries of `command`; `Err` says why they could not be learned.
pub fn discover(command: &[String]) -> Result<Vec<Binary>, String> {
    let (kind, rest_at) = kind(command);
    let split = |args: &[String]| -> (Vec<String>, Vec<String>) {
        match args.iter().position(|a| a == "--") {
            Some(i) => (args[..i].to_vec(), args[i + 1..].to_vec()),
            None => (args.to_vec(), Vec::new()),
        }
    };
    match kind {
        Kind::Binary => {
            let path = PathBuf::from(&command[0]);
            let name = path
                .file_name()
                .map_or_else(|| command[0].clone(), |n| n.to_string_lossy().into_owned());
            Ok(vec![Binary {
                name,
                path,
                cwd: None,
                args: command[1..].to_vec(),
                per_test: false,
                tests: Vec::new(),
            }])
        }
        Kind::CargoTest => {
            let (cargo_args, bin_args) = split(&command[rest_at..]);
            let mut cmd = Command::new(&command[0]);
            cmd.args(&command[1..rest_at])
                .args(["--no-run", "--message-format=json"])
                .args(&cargo_args);
            let stdout = build(cmd)?;
            let mut binaries = Vec::new();
            for line in stdout.lines() {
                let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                if msg["reason"] != "compiler-artifact" || msg["profile"]["test"] != true {
                    continue;
                }
                let Some(exe) = msg["executable"].as_str() else {
                    continue;
                };
                let target = msg["target"]["name"].as_str().unwrap_or("?");
                let kind = msg["target"]["kind"][0].as_str().unwrap_or("?");
                binaries.push(Binary {
                    name: format!("{target} ({kind})"),
                    path: exe.into(),
                    cwd: msg["manifest_path"]
                        .as_str()
                        .and_then(|m| Path::new(m).parent().map(Path::to_owned)),
                    args: bin_args.clone(),
                    per_test: false,
                    tests: Vec::new(),
                });
            }
            Ok(binaries)
        }
        Kind::Nextest => {
            let (cargo_args, _) = split(&command[rest_at..]);
            let mut cmd = Command::new(&command[0]);
            cmd.args(&command[1..rest_at - 1])
                .args(["list", "--message-format", "json"])
                .args(&cargo_args);
            let stdout = build(cmd)?;
            let list: serde_json::Value = serde_json::from_str(stdout.trim())
                .map_err(|e| format!("cargo nextest list gave no JSON: {e}"))?;
            let suites = list["rust-suites"]
                .as_object()
                .ok_or("cargo nextest list: no rust-suites")?;
            let mut binaries = Vec::new();
            for (id, suite) in suites {
                let Some(path) = suite["binary-path"].as_str() else {
                    continue;
                };
                let tests: Vec<String> = suite["testcases"]
                    .as_object()
                    .map(|cases| {
                        cases
                            .iter()
                            .filter(|(_, c)| {
                                c["ignored"] != true && c["filter-match"]["status"] == "matches"
                            })
                            .map(|(name, _)| name.clone())
                            .collect()
                    })
                    .unwrap_or_default();
                if tests.is_empty() {
                    continue;
                }
                binaries.push(Binary {
                    name: id.clone(),
                    path: path.into(),
                    cwd: suite["cwd"].as_str().map(PathBuf::from),
                    args: Vec::new(),
                    per_test: true,
                    tests,
                });
            }
            Ok(binaries)
        }
    }
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
    }

    #[test]
    fn a_plain_binary_keeps_its_arguments() {
        let b = discover(&v(&["/x/my_tests-abc", "--test-threads=2"])).unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].name, "my_tests-abc");
        assert_eq!(b[0].args, ["--test-threads=2"]);
        assert!(!b[0].per_test);
    }
}
