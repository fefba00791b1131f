//! The audit's report: one serialisable [`Report`] (the JSON, versioned by
//! [`SCHEMA`]), rendered as markdown for people and JUnit for CI. Shard
//! reports merge into one ([`merge`]) and render the same way, so the
//! report of a suite audited across CI jobs reads like one audit's.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use fdwindow::cotenant::detect::{self, Pairs, SIGN_FAILURES, Tally};
use fdwindow::error::{Error, Result};
use fdwindow::report::ResultsFile;
use fdwindow::report::stats::{Count, fisher_less};
use fdwindow::report::verdict::Verdict;

use super::diagnose::{Cause, DECIDE_RUNS, Diagnosis, WINDOW_P, ids};
use super::model::{Audit, Basis, Word};
use super::site::{AloneRuns, DEBUG_HINT, Found, Site, SiteRuns};
use crate::cli::partition::{Partition, Scheme};

/// The report's format version: a change of any field's name or meaning
/// bumps it, and `fdwindow audit merge` refuses reports of another.
pub const SCHEMA: &str = "fdwindow-audit/4";

/// The sign rule as the report states it; the one [`detect::Pairs::decided`] applies.
fn rule() -> String {
    format!(
        "exposed by the sign rule: {SIGN_FAILURES} failures under pressure before any alone, in \
         interleaved `--exact` reruns (sign test p <= 2^-{SIGN_FAILURES} = {:.1e} per unaffected \
         test, at every look)",
        detect::false_rate()
    )
}

/// The held-copy rule as the report states it; the one [`Audit::basis`]
/// and [`Diagnosis::decisive`] apply.
fn held_copy_rule() -> String {
    format!(
        "exposed by a held copy: failed in the screen (under pressure or held copies), ran alone in \
         its `--exact` reruns and never failed there, and \
         a held copy of a class of descriptor it closes broke it against that class's sham (the \
         same closes, each sent to the holder without its descriptor) at one-sided Fisher p <= {WINDOW_P} with at least {DECIDE_RUNS} \
         runs of each ({DECIDE_RUNS}/{DECIDE_RUNS} against 0/{DECIDE_RUNS} gives {:.1e}); this \
         names a descriptor that breaks it, not how often realistic pressure does",
        fisher_less(
            Count::new(0, DECIDE_RUNS),
            Count::new(DECIDE_RUNS, DECIDE_RUNS)
        )
    )
}

/// Where the advice on each hazard comes from.
pub enum Advisor {
    /// Results files: the fixes measured valid on this OS.
    Results {
        /// The folder read.
        dir: PathBuf,
        /// Its files.
        files: Vec<ResultsFile>,
    },
    /// No results folder (or, in the words given, why `./results` was not
    /// read): fdwindow's encoded claims, said to be claims.
    Claims(Option<String>),
}

impl Advisor {
    /// `--results DIR` when given (it must load and hold results), else
    /// `./results` when it loads, else the claims.
    pub fn choose(given: Option<&Path>) -> Result<Advisor> {
        let Some(dir) = given else {
            // Every user's own crate: a `results` folder, if any, may be
            // theirs, so an unreadable one is said, never an error.
            let dir = Path::new("results");
            return Ok(match fdwindow::evidence::results::load_dir(dir) {
                Ok(files) if !files.is_empty() => Advisor::Results {
                    dir: dir.to_owned(),
                    files,
                },
                Ok(_) if dir.is_dir() => {
                    Advisor::Claims(Some("./results holds no fdwindow results file".into()))
                }
                Ok(_) => Advisor::Claims(None),
                Err(e) => Advisor::Claims(Some(format!("./results is not fdwindow's: {e}"))),
            });
        };
        if !dir.is_dir() {
            return Err(usage!(
                "--results {}: {}",
                dir.display(),
                if dir.exists() {
                    "not a folder"
                } else {
                    "no such folder"
                }
            ));
        }
        let files =
            fdwindow::evidence::results::load_dir(dir).map_err(|e| usage!("--results: {e}"))?;
        if files.is_empty() {
            return Err(usage!(
                "--results {}: holds no results file (make probe-linux writes one)",
                dir.display()
            ));
        }
        Ok(Advisor::Results {
            dir: dir.to_owned(),
            files,
        })
    }

    /// Where the advice came from, for the report.
    fn source(&self) -> String {
        match self {
            Advisor::Results { dir, files } => {
                format!("{} results files in {}", files.len(), dir.display())
            }
            Advisor::Claims(None) => "fdwindow's encoded claims (no results folder here: \
                                      nothing measured on this machine)"
                .into(),
            Advisor::Claims(Some(why)) => {
                format!("fdwindow's encoded claims ({why}; `--results DIR` names a results folder)")
            }
        }
    }

