//! The diagnosis: which held descriptor breaks a test, found by building the
//! window on purpose.
//!
//! 1. For each class of descriptor ([`CLASSES`]) the test reruns (`--exact`)
//!    [`ROUNDS`] times (once, if that run closed nothing of the class) under
//!    the injector's `close-hold=CLASS`: before the
//!    test closes a descriptor of that class, a copy of it is passed to the
//!    injector's holder process (`SCM_RIGHTS`), which keeps it for `--hold`:
//!    the same open file description a forked child would keep. No spawning
//!    threads run, so nothing else differs between the classes. A test that depends on that
//!    class being gone fails at once, usually on every run.
//! 2. A class is named when its copies made the test fail in at least half
//!    its runs (and twice at least), more often than in the runs of any
//!    class of which the test closed nothing (those runs are controls: the
//!    injector was there, nothing was held), and its sham fails less than
//!    half as often: the same forks at the same closes with `drop=all`, so
//!    the child keeps nothing. A test broken by the fork itself (its
//!    copy-on-write faults, its CPU) fails the sham too, and is not named. Failures under other classes
//!    are listed as residual. The injector's report says what each copy held
//!    (a path, an address), which picks the hazard: a Unix name or an inet
//!    port, a lock or an executable being written.
//! 3. An exposed test that no class breaks is checked for load: pairs of
//!    `--exact` runs under fork-path pressure, its children holding
//!    everything, and the same pressure whose children drop every descriptor
//!    at once (the sham). `load` needs at least [`LOAD_MIN`] sham failures,
//!    a sham rate at least half the plain pressure's, and no significant
//!    drop (one-sided Fisher p > 0.05): one failure is never load.
//!
//! What the deterministic mode shows ("this test breaks when a child holds
//! the descriptor it closed") is kept apart from the rate observed under
//! realistic pressure (detection's reruns); the report gives both.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use fdwindow::cotenant::detect::{Coin, Seen, Tally};
use fdwindow::error::Result;
use fdwindow::report::stats::{Count, fisher_less};
use fdwindow_fix::base::interrupts;
use fdwindow_fix::pressure::{DropClass, MAX_CLOSE_SITES, SpawnPath, Spec};

use super::model::TestCase;
use super::progress::Progress;
use super::runner::{Runner, seen};
use super::site::{AloneRuns, Frame, SiteRuns, Symbols, Workspace, parse_frames};
use crate::cli::discover::Binary;

/// The classes the deterministic mode holds, one at a time: every class but
/// the sham (`all`, last in [`DropClass::ALL`]).
pub const CLASSES: &[DropClass] = match DropClass::ALL.split_last() {
    Some((_, classes)) => classes,
    None => &[],
};

/// Runs of each class.
pub const ROUNDS: u64 = 3;

/// Runs of a named class and of its sham, for [`Diagnosis::decisive`].
pub const DECIDE_RUNS: u64 = 7;

/// The one-sided Fisher p at most that makes the window decisive: the
/// deterministic cells' rule, which 7/7 against 0/7 (p = 2.9e-4) meets.
pub const WINDOW_P: f64 = 0.001;

/// Sham failures that `load` needs at least.
pub const LOAD_MIN: u64 = 5;

/// Pairs of the load check at most.
const LOAD_PAIRS: u64 = 200;

/// The time a diagnosis gets even when the budget is spent.
pub const MIN_TIME: Duration = Duration::from_secs(20);

/// Held children at once in a `hold-by=fork` run (the default, `pass`,
/// has no such bound): an eighth of the processes the machine has room for
/// now, at least 16, at most 1024 (the injector's table). A held child is a
/// sleeping fork holding one descriptor; in a suite at 16 threads a small
/// bound lets the close that matters through unheld.
pub fn held_at_once() -> usize {
    let room = fdwindow_fix::sys::process_room().unwrap_or(0);
    usize::try_from(room / 8)
        .unwrap_or(usize::MAX)
        .clamp(16, 1024)
}

/// What the injector's close-hold mode reported for one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Holds {
    /// Each held copy.
    pub held: Vec<Held>,
    /// Closes let through unheld: the bounds of `hold-by=fork`, the
    /// system's bounds of `hold-by=pass` (by reason in [`Holds::unheld`]),
    /// and copies the holder could not take in; not a loop's closes past
    /// its live copies ([`LOOP`]).
    pub skipped: u64,
    /// Of those, by reason (`full`, `refs`, `gone`, `other`, `lost`), in
    /// `hold-by=pass` runs.
    pub unheld: BTreeMap<String, u64>,
    /// Whether the injector's count (`holds`) came: a run that died
    /// before it cannot say what went unheld.
    pub counted: bool,
    /// Binds the test made that were refused with EADDRINUSE (`busy`).
    pub busy_binds: u64,
}

/// One held copy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// Its class id.
    pub class: String,
    /// What it was: a path, an address.
    pub what: String,
    /// The stack of the close that was held, innermost first (empty if the
    /// injector could not walk it).
    pub stack: Vec<Frame>,
}

/// The reason the injector gives a close it let through because its call
/// site already had its live copies (a retry or scan loop).
pub const LOOP: &str = "loop";

