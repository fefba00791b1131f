//! The audit's detection rule, apart from any process: which tests of a suite
//! fail more under fork pressure than alone.
//!
//! 1. **Screen.** Each test binary first runs with a copy of every
//!    descriptor it closes held (the injector's `close-hold=all`,
//!    [`held_screen`]): a test that needs a closed descriptor gone fails on
//!    that run whatever its natural rate under real pressure (1–4% for real
//!    exposures, which random pressure needs hundreds of runs to see). A
//!    run in which a close went through unheld (a system bound) screened its
//!    tests only in part: they run again in halves, down to one test alone,
//!    until each ran in a run without a gap; those the share
//!    ([`SCREEN_SHARE`] of the budget) leaves are reported as not screened.
//!    By default that is the whole screen ([`ScreenStop::Held`]). With
//!    `--rates`, `--runs` or `--duration`, or where the bench cannot hold
//!    copies, pressured runs follow, round-robin: the first round times each
//!    binary ([`Event::Planned`]), and a run starts only if, at its binary's
//!    pace so far, it ends within the share. Any test that fails once is a
//!    suspect; failures here only make suspects.
//! 2. **Confirmation.** Each suspect reruns in its own process (`--exact`), in
//!    pairs of one run alone and one under pressure, round-robin over the
//!    suspects, until the budget's confirmation share ends. The sign rule
//!    decides each: [`SIGN_FAILURES`] pressured failures before any failure
//!    alone is `exposed`; a failure alone is `fails-alone` (the test is flaky
//!    or broken without pressure and is reported as such, never as exposed).
//!    A suspect that only held copies broke runs alone
//!    [`HELD_SUSPECT_PAIRS`] times (with `--rates`, it gets pairs like any
//!    other): the held-copy window decides it.
//!
//! Why the sign rule holds its error rate at every look: if pressure does not
//! change a test's failure rate `q`, the two runs of a pair are alike (their
//! order is a coin flip, so neither arm always follows the same neighbour),
//! so a pair with exactly one failure has it in either run with probability ½, and
//! a pair with two has a failure alone. The first `K` failing pairs all fail
//! under pressure only with probability `((1-q)/(2-q))^K <= 2^-K`, whenever
//! the count is looked at and however long it runs: no correction for looks.
//! `K = 10` gives 9.8e-4 per unaffected test (an audit with `S` such
//! suspects flags one of them with probability up to `S` times that). Load
//! drift falls on both runs of a pair alike.
//!
//! Everything here is generic over [`Bench`], which runs (or simulates) the
//! runs, so the simulations in `tests/audit_rule.rs` run the shipped code.

use std::collections::BTreeMap;
use std::time::Duration;

/// Pressured failures before any failure alone that make a test `exposed`.
pub const SIGN_FAILURES: u64 = 10;

/// The rule's false-exposure bound, `2^-SIGN_FAILURES` (9.8e-4).
pub fn false_rate() -> f64 {
    0.5f64.powi(SIGN_FAILURES as i32)
}

/// The share of the budget the screen takes by default.
pub const SCREEN_SHARE: f64 = 0.55;
/// The share of the budget kept for the diagnosis after the confirmation.
pub const DIAGNOSIS_SHARE: f64 = 0.1;
/// The audit's budget by default: the whole audit, screen to diagnosis.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(150);

/// The budget a suite needs, from its timing run (every binary once,
/// alone): at least [`DEFAULT_BUDGET`], and enough that the screen's share,
/// counted from the start, holds the timing run and two more runs of every
/// binary (a held-copy pass and its splits, or two pressure rounds).
pub fn budget_for(timing_seconds: f64) -> Duration {
    let fit = Duration::from_secs_f64((3.0 * timing_seconds / SCREEN_SHARE).ceil());
    fit.max(DEFAULT_BUDGET)
}

/// What one run says about one test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// It passed.
    Ok,
    /// It failed, or the binary died before it reported.
    Failed,
    /// The run was killed at its timeout before the test reported.
    TimedOut,
}

/// One arm's count for one test.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Runs that reported a failure (or died before reporting).
    pub failures: u64,
    /// Runs in which the test reported, failed to, or timed out.
    pub runs: u64,
    /// Runs killed at their timeout before the test reported.
    pub timeouts: u64,
}

impl Tally {
    /// Failures and timeouts: what the rule counts as bad runs.
    pub fn bad(self) -> u64 {
        self.failures + self.timeouts
    }

    /// Counts one run.
    pub fn add(&mut self, seen: Seen) {
        self.runs += 1;
        match seen {
            Seen::Ok => {}
            Seen::Failed => self.failures += 1,
            Seen::TimedOut => self.timeouts += 1,
        }
    }
}

