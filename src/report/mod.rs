//! The report stage, the vocabulary every later stage shares: takes in what
//! the harness counted; gives out the versioned documents ([`ProbeReport`],
//! [`ResultsFile`], [`Table`]), the rules that turn counts into verdicts
//! ([`verdict`], [`stats`]) and the [`platform`] every result names. It sits
//! just above `sys` so that probes' building blocks, the evidence and the
//! views all speak it; it imports nothing from them.
//!
//! The versioned JSON documents: one [`ProbeReport`] per probe run, merged by
//! the runner into one [`ResultsFile`] per platform.
//!
//! Readers refuse any schema but [`SCHEMA_VERSION`] rather than guess at its
//! meaning: a newer one asks for a newer fdwindow, an older one names the
//! command that regenerates it.

pub mod platform;
pub mod stats;
pub mod tallies;
pub mod verdict;

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, usage};
use crate::report::platform::Platform;
use crate::report::stats::{Count, MAX_TRIALS};
use crate::report::verdict::{
    Against, Judgement, Kind, Outcome, Role, Window, control_judgement, mitigation_judgement,
};

/// The schema version this build writes and the only one it reads.
///
/// 2: arms carry their kind, the control they are judged against, their sham
/// and their `avoids` argument; race windows count spawns; unconfirmed
/// trials are counted in `broken_trials`.
/// 3: the platform names the full kernel release, uname's version, the
/// upstream version of a distribution's ABI name and the virtualization.
/// 4: a probe report lists the cells a default run left out (`left_out`:
/// race-window mitigations that only `--thorough` measures), and each arm in
/// its tallies the milliseconds it ran (`time-ms`).
pub const SCHEMA_VERSION: u32 = 4;

/// The command that regenerates a results folder, named when an older file is refused.
pub const REGENERATE: &str = "make probe-linux (or: fdwindow run)";

/// Whether a load error is the refusal of an older schema, which a full
/// `fdwindow run` replaces rather than merges into.
pub fn is_older_schema(problem: &str) -> bool {
    problem.starts_with(OLDER)
}

const OLDER: &str = "older schema: ";

/// Refuses any schema but this build's, in one line.
fn check_schema(v: u64) -> Result<()> {
    match v.cmp(&u64::from(SCHEMA_VERSION)) {
        std::cmp::Ordering::Equal => Ok(()),
        std::cmp::Ordering::Greater => Err(usage!(
            "schema {v} is newer than this fdwindow reads ({SCHEMA_VERSION}); upgrade fdwindow"
        )),
        std::cmp::Ordering::Less => Err(usage!(
            "{OLDER}schema {v} is older than this fdwindow reads ({SCHEMA_VERSION}); regenerate it with `{REGENERATE}`"
        )),
    }
}

/// One probe's run: every arm in every window it applies to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// Cells the probe declares but this run left out on purpose (a default
    /// run races no mitigation that a deterministic window decides): not
    /// measured, which `fdwindow check` and the matrix say, never a missing arm.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
    /// What the run was asked to measure; `fdwindow check` holds the report
    /// to it (every declared cell in scope measured, or left out where the
    /// race rule leaves it). Absent in files from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
}

/// A run's scope: the arms it was asked for and its settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scope {
    /// The arms named with `--arm`; empty for every arm.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<String>,
    /// `--thorough`: every arm races.
    pub thorough: bool,
    /// The most trials per deterministic or in-process cell.
    pub trials: u64,
    /// Race time per arm, in milliseconds.
    pub race_ms: u64,
    /// The probes whose reports `fdwindow run` wrote with this one (its
    /// `--only`, or every probe): a file that lacks one of them lost it.
    /// Empty for a probe run on its own, and in files from before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<String>,
    /// `pass` when the fork window held each trial's descriptor as a copy
    /// passed to a holder process (`--hold-by pass`), not a forked child: a
    /// comparison with the audit's way of holding, never filed as results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_by: Option<String>,
}

/// A cell a run left out on purpose, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeftOut {
    /// The arm id.
    pub arm: String,
    /// Its role.
    pub role: Role,
    /// The window it was not run in.
    pub window: Window,
    /// For a mitigation or sham: the control it would be judged against there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against: Option<String>,
    /// Why, and which run measures it.
    pub why: String,
}