    /// One line of advice on `hazard`: the fixes measured (or, without
    /// results, claimed) valid on `os`, or where to look.
    fn advice(&self, hazard: &str, os: &str) -> String {
        let files: &[ResultsFile] = match self {
            Advisor::Results { files, .. } => files,
            Advisor::Claims(_) => &[],
        };
        let Some(a) = fdwindow::views::advise::advise(files, &[], hazard, os) else {
            return format!("see `fdwindow advise {hazard}` (nothing known about it)");
        };
        let list = |arms: &[&fdwindow::views::advise::ArmAdvice]| {
            arms.iter()
                .map(|v| {
                    let why = if v.about.is_empty() {
                        v.why.as_deref().unwrap_or("")
                    } else {
                        &v.about
                    };
                    format!("{} ({why})", v.arm)
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let valid: Vec<&fdwindow::views::advise::ArmAdvice> = a.valid.iter().collect();
        if !valid.is_empty() {
            return format!("valid fixes on {os}: {}", list(&valid));
        }
        let claimed: Vec<&fdwindow::views::advise::ArmAdvice> = a
            .not_measured
            .iter()
            .filter(|v| matches!(v.verdict, Verdict::Valid | Verdict::Avoids))
            .collect();
        match self {
            Advisor::Claims(_) if !claimed.is_empty() => format!(
                "fixes fdwindow's claims call valid on {os} (claims, not measured here): {}",
                list(&claimed)
            ),
            _ if !a.about.is_empty() => format!(
                "{} No fix measured valid on {os} yet: `fdwindow advise {hazard}`.",
                a.about
            ),
            _ => format!("see `fdwindow advise {hazard}`"),
        }
    }
}

/// Failures, timeouts and runs of one arm.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TallyReport {
    /// Runs that failed (not counting timeouts).
    pub failures: u64,
    /// Runs.
    pub runs: u64,
    /// Runs killed at the timeout.
    pub timeouts: u64,
    /// The 95% Wilson interval of the bad (failed or timed-out) share.
    pub wilson95: [f64; 2],
}

impl TallyReport {
    fn of(t: Tally) -> TallyReport {
        let ci = Count::new(t.bad(), t.runs).wilson();
        TallyReport {
            failures: t.failures,
            runs: t.runs,
            timeouts: t.timeouts,
            wilson95: [ci.low, ci.high],
        }
    }

    /// Failed or timed out.
    pub fn bad(&self) -> u64 {
        self.failures + self.timeouts
    }

    /// `k/N`, with its timeouts.
    fn text(&self) -> String {
        if self.runs == 0 {
            return "–".into();
        }
        let timeouts = if self.timeouts > 0 {
            format!(", {} timed out", self.timeouts)
        } else {
            String::new()
        };
        format!("{}/{}{timeouts}", self.bad(), self.runs)
    }
}

/// A suspect's interleaved `--exact` reruns.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RerunsReport {
    /// The runs alone.
    pub alone: TallyReport,
    /// The runs under pressure.
    pub pressure: TallyReport,
    /// The sign test's p.
    pub p: f64,
    /// Children the pressure started during the pressured reruns.
    pub spawns: u64,
    /// Pressured reruns in which the pressure never started.
    pub unpressured: u64,
    /// The failure rate these pairs confirm with 90% probability.
    pub confirmed_rate90: f64,
}

impl RerunsReport {
    fn of(p: &Pairs) -> RerunsReport {
        RerunsReport {
            alone: TallyReport::of(p.alone),
            pressure: TallyReport::of(p.pressure),
            p: p.p(),
            spawns: p.spawns,
            unpressured: p.unpressured,
            confirmed_rate90: detect::confirmed_rate90(p.pressure.runs),
        }
    }
}

/// One class's held copies in a diagnosis.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HoldReport {
    /// The class (`file`, `listener`…).
    pub class: String,
    /// Runs that failed or timed out under it.
    pub failures: u64,
    /// Runs under it.
    pub runs: u64,
    /// Of those, timed out.
    #[serde(default)]
    pub timeouts: u64,
    /// Copies held.
    pub held: u64,
    /// Closes let through unheld by the bounds.
    pub skipped: u64,
    /// What the copies held (a path, a port).
    pub what: Vec<String>,
    /// The run that first failed.
    pub first_failure: Option<u64>,
}

/// A diagnosis's load check.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LoadReport {
    /// Fork-path pressure.
    pub pressure: TallyReport,
    /// The same, its children dropping every descriptor.
    pub sham: TallyReport,
}

/// A test's diagnosis.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DiagnosisReport {
    /// `held CLASS`, `load` or `unexplained`.
    pub cause: String,
    /// One line for the report.
    pub summary: String,
    /// Whether the held-copy window decides on its own.
    pub decisive: bool,
    /// The window's Fisher p, for a held cause.
    pub window_p: Option<f64>,
    /// Classes the budget ended before they were decided.
    pub cut_short: Vec<String>,
    /// Seconds it took.
    pub seconds: f64,
    /// Per class.
    pub holds: Vec<HoldReport>,
    /// The load check, if run.
    pub load: Option<LoadReport>,
    /// The call site named: the first of [`DiagnosisReport::sites`] that
    /// breaks the test by itself ([`SiteRuns::breaks`]), if one does.
    pub site: Option<Site>,
    /// The call sites of the named class's held copies: those that break
    /// the test first, then those held in the most failing runs.
    pub sites: Vec<SiteRuns>,
    /// Where the test was decided with a cause another test's diagnosis
    /// decided: the fields above are that diagnosis's.
    #[serde(default)]
    pub decided_with: Option<DecidedWith>,
}

/// A test decided with the cause of another: its runs holding only the
/// cause's call site.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DecidedWith {
    /// The test whose diagnosis decided the cause.
    pub test: String,
    /// This test's runs with only the cause's site held.
    pub site_runs: AloneRuns,
}

impl DiagnosisReport {
    fn of(d: &Diagnosis) -> DiagnosisReport {
        DiagnosisReport {
            cause: match &d.cause {
                Cause::Held(c) => format!("held {}", ids(c)),
                Cause::Load => "load".into(),
                Cause::Unexplained => "unexplained".into(),
            },
            summary: d.summary(),
            decisive: d.decisive(),
            window_p: d.window_p(),
            cut_short: d.cut_short.iter().map(|c| c.id().to_owned()).collect(),
            seconds: d.seconds,
            holds: d
                .classes
                .iter()
                .map(|c| HoldReport {
                    class: c.class.id().to_owned(),
                    failures: c.tally.bad(),
                    runs: c.tally.runs,
                    timeouts: c.tally.timeouts,
                    held: c.held,
                    skipped: c.skipped,
                    what: c.what.clone(),
                    first_failure: c.first_failure,
                })
                .collect(),
            load: d.load.map(|[control, sham]| LoadReport {
                pressure: TallyReport::of(control),
                sham: TallyReport::of(sham),
            }),
            site: d.sites.iter().find(|s| s.breaks()).map(|s| s.site.clone()),
            sites: d.sites.clone(),
            decided_with: d.joined.as_ref().map(|j| DecidedWith {
                test: j.test.clone(),
                site_runs: j.site,
            }),
        }
    }
}

/// One test's outcome.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TestReport {
    /// Its binary (nextest's binary id).
    pub binary: String,
    /// libtest's name.
    pub name: String,
    /// The audit's word.
    pub verdict: Word,
    /// Detection's own word, before the diagnosis (`exposed`, `undecided`…).
    pub detection: String,
    /// For an exposed test, the rule that decided it.
    pub basis: Option<Basis>,
    /// That rule's p.
    pub basis_p: Option<f64>,
    /// The hazard its diagnosis named.
    pub hazard: Option<String>,
    /// Every hazard its held class maps to.
    pub candidates: Vec<String>,
    /// Its pressured screen runs.
    pub screen: TallyReport,
    /// Its held-copy screen runs, where the plan chose one.
    pub screen_held: Option<TallyReport>,
    /// Whether it ran in a held-copy run in which no close went through
    /// unheld (`None` without a held-copy screen).
    pub held_screened: Option<bool>,
    /// Screen runs in which its binary died or timed out before it reported.
    pub screen_unattributed: u64,
    /// Its `--exact` reruns, if a suspect.
    pub reruns: Option<RerunsReport>,
    /// Its diagnosis, if exposed or undecided.
    pub diagnosis: Option<DiagnosisReport>,
    /// Advice per hazard and candidate.
    pub advice: BTreeMap<String, String>,
    /// The first failure message seen.
    pub message: Option<String>,
    /// Its run time alone (libtest's `--report-time` in the timing run).
    pub time_s: Option<f64>,
}

impl TestReport {
    /// Its reruns, or the counts of none for a test that was no suspect.
    fn reruns_or_none(&self) -> RerunsReport {
        self.reruns
            .clone()
            .unwrap_or_else(|| RerunsReport::of(&Pairs::default()))
    }
}