/// A test's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The sign rule: [`SIGN_FAILURES`] pressured failures before any alone.
    Exposed,
    /// It failed alone in its reruns: flaky or broken without pressure.
    FailsAlone,
    /// It failed in the screen; its reruns did not decide before the budget.
    Undecided,
    /// It never failed in the screen.
    NotExposed,
}

impl Verdict {
    /// The word in reports.
    pub fn id(self) -> &'static str {
        match self {
            Verdict::Exposed => "exposed",
            Verdict::FailsAlone => "fails-alone",
            Verdict::Undecided => "undecided",
            Verdict::NotExposed => "not-exposed",
        }
    }
}

/// A suspect's interleaved `--exact` reruns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pairs {
    /// The runs alone.
    pub alone: Tally,
    /// The runs under pressure.
    pub pressure: Tally,
    /// Children the pressure started while the pressured reruns ran (from
    /// the injector's report): a pressured run with none was not tested.
    pub spawns: u64,
    /// Pressured reruns in which the injector never started.
    pub unpressured: u64,
    /// Pairs dropped because a run did not report the test (filtered,
    /// ignored): only whole pairs count.
    pub dropped: u64,
}

impl Pairs {
    /// The decision so far, `None` while undecided.
    pub fn decided(&self) -> Option<Verdict> {
        if self.alone.bad() > 0 {
            Some(Verdict::FailsAlone)
        } else if self.pressure.bad() >= SIGN_FAILURES {
            Some(Verdict::Exposed)
        } else {
            None
        }
    }

    /// The one-sided sign test's p: the chance, were pressure harmless, that
    /// at least this many of the failures fell under pressure (`2^-k` with
    /// `k` pressured failures and none alone). The rule's `exposed` is
    /// exactly `p <= 2^-SIGN_FAILURES` with no failure alone.
    pub fn p(&self) -> f64 {
        let (a, b) = (self.alone.bad(), self.pressure.bad());
        if a == 0 {
            // Exactly, so the rule's threshold compares equal.
            return 0.5f64.powi(b.min(2000) as i32);
        }
        let n = a + b;
        // P(Bin(n, 1/2) >= b), in logs to stay finite for large n.
        let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
        let ln_choose = |k: u64| {
            crate::report::stats::ln_gamma(n as f64 + 1.0)
                - crate::report::stats::ln_gamma(k as f64 + 1.0)
                - crate::report::stats::ln_gamma((n - k) as f64 + 1.0)
        };
        (b..=n)
            .map(|k| (ln_choose(k) + ln_half_n).exp())
            .sum::<f64>()
            .min(1.0)
    }
}

/// How long the screen runs. Where the bench can hold copies, every screen
/// starts with the held-copy screen; the variants say what pressure follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScreenStop {
    /// No pressure: the screen ends when every test has run with every
    /// close held (the default). A bench that cannot hold copies screens
    /// under pressure for [`SCREEN_SHARE`] of the budget instead.
    Held,
    /// Pressure for what [`SCREEN_SHARE`] of the budget has left.
    Share,
    /// This many pressured runs of each binary (`--runs`).
    Runs(u64),
    /// This long (`--duration`), at least one run of each binary.
    For(Duration),
}

/// The audit's budget and its overrides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The whole audit, screen to diagnosis.
    pub budget: Duration,
    /// When the screen stops.
    pub screen: ScreenStop,
    /// The confirmation's own limit (`--rerun-budget`); by default it runs
    /// until [`DIAGNOSIS_SHARE`] of the budget is left.
    pub rerun_budget: Option<Duration>,
    /// At most this many pairs per suspect.
    pub max_pairs: u64,
    /// Measure rates under realistic pressure (`--rates`): a suspect that
    /// only held copies broke gets sign-rule pairs like any other, not just
    /// [`HELD_SUSPECT_PAIRS`] runs alone.
    pub rates: bool,
    /// Seeds the coin that orders the two runs of each pair.
    pub seed: u64,
}

impl Default for Plan {
    fn default() -> Plan {
        Plan {
            budget: DEFAULT_BUDGET,
            screen: ScreenStop::Held,
            rerun_budget: None,
            max_pairs: 1_000_000,
            rates: false,
            seed: 0,
        }
    }
}

/// A seeded coin (splitmix64): which run of a pair goes first. A fixed
/// order would let a test that trips over leftovers of its own previous run
/// (a fixed port in TIME_WAIT, a helper still exiting) fail in one arm only.
#[derive(Clone, Debug)]
pub struct Coin(u64);

impl Coin {
    /// A coin from a seed.
    pub fn new(seed: u64) -> Coin {
        Coin(seed)
    }

