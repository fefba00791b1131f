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

mod binary;
mod cargo;
mod command;
mod nextest;

#[cfg(test)]
mod tests;

pub use binary::Binary;
pub use cargo::record_env;
pub use command::{Found, builds_tests, discover};