/// A binary's screen.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScreenRuns {
    /// The binary.
    pub binary: String,
    /// Its pressured screen runs.
    pub pressured_runs: u64,
    /// The rate those runs see with 90% probability.
    pub seen_rate90: f64,
    /// Its held-copy screen runs (`close-hold=all`), where the plan chose
    /// one.
    pub held_runs: u64,
    /// Copies those runs held.
    pub held_copies: u64,
    /// Closes those runs let through unheld (the injector's bounds).
    pub unheld_closes: u64,
    /// The shard that ran it (merged reports).
    #[serde(default)]
    pub shard: Option<u64>,
}

/// Time spent, in seconds.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Seconds {
    /// The timing run.
    #[serde(default)]
    pub timing: f64,
    /// The screen.
    pub screen: f64,
    /// The reruns.
    pub reruns: f64,
    /// The diagnosis.
    pub diagnosis: f64,
    /// All of it.
    pub total: f64,
}

/// The shards a merged report joins.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Merged {
    /// Their scheme.
    pub scheme: Scheme,
    /// Shards in all (every one is present).
    pub total: u64,
    /// Each shard's total seconds, by shard.
    pub shard_seconds: Vec<f64>,
}

/// The whole report: what `--format json` writes and `merge` reads.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: String,
    /// The audited command.
    pub command: Vec<String>,
    /// The machine.
    pub platform: serde_json::Value,
    /// The fdwindow that wrote it.
    pub fdwindow_version: String,
    /// The screen's and reruns' pressure.
    pub pressure: String,
    /// The shard this audit ran (`--partition`).
    pub partition: Option<Partition>,
    /// The shards merged into this report.
    pub merged: Option<Merged>,
    /// The rules, with their thresholds.
    pub rule: serde_json::Value,
    /// The budget (per shard).
    pub budget_seconds: f64,
    /// Time spent (summed over merged shards).
    pub seconds: Seconds,
    /// Each binary's screen.
    pub screen_runs: Vec<ScreenRuns>,
    /// Pressured runs.
    pub pressured_runs: u64,
    /// Pressured runs in which the injector reported pressure.
    pub pressure_started_runs: u64,
    /// Where the advice came from.
    pub advice_from: String,
    /// Warnings for the reader.
    pub warnings: Vec<String>,
    /// Whether a signal cut it short.
    pub interrupted: bool,
    /// Tests exposed.
    pub exposed: usize,
    /// Tests that failed alone.
    pub fails_alone: usize,
    /// The exposed tests' causes: one per binary, call site and hazard,
    /// with the tests it breaks (derived from [`Report::tests`]).
    pub causes: Vec<CauseReport>,
    /// Every audited test.
    pub tests: Vec<TestReport>,
}

/// One cause: a call site whose held copies break tests, with its hazard.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CauseReport {
    /// The tests' binary.
    pub binary: String,
    /// The call site whose copies break them; `None` where the diagnosis
    /// named no site.
    pub site: Option<Site>,
    /// Other sites whose copies alone broke the test it was decided on
    /// (an IPv6 twin of an IPv4 probe): each needs the same fix.
    pub also: Vec<Site>,
    /// The hazard, where one was named.
    pub hazard: Option<String>,
    /// The diagnosis's cause (`held listener`).
    pub cause: String,
    /// The test whose diagnosis decided it (held copies against their sham).
    pub decided_on: String,
    /// That window's one-sided Fisher p.
    pub window_p: Option<f64>,
    /// The tests it breaks: the one it was decided on, and those whose runs
    /// holding only its site failed.
    pub tests: Vec<String>,
}

/// The causes of `tests`' exposed, diagnosed tests, in the tests' order:
/// tests of one binary whose diagnoses name the same site and hazard share
/// one.
fn causes_of(tests: &[TestReport]) -> Vec<CauseReport> {
    let mut causes: Vec<CauseReport> = Vec::new();
    for t in tests.iter().filter(|t| t.verdict == Word::Exposed) {
        let Some(d) = t
            .diagnosis
            .as_ref()
            .filter(|d| d.cause.starts_with("held "))
        else {
            continue;
        };
        let same = |c: &&mut CauseReport| {
            c.binary == t.binary
                && c.hazard == t.hazard
                && c.site.as_ref().map(Site::location) == d.site.as_ref().map(Site::location)
        };
        let decided_on = d
            .decided_with
            .as_ref()
            .map_or_else(|| t.name.clone(), |w| w.test.clone());
        match causes.iter_mut().find(same) {
            Some(c) => {
                c.tests.push(t.name.clone());
                if d.decided_with.is_none() {
                    c.decided_on.clone_from(&t.name);
                    c.window_p = d.window_p;
                }
            }
            None => causes.push(CauseReport {
                binary: t.binary.clone(),
                site: d.site.clone(),
                also: d
                    .sites
                    .iter()
                    .filter(|s| s.breaks() && Some(&s.site) != d.site.as_ref())
                    .map(|s| s.site.clone())
                    .collect(),
                hazard: t.hazard.clone(),
                cause: d.cause.clone(),
                decided_on,
                window_p: d.window_p,
                tests: vec![t.name.clone()],
            }),
        }
    }
    causes
}

fn rules_json() -> serde_json::Value {
    serde_json::json!({
        "sign_failures": SIGN_FAILURES,
        "false_rate": detect::false_rate(),
        "text": rule(),
        "held_copy": {
            "runs": DECIDE_RUNS,
            "p_max": WINDOW_P,
            "text": held_copy_rule(),
        },
    })
}

impl Report {
    /// The held-copy screen's paragraph: its runs, what they held, the
    /// closes that went through unheld and the tests that never ran without
    /// such a gap. Nothing without a held-copy screen.
    fn held_screen_md(&self, out: &mut String) {
        let runs: u64 = self.screen_runs.iter().map(|s| s.held_runs).sum();
        if runs == 0 {
            return;
        }
        let copies: u64 = self.screen_runs.iter().map(|s| s.held_copies).sum();
        let unheld: u64 = self.screen_runs.iter().map(|s| s.unheld_closes).sum();
        let per_binary: Vec<String> = self
            .screen_runs
            .iter()
            .filter(|s| s.held_runs > 0)
            .map(|s| {
                format!(
                    "{} {} runs, {} held, {} unheld",
                    s.binary, s.held_runs, s.held_copies, s.unheld_closes
                )
            })
            .collect();
        let missed: Vec<&TestReport> = self
            .tests
            .iter()
            .filter(|t| t.held_screened == Some(false))
            .collect();
        let _ = write!(
            out,
            "Held-copy screen: {runs} runs with a copy of every closed descriptor held \
             (close-hold=all) held {copies} copies; {unheld} closes went through unheld \
             ({}). ",
            per_binary.join("; ")
        );
        if missed.is_empty() {
            let _ = writeln!(
                out,
                "Every test ran in a held-copy run in which no close went through unheld.\n"
            );
        } else {
            const SHOWN: usize = 20;
            let names: Vec<String> = missed
                .iter()
                .take(SHOWN)
                .map(|t| format!("`{}` ({})", t.name, t.binary))
                .collect();
            let more = missed.len().saturating_sub(SHOWN);
            let _ = writeln!(
                out,
                "Not screened with every close held ({} tests: they ran only where a close went \
                 through unheld, or the screen's share ended first): {}{}.\n",
                missed.len(),
                names.join(", "),
                if more > 0 {
                    format!(" and {more} more (the JSON report lists all)")
                } else {
                    String::new()
                }
            );
        }
    }

