//! Runs the socket probes with few trials and checks their verdicts in the
//! deterministic windows (fork-window, inherited, in-process) and what the
//! bind matrix measures. In the posix-spawn race only what cannot depend on
//! luck is asserted: the arm ran and every hit it had was a completed
//! connection or a failed bind, never a setup fault.

mod common;

#[cfg(target_os = "linux")]
mod linux {
    use super::common::{arm, run_probe, verdict};
    use fdwindow::report::ProbeReport;
    use fdwindow::report::verdict::{Outcome, Verdict, Window};

    const FEW: &[&str] = &["--trials", "7", "--race-ms", "30"];
    const HELD: [Window; 2] = [Window::ForkWindow, Window::Inherited];

    /// The values one quantity took across an arm's trials.
    fn tallied(report: &ProbeReport, name: &str, window: Window, quantity: &str) -> Vec<String> {
        match &arm(report, name, window).outcome {
            Outcome::Observed { tallies, .. } => tallies
                .get(quantity)
                .map(|values| values.keys().cloned().collect())
                .unwrap_or_default(),
            other => panic!("{name} in {}: {other:?}", window.id()),
        }
    }

    fn assert_verdicts(report: &ProbeReport, windows: &[Window], expected: &[(&str, Verdict)]) {
        report.validate().unwrap();
        for &w in windows {
            for &(name, want) in expected {
                assert_eq!(verdict(report, name, w), want, "{name} in {}", w.id());
            }
        }
    }

    #[test]
    fn listener_survival() {
        let r = run_probe("listener-survival", FEW);
        assert_verdicts(
            &r,
            &HELD,
            &[
                ("close", Verdict::Present),
                ("shutdown-rd", Verdict::Valid),
                ("shutdown-rdwr", Verdict::Valid),
                ("shutdown-wr", Verdict::Invalid),
                ("drain-then-close", Verdict::Invalid),
                ("bound-unlistened", Verdict::Valid),
            ],
        );
        for w in HELD {
            // Linux answers shutdown on a listener with success, whichever way.
            for fix in ["shutdown-rd", "shutdown-rdwr", "shutdown-wr"] {
                assert_eq!(tallied(&r, fix, w, "shutdown"), ["ok"], "{fix}");
            }
            // A connection stranded on the copy is reset when the copy goes.
            assert_eq!(tallied(&r, "close", w, "after-copy"), ["reset"]);
            assert_eq!(tallied(&r, "drain-then-close", w, "drained"), ["1"]);
        }
        let race = arm(&r, "close", Window::PosixSpawn);
        assert!(race.outcome.count().is_some(), "{:?}", race.outcome);
    }

    #[test]
    fn unix_listener_survival() {
        let r = run_probe("unix-listener-survival", FEW);
        assert_verdicts(
            &r,
            &HELD,
            &[
                ("close", Verdict::Present),
                ("shutdown-rd", Verdict::Valid),
                ("shutdown-rdwr", Verdict::Valid),
                ("bound-unlistened", Verdict::Valid),
                ("unlink-then-close", Verdict::Valid),
            ],
        );
        for w in HELD {
            assert_eq!(tallied(&r, "close", w, "connect"), ["connected"]);
            // A connection stranded on the copy is reset when the copy goes.
            assert_eq!(tallied(&r, "close", w, "after-copy"), ["reset"]);
            for fix in ["shutdown-rd", "shutdown-rdwr"] {
                assert_eq!(tallied(&r, fix, w, "shutdown"), ["ok"], "{fix}");
                assert_eq!(tallied(&r, fix, w, "connect"), ["ECONNREFUSED"], "{fix}");
            }
            assert_eq!(
                tallied(&r, "bound-unlistened", w, "connect"),
                ["ECONNREFUSED"]
            );
            // No hit, but no refusal either: the path is gone.
            assert_eq!(tallied(&r, "unlink-then-close", w, "connect"), ["ENOENT"]);
        }
        let race = arm(&r, "close", Window::PosixSpawn);
        assert!(race.outcome.count().is_some(), "{:?}", race.outcome);
    }

