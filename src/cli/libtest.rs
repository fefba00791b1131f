//! Reading libtest's plain output: `test NAME ... ok|FAILED|ignored` lines,
//! the `---- NAME stdout ----` failure sections, and `--list --format terse`.
//!
//! # References
//! - <https://doc.rust-lang.org/rustc/tests/index.html> (the test harness's
//!   options: `--list`, `--exact`, `--format terse`)

use std::collections::BTreeMap;

/// One test's outcome in one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `ok`.
    Ok,
    /// `FAILED`.
    Failed,
    /// `ignored` (not counted as a run).
    Ignored,
}

/// What one run of a test binary printed, per test.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Outcome per test name.
    pub outcomes: BTreeMap<String, Outcome>,
    /// The first lines of each failed test's section: its panic message.
    pub messages: BTreeMap<String, String>,
    /// Seconds per test, where libtest printed them (`--report-time`:
    /// `test NAME ... ok <0.012s>`).
    pub times: BTreeMap<String, f64>,
}

/// The tests `--list --format terse` printed (`NAME: test`); benches skipped.
pub fn parse_list(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_owned)
        .collect()
}

/// Parses a run's stdout.
pub fn parse(stdout: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let mut section: Option<(String, Vec<&str>)> = None;
    let flush = |section: &mut Option<(String, Vec<&str>)>, parsed: &mut Parsed| {
        if let Some((name, lines)) = section.take() {
            parsed
                .messages
                .entry(name)
                .or_insert_with(|| message(&lines));
        }
    };
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("---- ")
            && let Some(name) = rest
                .strip_suffix(" stdout ----")
                .or_else(|| rest.strip_suffix(" stderr ----"))
        {
            flush(&mut section, &mut parsed);
            section = Some((name.to_owned(), Vec::new()));
            continue;
        }
        if line == "failures:" || line.starts_with("test result: ") {
            flush(&mut section, &mut parsed);
            continue;
        }
        if let Some((_, lines)) = section.as_mut() {
            lines.push(line);
            continue;
        }
        if let Some(rest) = line.strip_prefix("test ")
            && let Some((name, status)) = rest.rsplit_once(" ... ")
        {
            // `--report-time` appends ` <0.012s>`.
            let status = match status.rsplit_once(" <") {
                Some((word, time)) => {
                    if let Some(secs) = time.strip_suffix("s>").and_then(|t| t.parse().ok()) {
                        parsed.times.insert(name.to_owned(), secs);
                    }
                    word
                }
                None => status,
            };
            let outcome = if status == "ok" {
                Outcome::Ok
            } else if status.starts_with("FAILED") {
                Outcome::Failed
            } else if status.starts_with("ignored") {
                Outcome::Ignored
            } else {
                continue;
            };
            parsed.outcomes.insert(name.to_owned(), outcome);
        }
    }
    flush(&mut section, &mut parsed);
    parsed
}

/// The panic's message and place from a failure section: std prints
/// `thread 'NAME' panicked at FILE:LINE:COL:` then the message.
fn message(lines: &[&str]) -> String {
    // Rust 1.89+ adds the thread id: `thread 'NAME' (1234) panicked at`.
    if let Some(i) = lines.iter().position(|l| l.contains(" panicked at ")) {
        let place = lines[i]
            .split_once(" panicked at ")
            .map_or("", |(_, p)| p.trim_end_matches(':'));
        let text: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| {
                !l.is_empty() && !l.starts_with("note: ") && !l.starts_with("stack backtrace:")
            })
            .take(3)
            .copied()
            .collect();
        return format!("{} (at {place})", text.join(" / "));
    }
    let first: Vec<&str> = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .take(2)
        .copied()
        .collect();
    first.join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "\nrunning 4 tests\ntest a::one ... ok\ntest a::two ... FAILED\ntest b::skip ... ignored, needs a network\ntest b::three ... ok\n\nfailures:\n\n---- a::two stdout ----\nsome output\n\nthread 'a::two' (4242) panicked at tests/x.rs:10:5:\nassertion `left == right` failed\n  left: 1\n right: 2\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\nfailures:\n    a::two\n\ntest result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s\n\n";

    #[test]
    fn outcomes_and_messages() {
        let p = parse(RUN);
        assert_eq!(p.outcomes.len(), 4);
        assert_eq!(p.outcomes["a::one"], Outcome::Ok);
        assert_eq!(p.outcomes["a::two"], Outcome::Failed);
        assert_eq!(p.outcomes["b::skip"], Outcome::Ignored);
        assert_eq!(
            p.messages["a::two"],
            "assertion `left == right` failed /   left: 1 /  right: 2 (at tests/x.rs:10:5)"
        );
        assert_eq!(p.messages.len(), 1);
    }

    #[test]
    fn report_time_gives_each_test_its_seconds() {
        let p = parse("test a ... ok <0.012s>\ntest b ... FAILED <1.500s>\ntest c ... ignored\n");
        assert_eq!(p.outcomes["a"], Outcome::Ok);
        assert_eq!(p.outcomes["b"], Outcome::Failed);
        assert_eq!(p.times["a"], 0.012);
        assert_eq!(p.times["b"], 1.5);
        assert!(!p.times.contains_key("c"));
    }

    #[test]
    fn list_keeps_tests_only() {
        let l = parse_list("a::one: test\nbench_x: bench\nb::two: test\n");
        assert_eq!(l, ["a::one", "b::two"]);
    }

    #[test]
    fn section_without_panic_gives_first_lines() {
        let p = parse("---- t stdout ----\nError: boom\n\nfailures:\n");
        assert_eq!(p.messages["t"], "Error: boom");
    }
}