    /// The report of one audit.
    pub fn of(a: &Audit, advisor: &Advisor) -> Report {
        // Detected once: it reads uname, os-release and /proc.
        let platform = fdwindow::report::platform::Platform::detect();
        let tests: Vec<TestReport> = a
            .tests
            .iter()
            .enumerate()
            .map(|(t, case)| {
                let d = a.diagnoses.get(&t);
                let hazard = d.and_then(|d| d.hazard);
                let candidates: Vec<&str> = d.map(|d| d.candidates.clone()).unwrap_or_default();
                let basis = a.basis(t);
                TestReport {
                    binary: a.binaries[case.binary].clone(),
                    name: case.name.clone(),
                    verdict: a.verdict(t),
                    detection: a.detection.verdict(t).id().into(),
                    basis,
                    basis_p: basis.map(|b| match b {
                        Basis::SignRule => {
                            a.detection.pairs.get(&t).copied().unwrap_or_default().p()
                        }
                        Basis::HeldCopy => d.and_then(Diagnosis::window_p).unwrap_or(f64::NAN),
                    }),
                    hazard: hazard.map(str::to_owned),
                    advice: hazard
                        .iter()
                        .chain(&candidates)
                        .map(|h| ((*h).to_owned(), advisor.advice(h, &platform.os)))
                        .collect(),
                    candidates: candidates.iter().map(|c| (*c).to_owned()).collect(),
                    screen: TallyReport::of(a.detection.screen[t]),
                    screen_held: a
                        .detection
                        .held
                        .as_ref()
                        .map(|h| TallyReport::of(h.tally[t])),
                    held_screened: a.detection.held.as_ref().map(|h| h.screened[t]),
                    screen_unattributed: case.unattributed,
                    reruns: a.detection.pairs.get(&t).map(RerunsReport::of),
                    diagnosis: d.map(DiagnosisReport::of),
                    message: case.message.clone(),
                    time_s: case.time,
                }
            })
            .collect();
        Report {
            schema: SCHEMA.into(),
            command: a.command.clone(),
            platform: serde_json::to_value(&platform).unwrap_or_default(),
            fdwindow_version: env!("CARGO_PKG_VERSION").into(),
            pressure: a.spec.to_string(),
            partition: a.partition,
            merged: None,
            rule: rules_json(),
            budget_seconds: a.budget.as_secs_f64(),
            seconds: Seconds {
                timing: a.timing_seconds,
                screen: a.detection.seconds[0],
                reruns: a.detection.seconds[1],
                diagnosis: a.diagnosis_seconds,
                total: a.seconds(),
            },
            screen_runs: a
                .binaries
                .iter()
                .zip(&a.detection.screen_runs)
                .enumerate()
                .map(|(i, (b, n))| {
                    let held = a.detection.held.as_ref();
                    ScreenRuns {
                        binary: b.clone(),
                        pressured_runs: *n,
                        seen_rate90: detect::seen_rate90(*n),
                        held_runs: held.map_or(0, |h| h.runs[i]),
                        held_copies: held.map_or(0, |h| h.copies[i]),
                        unheld_closes: held.map_or(0, |h| h.unheld[i]),
                        shard: a.partition.map(|p| p.shard),
                    }
                })
                .collect(),
            pressured_runs: a.pressured.0,
            pressure_started_runs: a.pressured.1,
            advice_from: advisor.source(),
            warnings: a.warnings.clone(),
            interrupted: a.interrupted,
            exposed: 0,
            fails_alone: 0,
            causes: Vec::new(),
            tests,
        }
        .counted()
    }

    /// With [`Report::exposed`], [`Report::fails_alone`] and
    /// [`Report::causes`] derived from its tests (never taken from a file).
    pub fn counted(mut self) -> Report {
        let count = |w: Word| self.tests.iter().filter(|t| t.verdict == w).count();
        self.exposed = count(Word::Exposed);
        self.fails_alone = count(Word::FailsAlone);
        self.causes = causes_of(&self.tests);
        self
    }

    /// The coverage lines: what the screens could see, the held-copy
    /// screen's account, what the reruns could confirm.
    fn coverage_md(&self, out: &mut String) {
        let least = self
            .screen_runs
            .iter()
            .map(|s| s.pressured_runs)
            .min()
            .unwrap_or(0);
        let held = self.screen_runs.iter().any(|s| s.held_runs > 0);
        if held && least == 0 {
            let _ = writeln!(
                out,
                "Coverage: the held-copy screen below is the screen: no pressured screen ran \
                 (`--rates` adds one, and measures each suspect's rate under pressure).\n"
            );
        } else {
            let _ = writeln!(
                out,
                "Coverage: {}the screen ran each binary at least {least} times under pressure, so \
                 a test failing at least {:.1}% of pressured runs had a 90% chance to be seen; \
                 rarer ones may have been missed (a longer screen, `--budget` or `--runs`, sees \
                 rarer ones).\n",
                if held {
                    "besides the held-copy screen, "
                } else {
                    ""
                },
                100.0 * detect::seen_rate90(least)
            );
        }
        // Over the suspects left undecided: those decided early (fails-alone
        // after a few pairs) say nothing of what the reruns could confirm.
        let fewest = self
            .tests
            .iter()
            .filter(|t| t.detection == detect::Verdict::Undecided.id())
            .filter_map(|t| t.reruns.as_ref().map(|r| r.pressure.runs))
            .min();
        self.held_screen_md(out);
        if let Some(fewest) = fewest.filter(|_| least > 0) {
            let _ = writeln!(
                out,
                "Confirmation: of the suspects the sign rule left undecided, the one with the fewest \
                 reruns had {fewest} pairs, enough for the sign rule to confirm, with 90% probability, \
                 a test failing at least {:.1}% of pressured `--exact` runs; a rarer one stays \
                 undecided unless a held copy decides it.\n",
                100.0 * detect::confirmed_rate90(fewest)
            );
        }
    }