/// Reads the lines of an injector report: `held PID CLASS WHAT`, the
/// `site PID FRAME…` of its stack that follows it, the `module PID INDEX
/// PATH` lines naming each module a stack refers to, `holding PID pass`
/// and its `unheld PID REASON` lines, and `holds PID HELD SKIPPED`.
pub fn read_holds(path: &Path) -> Holds {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut h = Holds::default();
    let mut modules: HashMap<(&str, &str), &str> = HashMap::new();
    let mut last_held: HashMap<&str, usize> = HashMap::new();
    let (mut passing, mut counted_skips) = (false, 0);
    for line in text.lines() {
        let mut f = line.splitn(4, ' ');
        match (f.next(), f.next(), f.next(), f.next()) {
            (Some("held"), Some(pid), Some(class), what) => {
                last_held.insert(pid, h.held.len());
                h.held.push(Held {
                    class: class.to_owned(),
                    what: what.unwrap_or("").to_owned(),
                    stack: Vec::new(),
                });
            }
            (Some("module"), Some(pid), Some(index), Some(path)) => {
                modules.insert((pid, index), path);
            }
            (Some("site"), Some(pid), ..) => {
                if let Some(&i) = last_held.get(pid) {
                    let frames = line.split(' ').skip(2);
                    h.held[i].stack =
                        parse_frames(frames, |m| modules.get(&(pid, m)).map(|p| (*p).to_owned()));
                }
            }
            (Some("holds"), Some(_pid), Some(_held), Some(skipped)) => {
                counted_skips += skipped.trim().parse::<u64>().unwrap_or(0);
                h.counted = true;
            }
            // hold-by=pass reports each close it lets through as it happens.
            (Some("holding"), Some(_pid), Some("pass"), None) => passing = true,
            (Some("unheld"), Some(_pid), Some(reason), None) => {
                *h.unheld.entry(reason.to_owned()).or_default() += 1;
            }
            (Some("busy"), Some(_pid), None, None) => h.busy_binds += 1,
            _ => {}
        }
    }
    // A pass-mode run has reported every gap, whether or not its count
    // came (a host that ends by _exit runs no atexit hook).
    if passing {
        // `loop`: the injector's own bound on a call site that closes again
        // and again (a retry, a scan): its first copies were held.
        h.skipped = h
            .unheld
            .iter()
            .filter(|(reason, _)| reason.as_str() != LOOP)
            .map(|(_, n)| n)
            .sum();
        h.counted = true;
    } else {
        h.skipped = counted_skips;
    }
    h
}

/// One class's runs.
#[derive(Clone, Debug)]
pub struct ClassRuns {
    /// The class held.
    pub class: DropClass,
    /// The test's runs under it.
    pub tally: Tally,
    /// Runs started (a run that never reported the test is not in `tally`).
    pub started: u64,
    /// Copies held over those runs.
    pub held: u64,
    /// Closes let through unheld (the injector's bounds).
    pub skipped: u64,
    /// What was held, the most often held first, at most [`WHAT_KEPT`]:
    /// the test's own lock or port is held in every run, a file libtest
    /// reads at start once.
    pub what: Vec<String>,
    /// What the copies held, as far as the hazard goes.
    pub kept: Kept,
    /// Each run's held stacks, distinct, at most [`STACKS_KEPT`] a run,
    /// with whether the test failed in it: which call sites were held when
    /// the test failed ([`super::site`]).
    pub stacks: Vec<(bool, BTreeSet<Vec<Frame>>)>,
    /// The run (from 1) of the first failure.
    pub first_failure: Option<u64>,
    /// The first failure's message under this class.
    pub message: Option<String>,
}

/// What a class's held copies were, as far as the hazard goes: from the
/// injector's description of each (`unix PATH`, `PATH [lock: flock+ofd]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    /// A Unix socket's.
    pub unix: bool,
    /// A file carrying an flock.
    pub flock: bool,
    /// A file carrying an OFD lock (`F_OFD_SETLK`).
    pub ofd: bool,
    /// A failing run in which a bind of the test's was refused as in use
    /// (the injector's `busy` line): the copies kept a name the test wanted.
    pub busy: bool,
}

impl Kept {
    /// Notes one copy's description.
    pub fn note(&mut self, what: &str) {
        self.unix |= what.starts_with("unix ");
        if let Some(kinds) = what
            .rsplit_once(" [lock: ")
            .and_then(|(_, k)| k.strip_suffix(']'))
        {
            for kind in kinds.split('+') {
                self.flock |= kind == "flock";
                self.ofd |= kind == "ofd";
            }
        }
    }
}

/// Distinct held objects kept per class.
const WHAT_KEPT: usize = 5;

/// Distinct stacks kept per run: a test closing thousands of files holds
/// them from a few call sites.
pub const STACKS_KEPT: usize = 64;

/// Keeps a run's held stacks in `c`.
fn note_stacks(c: &mut ClassRuns, holds: &Holds, seen: Seen) {
    let mut stacks = BTreeSet::new();
    for h in holds.held.iter().filter(|h| !h.stack.is_empty()) {
        if stacks.len() == STACKS_KEPT {
            break;
        }
        stacks.insert(h.stack.clone());
    }
    c.stacks.push((seen != Seen::Ok, stacks));
}

/// Why the test fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Held copies of these classes break it.
    Held(Vec<DropClass>),
    /// Pressure breaks it as often when its children hold nothing.
    Load,
    /// Neither.
    Unexplained,
}