    /// Heads or tails.
    pub fn flip(&mut self) -> bool {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) & 1 == 1
    }
}

/// Pairs at most for a suspect that only held copies broke in the screen:
/// enough runs alone to see a test that fails without pressure, while the
/// held-copy window (the diagnosis), not random pressure, decides it. Pairs
/// to reach the sign rule would take hundreds of runs of a test that
/// pressure breaks rarely; the budget goes to the window instead.
pub const HELD_SUSPECT_PAIRS: u64 = 3;

/// Pairs dropped (one run did not report the test) before any completed,
/// after which a suspect is given up: its `--exact` runs do not run it.
pub const DROPPED_PAIRS: u64 = 20;

/// One `--exact` run's result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rerun {
    /// The test's word; `None` when it did not run (filtered, ignored).
    pub seen: Option<Seen>,
    /// Children the pressure started during the run (0 alone).
    pub spawns: u64,
    /// Whether pressure started in the run (false alone).
    pub pressured: bool,
}

/// One held-copy screen run of a group of one binary's tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeldRun {
    /// Each reporting test's word, by test index.
    pub seen: Vec<(usize, Seen)>,
    /// Copies held.
    pub copies: u64,
    /// Closes of a held class that went through unheld (the injector's
    /// bounds), or that the run cannot account for (it died before its
    /// injector reported).
    pub unheld: u64,
    /// The group's tests that ran while a close went through unheld: every
    /// test of the run where one run cannot tell which, none without a gap.
    pub gaps: Vec<usize>,
}

/// Progress, for a [`Bench`] to show.
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// The held-copy screen starts.
    Holding {
        /// Per binary: seconds its timing run took.
        pace: &'a [f64],
    },
    /// A held-copy run ended.
    Held {
        /// Held runs so far.
        runs: u64,
        /// Tests screened so far (in a run without a gap).
        screened: usize,
        /// Tests in all.
        tests: usize,
        /// Tests that failed at least once.
        suspects: usize,
    },
    /// The first screen round ended: the plan for the rest.
    Planned {
        /// Per binary: seconds its first pressured run took.
        pace: &'a [f64],
        /// Full rounds the screen's share holds at that pace (the first
        /// included); `None` for a screen of `--runs`.
        rounds: Option<u64>,
    },
    /// A screen round ended: runs of each binary so far, tests failed so far.
    Screen {
        /// Rounds (pressured runs of each binary).
        rounds: u64,
        /// Tests that failed at least once.
        suspects: usize,
    },
    /// The confirmation starts with these suspects.
    Confirming {
        /// Suspects, by test index.
        suspects: &'a [usize],
    },
    /// A pair of one suspect ended.
    Pair {
        /// The test.
        test: usize,
        /// Its pairs so far.
        pairs: &'a Pairs,
    },
}

/// Runs the audit's runs: the real one (processes) or a simulation.
pub trait Bench {
    /// Why a run could not be started.
    type Error;
    /// Time since the audit began.
    fn elapsed(&self) -> Duration;
    /// Whether to stop now (Ctrl-C).
    fn interrupted(&self) -> bool {
        false
    }
    /// One pressured run of binary `binary`: each reporting test's word,
    /// by test index.
    fn screen(&mut self, binary: usize) -> Result<Vec<(usize, Seen)>, Self::Error>;
    /// One `--exact` run of test `test`, alone or under pressure.
    fn rerun(&mut self, test: usize, pressured: bool) -> Result<Rerun, Self::Error>;
    /// One run of `tests` (of binary `binary`, in its order) with a copy of
    /// every descriptor they close held; `None` where the bench cannot hold
    /// copies (then the screen is pressure only).
    fn screen_held(
        &mut self,
        _binary: usize,
        _tests: &[usize],
    ) -> Result<Option<HeldRun>, Self::Error> {
        Ok(None)
    }
    /// Shows progress.
    fn progress(&mut self, _event: Event<'_>) {}
}

/// The held-copy screen's account ([`held_screen`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HeldScreen {
    /// Per test: its held-copy runs.
    pub tally: Vec<Tally>,
    /// Per binary: held-copy runs.
    pub runs: Vec<u64>,
    /// Per binary: copies held.
    pub copies: Vec<u64>,
    /// Per binary: closes that went through unheld.
    pub unheld: Vec<u64>,
    /// Tests that ran in a held run without a gap; the others (gaps in
    /// every run of theirs, even alone, or the share ended first) were not
    /// screened with every close held.
    pub screened: Vec<bool>,
}