    /// The advice on `hazard` for cause `c`: its deciding test's.
    fn advice_of(&self, c: &CauseReport, hazard: &str) -> Option<&String> {
        self.tests
            .iter()
            .find(|t| t.binary == c.binary && t.name == c.decided_on)
            .and_then(|t| t.advice.get(hazard))
    }

    /// The causes section of the markdown: each cause once, with its tests
    /// and its advice.
    fn causes_md(&self, out: &mut String) {
        if self.causes.is_empty() {
            return;
        }
        let _ = writeln!(out, "## Causes\n");
        for c in &self.causes {
            let at = c
                .site
                .as_ref()
                .map_or_else(|| "no call site named".to_owned(), Site::label);
            let hazard = c.hazard.as_deref().unwrap_or("no known hazard");
            let names: Vec<String> = c.tests.iter().map(|n| format!("`{n}`")).collect();
            let others = c.tests.len() - 1;
            let _ = writeln!(
                out,
                "### {at} ({}): {hazard}, {} test{}\n\nDecided on `{}`: its {} copies broke it \
                 against their sham (p {}){}. Tests: {}.\n",
                c.binary,
                c.tests.len(),
                if c.tests.len() == 1 { "" } else { "s" },
                c.decided_on,
                c.cause.trim_start_matches("held "),
                c.window_p
                    .map_or_else(|| "–".to_owned(), |p| format!("{p:.1e}")),
                if others > 0 {
                    format!(
                        "; {others} other{} by this site's copies alone",
                        if others == 1 { "" } else { "s" }
                    )
                } else {
                    String::new()
                },
                names.join(", ")
            );
            if !c.also.is_empty() {
                let also: Vec<String> = c.also.iter().map(Site::label).collect();
                let _ = writeln!(
                    out,
                    "Also enough by itself, and to fix alike: {}.\n",
                    also.join(", ")
                );
            }
            if let Some(advice) = self.advice_of(c, hazard) {
                let _ = writeln!(out, "Advice (`{hazard}`): {advice}\n");
            }
        }
    }

    /// The exit status it calls for: [`super::exit`].
    pub fn exit_status(&self) -> u8 {
        if self.exposed > 0 {
            super::exit::EXPOSED
        } else if self.fails_alone > 0 {
            super::exit::FAILS_ALONE
        } else {
            super::exit::CLEAN
        }
    }

