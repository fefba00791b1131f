//! Writes the seed-size binary's thousand busy tests (`tests/seed.rs`
//! includes them): one `#[test]` each, calling `busy(i)`. Generated, so the
//! thousand names need no macro crate and no thousand lines in the source.

use std::fmt::Write;

/// Busy tests in the seed-size binary.
const BUSY: usize = 1000;

fn main() {
    let mut out = String::new();
    for i in 0..BUSY {
        writeln!(out, "#[test]\nfn t{i:04}() {{\n    super::busy({i});\n}}").unwrap();
    }
    let dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(format!("{dir}/busy_tests.rs"), out).expect("writing busy_tests.rs");
    println!("cargo::rerun-if-changed=build.rs");
}