/// The diagnosis of one test.
#[derive(Clone, Debug)]
pub struct Diagnosis {
    /// Per class, in [`CLASSES`] order.
    pub classes: Vec<ClassRuns>,
    /// The sham's runs of each class the rule named before its sham.
    pub shams: Vec<(DropClass, Tally)>,
    /// Classes whose sham failed as often as their copies: the forks at
    /// those closes break the test, whatever they hold.
    pub forks_break: Vec<DropClass>,
    /// The load check's pairs: plain fork pressure, the sham; `None` if not run.
    pub load: Option<[Tally; 2]>,
    /// Classes the deadline left undecided (see [`judge`]). A diagnosis
    /// with any is incomplete, and says so.
    pub cut_short: Vec<DropClass>,
    /// The cause.
    pub cause: Cause,
    /// The hazard named, if one.
    pub hazard: Option<&'static str>,
    /// The hazards it can be.
    pub candidates: Vec<&'static str>,
    /// The call sites of the first named class's held copies, the sites
    /// held in the most failing runs first (filled in by the caller, which
    /// knows the workspace).
    pub sites: Vec<SiteRuns>,
    /// Seconds spent.
    pub seconds: f64,
    /// Where the test was decided with a cause found on another test
    /// ([`join`]): that test, and this test's runs with the cause's site
    /// held alone. The rest of the diagnosis is the cause's.
    pub joined: Option<Joined>,
}

/// A test decided with a cause found on another: the same call site's
/// copies alone break it too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Joined {
    /// The test whose diagnosis decided the cause.
    pub test: String,
    /// This test's runs with the cause's site held alone.
    pub site: AloneRuns,
}

/// A cause one test's diagnosis decided: a class whose copies break it
/// against their sham (the window's rule), and a call site whose copies
/// alone break it. Other suspects of the binary are tried against it first
/// ([`join`]).
#[derive(Clone, Debug)]
pub struct KnownCause {
    /// The test it was decided on.
    pub test: String,
    class: DropClass,
    addrs: Vec<u64>,
    diagnosis: Diagnosis,
}

impl KnownCause {
    /// The cause `d` (of `test`) decided, if it decided one with a site.
    pub fn of(test: &str, d: &Diagnosis) -> Option<KnownCause> {
        let Cause::Held(classes) = &d.cause else {
            return None;
        };
        if !d.decisive() || d.joined.is_some() {
            return None;
        }
        let site = d.sites.iter().find(|s| s.breaks() && !s.addrs.is_empty())?;
        Some(KnownCause {
            test: test.to_owned(),
            class: *classes.first()?,
            addrs: site.addrs.iter().copied().take(MAX_CLOSE_SITES).collect(),
            diagnosis: d.clone(),
        })
    }
}

/// Tries `case` against `cause`: [`ROUNDS`] runs holding only the cause's
/// class at its site (`close-site=`), ending at the first that passes or
/// holds nothing. If every run failed, the test is decided with the cause
/// (its diagnosis is the cause's, with [`Diagnosis::joined`]); else `None`,
/// and it gets a diagnosis of its own.
#[expect(
    clippy::too_many_arguments,
    reason = "one call site, each a distinct input"
)]
pub fn join(
    runner: &mut Runner,
    bin: &Binary,
    case: &TestCase,
    spec: &Spec,
    hold: Duration,
    cause: &KnownCause,
    end: Instant,
    progress: &mut Progress,
) -> Result<Option<Diagnosis>> {
    let t0 = Instant::now();
    let mut s = hold_spec(spec, hold, cause.class, false);
    s.close_sites.clone_from(&cause.addrs);
    let what = format!("the site of {}'s cause", cause.test);
    let runs = site_rounds(runner, bin, case, &s, (&what, true), end, progress)?;
    if runs.runs < ROUNDS || runs.failures < runs.runs || runs.held == 0 {
        return Ok(None);
    }
    let mut d = cause.diagnosis.clone();
    d.joined = Some(Joined {
        test: cause.test.clone(),
        site: runs,
    });
    d.seconds = t0.elapsed().as_secs_f64();
    Ok(Some(d))
}

impl Diagnosis {
    /// Whether the held-copy window decides on its own that a copy breaks
    /// the test: a named class whose copies fail against its sham (the same
    /// forks, no copy) at one-sided Fisher p <= 0.001, with at least
    /// [`DECIDE_RUNS`] runs each: the rule the matrix's deterministic cells
    /// use (7/7 against 0/7 gives 2.9e-4).
    pub fn decisive(&self) -> bool {
        self.window_p().is_some_and(|p| p <= WINDOW_P)
    }

    /// The smallest one-sided Fisher p of a named class's copies against
    /// its sham, over the named classes with [`DECIDE_RUNS`] runs of each.
    pub fn window_p(&self) -> Option<f64> {
        let Cause::Held(classes) = &self.cause else {
            return None;
        };
        let count = |t: Tally| Count::new(t.bad(), t.runs);
        classes
            .iter()
            .filter_map(|class| {
                let held = self.classes.iter().find(|c| c.class == *class)?.tally;
                let sham = self.shams.iter().find(|(c, _)| c == class)?.1;
                (held.runs >= DECIDE_RUNS && sham.runs >= DECIDE_RUNS)
                    .then(|| fisher_less(count(sham), count(held)))
            })
            .min_by(f64::total_cmp)
    }

    /// Whether every class was tried and every named one met its sham.
    pub fn complete(&self) -> bool {
        self.cut_short.is_empty()
    }

    /// Whether the cause is load.
    pub fn is_load(&self) -> bool {
        self.cause == Cause::Load
    }

    /// Runs made.
    pub fn runs(&self) -> u64 {
        if let Some(j) = &self.joined {
            return j.site.runs;
        }
        let holds: u64 = self.classes.iter().map(|c| c.tally.runs).sum();
        let shams: u64 = self.shams.iter().map(|(_, t)| t.runs).sum();
        holds + shams + self.load.map_or(0, |l| l[0].runs + l[1].runs)
    }