/// An observation: a table of measured values (an errno name, a duration, a
/// resolution). The first column is the row's key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
pub struct ArmReport {
    /// The arm id, e.g. `unlock-then-close`.
    pub arm: String,
    /// Control or mitigation.
    pub role: Role,
    /// How the child held the descriptors.
    pub window: Window,
    /// Deterministic or statistical, from the window (declared by the arm in `in-process`).
    pub kind: Kind,
    /// One sentence: what the arm's code does.
    pub about: String,
    /// For a mitigation or sham: the control (same window) it is judged against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub against: Option<String>,
    /// For a mitigation tested with a sham: the sham arm's id (`<arm>-sham`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sham: Option<String>,
    /// For a mitigation that removes the hazardous step altogether: why no
    /// trial can test it, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avoids: Option<String>,
    /// Measured under emulation (QEMU's TCG) and statistical or timed: it
    /// measures the emulator's scheduling and clock, not the kernel
    /// (DESIGN.md, Platforms). A provenance flag: the cell is shown as
    /// `emulated`, no verdict rule or claim uses it, `fdwindow check` lists
    /// it as undecided.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub emulated: bool,
    /// What happened.
    pub outcome: Outcome,
}

impl ProbeReport {
    /// The control that a mitigation or sham is judged against: the arm its
    /// `against` names, in its window. `None` when that control did not run
    /// (so the arm is inconclusive), or for a control.
    pub fn control_of(&self, arm: &ArmReport) -> Option<&ArmReport> {
        let named = arm.against.as_deref()?;
        self.find(named, arm.window)
            .filter(|a| a.role == Role::Control)
    }

    /// The arm `id` in `window`, if it ran.
    pub fn find(&self, id: &str, window: Window) -> Option<&ArmReport> {
        self.arms.iter().find(|a| a.arm == id && a.window == window)
    }

    /// Why this run left the arm `id` out of `window` on purpose, if it did.
    pub fn left_out(&self, id: &str, window: Window) -> Option<&LeftOut> {
        self.left_out
            .iter()
            .find(|l| l.arm == id && l.window == window)
    }

    /// The derived judgement on one of this report's arms, by the rules in
    /// [`crate::report::verdict`]: against its control and sham in the same window.
    pub fn judgement(&self, arm: &ArmReport) -> Judgement {
        match arm.role {
            Role::Control | Role::Sham => control_judgement(&arm.outcome, arm.kind),
            Role::Mitigation => mitigation_judgement(
                &arm.outcome,
                arm.kind,
                Against {
                    control: self.control_of(arm).map(|c| &c.outcome),
                    // Whether a fix is sham-tested is decided per arm, not per
                    // window: an arm with a sham in one window and none in
                    // another is judged there as if its sham did not run
                    // (a sham that tests its window, not the code, aside).
                    sham: match arm.sham.as_deref() {
                        Some(sham) => Some(
                            self.find(sham, arm.window)
                                .filter(|s| s.role == Role::Sham)
                                .map(|s| &s.outcome),
                        ),
                        None => self
                            .arms
                            .iter()
                            .any(|a| {
                                a.arm == arm.arm
                                    && a.sham.is_some()
                                    && !a.window.sham_tests_the_window()
                            })
                            .then_some(None),
                    },
                    avoids: arm.avoids.as_deref(),
                },
            ),
        }
    }

