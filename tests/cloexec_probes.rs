//! Runs the descriptor-creation probes (`two-step-cloexec`, `etxtbsy`) with
//! few trials and checks their verdicts in the deterministic windows. In the
//! posix-spawn race only what cannot depend on luck is asserted: code that
//! never leaves a descriptor without close-on-exec never leaks one.

mod common;

#[cfg(target_os = "linux")]
mod linux {
    use super::common::{run_probe, verdict};
    use fdwindow::report::ProbeReport;
    use fdwindow::verdict::{Verdict, Window};

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
        // Six trials: each creation call once in the inherited window.
        let r = run_probe("two-step-cloexec", &["--trials", "6", "--race-ms", "30"]);
        r.validate().unwrap();
        let w = Window::Inherited;
        assert_eq!(verdict(&r, "two-step", w), Verdict::Present);
        for fix in [
            "atomic-flag",
            "spawn-lock",
            "close-range-in-child",
            "fix-spawn",
        ] {
            assert_eq!(verdict(&r, fix, w), Verdict::Valid, "{fix}");
        }
        let closefrom = if fdwindow::cloexec::has_addclosefrom_np() {
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
            assert_eq!(race_hits(&r, arm), Some(0), "{arm}");
        }
        let table = r.tables.iter().find(|t| t.id == "per-call").unwrap();
        let calls: Vec<&str> = table.rows.iter().map(|row| row[0].as_str()).collect();
        assert_eq!(
            calls,
            ["socket", "socketpair", "accept", "pipe", "dup", "open"]
        );
        for row in &table.rows {
            assert_eq!(row[2], "yes", "atomic form missing: {row:?}");
            assert_eq!(row[3], "1/1", "two-step did not leak: {row:?}");
            assert_eq!(row[4], "0/1", "atomic form leaked: {row:?}");
        }
    }

    #[test]
    fn etxtbsy() {
        let r = run_probe("etxtbsy", &["--trials", "3", "--race-ms", "30"]);
        r.validate().unwrap();
        // Whether this kernel denies exec of a file open for writing is
        // measured without any fork; the fork-window verdicts must agree.
        let table = r.tables.iter().find(|t| t.id == "exec-while-open").unwrap();
        assert_eq!(table.rows[1], ["write descriptor closed", "runs"]);
        let w = Window::ForkWindow;
        match table.rows[0][1].as_str() {
            "ETXTBSY" => {
                assert_eq!(verdict(&r, "write-then-exec", w), Verdict::Present);
                assert_eq!(verdict(&r, "spawn-lock", w), Verdict::Valid);
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