    #[test]
    fn peer_fin_with_clone() {
        let r = run_probe("peer-fin-with-clone", FEW);
        assert_verdicts(
            &r,
            &[Window::InProcess, Window::ForkWindow, Window::Inherited],
            &[
                ("drop", Verdict::Present),
                ("shutdown-write", Verdict::Valid),
            ],
        );
        // The dup still writes after the drop; after shutdown it cannot.
        assert_eq!(
            tallied(&r, "drop", Window::InProcess, "marker-write"),
            ["ok"]
        );
        assert_eq!(
            tallied(&r, "shutdown-write", Window::InProcess, "marker-write"),
            ["EPIPE"]
        );
        for w in HELD {
            assert_eq!(tallied(&r, "drop", w, "sender"), ["ESTABLISHED"]);
            assert_eq!(tallied(&r, "drop", w, "after-copy"), ["eof"]);
            assert_eq!(tallied(&r, "shutdown-write", w, "peer-in-window"), ["eof"]);
        }
    }

    #[test]
    fn port_pick() {
        let r = run_probe("port-pick", FEW);
        assert_verdicts(
            &r,
            &HELD,
            &[
                ("pick-then-drop", Verdict::Present),
                ("bind-zero-in-server", Verdict::Avoids),
                ("pick-on-wildcard", Verdict::Invalid),
                ("pick-unlistened", Verdict::Valid),
                ("udp-pick-then-drop", Verdict::Present),
                ("udp-reuseaddr", Verdict::Valid),
                ("udp-bind-zero-in-server", Verdict::Avoids),
            ],
        );
        for w in HELD {
            assert_eq!(
                tallied(&r, "pick-then-drop", w, "later-bind"),
                ["EADDRINUSE"]
            );
            // A copy of the dropped UDP picker keeps the port: the plain
            // re-bind fails.
            assert_eq!(
                tallied(&r, "udp-pick-then-drop", w, "later-bind"),
                ["EADDRINUSE"]
            );
            // Linux: with SO_REUSEADDR on both, the re-bind succeeds, the
            // datagram reaches the newer socket, and so could a stranger's bind.
            assert_eq!(tallied(&r, "udp-reuseaddr", w, "later-bind"), ["ok"]);
            assert_eq!(tallied(&r, "udp-reuseaddr", w, "datagram"), ["server"]);
            assert_eq!(tallied(&r, "udp-reuseaddr", w, "foreign-bind"), ["ok"]);
        }
        let race = arm(&r, "pick-then-drop", Window::PosixSpawn);
        assert!(race.outcome.count().is_some(), "{:?}", race.outcome);
    }

    #[test]
    fn bind_matrix() {
        let r = run_probe("bind-matrix", &[]);
        r.validate().unwrap();
        let table = r
            .tables
            .iter()
            .find(|t| t.id == "second-bind")
            .expect("second-bind table");
        assert_eq!(table.problem, None);
        assert_eq!(table.rows.len(), 36);
        let cell = |key: &str, column: usize| -> &str {
            &table
                .rows
                .iter()
                .find(|r| r[0] == key)
                .unwrap_or_else(|| panic!("no row {key}"))[column]
        };
        // socket(7): SO_REUSEADDR shares a port unless a socket listens on it.
        assert_eq!(cell("v4/specific/bound/reuseaddr", 2), "ok");
        assert_eq!(cell("v4/specific/listening/reuseaddr", 2), "EADDRINUSE");
        assert_eq!(cell("v4/specific/bound/none", 1), "EADDRINUSE");
        assert_eq!(cell("v4/specific/listening/reuseport", 1), "ok");
        for row in &table.rows {
            assert_eq!(row.len(), table.columns.len(), "{row:?}");
        }
        let unix = r
            .tables
            .iter()
            .find(|t| t.id == "unix-path-bind")
            .expect("unix-path-bind table");
        assert_eq!(unix.problem, None);
        let row = |case: &str| -> &[String] {
            unix.rows
                .iter()
                .find(|r| r[0] == case)
                .unwrap_or_else(|| panic!("no row {case}"))
        };
        // unix(7): the socket file outlives the socket until unlinked.
        assert_eq!(
            row("path in use (listening)")[1..],
            ["EADDRINUSE", "connected"]
        );
        assert_eq!(
            row("stale path after close")[1..],
            ["EADDRINUSE", "ECONNREFUSED"]
        );
        assert_eq!(row("unlink before bind")[1..], ["ok", "connected"]);
    }
}