    /// Checks what a reader relies on: a known schema and unique (arm, window) pairs.
    pub fn validate(&self) -> Result<()> {
        check_schema(u64::from(self.schema))?;
        check_platform_id(&self.platform.id)?;
        let mut seen = std::collections::BTreeSet::new();
        for a in &self.arms {
            let at = || format!("arm {} in window {}", a.arm, a.window.id());
            if let Outcome::Observed {
                trials,
                hits,
                broken_trials,
                ..
            } = a.outcome
            {
                Count::checked(hits, trials).map_err(|e| usage!("{}: {e}", at()))?;
                if broken_trials > MAX_TRIALS {
                    return Err(usage!("{}: {broken_trials} broken trials", at()));
                }
            }
            // A window's kind is fixed (fork-window, inherited and
            // parked-call deterministic, posix-spawn statistical); an
            // in-process cell's kind is the one its probe declares, which
            // `IN_PROCESS_KINDS` holds and the harness makes every probe
            // agree with, so a results file cannot relabel either.
            let expected = a.window.kind().or_else(|| in_process_kind(&self.hazard));
            match expected {
                Some(k) if k == a.kind => {}
                Some(k) => {
                    return Err(usage!(
                        "{}: kind {} where the probe's cells are {}",
                        at(),
                        a.kind.id(),
                        k.id()
                    ));
                }
                None => {
                    return Err(usage!(
                        "{}: {} declares no in-process kind",
                        at(),
                        self.hazard
                    ));
                }
            }
            // `emulated` follows from the platform and the cell's kind
            // (verdict::emulated): a real machine's cell is never excused as
            // emulated, and a TCG guest's statistical cell never passes as
            // real. A deterministic cell on a TCG guest is emulated only when
            // its arm is timed, which the file alone cannot tell.
            if a.emulated && !self.platform.emulated() {
                return Err(usage!(
                    "{}: marked emulated, but {} is not an emulated platform",
                    at(),
                    self.platform.id
                ));
            }
            if !a.emulated && self.platform.emulated() && a.kind == Kind::Statistical {
                return Err(usage!(
                    "{}: a statistical cell on the emulated {} must be marked emulated",
                    at(),
                    self.platform.id
                ));
            }
            if a.role == Role::Control
                && (a.against.is_some() || a.sham.is_some() || a.avoids.is_some())
            {
                return Err(usage!(
                    "{}: a control has no control, sham or argument",
                    at()
                ));
            }
            if !seen.insert((&a.arm, a.window)) {
                return Err(usage!(
                    "arm {} appears twice in window {}",
                    a.arm,
                    a.window.id()
                ));
            }
        }
        // A left-out cell is one the harness did not race on purpose: a
        // mitigation or sham in a race window, never a control, never a cell
        // the report also measured, once. `fdwindow check` lists a claim on
        // one as not measured, so an entry that broke these rules could hide
        // a measured cell, or a control, from the check.
        let mut left = std::collections::BTreeSet::new();
        for l in &self.left_out {
            let at = format!("left-out arm {} in window {}", l.arm, l.window.id());
            if self.find(&l.arm, l.window).is_some() {
                return Err(usage!("{at}: the report also measured it"));
            }
            if !l.window.is_race() {
                return Err(usage!("{at}: only a race window leaves arms out"));
            }
            if l.role == Role::Control {
                return Err(usage!("{at}: a run races every control"));
            }
            if !left.insert((&l.arm, l.window)) {
                return Err(usage!("{at}: listed twice"));
            }
        }
        for t in &self.tables {
            if let Some(row) = t.rows.iter().find(|r| r.len() != t.columns.len()) {
                return Err(usage!(
                    "table {}: row {row:?} does not match its columns",
                    t.id
                ));
            }
        }
        Ok(())
    }
}

/// The kind of every `in-process` cell, by hazard: the one place it is
/// declared. A probe's in-process arms must declare this kind
/// ([`crate::harness::check`] refuses the probe otherwise), and a report
/// whose in-process cells say another kind is refused on load
/// ([`ProbeReport::validate`]), so a results file cannot turn a
/// deterministic cell into a statistical one, which would excuse a control
/// that never showed the hazard as merely `inconclusive`.
pub const IN_PROCESS_KINDS: &[(&str, Kind)] = &[
    // The POSIX lock drop and the peer's FIN follow from one call, every time.
    ("posix-lock-drop", Kind::Deterministic),
    ("peer-fin-with-clone", Kind::Deterministic),
    // Collisions and environment races depend on timing.
    ("clock-collision", Kind::Statistical),
    ("env-race", Kind::Statistical),
];

/// The declared kind of `hazard`'s in-process cells ([`IN_PROCESS_KINDS`]).
pub fn in_process_kind(hazard: &str) -> Option<Kind> {
    IN_PROCESS_KINDS
        .iter()
        .find(|(h, _)| *h == hazard)
        .map(|&(_, k)| k)
}