/// What detection found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Detection {
    /// Per test: the screen's pressured runs.
    pub screen: Vec<Tally>,
    /// The held-copy screen, where the plan chose one.
    pub held: Option<HeldScreen>,
    /// Per binary: pressured runs made in the screen.
    pub screen_runs: Vec<u64>,
    /// The suspects' reruns, by test index.
    pub pairs: BTreeMap<usize, Pairs>,
    /// Seconds spent: screen, confirmation (each its own time; the
    /// screen's share is counted from the bench's start, before it).
    pub seconds: [f64; 2],
    /// Whether an interruption cut it short.
    pub interrupted: bool,
}

impl Detection {
    /// A test's verdict.
    pub fn verdict(&self, test: usize) -> Verdict {
        match self.pairs.get(&test) {
            Some(p) => p.decided().unwrap_or(Verdict::Undecided),
            None if self.suspect(test) => Verdict::Undecided,
            None => Verdict::NotExposed,
        }
    }

    /// Whether the screen saw the test fail, under pressure or held copies.
    pub fn suspect(&self, test: usize) -> bool {
        self.screen[test].bad() > 0 || self.held.as_ref().is_some_and(|h| h.tally[test].bad() > 0)
    }
}

/// The smallest per-run failure rate that `runs` runs see at least once
/// with 90% probability: `1 - 0.1^(1/runs)` (1 without runs).
pub fn seen_rate90(runs: u64) -> f64 {
    if runs == 0 {
        return 1.0;
    }
    1.0 - 0.1f64.powf(1.0 / runs as f64)
}

/// The smallest per-run failure rate at which `pairs` pairs would have
/// reached [`SIGN_FAILURES`] pressured failures with 90% probability (a test
/// that never fails alone); 1 when even certain failure could not.
pub fn confirmed_rate90(pairs: u64) -> f64 {
    if pairs < SIGN_FAILURES {
        return 1.0;
    }
    // P(Bin(pairs, r) >= K) rises with r: bisect.
    let reach = |r: f64| {
        let mut below = 0.0; // P(X < K)
        let mut term = (1.0 - r).powf(pairs as f64); // P(X = 0)
        for k in 0..SIGN_FAILURES {
            below += term;
            term *= (pairs - k) as f64 / (k + 1) as f64 * r / (1.0 - r);
        }
        1.0 - below
    };
    let (mut lo, mut hi) = (0.0, 1.0 - 1e-12);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if reach(mid) >= 0.9 {
            hi = mid
        } else {
            lo = mid
        }
    }
    hi
}

/// Runs detection: the screen, then the confirmation, within `plan`.
/// `timing` holds each binary's seconds alone (the timing run), from which
/// the screen is planned; empty where there was none.
pub fn detect<B: Bench>(
    bench: &mut B,
    test_binaries: &[usize],
    binaries: usize,
    plan: &Plan,
    timing: &[f64],
) -> Result<Detection, B::Error> {
    let mut d = Detection {
        screen: vec![Tally::default(); test_binaries.len()],
        screen_runs: vec![0; binaries],
        ..Detection::default()
    };
    let screen_start = bench.elapsed();
    // Per binary: seconds of its latest run, its pace (the timing run's
    // until it has a pressured one).
    let mut pace = if timing.len() == binaries {
        timing.to_vec()
    } else {
        vec![0.0f64; binaries]
    };
    // The held-copy screen first, whole: it ends when every test has run
    // with every close held, or at the screen's share.
    let share_end = plan.budget.mul_f64(SCREEN_SHARE);
    if binaries > 0 {
        bench.progress(Event::Holding { pace: &pace });
        let end = match plan.screen {
            ScreenStop::For(t) => t,
            _ => share_end,
        };
        d.held = held_screen(bench, test_binaries, &pace, end)?;
    }
    pressured_screen(bench, plan, share_end, screen_start, &mut pace, &mut d)?;
    d.seconds[0] = (bench.elapsed() - screen_start).as_secs_f64();

    confirm(bench, plan, &mut d)?;
    d.interrupted = bench.interrupted();
    Ok(d)
}