    /// One phrase: the hazard, load, or the candidates.
    pub fn summary(&self) -> String {
        match (&self.cause, self.hazard) {
            (Cause::Held(classes), Some(h)) => {
                format!("vulnerable (deterministic) to a held {}: {h}", ids(classes))
            }
            (Cause::Held(classes), None) => format!(
                "vulnerable (deterministic) to a held {}: no known hazard",
                ids(classes)
            ),
            (Cause::Load, _) => "load: fails as often when the pressure holds nothing".into(),
            (Cause::Unexplained, _) if !self.cut_short.is_empty() => format!(
                "cut short by the budget: {} undecided (a larger `--budget` decides them)",
                ids(&self.cut_short)
            ),
            (Cause::Unexplained, _) if !self.forks_break.is_empty() => format!(
                "the forks at its {} closes break it, holding a copy or not",
                ids(&self.forks_break)
            ),
            (Cause::Unexplained, _) if self.candidates.is_empty() => {
                "no held class reproduced it".into()
            }
            (Cause::Unexplained, _) => format!(
                "no held class reproduced it; candidates {}",
                self.candidates.join(", ")
            ),
        }
    }
}

/// `file+listener`.
pub fn ids(classes: &[DropClass]) -> String {
    classes.iter().map(|c| c.id()).collect::<Vec<_>>().join("+")
}

/// The classes named by the rule in the module doc, most failures first.
pub fn named(classes: &[ClassRuns]) -> Vec<DropClass> {
    let background = classes
        .iter()
        .filter(|c| c.held == 0)
        .map(|c| c.tally.bad())
        .max()
        .unwrap_or(0);
    let mut found: Vec<&ClassRuns> = classes
        .iter()
        .filter(|c| {
            let bad = c.tally.bad();
            c.held > 0 && bad >= 2 && 2 * bad >= c.tally.runs && bad > background
        })
        .collect();
    found.sort_by_key(|c| std::cmp::Reverse(c.tally.bad()));
    found.into_iter().map(|c| c.class).collect()
}

/// Splits the classes `named` before their shams into (named still: the
/// sham clears them; the forks break the test: a full sham fails as often;
/// cut short: what the deadline left undecided). Cut short are the classes
/// never run, those stopped before [`ROUNDS`] while their runs still held
/// copies (a class that held nothing keeps its one run by design), and named
/// ones whose sham neither cleared them nor ran [`DECIDE_RUNS`] times: one
/// sham failure never decides that the forks break a test.
pub fn judge(
    classes: &[ClassRuns],
    named: &[DropClass],
    shams: &[(DropClass, Tally)],
) -> (Vec<DropClass>, Vec<DropClass>, Vec<DropClass>) {
    let mut cut_short: Vec<DropClass> = classes
        .iter()
        .filter(|c| {
            c.started == 0 || (c.held > 0 && c.started < ROUNDS && !named.contains(&c.class))
        })
        .map(|c| c.class)
        .collect();
    let (mut found, mut forks_break) = (Vec::new(), Vec::new());
    for &class in named {
        let held = classes
            .iter()
            .find(|c| c.class == class)
            .map_or(Tally::default(), |c| c.tally);
        let sham = shams
            .iter()
            .find(|(c, _)| *c == class)
            .map_or(Tally::default(), |s| s.1);
        if sham_clears(held, sham) {
            found.push(class);
        } else if sham.runs >= DECIDE_RUNS {
            forks_break.push(class);
        } else {
            cut_short.push(class);
        }
    }
    (found, forks_break, cut_short)
}

/// Whether a class's sham (the same forks, no copy kept) fails less than
/// half as often as the class: only then did the copy, not the fork, break
/// the test.
pub fn sham_clears(held: Tally, sham: Tally) -> bool {
    sham.runs > 0 && 2 * sham.bad() * held.runs < held.bad() * sham.runs
}

/// Whether the load check's counts say load: see the module doc.
pub fn says_load(control: Tally, sham: Tally) -> bool {
    let count = |t: Tally| Count::new(t.bad(), t.runs);
    sham.bad() >= LOAD_MIN
        && 2 * sham.bad() * control.runs >= control.bad() * sham.runs
        && fisher_less(count(sham), count(control)) > 0.05
}

/// The failure message a class's runs gave, else the test's first.
fn message_of<'a>(runs: &'a ClassRuns, case: &'a TestCase) -> &'a str {
    runs.message
        .as_deref()
        .or(case.message.as_deref())
        .unwrap_or("")
}

/// Whether the failure message speaks of a name in use (a bind that failed).
fn addr_in_use(message: &str) -> bool {
    [
        "Address already in use",
        "os error 98",
        "EADDRINUSE",
        "AddrInUse",
    ]
    .iter()
    .any(|m| message.contains(m))
}

/// Whether the failure message speaks of ETXTBSY.
fn text_busy(message: &str) -> bool {
    ["Text file busy", "os error 26", "ETXTBSY"]
        .iter()
        .any(|m| message.contains(m))
}

