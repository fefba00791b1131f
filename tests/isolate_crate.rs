//! `fdwindow_fix::isolate::run_isolated` from a crate of its own that
//! depends on `fdwindow-fix` by path as a dev-dependency, the way users adopt
//! it: a scratch crate is written to a temporary folder and tested with
//! `cargo test --offline` (no network: fdwindow's own Cargo.lock pins every
//! crate, and they are already in cargo's cache and in this target folder),
//! with no C compiler (`CC=/bin/false`): the crate users depend on builds
//! none.
//!
//! This file holds one test, so it runs as its own process under both cargo
//! test and nextest.

use std::process::Command;

const USER_TESTS: &str = r#"
use fdwindow_fix::isolate::run_isolated;

#[test]
#[ignore = "run isolated by parent_of_a_passing_child_passes"]
fn child_passes() {
    assert_eq!(1 + 1, 2);
}

#[test]
#[ignore = "run isolated by parent_of_a_failing_child_gets_err"]
fn child_fails() {
    panic!("child_fails failed on purpose");
}

#[test]
fn parent_of_a_passing_child_passes() {
    run_isolated("child_passes").unwrap();
}

#[test]
fn parent_of_a_misspelled_child_gets_err() {
    let e = run_isolated("child_pases").unwrap_err();
    assert!(e.to_string().contains("no line"), "{e}");
}

#[test]
fn parent_of_a_failing_child_gets_err() {
    let e = run_isolated("child_fails").unwrap_err();
    assert!(e.to_string().contains("failed on purpose"), "{e}");
}
"#;

#[test]
fn run_isolated_works_from_a_crate_with_fdwindow_fix_as_a_dev_dependency() {
    let manifest_dir = env!("CARGO_MANIFEST_DIR");
    let fix_dir = std::path::Path::new(manifest_dir).join("fdwindow-fix");
    let dir = tempfile::Builder::new()
        .prefix("fdwindow-isolate-user-")
        .tempdir()
        .unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("tests")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        format!(
            "[package]\nname = \"isolate-user\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
             [dev-dependencies]\nfdwindow-fix = {{ path = {fix_dir:?} }}\n\n\
             # Not part of any enclosing workspace.\n[workspace]\n"
        ),
    )
    .unwrap();
    std::fs::write(root.join("src/lib.rs"), "").unwrap();
    std::fs::write(root.join("tests/user.rs"), USER_TESTS).unwrap();
    // The same versions fdwindow is tested with: cargo drops the rest.
    std::fs::copy(
        std::path::Path::new(manifest_dir).join("Cargo.lock"),
        root.join("Cargo.lock"),
    )
    .unwrap();
    // This target folder already holds fdwindow's dependencies, built.
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_owned();
    let out = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()))
        .args(["test", "--offline", "--quiet", "--test", "user"])
        .current_dir(root)
        .env("CARGO_TARGET_DIR", &target)
        // A C build anywhere in its graph fails: it must have none.
        .env("CC", "/bin/false")
        .env("CXX", "/bin/false")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "cargo test in the scratch crate: {}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("test result: ok. 3 passed; 0 failed; 2 ignored"),
        "{stdout}\n{stderr}"
    );
}