/// The pressured screen, where asked for (`--rates`, `--runs`,
/// `--duration`) or where copies could not be held: rounds of every binary
/// under pressure until its stop, at least one round without a held screen.
fn pressured_screen<B: Bench>(
    bench: &mut B,
    plan: &Plan,
    share_end: Duration,
    screen_start: Duration,
    pace: &mut [f64],
    d: &mut Detection,
) -> Result<(), B::Error> {
    let binaries = pace.len();
    let screen_end = match plan.screen {
        ScreenStop::Held if d.held.is_some() => None,
        ScreenStop::Held | ScreenStop::Share => Some(share_end),
        ScreenStop::For(t) => Some(t),
        ScreenStop::Runs(_) => None,
    };
    let pressure = !matches!(plan.screen, ScreenStop::Held) || d.held.is_none();
    // Without a held screen, one pressure round is owed whatever the
    // share: every test runs at least once.
    let owed = d.held.is_none();
    let mut rounds = 0;
    loop {
        let done = match plan.screen {
            ScreenStop::Runs(n) => rounds >= n,
            _ => (rounds > 0 || !owed) && screen_end.is_none_or(|end| bench.elapsed() >= end),
        };
        if !pressure || done || binaries == 0 || bench.interrupted() {
            break;
        }
        let mut ran = false;
        for (b, pace) in pace.iter_mut().enumerate() {
            // After the first round, a run that would end past the share
            // at its binary's pace does not start.
            if (rounds > 0 || !owed)
                && let Some(end) = screen_end
                && bench.elapsed().as_secs_f64() + *pace > end.as_secs_f64()
            {
                continue;
            }
            let before = bench.elapsed();
            for (test, seen) in bench.screen(b)? {
                d.screen[test].add(seen);
            }
            *pace = (bench.elapsed() - before).as_secs_f64();
            d.screen_runs[b] += 1;
            ran = true;
            if bench.interrupted() {
                break;
            }
        }
        if !ran {
            break;
        }
        rounds += 1;
        if rounds == 1 {
            let per_round: f64 = pace.iter().sum();
            // The share left when the screen began, at this pace.
            let planned = screen_end.map(|end| {
                let left = end.saturating_sub(screen_start).as_secs_f64();
                if per_round > 0.0 {
                    (left / per_round).floor().max(1.0) as u64
                } else {
                    1
                }
            });
            bench.progress(Event::Planned {
                pace,
                rounds: planned,
            });
        }
        let suspects = (0..d.screen.len()).filter(|&t| d.suspect(t)).count();
        bench.progress(Event::Screen { rounds, suspects });
    }
    Ok(())
}

/// The confirmation: each suspect's `--exact` reruns, alone and under
/// pressure in pairs (or alone only, for a suspect only held copies broke),
/// until the sign rule decides it, its pairs run out or the time does.
fn confirm<B: Bench>(bench: &mut B, plan: &Plan, d: &mut Detection) -> Result<(), B::Error> {
    let suspects: Vec<usize> = (0..d.screen.len()).filter(|&t| d.suspect(t)).collect();
    let start = bench.elapsed();
    let end = match plan.rerun_budget {
        Some(b) => start + b,
        None => plan.budget.mul_f64(1.0 - DIAGNOSIS_SHARE),
    };
    if !suspects.is_empty() {
        bench.progress(Event::Confirming {
            suspects: &suspects,
        });
    }
    for &t in &suspects {
        d.pairs.insert(t, Pairs::default());
    }
    let mut coin = Coin::new(plan.seed);
    loop {
        // A suspect only held copies broke is decided by the held-copy
        // window; unless rates are asked for, it runs alone only, to see
        // whether it fails without any copy.
        let alone_only = |t: usize| !plan.rates && d.screen[t].bad() == 0;
        let open: Vec<usize> = suspects
            .iter()
            .copied()
            .filter(|&t| {
                let p = &d.pairs[&t];
                let runs = p.alone.runs.max(p.pressure.runs);
                p.decided().is_none()
                    && runs < plan.max_pairs
                    && !(alone_only(t) && runs >= HELD_SUSPECT_PAIRS)
                    && !(runs == 0 && p.dropped >= DROPPED_PAIRS)
            })
            .collect();
        if open.is_empty() || bench.elapsed() >= end || bench.interrupted() {
            break;
        }
        for t in open {
            let p = if alone_only(t) {
                let alone = bench.rerun(t, false)?;
                let p = d.pairs.get_mut(&t).expect("inserted above");
                match alone.seen {
                    Some(a) => p.alone.add(a),
                    None => p.dropped += 1,
                }
                p
            } else {
                // The two runs in a random order: see [`Coin`].
                let (alone, pressured) = if coin.flip() {
                    let a = bench.rerun(t, false)?;
                    (a, bench.rerun(t, true)?)
                } else {
                    let b = bench.rerun(t, true)?;
                    (bench.rerun(t, false)?, b)
                };
                let p = d.pairs.get_mut(&t).expect("inserted above");
                // A pair counts only whole: the rule's ½ needs both runs.
                if let (Some(a), Some(b)) = (alone.seen, pressured.seen) {
                    p.alone.add(a);
                    p.pressure.add(b);
                    p.spawns += pressured.spawns;
                    p.unpressured += u64::from(!pressured.pressured);
                } else {
                    p.dropped += 1;
                }
                p
            };
            let p = *p;
            bench.progress(Event::Pair { test: t, pairs: &p });
            if bench.elapsed() >= end || bench.interrupted() {
                break;
            }
        }
    }
    d.seconds[1] = (bench.elapsed() - start).as_secs_f64();
    Ok(())
}