/// The hazard a held class names, and the hazards it can be, from what was
/// held (a Unix name or an inet address) and the failure message.
pub fn hazard_of(
    class: DropClass,
    kept: Kept,
    message: &str,
) -> (Option<&'static str>, &'static [&'static str]) {
    let unix = kept.unix;
    match class {
        DropClass::File if text_busy(message) => (Some("etxtbsy"), &["etxtbsy"]),
        // The lock the copies kept names it: an OFD lock alone is
        // ofd-lock-survival, whose fix (F_UNLCK) differs from flock's.
        DropClass::File if kept.ofd && !kept.flock => {
            (Some("ofd-lock-survival"), &["ofd-lock-survival"])
        }
        DropClass::File if kept.flock && !kept.ofd => (Some("flock-survival"), &["flock-survival"]),
        DropClass::File => (
            Some("flock-survival"),
            &["flock-survival", "ofd-lock-survival", "etxtbsy"],
        ),
        DropClass::Listener if unix => {
            (Some("unix-listener-survival"), &["unix-listener-survival"])
        }
        // A port picked with a listener: the copy keeps it listening, and
        // the test's own bind of the port is what failed (the injector saw
        // it refused, or the message says so).
        DropClass::Listener if kept.busy || addr_in_use(message) => {
            (Some("port-pick"), &["port-pick", "listener-survival"])
        }
        DropClass::Listener => (
            Some("listener-survival"),
            &["listener-survival", "port-pick"],
        ),
        DropClass::Bound if unix => (Some("unix-listener-survival"), &["unix-listener-survival"]),
        DropClass::Bound => (Some("port-pick"), &["port-pick"]),
        DropClass::Stream => (Some("peer-fin-with-clone"), &["peer-fin-with-clone"]),
        // An unnamed datagram socket (a socketpair's): no name to keep, no
        // end-of-stream to delay; no hazard here explains it.
        DropClass::Datagram => (None, &[]),
        DropClass::Pipe => (Some("pipe-eof"), &["pipe-eof"]),
        DropClass::All => (None, &[]),
    }
}

/// Diagnoses one test; `exposed` adds the load check when no class breaks it.
#[expect(
    clippy::too_many_arguments,
    reason = "one call site, each a distinct input"
)]
pub fn diagnose(
    runner: &mut Runner,
    bin: &Binary,
    case: &TestCase,
    spec: &Spec,
    hold: Duration,
    exposed: bool,
    end: Instant,
    progress: &mut Progress,
    sites: (&mut Symbols, &Workspace),
) -> Result<Diagnosis> {
    let t0 = Instant::now();
    let mut classes = hold_rounds(runner, bin, case, (spec, hold), end, progress)?;
    let named_first = named(&classes);
    let shams = sham_rounds(
        runner,
        bin,
        case,
        (spec, hold),
        &mut classes,
        &named_first,
        end,
    )?;
    let (found, forks_break, cut_short) = judge(&classes, &named_first, &shams);
    let mut d = Diagnosis {
        forks_break: forks_break.clone(),
        shams,
        load: None,
        cut_short,
        cause: Cause::Unexplained,
        hazard: None,
        candidates: Vec::new(),
        sites: Vec::new(),
        seconds: 0.0,
        joined: None,
        classes,
    };
    if !found.is_empty() {
        for (i, class) in found.iter().enumerate() {
            let runs = d.classes.iter().find(|c| c.class == *class).expect("tried");
            let (hazard, candidates) = hazard_of(*class, runs.kept, message_of(runs, case));
            if i == 0 {
                d.hazard = hazard;
            }
            for h in candidates {
                if !d.candidates.contains(h) {
                    d.candidates.push(h);
                }
            }
        }
        let runs = d
            .classes
            .iter()
            .find(|c| c.class == found[0])
            .expect("tried");
        d.sites = sites.0.attribute(&runs.stacks, &bin.path, sites.1);
        let s = hold_spec(spec, hold, found[0], false);
        separate_sites(runner, bin, case, &s, &mut d.sites, end, progress)?;
        d.cause = Cause::Held(found);
    } else {
        // Candidates: the classes that broke it now and then.
        let candidates = d
            .classes
            .iter()
            .filter(|c| c.tally.bad() > 0 && c.held > 0 && !forks_break.contains(&c.class));
        for c in candidates {
            for h in hazard_of(c.class, c.kept, message_of(c, case)).1 {
                if !d.candidates.contains(h) {
                    d.candidates.push(h);
                }
            }
        }
        if exposed {
            let load = load_check(runner, bin, case, spec, end, progress)?;
            if says_load(load[0], load[1]) {
                // The forks break it whatever they hold: no hazard to fix.
                d.cause = Cause::Load;
                d.candidates.clear();
            }
            d.load = Some(load);
        }
    }
    d.seconds = t0.elapsed().as_secs_f64();
    Ok(d)
}

