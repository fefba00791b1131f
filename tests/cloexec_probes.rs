//! Runs the descriptor-creation probes (`two-step-cloexec`, `etxtbsy`) with
//! few trials and checks their verdicts in the deterministic windows. In the
//! posix-spawn race only what cannot depend on luck is asserted: code that
//! never leaves a descriptor without close-on-exec never leaks one.

mod common;

#[cfg(target_os = "linux")]
mod linux {
    use super::common::{run_probe, verdict};
    use fdwindow::report::ProbeReport;
    use fdwindow::report::verdict::{Verdict, Window};

    fn race_hits(report: &ProbeReport, arm: &str) -> Option<u64> {
        report
            .arms
            .iter()
            .find(|a| a.arm == arm && a.window == Window::PosixSpawn)
            .and_then(|a| a.outcome.count())
            .map(|c| c.hits)
    }

    #[test]
    fn two_step_cloexec() {
        // Seven trials: enough for 7/7 against 0/7 to decide.
        let r = run_probe("two-step-cloexec", &["--trials", "7", "--race-ms", "30"]);
        r.validate().unwrap();
        let w = Window::Inherited;
        for control in [
            "two-step-socket",
            "two-step-socketpair",
            "two-step-accept",
            "two-step-pipe",
            "two-step-dup",
            "two-step-open",
            "two-step-connect",
        ] {
            assert_eq!(verdict(&r, control, w), Verdict::Present, "{control}");
        }
        // Each sham shows the hazard in every trial; each fix is valid.
        for sham in [
            "spawn-lock-sham",
            "close-range-in-child-sham",
            "closefrom-file-action-sham",
            "spawn-cloexec-default-sham",
            "fix-spawn-sham",
        ] {
            let a = super::common::arm(&r, sham, w);
            let c = a.outcome.count().unwrap();
            assert_eq!((c.hits, c.trials), (7, 7), "{sham}");
        }
        for fix in [
            "atomic-flag",
            "spawn-lock",
            "close-range-in-child",
            "fix-spawn",
        ] {
            assert_eq!(verdict(&r, fix, w), Verdict::Valid, "{fix}");
        }
        // A default run races the controls (their rate) but none of the
        // fixes a deterministic window decides: those cells say so.
        for fix in [
            "atomic-flag",
            "spawn-lock",
            "spawn-lock-sham",
            "std-socket",
            "std-accept",
            "std-pipe",
            "std-socketpair",
        ] {
            assert!(r.find(fix, Window::PosixSpawn).is_none(), "{fix}");
            assert!(r.left_out(fix, Window::PosixSpawn).is_some(), "{fix}");
        }
        assert!(r.find("two-step-socket", Window::PosixSpawn).is_some());
        // A thorough run races them, each against its own call's control.
        let mut args = vec!["--thorough", "--trials", "7", "--race-ms", "8"];
        let raced = [
            ("atomic-flag", "two-step-socket"),
            ("spawn-lock", "two-step-socket"),
            ("std-socket", "two-step-socket"),
            ("std-accept", "two-step-accept"),
            ("std-pipe", "two-step-pipe"),
            ("std-socketpair", "two-step-socketpair"),
        ];
        for (fix, control) in raced {
            args.extend(["--arm", fix, "--arm", control]);
        }
        let thorough = run_probe("two-step-cloexec", &args);
        thorough.validate().unwrap();
        assert!(thorough.left_out.is_empty());
        for (fix, control) in raced {
            let a = super::common::arm(&thorough, fix, Window::PosixSpawn);
            assert_eq!(a.against.as_deref(), Some(control), "{fix}");
        }
        let closefrom = if fdwindow::hazards::cloexec::has_addclosefrom_np() {
            Verdict::Valid
        } else {
            Verdict::Unsupported
        };
        assert_eq!(verdict(&r, "closefrom-file-action", w), closefrom);
        assert_eq!(
            verdict(&r, "spawn-cloexec-default", w),
            Verdict::Unsupported
        );
        // Linux has every atomic flag and std uses them; the lock excludes
        // spawns from the gap. None of these can leak, whatever the timing.
        for arm in [
            "atomic-flag",
            "spawn-lock",
            "std-socket",
            "std-accept",
            "std-pipe",
            "std-socketpair",
        ] {
            assert_eq!(race_hits(&thorough, arm), Some(0), "{arm}");
        }
        let table = r.tables.iter().find(|t| t.id == "per-call").unwrap();
        let calls: Vec<&str> = table.rows.iter().map(|row| row[0].as_str()).collect();
        assert_eq!(
            calls,
            [
                "socket",
                "socketpair",
                "accept",
                "pipe",
                "dup",
                "open",
                "connect"
            ]
        );
        for row in &table.rows {
            assert_eq!(row[2], "yes", "atomic form missing: {row:?}");
            assert_eq!(row[4], "7/7", "two-step did not leak: {row:?}");
            // std's constructors, parked: none leaks on Linux, and a default
            // run fills the column (the race leaves them out).
            assert!(
                !row[8].contains("not run") && row[8].contains(" 0/"),
                "std parked: {row:?}"
            );
        }
        let socket = &table.rows[0][8];
        assert!(
            socket.starts_with("TcpListener::bind 0/")
                && socket.contains("; TcpStream::connect 0/"),
            "{socket}"
        );
    }

