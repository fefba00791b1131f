//! The versioned JSON documents: one [`ProbeReport`] per probe run, merged by
//! the runner into one [`ResultsFile`] per platform.
//!
//! Readers refuse a schema newer than [`SCHEMA_VERSION`] rather than guess at
//! its meaning; new fields are added with defaults so older files still load.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::platform::Platform;
use crate::verdict::{Outcome, Role, Window};

/// The schema version this build writes and the newest it reads.
pub const SCHEMA_VERSION: u32 = 3;

/// One probe's run: every arm in every window it applies to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// Schema version of this document.
    pub schema: u32,
    /// The hazard (or observation) id, e.g. `flock-survival`.
    pub hazard: String,
    /// One sentence: what the probe checks.
    pub about: String,
    /// The fdwindow version that ran it.
    pub fdwindow_version: String,
    /// Where it ran.
    pub platform: Platform,
    /// When it started (UTC, RFC 3339).
    pub started_at: String,
    /// How long it took, in milliseconds.
    pub elapsed_ms: u64,
    /// The arms, controls first.
    pub arms: Vec<ArmReport>,
    /// Observation tables: measured values with no hazard/mitigation sense.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<Table>,
}

/// An observation: a table of measured values (an errno name, a duration, a
/// resolution). The first column is the row's key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Table {
    /// Table id, unique within its probe, e.g. `second-bind`.
    pub id: String,
    /// One sentence: what was measured, and how.
    pub about: String,
    /// Column headings; the first names the key.
    pub columns: Vec<String>,
    /// Rows, each as long as `columns`.
    pub rows: Vec<Vec<String>>,
    /// Set instead of rows when the observation could not be made:
    /// `unsupported: …` or `broken: …`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// One arm in one window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArmReport {
    /// The arm id, e.g. `unlock-then-close`.
    pub arm: String,
    /// Control or mitigation.
    pub role: Role,
    /// How the child held the descriptors.
    pub window: Window,
    /// One sentence: what the arm's code does.
    pub about: String,
    /// What happened.
    pub outcome: Outcome,
}

/// A mitigation judged against a named control instead of its window's first
/// control: for a hazard with two controls in one window, where a fix only
/// means something against the one that reproduces the hazard here.
///
/// `clock-collision` is the case: its real control (`pid-realtime-nanos`)
/// rarely collides at nanosecond granularity on Linux, so the fixes are built
/// on, and judged against, the microsecond simulation (`us-truncated`). The
/// pairing lives in the library, beside the verdict rules, so a results file
/// is always judged by the rules of the fdwindow reading it, like every other
/// verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Baseline {
    /// Hazard id.
    pub hazard: &'static str,
    /// The mitigation arm.
    pub arm: &'static str,
    /// The control arm (in the same window) it is judged against.
    pub control: &'static str,
}

/// Every mitigation with a named control; the rest are judged against the
/// first control in their window.
pub const BASELINES: &[Baseline] = &[
    Baseline {
        hazard: "clock-collision",
        arm: "process-sequence",
        control: "us-truncated",
    },
    Baseline {
        hazard: "clock-collision",
        arm: "tempfile",
        control: "us-truncated",
    },
];

/// The control a mitigation arm of `hazard` is judged against, when it is not
/// simply the first control in its window.
pub fn baseline(hazard: &str, arm: &str) -> Option<&'static str> {
    BASELINES
        .iter()
        .find(|b| b.hazard == hazard && b.arm == arm)
        .map(|b| b.control)
}

impl ProbeReport {
    /// The first control arm in `window`: what a mitigation there is judged
    /// against unless [`BASELINES`] names another.
    pub fn control_for(&self, window: Window) -> Option<&ArmReport> {
        self.arms
            .iter()
            .find(|a| a.role == Role::Control && a.window == window)
    }