/// Each class's runs ([`ROUNDS`] each; one where the first run closed
/// nothing of the class), what their copies held, ranked.
fn hold_rounds(
    runner: &mut Runner,
    bin: &Binary,
    case: &TestCase,
    (spec, hold): (&Spec, Duration),
    end: Instant,
    progress: &mut Progress,
) -> Result<Vec<ClassRuns>> {
    let mut classes: Vec<ClassRuns> = CLASSES
        .iter()
        .map(|&class| ClassRuns {
            class,
            tally: Tally::default(),
            started: 0,
            held: 0,
            skipped: 0,
            what: Vec::new(),
            kept: Kept::default(),
            stacks: Vec::new(),
            first_failure: None,
            message: None,
        })
        .collect();
    let mut counts: Vec<std::collections::BTreeMap<String, u64>> =
        vec![Default::default(); CLASSES.len()];
    'rounds: for round in 1..=ROUNDS {
        for (c, count) in classes.iter_mut().zip(&mut counts) {
            if interrupts::interrupted() || Instant::now() >= end {
                break 'rounds;
            }
            // A class of which the first run closed nothing stays a control
            // with that one run: more runs would hold nothing either.
            if round > 1 && c.held == 0 {
                continue;
            }
            progress.update(&format!(
                "  diagnosing {}: round {round}/{ROUNDS}, holding {} copies; {:.0} s left",
                case.name,
                c.class.id(),
                end.saturating_duration_since(Instant::now()).as_secs_f64()
            ));
            let s = hold_spec(spec, hold, c.class, false);
            let label = format!("hold-{}", c.class.id());
            c.started += 1;
            let result = runner.run(bin, &bin.exact_args(&case.name), Some(&s), &label)?;
            if let Some((seen, msg)) = seen(&result, &case.name) {
                c.tally.add(seen);
                c.kept.busy |= seen != Seen::Ok && result.holds.busy_binds > 0;
                note_stacks(c, &result.holds, seen);
                if c.tally.bad() > 0 && c.first_failure.is_none() {
                    c.first_failure = Some(c.tally.runs);
                    c.message = msg;
                }
            }
            c.held += result.holds.held.len() as u64;
            c.skipped += result.holds.skipped;
            for held in result.holds.held {
                c.kept.note(&held.what);
                *count.entry(held.what).or_default() += 1;
            }
        }
    }
    for (c, count) in classes.iter_mut().zip(counts) {
        let mut ranked: Vec<(String, u64)> = count.into_iter().collect();
        ranked.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
        c.what = ranked.into_iter().take(WHAT_KEPT).map(|(w, _)| w).collect();
    }
    Ok(classes)
}

/// The sham of each class in `named`: its runs against its class's, in
/// turn, until each has [`DECIDE_RUNS`] (or the deadline).
fn sham_rounds(
    runner: &mut Runner,
    bin: &Binary,
    case: &TestCase,
    (spec, hold): (&Spec, Duration),
    classes: &mut [ClassRuns],
    named: &[DropClass],
    end: Instant,
) -> Result<Vec<(DropClass, Tally)>> {
    // The sham of each class named so far: the same forks at the same
    // closes, its children keeping nothing. A test that fails as often is
    // broken by the forks themselves (copy-on-write, CPU), not by the copy.
    // Each class named so far, and its sham, alternately, until both have
    // DECIDE_RUNS runs: enough for the held copy against its sham to reach
    // the project's deterministic rule (7/7 against 0/7: Fisher p = 2.9e-4).
    let mut shams = Vec::new();
    for &class in named {
        let mut t = Tally::default();
        let at = classes
            .iter()
            .position(|c| c.class == class)
            .expect("tried");
        // Bounded in rounds too: a test that stops reporting (it crashes
        // the binary) would otherwise rerun until the deadline.
        for _ in 0..3 * DECIDE_RUNS {
            if t.runs >= DECIDE_RUNS || interrupts::interrupted() || Instant::now() >= end {
                break;
            }
            for sham in [true, false] {
                if !sham && classes[at].tally.runs >= DECIDE_RUNS {
                    continue;
                }
                let s = hold_spec(spec, hold, class, sham);
                let label = format!("hold-{}{}", class.id(), if sham { "-sham" } else { "" });
                let result = runner.run(bin, &bin.exact_args(&case.name), Some(&s), &label)?;
                let Some((seen, _)) = seen(&result, &case.name) else {
                    continue;
                };
                if sham {
                    t.add(seen);
                } else {
                    classes[at].tally.add(seen);
                    note_stacks(&mut classes[at], &result.holds, seen);
                }
            }
        }
        shams.push((class, t));
    }
    Ok(shams)
}

/// Sites tried alone at most.
const SITES_TRIED: usize = 8;

/// Where the class's failing runs held copies from several call sites (or
/// not one site in each), holds each site's closes alone (`close-site=`,
/// over the class's `spec`), [`ROUNDS`] runs each, the sites held in the
/// most failing runs first: a site whose copies alone make the test fail
/// by the class rule ([`SiteRuns::breaks`]) is the one to fix. The class's
/// sham already ran: fewer forks at a subset of the same closes. A run that
/// held nothing (the filter matched no close) ends that site's runs.
fn separate_sites(
    runner: &mut Runner,
    bin: &Binary,
    case: &TestCase,
    spec: &Spec,
    sites: &mut [SiteRuns],
    end: Instant,
    progress: &mut Progress,
) -> Result<()> {
    if sites.iter().any(|s| s.only) {
        return Ok(());
    }
    let tried = sites
        .iter_mut()
        .filter(|s| s.failing > 0 && !s.addrs.is_empty())
        .take(SITES_TRIED);
    for site in tried {
        let mut s = spec.clone();
        s.close_sites = site.addrs.iter().copied().take(MAX_CLOSE_SITES).collect();
        let what = site.site.location();
        let alone = site_rounds(runner, bin, case, &s, (&what, false), end, progress)?;
        // A deadline that left no run says nothing about the site.
        site.alone = (alone.runs > 0).then_some(alone);
    }
    // The sites that break the test first, then as before.
    sites.sort_by_key(|s| !s.breaks());
    Ok(())
}

/// Up to [`ROUNDS`] runs of `case` holding only the closes `spec`'s
/// `close-site=` names (`what`, for the progress line), ending at a run
/// that held nothing (the filter matched no close) and, with `until_pass`,
/// at one that passed.
fn site_rounds(
    runner: &mut Runner,
    bin: &Binary,
    case: &TestCase,
    spec: &Spec,
    (what, until_pass): (&str, bool),
    end: Instant,
    progress: &mut Progress,
) -> Result<AloneRuns> {
    let mut runs = AloneRuns::default();
    for round in 1..=ROUNDS {
        if interrupts::interrupted() || Instant::now() >= end {
            break;
        }
        progress.update(&format!(
            "  diagnosing {}: round {round}/{ROUNDS}, holding only {what}",
            case.name
        ));
        let result = runner.run(bin, &bin.exact_args(&case.name), Some(spec), "hold-site")?;
        let Some((seen, _)) = seen(&result, &case.name) else {
            continue;
        };
        runs.runs += 1;
        runs.failures += u64::from(seen != Seen::Ok);
        runs.held += result.holds.held.len() as u64;
        if runs.held == 0 || (until_pass && seen == Seen::Ok) {
            break;
        }
    }
    Ok(runs)
}

