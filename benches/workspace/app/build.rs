//! Writes the busy tests each test binary of this crate includes: one
//! `#[test]` per index, calling `super::busy(i)`. Generated, so a hundred
//! and forty names need neither a macro crate nor pages of source.

use std::fmt::Write;

/// Busy tests in each test binary.
const BUSY: usize = 140;

fn main() {
    let mut out = String::new();
    for i in 0..BUSY {
        writeln!(out, "#[test]\nfn t{i:03}() {{\n    super::busy({i});\n}}").unwrap();
    }
    let dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(format!("{dir}/busy_tests.rs"), out).expect("writing busy_tests.rs");
    println!("cargo::rerun-if-changed=build.rs");
}
