//! Unit tests of the command's parsing and the listings.

use super::{command::*, nextest::*};

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
    // cargo's global options before the subcommand.
    assert_eq!(
        kind(&v(&["cargo", "--locked", "-q", "test"])),
        (Kind::CargoTest, 4)
    );
    assert_eq!(
        kind(&v(&[
            "cargo", "--config", "a=1", "-C", "dir", "nextest", "run"
        ])),
        (Kind::Nextest, 7)
    );
}

#[test]
fn nextest_runner_options_are_left_out_of_the_listing() {
    assert_eq!(nextest_run_only("-j4"), Some(false));
    assert_eq!(nextest_run_only("-j"), Some(true));
    assert_eq!(nextest_run_only("--retries=2"), Some(false));
    assert_eq!(nextest_run_only("--retries"), Some(true));
    assert_eq!(nextest_run_only("--no-fail-fast"), Some(false));
    assert_eq!(nextest_run_only("-E"), None);
    assert_eq!(nextest_run_only("--partition"), None);
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
    // The user's order, as given.
    assert_eq!(b.suite_args(), v(&["a", "--test-threads=1"]));
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
    // One run of the suite, or one per test under nextest.
    assert_eq!(b.runs(), [(b.suite_args(), None)]);
    b.per_test = true;
    assert_eq!(
        b.runs(),
        [
            (b.exact_args("a::one"), Some(0)),
            (b.exact_args("b::a"), Some(1))
        ]
    );
}

/// A group of a binary's tests runs as one `--exact` run of their names
/// (`--include-ignored` where one is `#[ignore]`d, so the group's other
/// tests still run), or one run each under nextest; all of them, as the
/// suite's run.
#[test]
fn a_group_of_tests_runs_exactly_those() {
    let mut b = libtest_binary("t".into(), "/x/t".into(), None, &v(&["--test-threads=4"])).unwrap();
    b.tests = v(&["a", "b", "c"]);
    assert_eq!(
        b.group_runs(&["a", "c"]),
        [(v(&["--test-threads=4", "--exact", "a", "c"]), vec![0, 1])]
    );
    assert_eq!(b.group_runs(&["b"]), [(b.exact_args("b"), vec![0])]);
    // All of them: the suite's own run, as the command gives it.
    assert_eq!(
        b.group_runs(&["a", "b", "c"]),
        [(b.suite_args(), vec![0, 1, 2])]
    );
    b.ignored.insert("c".into());
    assert_eq!(
        b.group_runs(&["a", "c"]),
        [(
            v(&["--test-threads=4", "--include-ignored", "--exact", "a", "c"]),
            vec![0, 1]
        )]
    );
    b.per_test = true;
    assert_eq!(
        b.group_runs(&["a", "c"]),
        [(b.exact_args("a"), vec![0]), (b.exact_args("c"), vec![1])]
    );
}

/// nextest's test threads, as it reads them: a count, `num-cpus`, a
/// negative count off the CPU count; a profile's, else `default`'s.
#[test]
fn nextest_threads_are_read_as_nextest_reads_them() {
    assert_eq!(threads_value("3", "-j", 8).unwrap(), 3);
    assert_eq!(threads_value("num-cpus", "-j", 8).unwrap(), 8);
    assert_eq!(threads_value("-2", "-j", 8).unwrap(), 6);
    assert_eq!(threads_value("-20", "-j", 8).unwrap(), 1);
    assert!(
        threads_value("0", "-j", 8)
            .unwrap_err()
            .to_string()
            .contains("\"0\"")
    );
    assert!(threads_value("many", "-j", 8).is_err());
    let config = "[profile.default]\ntest-threads = 16\n[profile.ci]\nretries = 2\n\
                  [profile.slow]\ntest-threads = \"num-cpus\"\n";
    assert_eq!(
        profile_threads(config, "default").unwrap(),
        Some("16".into())
    );
    assert_eq!(profile_threads(config, "ci").unwrap(), Some("16".into()));
    assert_eq!(
        profile_threads(config, "slow").unwrap(),
        Some("num-cpus".into())
    );
    assert_eq!(profile_threads("[profile.ci]\n", "ci").unwrap(), None);
    assert!(profile_threads("[profile.default]\ntest-threads = true\n", "x").is_err());
    assert!(profile_threads("[profile", "default").is_err());
}

#[test]
fn a_plain_binary_that_lists_nothing_is_nothing_to_audit() {
    let err = discover(&v(&["/bin/true"])).unwrap_err().to_string();
    assert!(err.starts_with("nothing to audit"), "{err}");
    let err = discover(&v(&["/bin/sh", "-c", "exit 127"]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("failed"), "{err}");
}