    /// The JSON.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain JSON") + "\n"
    }

    /// The exposed rule and its p, for an exposed test: `(held copy, p 2.9e-4)`.
    fn exposure(t: &TestReport) -> Option<String> {
        let rule = match t.basis? {
            Basis::SignRule => "sign rule",
            Basis::HeldCopy => "held copy",
        };
        Some(format!("({rule}, p {:.1e})", t.basis_p.unwrap_or(f64::NAN)))
    }

    /// The command, its shard, and how many shards were merged.
    fn what(&self) -> String {
        let mut s = format!("`{}`", self.command.join(" "));
        if let Some(p) = self.partition {
            let _ = write!(s, ", shard {p}");
        }
        if let Some(m) = &self.merged {
            let _ = write!(
                s,
                ", {} shards merged ({}:K/{}; the longest took {:.1} s)",
                m.total,
                m.scheme.id(),
                m.total,
                m.shard_seconds.iter().copied().fold(0.0, f64::max)
            );
        }
        s
    }

    /// The markdown report: coverage, every test that failed anywhere, then
    /// each exposed or undecided test's diagnosis and advice.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let binaries: std::collections::BTreeSet<&str> =
            self.tests.iter().map(|t| t.binary.as_str()).collect();
        let _ = writeln!(
            out,
            "# fdwindow audit\n\n{}: {} tests in {} binaries, pressure `{}`, budget {:.0} s; \
             {} exposed, {} failed alone. Took {:.1} s (timing {:.1} s, screen {:.1} s, reruns \
             {:.1} s, diagnosis {:.1} s).\n\nRules: {}; or {}.\n\nAdvice from {}.\n",
            self.what(),
            self.tests.len(),
            binaries.len(),
            self.pressure,
            self.budget_seconds,
            self.exposed,
            self.fails_alone,
            self.seconds.total,
            self.seconds.timing,
            self.seconds.screen,
            self.seconds.reruns,
            self.seconds.diagnosis,
            rule(),
            held_copy_rule(),
            self.advice_from
        );
        self.coverage_md(&mut out);
        if self.interrupted {
            let _ = writeln!(
                out,
                "> warning: interrupted: a signal stopped the audit; its verdicts cover only the \
                 runs made before it, and a test never run is not cleared\n"
            );
        }
        for w in &self.warnings {
            let _ = writeln!(out, "> warning: {w}\n");
        }
        self.causes_md(&mut out);
        let failing: Vec<&TestReport> = self
            .tests
            .iter()
            .filter(|t| t.verdict != Word::NotExposed)
            .collect();
        if failing.is_empty() {
            let _ = writeln!(out, "No test failed in the screen.");
            return out;
        }
        let _ = writeln!(
            out,
            "| binary | test | screen (pressure) | --exact alone | --exact pressure | spawns | sign p | verdict | cause |\n|---|---|---|---|---|---|---|---|---|"
        );
        for t in &failing {
            let reruns = t.reruns_or_none();
            let mut cause = t
                .diagnosis
                .as_ref()
                .map(|d| d.summary.clone())
                .unwrap_or_default();
            let held_only =
                t.screen.bad() == 0 && t.screen_held.as_ref().is_some_and(|h| h.bad() > 0);
            if t.verdict == Word::Undecided && held_only {
                let why = "failed only with held copies in the screen: the held-copy window \
                           decides it"
                    .to_owned();
                cause = if cause.is_empty() {
                    format!("{why}, and it had no time left")
                } else {
                    format!("{why}; {cause}")
                };
            } else if t.verdict == Word::Undecided {
                let why = format!(
                    "{} of {SIGN_FAILURES} pressured failures in {} pairs (a rate of {:.1}% would \
                     reach {SIGN_FAILURES} there with 90% probability)",
                    reruns.pressure.bad(),
                    reruns.pressure.runs,
                    100.0 * reruns.confirmed_rate90
                );
                cause = if cause.is_empty() {
                    why
                } else {
                    format!("{why}; {cause}")
                };
            }
            let _ = writeln!(
                out,
                "| {} | `{}` | {} | {} | {} | {} | {:.1e} | {} | {cause} |",
                t.binary,
                t.name,
                match &t.screen_held {
                    Some(h) if h.runs > 0 => format!("{}; held {}", t.screen.text(), h.text()),
                    _ => t.screen.text(),
                },
                reruns.alone.text(),
                reruns.pressure.text(),
                reruns.spawns,
                reruns.p,
                match Self::exposure(t) {
                    Some(why) => format!("**exposed** {why}"),
                    None => t.verdict.id().to_owned(),
                },
            );
        }
        let _ = writeln!(
            out,
            "\n{} other tests never failed.\n",
            self.tests.len() - failing.len()
        );
        for t in &failing {
            if let Some(d) = &t.diagnosis {
                test_md(&mut out, t, d);
            }
        }
        out
    }

    /// GitHub Actions workflow commands: an `::error` annotation per cause,
    /// at its call site's file and line (the file relative to the workspace
    /// root, as GitHub wants it relative to the repository), listing the
    /// tests it breaks, with the hazard and its advice; one per exposed test
    /// outside any cause; a `::warning` per test that failed alone.
    /// <https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands>
    pub fn github(&self) -> String {
        let mut out = String::new();
        // One annotation per cause, at its site, listing the tests it breaks.
        for c in &self.causes {
            let mut at = String::new();
            if let Some(s) = &c.site
                && let (Some(file), Some(line)) = (&s.file, s.line)
            {
                let _ = write!(at, "file={},line={line},", github_property(file));
            }
            let hazard = c.hazard.as_deref().unwrap_or("no known hazard");
            let title = format!(
                "fdwindow audit: {hazard} breaks {} test{}",
                c.tests.len(),
                if c.tests.len() == 1 { "" } else { "s" }
            );
            let mut message = format!("{}: {}", c.binary, c.tests.join(", "));
            if let Some(s) = &c.site {
                let _ = write!(message, "\ncall site: {}", s.label());
            }
            if let Some(advice) = self.advice_of(c, hazard) {
                let _ = write!(message, "\n{hazard}: {advice}");
            }
            let _ = writeln!(
                out,
                "::error {at}title={}::{}",
                github_property(&title),
                github_data(&message)
            );
        }
        let in_a_cause = |t: &TestReport| {
            self.causes
                .iter()
                .any(|c| c.binary == t.binary && c.tests.contains(&t.name))
        };
        for t in &self.tests {
            let (command, what) = match t.verdict {
                Word::Exposed if in_a_cause(t) => continue,
                Word::Exposed => ("error", "exposed"),
                Word::FailsAlone => ("warning", "failed alone"),
                _ => continue,
            };
            let site = t
                .diagnosis
                .as_ref()
                .and_then(|d| d.sites.iter().find(|s| s.breaks()).or(d.sites.first()));
            let mut at = String::new();
            if let Some(s) = site
                && let (Some(file), Some(line)) = (&s.site.file, s.site.line)
            {
                let _ = write!(at, "file={},line={line},", github_property(file));
            }
            let title = format!("fdwindow audit: {} {what}", t.name);
            let mut message = match t.verdict {
                Word::Exposed => format!(
                    "{} {}: {}",
                    t.binary,
                    t.name,
                    t.diagnosis
                        .as_ref()
                        .map_or("exposed, not diagnosed", |d| d.summary.as_str())
                ),
                _ => format!(
                    "{} {}: failed in its --exact reruns without pressure ({})",
                    t.binary,
                    t.name,
                    t.reruns_or_none().alone.text()
                ),
            };
            if let Some(s) = site {
                let _ = write!(message, "\ncall site: {}", s.site.label());
            }
            if let Some(h) = &t.hazard
                && let Some(advice) = t.advice.get(h)
            {
                let _ = write!(message, "\n{h}: {advice}");
            }
            let _ = writeln!(
                out,
                "::{command} {at}title={}::{}",
                github_property(&title),
                github_data(&message)
            );
        }
        out
    }

    /// JUnit XML with every audited test, one suite per binary, named as
    /// nextest names them (classname: the binary id): an exposed test is a
    /// failure naming its hazard and advice, one that failed alone an
    /// error, one that never ran skipped, the rest pass. Each case carries
    /// its counts and p as properties.
    pub fn junit(&self) -> String {
        use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};
        let mut report = quick_junit::Report::new("fdwindow-audit");
        report.set_time(Duration::from_secs_f64(self.seconds.total.max(0.0)));
        let mut suites: BTreeMap<&str, TestSuite> = BTreeMap::new();
        for t in &self.tests {
            let reruns = t.reruns_or_none();
            let status = if t.verdict == Word::Exposed {
                let summary = format!(
                    "exposed {}: {}; --exact alone {}, pressure {}; {}",
                    Self::exposure(t).unwrap_or_default(),
                    t.hazard.as_deref().unwrap_or("no hazard named"),
                    reruns.alone.text(),
                    reruns.pressure.text(),
                    t.diagnosis
                        .as_ref()
                        .map_or("not diagnosed", |d| d.summary.as_str())
                );
                let mut body = summary.clone();
                if let Some(m) = &t.message {
                    let _ = write!(body, "\nfirst failure: {m}");
                }
                if let Some(d) = &t.diagnosis {
                    for line in sites_md(&d.sites).lines() {
                        let _ = write!(body, "\n{}", line.trim_start_matches("- "));
                    }
                }
                for (h, advice) in &t.advice {
                    let _ = write!(body, "\n{h}: {advice}");
                }
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_type("exposed")
                    .set_message(summary)
                    .set_description(body);
                s
            } else if t.verdict == Word::FailsAlone {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                s.set_type("fails-alone").set_message(format!(
                    "failed alone in its --exact reruns ({}): broken or flaky without pressure{}",
                    reruns.alone.text(),
                    t.message
                        .as_ref()
                        .map(|m| format!("; first failure: {m}"))
                        .unwrap_or_default()
                ));
                s
            } else if t.screen.runs == 0 {
                let mut s = TestCaseStatus::skipped();
                s.set_message(if self.interrupted {
                    "never ran under pressure: a signal stopped the audit"
                } else {
                    "never ran under pressure: the budget ended first"
                });
                s
            } else {
                TestCaseStatus::success()
            };
            let mut case = TestCase::new(t.name.as_str(), status);
            case.set_classname(t.binary.as_str());
            if let Some(secs) = t.time_s {
                case.set_time(Duration::from_secs_f64(secs.max(0.0)));
            }
            let mut props = vec![
                Property::new("verdict", t.verdict.id()),
                Property::new("screen", t.screen.text()),
                Property::new("alone", reruns.alone.text()),
                Property::new("pressure", reruns.pressure.text()),
                Property::new("p", format!("{:.2e}", reruns.p)),
            ];
            if let Some(h) = &t.hazard {
                props.push(Property::new("hazard", h.as_str()));
            }
            if let Some(b) = t.basis {
                props.push(Property::new("basis", b.id()));
            }
            if let Some(site) = t.diagnosis.as_ref().and_then(|d| d.sites.first()) {
                props.push(Property::new("site", site.site.location()));
            }
            // Its cause: the test the cause was decided on (itself, or the
            // one whose site's copies alone broke it too).
            let cause = self
                .causes
                .iter()
                .find(|c| c.binary == t.binary && c.tests.contains(&t.name));
            if let Some(c) = cause {
                props.push(Property::new("cause_decided_on", c.decided_on.as_str()));
                props.push(Property::new("cause_tests", c.tests.len().to_string()));
            }
            case.add_properties(props);
            suites
                .entry(t.binary.as_str())
                .or_insert_with(|| {
                    let mut suite = TestSuite::new(t.binary.as_str());
                    if self.interrupted {
                        suite.add_property(Property::new("interrupted", "true"));
                    }
                    for w in &self.warnings {
                        suite.add_property(Property::new("warning", w.as_str()));
                    }
                    suite
                })
                .add_test_case(case);
        }
        report.add_test_suites(suites.into_values());
        report.to_string().expect("XML from plain strings")
    }
}