/// Every probe's latest report for one platform: `results/<platform-id>.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    pub fn from_json(text: &str) -> Result<ResultsFile> {
        ResultsFile::from_value(serde_json::from_str(text).map_err(|e| usage!("not JSON: {e}"))?)
    }

    /// Validates a results document already parsed as JSON.
    pub fn from_value(head: serde_json::Value) -> Result<ResultsFile> {
        // Read the version first, so a future schema is named as such rather
        // than reported as whatever field it no longer has.
        match head.get("schema") {
            Some(v) => match v.as_u64() {
                Some(v) => check_schema(v)?,
                None => {
                    return Err(usage!(
                        "\"schema\" is {v}, not a version number: not an fdwindow results file"
                    ));
                }
            },
            None => {
                return Err(Error::usage(
                    "no \"schema\" field: not an fdwindow results file",
                ));
            }
        }
        let file: ResultsFile =
            serde_json::from_value(head).map_err(|e| usage!("bad results: {e}"))?;
        check_platform_id(&file.platform.id)?;
        for (id, p) in &file.probes {
            if *id != p.hazard {
                return Err(usage!("entry {id} holds a report for {}", p.hazard));
            }
            p.validate().map_err(|e| usage!("{id}: {e}"))?;
        }
        Ok(file)
    }
}

/// A platform id names a file in the results folder, so it must be a plain
/// file name: letters, digits, `.`, `_`, `-`, not starting with a dot.
pub fn check_platform_id(id: &str) -> Result<()> {
    let plain = !id.is_empty()
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if plain {
        Ok(())
    } else {
        Err(usage!("platform id {id:?} is not a plain file name"))
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
    use crate::report::verdict::Tallies;

    /// A left-out entry cannot hide a measured cell or a control from the
    /// check: only a mitigation or sham of a race window, once, not measured.
    #[test]
    fn left_out_cells_are_only_unraced_fixes() {
        let mut file = sample();
        let report = file.probes.values_mut().next().unwrap();
        let entry = |arm: &str, role, window| LeftOut {
            arm: arm.into(),
            role,
            window,
            against: None,
            why: "not measured in a default run".into(),
        };
        report.left_out = vec![entry("a", Role::Mitigation, Window::PosixSpawn)];
        report.validate().unwrap();
        for (bad, says) in [
            (
                entry("a", Role::Mitigation, Window::ForkWindow),
                "also measured",
            ),
            (
                entry("z", Role::Mitigation, Window::ForkWindow),
                "race window",
            ),
            (
                entry("close", Role::Control, Window::PosixSpawn),
                "every control",
            ),
            (entry("a", Role::Mitigation, Window::PosixSpawn), "twice"),
        ] {
            let mut r = report.clone();
            r.left_out.push(bad.clone());
            let e = r.validate().unwrap_err().to_string();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }

    /// `emulated` is the platform's and the kind's to say, not the file's:
    /// a KVM cell marked emulated (which would excuse a contradiction) and a
    /// TCG guest's statistical cell marked real are both refused.
    #[test]
    fn emulated_follows_from_the_platform_and_the_kind() {
        use crate::report::platform::Virtualization;
        let mut file = sample();
        let report = file.probes.values_mut().next().unwrap();
        report.platform.virtualization = Virtualization::KvmGuest;
        report.validate().unwrap();
        let mut forged = report.clone();
        forged.arms[1].emulated = true;
        let e = forged.validate().unwrap_err().to_string();
        assert!(e.contains("not an emulated platform"), "{e}");

        let mut tcg = report.clone();
        tcg.platform.virtualization = Virtualization::Tcg;
        // Deterministic cells may be either there (a timed arm is emulated).
        tcg.arms[1].emulated = true;
        tcg.validate().unwrap();
        tcg.arms[1].kind = Kind::Statistical;
        tcg.arms[1].window = Window::PosixSpawn;
        tcg.validate().unwrap();
        tcg.arms[1].emulated = false;
        let e = tcg.validate().unwrap_err().to_string();
        assert!(e.contains("must be marked emulated"), "{e}");
    }

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
            kind: Kind::Deterministic,
            about: "x".into(),
            against: (role != Role::Control).then(|| "close".into()),
            sham: None,
            avoids: None,
            emulated: false,
            outcome,
        };
        let report = ProbeReport {
            left_out: Vec::new(),
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
                        broken_trials: 1,
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
            scope: None,
        };
        ResultsFile {
            schema: SCHEMA_VERSION,
            platform,
            probes: [("flock-survival".to_owned(), report)].into(),
        }
    }

    #[test]
    fn a_mitigation_is_judged_against_its_named_control_and_sham() {
        let arm = |arm: &str, role, against: Option<&str>, hits| ArmReport {
            arm: arm.into(),
            role,
            window: Window::InProcess,
            kind: Kind::Statistical,
            about: "x".into(),
            against: against.map(Into::into),
            sham: None,
            avoids: None,
            emulated: false,
            outcome: Outcome::observed(hits, 10),
        };
        let mut report = sample().probes.remove("flock-survival").unwrap();
        report.hazard = "clock-collision".into();
        report.arms = vec![
            arm("pid-realtime-nanos", Role::Control, None, 0),
            arm("us-truncated", Role::Control, None, 10),
            arm(
                "process-sequence",
                Role::Mitigation,
                Some("us-truncated"),
                0,
            ),
            arm("other", Role::Mitigation, Some("pid-realtime-nanos"), 0),
        ];
        let of = |r: &ProbeReport, i: usize| r.control_of(&r.arms[i]).map(|c| c.arm.clone());
        assert_eq!(of(&report, 2).as_deref(), Some("us-truncated"));
        assert_eq!(of(&report, 3).as_deref(), Some("pid-realtime-nanos"));
        assert_eq!(
            report.judgement(&report.arms[2]).verdict,
            crate::report::verdict::Verdict::Valid
        );
        // A sham named but not run leaves the mitigation inconclusive.
        report.arms[2].sham = Some("process-sequence-sham".into());
        assert_eq!(
            report.judgement(&report.arms[2]).verdict,
            crate::report::verdict::Verdict::Inconclusive
        );
        // The named control missing means no control, never the window's first.
        report.arms.remove(1);
        assert_eq!(of(&report, 1), None);
    }

    #[test]
    fn counts_are_checked_on_load() {
        let bad = |hits, trials| {
            let mut file = sample();
            file.probes.get_mut("flock-survival").unwrap().arms[0].outcome =
                Outcome::observed(hits, trials);
            ResultsFile::from_json(&serde_json::to_string(&file).unwrap())
                .unwrap_err()
                .to_string()
        };
        assert!(bad(4, 3).contains("4 hits in 3 trials"), "{}", bad(4, 3));
        let over = bad(0, MAX_TRIALS + 1);
        assert!(over.contains("over the limit"), "{over}");
        // u64::MAX hits, as an overflowed sum would print, is refused too.
        assert!(bad(u64::MAX, 3).contains("hits in 3 trials"));
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
        let err = ResultsFile::from_json(&serde_json::to_string(&file).unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("newer"), "{err}");
        let mut file = sample();
        file.schema = 1;
        let err = ResultsFile::from_json(&serde_json::to_string(&file).unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("older") && err.contains(REGENERATE), "{err}");
        assert!(!err.contains('\n'), "{err}");
        assert!(
            ResultsFile::from_json("{\"x\":1}")
                .unwrap_err()
                .to_string()
                .contains("schema")
        );
        assert!(
            ResultsFile::from_json("{trunc")
                .unwrap_err()
                .to_string()
                .contains("not JSON")
        );
        let mut file = sample();
        let dup = file.probes.get("flock-survival").unwrap().arms[0].clone();
        file.probes
            .get_mut("flock-survival")
            .unwrap()
            .arms
            .push(dup);
        let err = ResultsFile::from_json(&serde_json::to_string(&file).unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("twice"), "{err}");
    }
}