/// The held-copy screen: each binary's tests in one run with every closed
/// descriptor held, then, for a run whose closes were not all held, its
/// tests again in halves, down to one test alone, while the share (ending at
/// `end`) has room at the timing run's pace (`timing`, seconds per binary).
/// `None` where the bench cannot hold copies.
fn held_screen<B: Bench>(
    bench: &mut B,
    test_binaries: &[usize],
    timing: &[f64],
    end: Duration,
) -> Result<Option<HeldScreen>, B::Error> {
    let binaries = timing.len();
    let mut h = HeldScreen {
        tally: vec![Tally::default(); test_binaries.len()],
        runs: vec![0; binaries],
        copies: vec![0; binaries],
        unheld: vec![0; binaries],
        screened: vec![false; test_binaries.len()],
    };
    let mine = |b: usize| -> Vec<usize> {
        (0..test_binaries.len())
            .filter(|&t| test_binaries[t] == b)
            .collect()
    };
    let sizes: Vec<usize> = (0..binaries).map(|b| mine(b).len()).collect();
    let mut queue: std::collections::VecDeque<(usize, Vec<usize>)> = (0..binaries)
        .map(|b| (b, mine(b)))
        .filter(|(_, tests)| !tests.is_empty())
        .collect();
    while let Some((b, group)) = queue.pop_front() {
        // A group's run takes its share of the binary's timing run (the
        // process start included: at least a tenth of it).
        let share = (group.len() as f64 / sizes[b] as f64).max(0.1);
        let fits = bench.elapsed().as_secs_f64() + timing[b] * share <= end.as_secs_f64();
        if !fits || bench.interrupted() {
            continue;
        }
        let Some(run) = bench.screen_held(b, &group)? else {
            return Ok(None);
        };
        h.runs[b] += 1;
        h.copies[b] += run.copies;
        h.unheld[b] += run.unheld;
        for &(t, seen) in &run.seen {
            h.tally[t].add(seen);
            if !run.gaps.contains(&t) {
                h.screened[t] = true;
            }
        }
        let gaps: Vec<usize> = run
            .gaps
            .iter()
            .copied()
            .filter(|&t| !h.screened[t])
            .collect();
        // Halves run again; one test alone with a gap is left as it is: no
        // smaller run would hold more of its closes.
        if gaps.len() > 1 {
            let (first, second) = gaps.split_at(gaps.len() / 2);
            queue.push_back((b, first.to_vec()));
            queue.push_back((b, second.to_vec()));
        }
        let suspects = h.tally.iter().filter(|t| t.bad() > 0).count();
        let screened = h.screened.iter().filter(|s| **s).count();
        bench.progress(Event::Held {
            runs: h.runs.iter().sum(),
            screened,
            tests: test_binaries.len(),
            suspects,
        });
    }
    Ok(Some(h))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(bad: u64, runs: u64) -> Tally {
        Tally {
            failures: bad,
            runs,
            timeouts: 0,
        }
    }

    #[test]
    fn the_sign_rule_decides_at_ten_and_at_one_alone() {
        let mut p = Pairs {
            pressure: t(9, 500),
            alone: t(0, 500),
            ..Pairs::default()
        };
        assert_eq!(p.decided(), None);
        assert!((p.p() - 0.5f64.powi(9)).abs() < 1e-12, "{}", p.p());
        p.pressure = t(10, 501);
        assert_eq!(p.decided(), Some(Verdict::Exposed));
        assert!((p.p() - false_rate()).abs() < 1e-12);
        assert!(false_rate() <= 0.001);
        p.alone = t(1, 501);
        assert_eq!(p.decided(), Some(Verdict::FailsAlone));
        // 1 alone against 9 pressured: (1 + 10) / 2^10, above the threshold.
        p.pressure = t(9, 501);
        assert!((p.p() - 11.0 / 1024.0).abs() < 1e-12, "{}", p.p());
    }

    /// The exact false-exposure rate of an unaffected test failing `q` per
    /// run in both arms: the first K failing pairs all fail under pressure
    /// only. It never exceeds 2^-K.
    #[test]
    fn the_false_rate_is_at_most_two_to_the_minus_k_for_any_rate() {
        for q in [1e-4f64, 0.01, 0.05, 0.3, 0.9] {
            let one = q * (1.0 - q) / (1.0 - (1.0 - q) * (1.0 - q));
            let rate = one.powi(SIGN_FAILURES as i32);
            assert!(rate <= false_rate(), "q {q}: {rate}");
        }
    }

    /// Binaries whose pressured runs take fixed times on a simulated clock;
    /// every test passes. Records the plan it was told.
    struct Paced {
        seconds: Vec<f64>,
        clock: Duration,
        planned: Option<(Vec<f64>, Option<u64>)>,
    }

    impl Bench for Paced {
        type Error = ();

        fn elapsed(&self) -> Duration {
            self.clock
        }

        fn screen(&mut self, binary: usize) -> Result<Vec<(usize, Seen)>, ()> {
            self.clock += Duration::from_secs_f64(self.seconds[binary]);
            Ok(vec![(binary, Seen::Ok)])
        }

        fn rerun(&mut self, _test: usize, _pressured: bool) -> Result<Rerun, ()> {
            unreachable!("no test fails, so none is rerun")
        }

        fn progress(&mut self, event: Event<'_>) {
            if let Event::Planned { pace, rounds } = event {
                self.planned = Some((pace.to_vec(), rounds));
            }
        }
    }

    /// A slow binary (20 s a run) beside a fast one (0.5 s), after a 10 s
    /// timing run: rounds of 20.5 s would carry the screen past its 82.5 s
    /// share (counted from the audit's start); instead a run starts only if
    /// it ends within the share at its binary's pace, the fast binary goes
    /// on once the slow one no longer fits, and the plan after the first
    /// round counts the rounds left in the share. The screen's own seconds
    /// leave the timing run out.
    #[test]
    fn a_slow_binary_cannot_carry_the_screen_past_its_share() {
        let mut bench = Paced {
            seconds: vec![20.0, 0.5],
            clock: Duration::from_secs(10),
            planned: None,
        };
        let d = detect(&mut bench, &[0, 1], 2, &Plan::default(), &[]).unwrap();
        let share = DEFAULT_BUDGET.mul_f64(SCREEN_SHARE).as_secs_f64();
        let end = bench.clock.as_secs_f64();
        assert!(
            end <= share,
            "the screen ended at {end} s of a {share} s share"
        );
        assert!(end > share - 0.5, "it stopped {} s early", share - end);
        assert_eq!(d.seconds[0], end - 10.0);
        assert_eq!(d.screen_runs[0], 3);
        assert!(d.screen_runs[1] > 20, "{:?}", d.screen_runs);
        assert_eq!(bench.planned, Some((vec![20.0, 0.5], Some(3))));
        // `--runs` keeps its meaning: exactly that many of each.
        let mut bench = Paced {
            seconds: vec![20.0, 0.5],
            clock: Duration::ZERO,
            planned: None,
        };
        let runs = Plan {
            screen: ScreenStop::Runs(7),
            ..Plan::default()
        };
        let d = detect(&mut bench, &[0, 1], 2, &runs, &[]).unwrap();
        assert_eq!(d.screen_runs, [7, 7]);
        assert_eq!(bench.planned.map(|p| p.1), Some(None));
    }

    /// One slow binary of eight tests: test 2 closes past the injector's
    /// bounds (any run holding it lets a close through unheld), test 5
    /// fails whenever its closes are held, no test fails under pressure.
    struct Slow {
        clock: Duration,
        held: Vec<Vec<usize>>,
        pressured: u64,
        /// Seconds of a pressured run.
        pressured_secs: f64,
    }

    impl Slow {
        /// At `clock` seconds (the timing run's), each pressured run taking
        /// `pressured_secs`; nothing screened yet.
        fn at(clock: f64, pressured_secs: f64) -> Slow {
            Slow {
                clock: Duration::from_secs_f64(clock),
                held: Vec::new(),
                pressured: 0,
                pressured_secs,
            }
        }
    }

    impl Bench for Slow {
        type Error = ();

        fn elapsed(&self) -> Duration {
            self.clock
        }

        fn screen(&mut self, _binary: usize) -> Result<Vec<(usize, Seen)>, ()> {
            self.clock += Duration::from_secs_f64(self.pressured_secs);
            self.pressured += 1;
            Ok((0..8).map(|t| (t, Seen::Ok)).collect())
        }

        fn screen_held(&mut self, _binary: usize, tests: &[usize]) -> Result<Option<HeldRun>, ()> {
            self.clock += Duration::from_secs_f64(20.0 * (tests.len() as f64 / 8.0).max(0.1));
            self.held.push(tests.to_vec());
            let gap = tests.contains(&2);
            Ok(Some(HeldRun {
                seen: tests
                    .iter()
                    .map(|&t| (t, if t == 5 { Seen::Failed } else { Seen::Ok }))
                    .collect(),
                copies: tests.len() as u64,
                unheld: u64::from(gap),
                gaps: if gap { tests.to_vec() } else { Vec::new() },
            }))
        }

        fn rerun(&mut self, _test: usize, pressured: bool) -> Result<Rerun, ()> {
            self.clock += Duration::from_millis(100);
            Ok(Rerun {
                seen: Some(Seen::Ok),
                spawns: u64::from(pressured),
                pressured,
            })
        }
    }

    /// The screen holds copies first, whatever the suite's pace. The run with
    /// the test that closes past the bounds is split in halves down to that
    /// test alone, which is reported as not screened; every other test was
    /// screened in a run without a gap; the test that fails with held copies
    /// is a suspect (its verdict is the reruns', not the screen's). By
    /// default nothing is pressured: the suspect runs alone a few times and
    /// the held-copy window decides it. With `--rates`, what the share has
    /// left goes to pressure, never past it, and the suspect gets sign-rule
    /// pairs.
    #[test]
    fn the_screen_holds_copies_and_splits_its_gaps() {
        let mut bench = Slow::at(20.0, 24.0);
        let plan = Plan::default();
        let d = detect(&mut bench, &[0; 8], 1, &plan, &[20.0]).unwrap();
        let h = d.held.as_ref().expect("a held-copy screen");
        let all: Vec<usize> = (0..8).collect();
        assert_eq!(
            bench.held,
            [
                all,
                vec![0, 1, 2, 3],
                vec![4, 5, 6, 7],
                vec![0, 1],
                vec![2, 3],
                vec![2],
                vec![3]
            ]
        );
        assert_eq!(
            h.screened,
            [true, true, false, true, true, true, true, true]
        );
        assert_eq!(
            (h.runs[0], h.copies[0], h.unheld[0]),
            (7, 8 + 4 + 4 + 2 + 2 + 1 + 1, 4)
        );
        assert_eq!(h.tally[5].bad(), 2, "{:?}", h.tally[5]);
        assert!(d.suspect(5) && !d.suspect(4));
        assert_eq!(d.verdict(5), Verdict::Undecided);
        assert_eq!(d.pairs.keys().copied().collect::<Vec<_>>(), [5]);
        // Broken only by held copies: a few runs alone, none pressured.
        assert_eq!(d.pairs[&5].alone.runs, HELD_SUSPECT_PAIRS);
        assert_eq!(d.pairs[&5].pressure.runs, 0);
        // The held runs took 20 + 2 × 10 + 2 × 5 + 2 × 2.5 = 55 s from the
        // 20 s mark, and no pressure followed.
        assert_eq!(bench.pressured, 0);
        assert_eq!(d.seconds[0], 55.0);
        // --rates: pressure fills what the 82.5 s share has left after the
        // held runs (7.5 s: 25 rounds of 0.3 s), and the suspect gets
        // pairs until the budget's confirmation share ends.
        let mut bench = Slow::at(20.0, 0.3);
        let rates = Plan {
            screen: ScreenStop::Share,
            rates: true,
            ..Plan::default()
        };
        let d = detect(&mut bench, &[0; 8], 1, &rates, &[0.3]).unwrap();
        assert_eq!(bench.held.len(), 7);
        // 25 rounds, or 24 where the clock's sums round up.
        assert!((24..=25).contains(&bench.pressured), "{}", bench.pressured);
        assert!(d.seconds[0] <= 62.5 + 1e-9, "{}", d.seconds[0]);
        assert!(d.pairs[&5].pressure.runs > HELD_SUSPECT_PAIRS);
        assert_eq!(d.pairs[&5].alone.runs, d.pairs[&5].pressure.runs);
    }

    /// A quick suite keeps the default; a slow one gets a budget whose
    /// screen share holds its timing run and two more runs of each binary.
    #[test]
    fn the_budget_follows_the_suite() {
        assert_eq!(budget_for(10.0), DEFAULT_BUDGET);
        let slow = budget_for(90.0);
        assert_eq!(slow, Duration::from_secs(491));
        assert!(slow.mul_f64(SCREEN_SHARE).as_secs_f64() >= 3.0 * 90.0);
    }

    #[test]
    fn detectable_rates() {
        // 230 runs see a 1% test with 90% probability.
        assert!(seen_rate90(230) < 0.0101 && seen_rate90(230) > 0.0099);
        assert_eq!(seen_rate90(0), 1.0);
        assert_eq!(confirmed_rate90(9), 1.0);
        // 10 failures in 1000 pairs at 90%: about 1.5%.
        let r = confirmed_rate90(1000);
        assert!(r > 0.013 && r < 0.017, "{r}");
    }
}