/// A shard report read back for [`merge`].
pub struct Shard {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its report.
    pub report: Report,
}

/// Reads a shard report; `Err` names the file and what is wrong with it.
pub fn read_shard(path: &Path) -> Result<Shard> {
    let text = std::fs::read_to_string(path).map_err(|e| usage!("{}: {e}", path.display()))?;
    // Strictly: a merge writes one report from the shards.
    let value = fdwindow::evidence::strict_json::parse(&text)
        .map_err(|e| usage!("{}: {e}", path.display()))?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => {}
        Some(other) => {
            return Err(usage!(
                "{}: schema {other}, this fdwindow reads {SCHEMA}",
                path.display()
            ));
        }
        None => {
            return Err(usage!(
                "{}: no schema: not an `fdwindow audit --format json` report",
                path.display()
            ));
        }
    }
    let report: Report = fdwindow::evidence::strict_json::typed(&value, "malformed audit report")
        .map_err(|e| usage!("{}: {e}", path.display()))?;
    // The partition as `--partition` would have taken it.
    if let Some(p) = report.partition
        && p.to_string().parse::<Partition>().is_err()
    {
        return Err(usage!(
            "{}: malformed audit report: partition {p}",
            path.display()
        ));
    }
    Ok(Shard {
        path: path.to_owned(),
        report,
    })
}

/// Joins shard reports of one sharded audit into one report: the union of
/// their tests. Refuses reports of another command, pressure, partition
/// scheme or fdwindow version, a shard given twice, a test in two shards,
/// and names the shards missing.
pub fn merge(shards: &[Shard]) -> Result<Report> {
    let by_shard = shards_in_order(shards)?;
    // The first report given leads (checked there: it is a shard).
    let lead = &shards[0].report;
    let lead_part = lead.partition.expect("checked: a shard");
    let reports: Vec<&Report> = by_shard.values().map(|s| &s.report).collect();
    let sum = |f: fn(&Seconds) -> f64| reports.iter().map(|r| f(&r.seconds)).sum::<f64>();
    let mut tests: Vec<TestReport> = reports.iter().flat_map(|r| r.tests.clone()).collect();
    tests.sort_by(|a, b| (&a.binary, &a.name).cmp(&(&b.binary, &b.name)));
    let mut warnings = Vec::new();
    for (k, r) in by_shard.iter().map(|(k, s)| (k, &s.report)) {
        warnings.extend(r.warnings.iter().map(|w| format!("shard {k}: {w}")));
        if r.advice_from != lead.advice_from {
            warnings.push(format!("shard {k}: advice from {}", r.advice_from));
        }
        if r.budget_seconds != lead.budget_seconds {
            warnings.push(format!(
                "shard {k}: a budget of {:.0} s (the header shows the first shard's)",
                r.budget_seconds
            ));
        }
        if r.platform.get("id") != lead.platform.get("id") {
            warnings.push(format!(
                "shard {k}: audited on {} (the header shows the first shard's platform)",
                r.platform.get("id").and_then(|v| v.as_str()).unwrap_or("?")
            ));
        }
    }
    Ok(Report {
        schema: SCHEMA.into(),
        command: lead.command.clone(),
        platform: lead.platform.clone(),
        fdwindow_version: lead.fdwindow_version.clone(),
        pressure: lead.pressure.clone(),
        partition: None,
        merged: Some(Merged {
            scheme: lead_part.scheme,
            total: lead_part.total,
            shard_seconds: reports.iter().map(|r| r.seconds.total).collect(),
        }),
        rule: lead.rule.clone(),
        budget_seconds: lead.budget_seconds,
        seconds: Seconds {
            timing: sum(|s| s.timing),
            screen: sum(|s| s.screen),
            reruns: sum(|s| s.reruns),
            diagnosis: sum(|s| s.diagnosis),
            total: sum(|s| s.total),
        },
        screen_runs: by_shard
            .iter()
            .flat_map(|(k, s)| {
                s.report.screen_runs.iter().map(|r| ScreenRuns {
                    shard: Some(*k),
                    ..r.clone()
                })
            })
            .collect(),
        pressured_runs: reports.iter().map(|r| r.pressured_runs).sum(),
        pressure_started_runs: reports.iter().map(|r| r.pressure_started_runs).sum(),
        advice_from: lead.advice_from.clone(),
        warnings,
        interrupted: false,
        exposed: 0,
        fails_alone: 0,
        causes: Vec::new(),
        tests,
    }
    .counted())
}

/// One diagnosed test's section of the markdown: its first failure, its
/// rate where measured, its diagnosis, its sites and the advice on each
/// hazard it may be.
fn test_md(out: &mut String, t: &TestReport, d: &DiagnosisReport) {
    let _ = writeln!(out, "## `{}` ({}): {}\n", t.name, t.binary, t.verdict.id());
    if let Some(m) = &t.message {
        let _ = writeln!(out, "First failure: {m}\n");
    }
    let reruns = t.reruns_or_none();
    if reruns.pressure.runs == 0 {
        let _ = writeln!(
            out,
            "Under realistic pressure: not measured (`--rates` measures it); alone, {} \
                 of {} `--exact` runs failed.",
            reruns.alone.bad(),
            reruns.alone.runs
        );
    } else {
        let _ = writeln!(
            out,
            "Under realistic pressure: {} of {} `--exact` runs failed (alone {} of {}).",
            reruns.pressure.bad(),
            reruns.pressure.runs,
            reruns.alone.bad(),
            reruns.alone.runs
        );
    }
    let _ = writeln!(out, "Diagnosis: {}.\n", d.summary);
    if let Some(w) = &d.decided_with {
        let _ = writeln!(
            out,
            "Decided with the cause of `{}`: holding only its call site{} failed this \
                 test {}/{}. That test's diagnosis:\n",
            w.test,
            d.site
                .as_ref()
                .map(|s| format!(" (`{}`)", s.location()))
                .unwrap_or_default(),
            w.site_runs.failures,
            w.site_runs.runs
        );
    }
    for c in &d.holds {
        if c.failures == 0 && c.held == 0 {
            continue;
        }
        let tally = TallyReport {
            failures: c.failures - c.timeouts.min(c.failures),
            runs: c.runs,
            timeouts: c.timeouts.min(c.failures),
            wilson95: [0.0, 0.0],
        };
        let _ = writeln!(
            out,
            "- a held copy of each closed `{}` ({} held{}): failed {}{}{}",
            c.class,
            c.held,
            if c.skipped > 0 {
                format!(", {} let through by the bounds", c.skipped)
            } else {
                String::new()
            },
            tally.text(),
            c.first_failure
                .map(|r| format!(", first at run {r}"))
                .unwrap_or_default(),
            if c.what.is_empty() {
                String::new()
            } else {
                format!("; held: {}", c.what.join(", "))
            }
        );
    }
    if let Some(load) = &d.load {
        let _ = writeln!(
            out,
            "- fork pressure: failed {}; the same with its children holding nothing: {}",
            load.pressure.text(),
            load.sham.text()
        );
    }
    let _ = write!(out, "{}", sites_md(&d.sites));
    out.push('\n');
    for h in t.hazard.iter().chain(
        t.candidates
            .iter()
            .filter(|c| Some(*c) != t.hazard.as_ref()),
    ) {
        let advice = t.advice.get(h).map_or("", String::as_str);
        let _ = writeln!(out, "- `{h}`: {advice}");
    }
    out.push('\n');
}