#[cfg(test)]
mod kind_tests {
    use super::*;

    fn one_arm(hazard: &str, window: Window, kind: Kind) -> ProbeReport {
        ProbeReport {
            left_out: Vec::new(),
            schema: SCHEMA_VERSION,
            hazard: hazard.into(),
            about: "x".into(),
            fdwindow_version: "0.1.0".into(),
            platform: Platform::detect(),
            started_at: utc_now(),
            elapsed_ms: 1,
            arms: vec![ArmReport {
                arm: "c".into(),
                role: Role::Control,
                window,
                kind,
                emulated: false,
                about: "x".into(),
                against: None,
                sham: None,
                avoids: None,
                outcome: Outcome::observed(0, 10),
            }],
            tables: vec![],
            scope: None,
        }
    }

    /// A results file cannot relabel a cell's kind: not a window's, and not
    /// an in-process cell's against its probe's declaration.
    #[test]
    fn a_kind_that_contradicts_the_declaration_is_refused() {
        use Kind::{Deterministic, Statistical};
        for w in [Window::ForkWindow, Window::Inherited, Window::ParkedCall] {
            one_arm("h", w, Deterministic).validate().unwrap();
            let e = one_arm("h", w, Statistical)
                .validate()
                .unwrap_err()
                .to_string();
            assert!(e.contains("kind statistical"), "{e}");
        }
        one_arm("h", Window::PosixSpawn, Statistical)
            .validate()
            .unwrap();
        assert!(
            one_arm("h", Window::PosixSpawn, Deterministic)
                .validate()
                .is_err()
        );
        let w = Window::InProcess;
        one_arm("posix-lock-drop", w, Deterministic)
            .validate()
            .unwrap();
        let e = one_arm("posix-lock-drop", w, Statistical)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("probe's cells are deterministic"), "{e}");
        one_arm("env-race", w, Statistical).validate().unwrap();
        assert!(one_arm("env-race", w, Deterministic).validate().is_err());
        let e = one_arm("no-such-hazard", w, Statistical)
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("declares no in-process kind"), "{e}");
    }
}