/// The close-hold spec of one class over `spec`; with `sham` its children
/// keep no copy (`drop=all`).
pub fn hold_spec(spec: &Spec, hold: Duration, class: DropClass, sham: bool) -> Spec {
    let mut s = spec.clone();
    s.config.hold = hold;
    s.config.max_alive = held_at_once();
    s.close_hold = Some(class);
    if sham {
        s.config.drop = Some(DropClass::All);
    }
    s
}

/// Pairs of fork-path pressure and its sham (children drop everything).
fn load_check(
    runner: &mut Runner,
    bin: &Binary,
    case: &TestCase,
    spec: &Spec,
    end: Instant,
    progress: &mut Progress,
) -> Result<[Tally; 2]> {
    let mut control = spec.clone();
    control.config.path = SpawnPath::ForkExec;
    let mut sham = control.clone();
    sham.config.drop = Some(DropClass::All);
    let mut t = [Tally::default(); 2];
    let mut pairs = 0;
    // The order within each pair is a coin flip, as in the reruns.
    let mut coin = Coin::new(u64::from(std::process::id()) ^ super::plan::clock_seed());
    while pairs < LOAD_PAIRS
        && Instant::now() < end
        && !interrupts::interrupted()
        && t[0].bad() + t[1].bad() < 4 * LOAD_MIN
    {
        let order = if coin.flip() { [0, 1] } else { [1, 0] };
        for i in order {
            let s = if i == 0 { &control } else { &sham };
            let label = if i == 0 { "load-control" } else { "load-sham" };
            let result = runner.run(bin, &bin.exact_args(&case.name), Some(s), label)?;
            if let Some((seen, _)) = seen(&result, &case.name) {
                t[i].add(seen);
            }
        }
        pairs += 1;
        progress.update(&format!(
            "  load check {}: pressure {}/{}, its children holding nothing {}/{}",
            case.name,
            t[0].bad(),
            t[0].runs,
            t[1].bad(),
            t[1].runs
        ));
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(class: DropClass, bad: u64, n: u64, held: u64) -> ClassRuns {
        ClassRuns {
            class,
            tally: Tally {
                failures: bad,
                runs: n,
                timeouts: 0,
            },
            started: n,
            held,
            skipped: 0,
            what: Vec::new(),
            kept: Kept::default(),
            stacks: Vec::new(),
            first_failure: (bad > 0).then_some(1),
            message: None,
        }
    }

    #[test]
    fn a_class_is_named_over_residual_failures() {
        let classes = [
            runs(DropClass::File, 3, 3, 6),
            runs(DropClass::Listener, 1, 3, 2),
            runs(DropClass::Pipe, 0, 3, 0),
        ];
        assert_eq!(named(&classes), [DropClass::File]);
    }

    #[test]
    fn failures_without_a_held_copy_name_nothing() {
        // The file class held nothing: its failures are the background, and
        // the listener's as many are not above it.
        let classes = [
            runs(DropClass::File, 2, 3, 0),
            runs(DropClass::Listener, 2, 3, 4),
        ];
        assert!(named(&classes).is_empty());
        // One failure in three is not enough.
        assert!(named(&[runs(DropClass::Listener, 1, 3, 4)]).is_empty());
    }

    #[test]
    fn a_sham_failing_as_often_clears_nothing() {
        let t = |bad, runs| Tally {
            failures: bad,
            runs,
            timeouts: 0,
        };
        assert!(sham_clears(t(3, 3), t(0, 3)));
        assert!(sham_clears(t(3, 3), t(1, 3)));
        assert!(!sham_clears(t(3, 3), t(2, 3)));
        assert!(!sham_clears(t(3, 3), t(0, 0)), "a sham that did not run");
    }

    /// What the deadline left undecided is cut short, never cleared: a class
    /// stopped mid-rounds while holding copies, a named class whose sham ran
    /// once and failed; a full sham failing as often is the forks.
    #[test]
    fn judge_cuts_short_what_the_deadline_left_undecided() {
        let t = |bad, runs| Tally {
            failures: bad,
            runs,
            timeouts: 0,
        };
        let file = runs(DropClass::File, 3, 3, 3);
        let pipe = runs(DropClass::Pipe, 1, 1, 1); // held a copy, stopped after round 1
        let stream = runs(DropClass::Stream, 0, 1, 0); // held nothing: one run by design
        let mut never = runs(DropClass::Bound, 0, 0, 0);
        never.started = 0;
        let classes = [file, pipe, stream, never];
        let named = [DropClass::File];
        let (found, forks, cut) = judge(&classes, &named, &[(DropClass::File, t(1, 1))]);
        assert_eq!((found, forks), (vec![], vec![]));
        assert_eq!(cut, [DropClass::Pipe, DropClass::Bound, DropClass::File]);
        let (found, forks, _) = judge(&classes, &named, &[(DropClass::File, t(0, 7))]);
        assert_eq!((found, forks), (vec![DropClass::File], vec![]));
        let (found, forks, _) = judge(&classes, &named, &[(DropClass::File, t(5, 7))]);
        assert_eq!((found, forks), (vec![], vec![DropClass::File]));
    }

    #[test]
    fn load_needs_persisting_failures() {
        let t = |bad, runs| Tally {
            failures: bad,
            runs,
            timeouts: 0,
        };
        // One failure in each arm: never load.
        assert!(!says_load(t(1, 14), t(1, 14)));
        assert!(says_load(t(8, 20), t(6, 20)));
        // The sham far below the control: descriptors matter, not load.
        assert!(!says_load(t(18, 20), t(5, 40)));
        // Not significant, but the control fails about twice as often.
        assert!(!says_load(t(13, 100), t(6, 100)));
    }

    #[test]
    fn held_names_pick_the_hazard() {
        let unix = Kept {
            unix: true,
            ..Kept::default()
        };
        let tcp = Kept::default();
        assert_eq!(
            hazard_of(DropClass::Bound, unix, "").0,
            Some("unix-listener-survival")
        );
        assert_eq!(hazard_of(DropClass::Bound, tcp, "").0, Some("port-pick"));
        assert_eq!(
            hazard_of(
                DropClass::Listener,
                tcp,
                "Address already in use (os error 98)"
            )
            .0,
            Some("port-pick")
        );
        // A swallowed bind error (`is_free(port)` said false): the
        // injector's `busy` line names it.
        let refused = Kept {
            busy: true,
            ..Kept::default()
        };
        assert_eq!(
            hazard_of(
                DropClass::Listener,
                refused,
                "assertion failed: is_free(port)"
            )
            .0,
            Some("port-pick")
        );
        assert_eq!(
            hazard_of(DropClass::Listener, tcp, "").0,
            Some("listener-survival")
        );
        assert_eq!(
            hazard_of(DropClass::File, tcp, "Text file busy (os error 26)").0,
            Some("etxtbsy")
        );
        assert_eq!(
            hazard_of(DropClass::File, tcp, "would block").0,
            Some("flock-survival")
        );
        // The lock the copies kept, as the injector describes it.
        let kept = |whats: &[&str]| {
            let mut k = Kept::default();
            whats.iter().for_each(|w| k.note(w));
            k
        };
        let ofd = kept(&["/tmp/db.lock [lock: ofd]", "/tmp/other"]);
        assert_eq!(
            hazard_of(DropClass::File, ofd, "would block"),
            (Some("ofd-lock-survival"), &["ofd-lock-survival"][..])
        );
        let flock = kept(&["/tmp/a [lock: flock]"]);
        assert_eq!(
            hazard_of(DropClass::File, flock, "").0,
            Some("flock-survival")
        );
        let both = kept(&["/tmp/a [lock: flock+ofd]", "/tmp/b [lock: posix]"]);
        assert!((both.flock, both.ofd) == (true, true));
        assert_eq!(hazard_of(DropClass::File, both, "").1.len(), 3);
    }

    #[test]
    fn holds_are_read_from_the_report() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r");
        std::fs::write(
            &path,
            "10 0 0.1 0 a\nheld 10 bound tcp 127.0.0.1:80\nheld 10 file /tmp/a b\nholds 10 2 3\n",
        )
        .unwrap();
        let h = read_holds(&path);
        let held: Vec<(&str, &str)> = h
            .held
            .iter()
            .map(|h| (h.class.as_str(), h.what.as_str()))
            .collect();
        assert_eq!(held, [("bound", "tcp 127.0.0.1:80"), ("file", "/tmp/a b")]);
        assert_eq!(h.skipped, 3);
        assert!(h.counted);
        assert!(h.held.iter().all(|h| h.stack.is_empty()));
        // hold-by=pass: each gap as it happened, counted without a holds
        // line (the host ended by _exit).
        // A loop's closes past its live copies are the injector's choice,
        // not a gap.
        let unheld = "holding 10 pass\nheld 10 file /tmp/a\nunheld 10 full\nunheld 10 full\n\
                      unheld 10 lost\nunheld 10 loop\nbusy 10\nbusy 10\n";
        std::fs::write(&path, unheld).unwrap();
        let h = read_holds(&path);
        assert!(h.counted);
        assert_eq!(h.skipped, 3);
        let by: Vec<(&str, u64)> = h.unheld.iter().map(|(r, n)| (r.as_str(), *n)).collect();
        assert_eq!(by, [("full", 2), ("loop", 1), ("lost", 1)]);
        assert_eq!(h.busy_binds, 2);
        // Without its holds line a fork-mode run cannot say what went unheld.
        std::fs::write(&path, "held 10 file /tmp/a\n").unwrap();
        assert!(!read_holds(&path).counted);
    }

    /// A `site` line belongs to the last `held` line of its process, and
    /// names its modules by the `module` lines of that process.
    #[test]
    fn stacks_are_read_with_their_modules() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r");
        std::fs::write(
            &path,
            "held 10 file /tmp/a\nheld 11 file /tmp/b\nmodule 10 0 /bin/t\n\
             module 11 0 /bin/u\nsite 10 0:1a ?:5\nsite 11 0:2b\nholds 10 1 0\n",
        )
        .unwrap();
        let h = read_holds(&path);
        let frame = |m: &str, addr| Frame {
            module: m.into(),
            addr,
        };
        assert_eq!(h.held[0].stack, [frame("/bin/t", 0x1a), frame("", 5)]);
        assert_eq!(h.held[1].stack, [frame("/bin/u", 0x2b)]);
    }
}