    /// The control that the mitigation `arm` is judged against: the one
    /// [`BASELINES`] names, in the arm's window, else the window's first.
    /// `None` when that control did not run (so the arm is inconclusive).
    pub fn control_of(&self, arm: &ArmReport) -> Option<&ArmReport> {
        match baseline(&self.hazard, &arm.arm) {
            Some(named) => self
                .arms
                .iter()
                .find(|a| a.role == Role::Control && a.window == arm.window && a.arm == named),
            None => self.control_for(arm.window),
        }
    }

    /// Checks what a reader relies on: a known schema and unique (arm, window) pairs.
    pub fn validate(&self) -> Result<(), String> {
        if self.schema > SCHEMA_VERSION {
            return Err(format!(
                "schema {} is newer than this fdwindow reads ({SCHEMA_VERSION}); upgrade fdwindow",
                self.schema
            ));
        }
        check_platform_id(&self.platform.id)?;
        let mut seen = std::collections::BTreeSet::new();
        for a in &self.arms {
            if let Outcome::Observed { trials, hits, .. } = a.outcome
                && hits > trials
            {
                return Err(format!(
                    "arm {} in window {}: {hits} hits in {trials} trials",
                    a.arm,
                    a.window.id()
                ));
            }
            if !seen.insert((&a.arm, a.window)) {
                return Err(format!(
                    "arm {} appears twice in window {}",
                    a.arm,
                    a.window.id()
                ));
            }
        }
        for t in &self.tables {
            if let Some(row) = t.rows.iter().find(|r| r.len() != t.columns.len()) {
                return Err(format!(
                    "table {}: row {row:?} does not match its columns",
                    t.id
                ));
            }
        }
        Ok(())
    }
}

/// Every probe's latest report for one platform: `results/<platform-id>.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultsFile {
    /// Schema version of this document.
    pub schema: u32,
    /// The platform every report in it ran on.
    pub platform: Platform,
    /// Reports by hazard id.
    pub probes: BTreeMap<String, ProbeReport>,
}

impl ResultsFile {
    /// Parses and validates a results document.
    pub fn from_json(text: &str) -> Result<ResultsFile, String> {
        // Read the version first, so a future schema is named as such rather
        // than reported as whatever field it no longer has.
        let head: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        crate::results::check_schema(&head, SCHEMA_VERSION, "results", "fdwindow run")?;
        let file: ResultsFile =
            serde_json::from_value(head).map_err(|e| format!("bad results: {e}"))?;
        check_platform_id(&file.platform.id)?;
        for (id, p) in &file.probes {
            if *id != p.hazard {
                return Err(format!("entry {id} holds a report for {}", p.hazard));
            }
            p.validate().map_err(|e| format!("{id}: {e}"))?;
        }
        Ok(file)
    }
}

/// A platform id names a file in the results folder, so it must be a plain
/// file name: letters, digits, `.`, `_`, `-`, not starting with a dot.
pub fn check_platform_id(id: &str) -> Result<(), String> {
    let plain = !id.is_empty()
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if plain {
        Ok(())
    } else {
        Err(format!("platform id {id:?} is not a plain file name"))
    }
}

/// Now, as RFC 3339 UTC with second precision (`2026-12-01T00:08:36Z`).
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_from_unix(secs)
}