    #[test]
    fn etxtbsy() {
        let r = run_probe("etxtbsy", &["--trials", "7", "--race-ms", "30"]);
        r.validate().unwrap();
        // Whether this kernel denies exec of a file open for writing is
        // measured without any fork; the fork-window verdicts must agree.
        let table = r.tables.iter().find(|t| t.id == "exec-while-open").unwrap();
        assert_eq!(table.rows[1], ["write descriptor closed", "runs"]);
        let w = Window::ForkWindow;
        match table.rows[0][1].as_str() {
            "ETXTBSY" => {
                assert_eq!(verdict(&r, "write-then-exec", w), Verdict::Present);
                assert_eq!(verdict(&r, "spawn-lock-sham", w), Verdict::Present);
                assert_eq!(verdict(&r, "spawn-lock", w), Verdict::Valid);
                // A bounded retry outlasts a stall shorter than its budget,
                // and not one longer.
                assert_eq!(
                    verdict(&r, "retry-on-etxtbsy-short-stall-sham", w),
                    Verdict::Present
                );
                assert_eq!(
                    verdict(&r, "retry-on-etxtbsy-short-stall", w),
                    Verdict::Valid
                );
                assert_eq!(
                    verdict(&r, "retry-on-etxtbsy-long-stall", w),
                    Verdict::Invalid
                );
                // The stall is counted in failed attempts (4 of the retry's 8
                // for the short one, 16 for the long one), so every
                // confirmed trial took exactly 4 retries, or gave up.
                let retries = |arm: &str| match &r
                    .arms
                    .iter()
                    .find(|a| a.arm == arm && a.window == w)
                    .unwrap()
                    .outcome
                {
                    fdwindow::report::verdict::Outcome::Observed {
                        trials, tallies, ..
                    } => (*trials, tallies["retries"].clone()),
                    other => panic!("{arm}: {other:?}"),
                };
                let (trials, short) = retries("retry-on-etxtbsy-short-stall");
                assert_eq!(
                    short.into_iter().collect::<Vec<_>>(),
                    [("4".to_owned(), trials)]
                );
                let (trials, long) = retries("retry-on-etxtbsy-long-stall");
                assert_eq!(
                    long.into_iter().collect::<Vec<_>>(),
                    [("gave up".to_owned(), trials)]
                );
            }
            "runs" => {
                let control = r
                    .arms
                    .iter()
                    .find(|a| a.arm == "write-then-exec" && a.window == w)
                    .unwrap();
                assert_eq!(control.outcome.count().map(|c| c.hits), Some(0));
            }
            other => panic!("exec-while-open: {other}"),
        }
    }
}