#[cfg(test)]
mod sham_tests {
    use super::*;
    use crate::report::verdict::Verdict;

    fn arm(
        arm: &str,
        role: Role,
        window: Window,
        sham: Option<&str>,
        outcome: Outcome,
    ) -> ArmReport {
        ArmReport {
            arm: arm.into(),
            role,
            window,
            kind: window.kind().unwrap(),
            emulated: false,
            about: "x".into(),
            against: (role != Role::Control).then(|| "c".into()),
            sham: sham.map(Into::into),
            avoids: None,
            outcome,
        }
    }

    fn probe(arms: Vec<ArmReport>) -> ProbeReport {
        ProbeReport {
            left_out: Vec::new(),
            schema: SCHEMA_VERSION,
            hazard: "h".into(),
            about: "x".into(),
            fdwindow_version: "0.1.0".into(),
            platform: Platform::detect(),
            started_at: utc_now(),
            elapsed_ms: 1,
            arms,
            tables: vec![],
            scope: None,
        }
    }

    /// A fix sham-tested in one window cannot be `valid` without its sham in
    /// another (two-step-cloexec's spawn-lock runs in posix-spawn with its
    /// sham only in inherited).
    #[test]
    fn a_sham_tested_arm_needs_its_sham_in_every_window() {
        let (det, race) = (Window::Inherited, Window::PosixSpawn);
        let report = probe(vec![
            arm("c", Role::Control, det, None, Outcome::observed(10, 10)),
            arm("c", Role::Control, race, None, Outcome::observed(300, 300)),
            arm(
                "m",
                Role::Mitigation,
                det,
                Some("m-sham"),
                Outcome::observed(0, 10),
            ),
            arm("m-sham", Role::Sham, det, None, Outcome::observed(10, 10)),
            arm("m", Role::Mitigation, race, None, Outcome::observed(0, 300)),
        ]);
        assert_eq!(report.judgement(&report.arms[2]).verdict, Verdict::Valid);
        let j = report.judgement(&report.arms[4]);
        assert_eq!(j.verdict, Verdict::Inconclusive, "{j:?}");
        assert_eq!(j.why.as_deref(), Some("its sham did not run"));
    }

    /// A parked-call sham proves that window, not a code difference: the
    /// same fix elsewhere needs no sham (two-step-cloexec's atomic-flag).
    #[test]
    fn a_parked_call_sham_demands_no_sham_elsewhere() {
        let (parked, det) = (Window::ParkedCall, Window::Inherited);
        let mut report = probe(vec![
            arm("c", Role::Control, parked, None, Outcome::observed(10, 10)),
            arm("c", Role::Control, det, None, Outcome::observed(10, 10)),
            arm(
                "m",
                Role::Mitigation,
                parked,
                Some("m-sham"),
                Outcome::observed(0, 10),
            ),
            arm(
                "m-sham",
                Role::Sham,
                parked,
                None,
                Outcome::observed(10, 10),
            ),
            arm("m", Role::Mitigation, det, None, Outcome::observed(0, 10)),
        ]);
        assert_eq!(report.judgement(&report.arms[2]).verdict, Verdict::Valid);
        assert_eq!(report.judgement(&report.arms[4]).verdict, Verdict::Valid);
        // The same sham in a window other than parked-call is a code sham.
        for a in &mut report.arms {
            if a.window == parked {
                a.window = Window::ForkWindow;
                a.kind = Window::ForkWindow.kind().unwrap();
            }
        }
        assert_eq!(
            report.judgement(&report.arms[4]).verdict,
            Verdict::Inconclusive
        );
    }
}