/// Formats seconds since the epoch as RFC 3339 UTC.
pub fn utc_from_unix(secs: u64) -> String {
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days: days since 1970-01-01 to a Gregorian date.
    // See: <https://howardhinnant.github.io/date_algorithms.html#civil_from_days>
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Tallies;

    #[test]
    fn dates() {
        assert_eq!(utc_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_from_unix(1_796_083_716), "2026-12-01T00:08:36Z");
    }

    fn sample() -> ResultsFile {
        let platform = Platform::detect();
        let arm = |arm: &str, role, outcome| ArmReport {
            arm: arm.into(),
            role,
            window: Window::ForkWindow,
            about: "x".into(),
            outcome,
        };
        let report = ProbeReport {
            schema: SCHEMA_VERSION,
            hazard: "flock-survival".into(),
            about: "Checks …".into(),
            fdwindow_version: "0.1.0".into(),
            platform: platform.clone(),
            started_at: utc_now(),
            elapsed_ms: 12,
            arms: vec![
                arm(
                    "close",
                    Role::Control,
                    Outcome::Observed {
                        trials: 3,
                        hits: 3,
                        tallies: Tallies::new(),
                    },
                ),
                arm(
                    "a",
                    Role::Mitigation,
                    Outcome::Unsupported { reason: "r".into() },
                ),
                arm("b", Role::Mitigation, Outcome::Broken { error: "e".into() }),
            ],
            tables: vec![
                Table {
                    id: "t".into(),
                    about: "a table".into(),
                    columns: vec!["key".into(), "value".into()],
                    rows: vec![vec!["k".into(), "v".into()]],
                    problem: None,
                },
                Table {
                    id: "u".into(),
                    about: "a failed table".into(),
                    columns: vec!["key".into()],
                    rows: vec![],
                    problem: Some("unsupported: ENOSYS".into()),
                },
            ],
        };
        ResultsFile {
            schema: SCHEMA_VERSION,
            platform,
            probes: [("flock-survival".to_owned(), report)].into(),
        }
    }

    #[test]
    fn a_named_baseline_overrides_the_first_control() {
        let observed = |hits| Outcome::Observed {
            trials: 10,
            hits,
            tallies: Tallies::new(),
        };
        let arm = |arm: &str, role, outcome| ArmReport {
            arm: arm.into(),
            role,
            window: Window::InProcess,
            about: "x".into(),
            outcome,
        };
        let mut report = sample().probes.remove("flock-survival").unwrap();
        report.hazard = "clock-collision".into();
        report.arms = vec![
            arm("pid-realtime-nanos", Role::Control, observed(0)),
            arm("us-truncated", Role::Control, observed(4)),
            arm("process-sequence", Role::Mitigation, observed(0)),
            arm("other", Role::Mitigation, observed(0)),
        ];
        fn of(r: &ProbeReport, i: usize) -> Option<&str> {
            r.control_of(&r.arms[i]).map(|c| c.arm.as_str())
        }
        assert_eq!(of(&report, 2), Some("us-truncated"));
        assert_eq!(of(&report, 3), Some("pid-realtime-nanos"));
        // The named control missing means no control, never the window's first.
        report.arms.remove(1);
        assert_eq!(of(&report, 1), None);
        // Other hazards keep the window's first control.
        report.hazard = "flock-survival".into();
        assert_eq!(of(&report, 1), Some("pid-realtime-nanos"));
        for b in BASELINES {
            assert_eq!(baseline(b.hazard, b.arm), Some(b.control));
        }
    }

    #[test]
    fn results_round_trip() {
        let file = sample();
        let json = serde_json::to_string_pretty(&file).unwrap();
        assert_eq!(ResultsFile::from_json(&json).unwrap(), file);
    }

    #[test]
    fn refuses_future_and_foreign_documents() {
        let mut file = sample();
        file.schema = SCHEMA_VERSION + 1;
        let err = ResultsFile::from_json(&serde_json::to_string(&file).unwrap()).unwrap_err();
        assert!(err.contains("newer"), "{err}");
        assert!(
            ResultsFile::from_json("{\"x\":1}")
                .unwrap_err()
                .contains("schema")
        );
        assert!(
            ResultsFile::from_json("{trunc")
                .unwrap_err()
                .contains("not JSON")
        );
        let mut file = sample();
        let dup = file.probes.get("flock-survival").unwrap().arms[0].clone();
        file.probes
            .get_mut("flock-survival")
            .unwrap()
            .arms
            .push(dup);
        let err = ResultsFile::from_json(&serde_json::to_string(&file).unwrap()).unwrap_err();
        assert!(err.contains("twice"), "{err}");
    }
}