/// The shards by number, each checked against the first: the same
/// command, pressure, fdwindow and partition scheme, not interrupted, each
/// shard once and none missing, no test in two.
fn shards_in_order(shards: &[Shard]) -> Result<BTreeMap<u64, &Shard>> {
    let first = shards
        .first()
        .ok_or_else(|| Error::usage("merge needs at least one report"))?;
    let lead = &first.report;
    let Some(lead_part) = lead.partition else {
        return Err(usage!(
            "{}: not a shard (audited without --partition)",
            first.path.display()
        ));
    };
    let mut by_shard: BTreeMap<u64, &Shard> = BTreeMap::new();
    for s in shards {
        let r = &s.report;
        let name = s.path.display();
        let differs = |what: &str, a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| {
            usage!(
                "{name}: another {what} ({b:?}) than {} ({a:?})",
                first.path.display()
            )
        };
        if r.command != lead.command {
            return Err(differs("command", &lead.command, &r.command));
        }
        if r.pressure != lead.pressure {
            return Err(differs("pressure", &lead.pressure, &r.pressure));
        }
        if r.fdwindow_version != lead.fdwindow_version {
            return Err(differs(
                "fdwindow version",
                &lead.fdwindow_version,
                &r.fdwindow_version,
            ));
        }
        let Some(p) = r.partition else {
            return Err(usage!("{name}: not a shard (audited without --partition)"));
        };
        if r.interrupted {
            return Err(usage!(
                "{name}: a signal stopped that shard's audit: audit the shard again"
            ));
        }
        if (p.scheme, p.total) != (lead_part.scheme, lead_part.total) {
            return Err(differs(
                "partition scheme",
                &lead_part.to_string(),
                &p.to_string(),
            ));
        }
        if let Some(other) = by_shard.insert(p.shard, s) {
            return Err(usage!(
                "{name} and {}: both are shard {}",
                other.path.display(),
                p.shard
            ));
        }
    }
    let missing: Vec<String> = (1..=lead_part.total)
        .filter(|k| !by_shard.contains_key(k))
        .map(|k| format!("{k}/{}", lead_part.total))
        .collect();
    if !missing.is_empty() {
        return Err(usage!("missing shards: {}", missing.join(", ")));
    }
    let mut seen: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for (k, s) in &by_shard {
        for t in &s.report.tests {
            if let Some(other) = seen.insert((&t.binary, &t.name), *k) {
                return Err(usage!(
                    "{} `{}` is in shards {other} and {k}: the reports are of different suites",
                    t.binary,
                    t.name
                ));
            }
        }
    }
    Ok(by_shard)
}

/// Sites listed per test at most.
const SITES_SHOWN: usize = 5;

/// The markdown lines naming a diagnosis's call sites: those that break
/// the test by themselves, else what the runs could say.
pub fn sites_md(sites: &[SiteRuns]) -> String {
    let mut out = String::new();
    let alone = |s: &SiteRuns| {
        s.alone.map_or(String::new(), |a| {
            if a.held == 0 {
                format!("{} (its closes were not reached alone)", s.site.label())
            } else {
                format!("{} ({}/{})", s.site.label(), a.failures, a.runs)
            }
        })
    };
    let breaking: Vec<&SiteRuns> = sites.iter().filter(|s| s.breaks()).collect();
    let tried: Vec<&SiteRuns> = sites.iter().filter(|s| s.alone.is_some()).collect();
    match breaking.as_slice() {
        [one] if one.only => {
            let _ = writeln!(
                out,
                "- call site: {}: the only site held in each of its {} failing runs",
                one.site.label(),
                one.failing
            );
        }
        [one] => {
            let others: Vec<String> = tried
                .iter()
                .filter(|s| !s.breaks())
                .map(|s| alone(s))
                .collect();
            let _ = writeln!(
                out,
                "- call site: {}: holding its copies alone failed {}/{}{}",
                one.site.label(),
                one.alone.map_or(0, |a| a.failures),
                one.alone.map_or(0, |a| a.runs),
                if others.is_empty() {
                    String::new()
                } else {
                    format!("; the other sites held alone: {}", others.join(", "))
                }
            );
        }
        [] if !tried.is_empty() => {
            let listed: Vec<String> = tried.iter().map(|s| alone(s)).collect();
            let _ = writeln!(
                out,
                "- no call site breaks it by itself (held alone: {}): its copies together do",
                listed.join(", ")
            );
        }
        [] => {
            let listed: Vec<String> = sites
                .iter()
                .filter(|s| s.failing > 0)
                .take(SITES_SHOWN)
                .map(|s| {
                    format!(
                        "{} (in {} of its runs, {} failing)",
                        s.site.label(),
                        s.runs,
                        s.failing
                    )
                })
                .collect();
            if !listed.is_empty() {
                let _ = writeln!(
                    out,
                    "- call sites held when it failed (not told apart): {}",
                    listed.join("; ")
                );
            }
        }
        several => {
            let listed: Vec<String> = several.iter().map(|s| alone(s)).collect();
            let _ = writeln!(
                out,
                "- call sites, each enough by itself: {}",
                listed.join(", ")
            );
        }
    }
    if sites.iter().any(|s| s.site.found == Found::Symbol) {
        let _ = writeln!(out, "- the test binary has no line tables: {DEBUG_HINT}");
    }
    out
}

/// A workflow command's message, escaped as the runner unescapes it.
fn github_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value (`file=`, `title=`), escaped.
fn github_property(text: &str) -> String {
    github_data(text).replace(':', "%3A").replace(',', "%2C")
}
