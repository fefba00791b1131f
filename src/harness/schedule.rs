//! The trial scheduler: the deterministic and in-process cells arm by arm,
//! each stopped once its verdict is decided, then each race window's arms in
//! interleaved rounds.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::report::platform::Platform;
use crate::report::stats::MAX_TRIALS;
use crate::report::verdict::{Kind, MIN_DETERMINISTIC_TRIALS, Role, Verdict, Window};
use crate::report::{LeftOut, ProbeReport, SCHEMA_VERSION, Scope, utc_now};
use fdwindow_fix::base::child::SpawnRace;
use fdwindow_fix::base::holder::CopyHolder;
use fdwindow_fix::base::interrupts::interrupted;
use fdwindow_fix::base::scratch::Scratch;
use fdwindow_fix::pressure::HoldBy;

use super::parked;

use super::cell::{Cell, Cells, arm_report, judge_now};
use super::declare::{Arm, Probe, Settings, control_for};
use super::race::{RACE_BLOCKS, SpawnHits, THOROUGH_RACE_ROUNDS, race_rounds, still_racing};
use super::trial::{Fault, NEVER_OPENED, Trial};

/// Whether a deterministic window also tests `arm` here (fork-window,
/// inherited, a deterministic in-process cell, or parked-call when this
/// process has the interposer): such a window decides its verdict in a
/// handful of trials, so a default run leaves it out of the race windows.
/// Without the interposer the parked-call cells are `unsupported`, so std's
/// constructors race instead of going unmeasured.
pub fn covered(arm: &Arm) -> bool {
    covered_with(arm, parked::Interposer::find().is_ok())
}

/// [`covered`], given whether the parked-call window can run here.
pub(super) fn covered_with(arm: &Arm, parked_call_runs: bool) -> bool {
    arm.windows.iter().any(|&w| {
        !w.is_race()
            && w.kind().or(arm.kind) == Some(Kind::Deterministic)
            && (w != Window::ParkedCall || parked_call_runs)
    })
}

/// Whether `arm` runs in the race windows it declares: in a thorough run
/// every arm does; in a default run the controls (their natural rate: how
/// often the hazard bites a busy process) and the mitigations that no
/// deterministic window covers ([`covered`]), with their shams.
pub fn races(probe: &Probe, arm: &Arm, thorough: bool) -> bool {
    races_with(probe, arm, thorough, parked::Interposer::find().is_ok())
}

/// [`races`], given whether the parked-call window can run (in this
/// process, or in the run a report comes from: `fdwindow check` reads it
/// from the report's own parked-call cells).
pub fn races_with(probe: &Probe, arm: &Arm, thorough: bool, parked_call_runs: bool) -> bool {
    if thorough {
        return true;
    }
    let covered = |a: &Arm| covered_with(a, parked_call_runs);
    match arm.role {
        Role::Control => true,
        Role::Mitigation => !covered(arm),
        Role::Sham => arm.id.strip_suffix("-sham").is_none_or(|fixed| {
            probe
                .arms
                .iter()
                .filter(|a| a.id == fixed && a.role == Role::Mitigation)
                .all(|a| !covered(a))
        }),
    }
}

/// Why a default run leaves a cell out ([`races`]), as its report says.
pub const THOROUGH_ONLY: &str =
    "not measured in a default run (`--thorough`): a deterministic window decides this arm";

/// Runs every arm (or those named in `only`) in every window it declares:
/// the deterministic and in-process cells arm by arm (controls, then shams,
/// then mitigations, each stopped once the report's judgement has what it
/// needs), then each race window's arms in interleaved rounds ([`races`]
/// says which arms race).
pub fn run(probe: &Probe, settings: Settings, only: &[String]) -> Result<ProbeReport> {
    let started = Instant::now();
    let started_at = utc_now();
    let platform = Platform::detect();
    let scratch = Scratch::new(probe.hazard).map_err(Error::io("make the scratch folder"))?;
    // Forked before any trial's descriptor exists, so it holds none of theirs.
    let holder = match settings.hold_by {
        HoldBy::Pass => Some(CopyHolder::start().map_err(Error::io("start the copy holder"))?),
        HoldBy::Fork => None,
    };
    let ground = Ground {
        scratch: &scratch,
        holder: holder.as_ref(),
    };
    let (mut cells, left_out) = plan_cells(probe, &settings, only);
    // Controls first, so a mitigation is judged against its control's final
    // count; then shams, whose verdict a sham-tested mitigation's needs.
    let mut order: Vec<usize> = (0..cells.len())
        .filter(|&i| !cells[i].1.is_race())
        .collect();
    order.sort_by_key(|&i| match cells[i].0.role {
        Role::Control => 0,
        Role::Sham => 1,
        Role::Mitigation => 2,
    });
    let cap = settings.trials;
    let floor = cap.min(MIN_DETERMINISTIC_TRIALS);
    for i in order {
        let (arm, window, cell) = &mut cells[i];
        run_block(arm, *window, floor, cap, None, None, &ground, cell)?;
        while cells[i].2.trials < cap
            && cells[i].2.fault.is_none()
            && !cells[i].2.gave_up
            && !settled(probe, &cells, i, &platform)
        {
            let (arm, window, cell) = &mut cells[i];
            run_block(arm, *window, 1, cap, None, None, &ground, cell)?;
        }
    }
    race_windows(probe, &settings, &mut cells, &ground, &platform)?;
    if interrupted() {
        return Err(Error::Interrupted);
    }
    let arms = cells
        .iter()
        .map(|(arm, window, cell)| arm_report(probe, arm, *window, cell, &platform))
        .collect();
    let tables = probe
        .observe
        .map_or_else(Vec::new, |observe| observe(&scratch, settings));
    if interrupted() {
        return Err(Error::Interrupted);
    }
    Ok(ProbeReport {
        schema: SCHEMA_VERSION,
        hazard: probe.hazard.to_owned(),
        about: probe.about.to_owned(),
        fdwindow_version: env!("CARGO_PKG_VERSION").to_owned(),
        platform,
        started_at,
        elapsed_ms: started.elapsed().as_millis() as u64,
        arms,
        tables,
        left_out,
        scope: Some(Scope {
            only: only.to_vec(),
            thorough: settings.thorough,
            trials: settings.trials,
            race_ms: u64::try_from(settings.race.as_millis()).unwrap_or(u64::MAX),
            // The runner names the run's other probes when it files this.
            probes: Vec::new(),
            held_by: (settings.hold_by == HoldBy::Pass).then(|| HoldBy::Pass.id().to_owned()),
        }),
    })
}

/// The cells `only` asks for (every arm when empty), each arm in each window
/// it declares, and those a default run leaves out ([`races`]).
fn plan_cells<'p>(
    probe: &'p Probe,
    settings: &Settings,
    only: &[String],
) -> (Cells<'p>, Vec<LeftOut>) {
    let chosen: Vec<&Arm> = probe
        .arms
        .iter()
        .filter(|a| only.is_empty() || only.iter().any(|o| o == a.id))
        .collect();
    let mut cells: Cells<'p> = Vec::new();
    let mut left_out = Vec::new();
    for arm in &chosen {
        for &window in arm.windows {
            if window.is_race() && !races(probe, arm, settings.thorough) {
                left_out.push(LeftOut {
                    arm: arm.id.to_owned(),
                    role: arm.role,
                    window,
                    against: match arm.role {
                        Role::Control => None,
                        Role::Mitigation | Role::Sham => {
                            control_for(probe, arm, window).map(str::to_owned)
                        }
                    },
                    why: THOROUGH_ONLY.to_owned(),
                });
            } else {
                cells.push((arm, window, Cell::default()));
            }
        }
    }
    (cells, left_out)
}

/// Each race window's cells in interleaved rounds ([`race_rounds`]), a
/// block of spawns per arm per round, until [`still_racing`] lets none go on.
fn race_windows(
    probe: &Probe,
    settings: &Settings,
    cells: &mut Cells<'_>,
    ground: &Ground<'_>,
    platform: &Platform,
) -> Result<()> {
    for race_window in Window::ALL.into_iter().filter(|w| w.is_race()) {
        let block = settings.race / RACE_BLOCKS;
        let max_rounds = if settings.thorough {
            THOROUGH_RACE_ROUNDS
        } else {
            RACE_BLOCKS
        };
        let active: Vec<usize> = (0..cells.len())
            .filter(|&i| cells[i].1 == race_window)
            .collect();
        let race_cap = u64::from(max_rounds) * MIN_DETERMINISTIC_TRIALS;
        let cells = std::cell::RefCell::new(&mut *cells);
        race_rounds(
            active,
            max_rounds,
            settings.deadline,
            |i| {
                let mut cells = cells.borrow_mut();
                let (arm, window, cell) = &mut cells[i];
                if cell.fault.is_some() {
                    return Ok(());
                }
                let end = Instant::now() + block;
                // The race thread ends by itself a minute after the block,
                // should this thread never stop it.
                match SpawnRace::start(end + Duration::from_secs(60)) {
                    Ok(race) => run_block(
                        arm,
                        *window,
                        1,
                        race_cap,
                        Some(end),
                        Some(race),
                        ground,
                        cell,
                    ),
                    Err(e) => {
                        cell.fault = Some(Fault::Broken(format!("start the spawn race: {e}")));
                        Ok(())
                    }
                }
            },
            |active, rounds| still_racing(probe, &cells.borrow(), active, rounds, platform),
        )?;
    }
    Ok(())
}

/// Whether a trial-counted cell (not a race) has what its verdict needs, so
/// further trials are waste: a deterministic control once it is all hits or
/// none (7/7 against a fix's 0/7 is p = 2.9e-4); a deterministic mitigation
/// or sham once the report's judgement is decided. A statistical control
/// runs all its trials: its rate is the measurement its fixes are judged
/// against. A statistical mitigation or sham stops early only at a hit
/// (`invalid`, `present`: no later trial can undo it); its `valid` or
/// `absent` rests on 0 hits, which every further trial could still break,
/// so it runs all its trials too.
pub(super) fn settled(probe: &Probe, cells: &Cells<'_>, i: usize, platform: &Platform) -> bool {
    let (arm, window, cell) = &cells[i];
    let deterministic = window.kind().or(arm.kind) == Some(Kind::Deterministic);
    match arm.role {
        Role::Control => deterministic && (cell.hits == 0 || cell.hits == cell.trials),
        Role::Mitigation | Role::Sham => {
            let verdict = judge_now(probe, cells, i, platform).verdict;
            verdict.is_decided()
                && (deterministic || matches!(verdict, Verdict::Invalid | Verdict::Present))
        }
    }
}

/// Runs one arm in one window until it has `trials` more confirmed trials
/// (no race) or until `deadline` (a race block, at least one spawn), adding
/// to `cell`; `cap` (the cell's most trials) bounds its unconfirmed ones.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_block(
    arm: &Arm,
    window: Window,
    trials: u64,
    cap: u64,
    deadline: Option<Instant>,
    race: Option<SpawnRace>,
    ground: &Ground<'_>,
    cell: &mut Cell,
) -> Result<()> {
    let began = Instant::now();
    let result = block_trials(arm, window, trials, cap, deadline, race, ground, cell);
    cell.elapsed += began.elapsed();
    result
}

/// What every trial of a run shares: the scratch folder and, with
/// `--hold-by pass`, the holder of passed copies.
#[derive(Debug)]
pub(super) struct Ground<'a> {
    pub(super) scratch: &'a Scratch,
    pub(super) holder: Option<&'a CopyHolder>,
}

/// [`run_block`]'s trials.
#[allow(clippy::too_many_arguments)]
pub(super) fn block_trials(
    arm: &Arm,
    window: Window,
    trials: u64,
    cap: u64,
    deadline: Option<Instant>,
    race: Option<SpawnRace>,
    ground: &Ground<'_>,
    cell: &mut Cell,
) -> Result<()> {
    let mut own_spawns = None::<bool>;
    let mut spawn_hits = SpawnHits::default();
    let mut confirmed = 0u64;
    // Unconfirmed trials are retried, but boundedly over the whole cell: a
    // window that never confirms leaves the cell broken, not looping.
    let max_unconfirmed = cap.max(MIN_DETERMINISTIC_TRIALS) * 2;
    loop {
        if cell.gave_up {
            break;
        }
        if interrupted() {
            return Err(Error::Interrupted);
        }
        let enough = match (&race, deadline) {
            (Some(race), Some(end)) => {
                Instant::now() >= end && (race.started() > 0 || own_spawns == Some(true))
            }
            _ => confirmed >= trials,
        };
        if enough || cell.trials >= MAX_TRIALS / 2 {
            break;
        }
        if let Some(race) = &race
            && !race.is_running()
        {
            break;
        }
        let finished_before = race.as_ref().map_or(0, SpawnRace::finished);
        let (result, own) = one_trial(arm, window, ground, cell);
        match result {
            Ok(hit) => {
                confirmed += 1;
                cell.iterations += 1;
                match &race {
                    Some(race) if !*own_spawns.get_or_insert(own) => {
                        if hit {
                            // The copy that showed the hazard belongs to a
                            // spawn still running when the trial looked (a
                            // spawn counts as finished only once its child
                            // is reaped): one in progress now, else the
                            // latest, which ended since.
                            let (finished, started) = (race.finished(), race.started());
                            let first = (finished + 1).min(started).max(finished_before + 1);
                            spawn_hits.mark(first, started, started);
                        }
                    }
                    _ => {
                        cell.trials += 1;
                        cell.hits += u64::from(hit);
                    }
                }
            }
            Err(Fault::NotConfirmed(why)) => {
                cell.broken_trials += 1;
                if cell.broken_trials > max_unconfirmed {
                    cell.gave_up = true;
                    // Give up, keeping the counts: with fewer confirmed
                    // trials than the minimum the verdict is `broken`.
                    cell.tallies
                        .entry("last-unconfirmed".into())
                        .or_default()
                        .insert(why, 1);
                    break;
                }
            }
            Err(fault) => {
                cell.fault = Some(fault);
                break;
            }
        }
    }
    if let Some(race) = race {
        count_race_spawns(race, own_spawns == Some(true), spawn_hits.hits, cell);
    }
    Ok(())
}

/// Runs one trial of `arm` in `window`: its result (a trial of a window
/// built on purpose that never opened it is unconfirmed) and whether it
/// spawned its own child. The paths it was handed are removed here.
fn one_trial(
    arm: &Arm,
    window: Window,
    ground: &Ground<'_>,
    cell: &mut Cell,
) -> (Result<bool, Fault>, bool) {
    let mut trial = Trial {
        window,
        scratch: ground.scratch,
        holder: ground.holder,
        tallies: &mut cell.tallies,
        own_spawn: false,
        opened: false,
        copy_waived: arm.no_copy.contains(&window),
        paths: Default::default(),
        socket_dirs: Default::default(),
    };
    let result = match (arm.trial)(&mut trial) {
        // A window built on purpose must have been built: a trial that
        // ran its code with no child holding its descriptors measured
        // nothing (it would read as a miss, and a fix as valid).
        Ok(_) if window.needs_a_holder() && !trial.opened && !trial.own_spawn => {
            Err(Fault::NotConfirmed(NEVER_OPENED.into()))
        }
        result => result,
    };
    let own = trial.own_spawn;
    for path in trial.paths.take() {
        // Most are plain files; a trial may have made a folder; some paths
        // were never created. What is left goes with the scratch folder.
        if std::fs::remove_file(&path).is_err() {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
    (result, own)
}

/// Counts the spawns of a race block that ended: every spawn started while
/// the loop ran is one trial (unless the trials spawned their own children,
/// `own_spawns`), `hits` of them hits; a race that failed faults the cell.
fn count_race_spawns(race: SpawnRace, own_spawns: bool, hits: u64, cell: &mut Cell) {
    match race.stop() {
        Ok(spawns) => {
            if !own_spawns {
                cell.trials = cell.trials.saturating_add(spawns);
                cell.hits = cell.hits.saturating_add(hits.min(spawns));
            }
            *cell
                .tallies
                .entry("race-spawns".into())
                .or_default()
                .entry("total".into())
                .or_default() += spawns;
        }
        Err(e) if cell.fault.is_none() => {
            cell.fault = Some(Fault::Broken(format!("the spawn race failed: {e}")));
        }
        Err(_) => {}
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::harness::{ARM, Context};
    use crate::report::verdict::Outcome;
    use std::io;
    use std::sync::atomic::Ordering;

    pub(in crate::harness) fn ok(_: &mut Trial<'_>) -> Result<bool, Fault> {
        Ok(false)
    }

    /// Every other trial cannot confirm its window.
    pub(in crate::harness) fn flaky(_: &mut Trial<'_>) -> Result<bool, Fault> {
        static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        if CALLS.fetch_add(1, Ordering::Relaxed).is_multiple_of(2) {
            Err(Fault::NotConfirmed("not seen parked".into()))
        } else {
            Ok(true)
        }
    }

    pub(in crate::harness) fn never(_: &mut Trial<'_>) -> Result<bool, Fault> {
        Err(Fault::NotConfirmed("not seen parked".into()))
    }

    pub(in crate::harness) fn hit(_: &mut Trial<'_>) -> Result<bool, Fault> {
        Ok(true)
    }

    pub(in crate::harness) fn settings(trials: u64, thorough: bool) -> Settings {
        Settings {
            trials,
            race: Duration::from_millis(4),
            thorough,
            deadline: None,
            hold_by: HoldBy::Fork,
        }
    }

    pub(in crate::harness) fn probe(arms: &'static [Arm]) -> Probe {
        Probe {
            hazard: "posix-lock-drop",
            about: "",
            trials: 10,
            race: Duration::from_millis(4),
            arms,
            observe: None,
        }
    }

    /// A fix that only the parked-call window covers races where the
    /// interposer is missing: its parked-call cells are unsupported there.
    #[test]
    fn a_fix_covered_only_by_parked_call_races_without_the_interposer() {
        use crate::report::verdict::Window::{ParkedCall, PosixSpawn};
        let std_socket = Arm {
            id: "std-socket",
            role: Role::Mitigation,
            windows: &[PosixSpawn, ParkedCall],
            trial: ok,
            ..ARM
        };
        assert!(covered_with(&std_socket, true));
        assert!(!covered_with(&std_socket, false));
        // This test process runs without the interposer.
        assert!(!covered(&std_socket));
        assert!(races(&probe(&[]), &std_socket, false));
    }

    /// A default run races the controls and the fixes no deterministic
    /// window decides; the others are left out, and say so; a thorough run
    /// races them all.
    #[test]
    fn a_default_run_races_no_covered_mitigation() {
        use crate::report::verdict::Window::{InProcess, PosixSpawn};
        static ARMS: &[Arm] = &[
            Arm {
                id: "c",
                windows: &[InProcess, PosixSpawn],
                trial: ok,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
            Arm {
                id: "covered",
                role: Role::Mitigation,
                windows: &[InProcess, PosixSpawn],
                trial: ok,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
            Arm {
                id: "race-only",
                role: Role::Mitigation,
                windows: &[PosixSpawn],
                trial: ok,
                ..ARM
            },
            Arm {
                id: "race-only-sham",
                role: Role::Sham,
                windows: &[PosixSpawn],
                trial: ok,
                ..ARM
            },
        ];
        let p = probe(ARMS);
        assert!(covered(&ARMS[1]) && !covered(&ARMS[2]));
        let raced: Vec<&str> = ARMS
            .iter()
            .filter(|a| races(&p, a, false))
            .map(|a| a.id)
            .collect();
        assert_eq!(raced, ["c", "race-only", "race-only-sham"]);
        assert!(ARMS.iter().all(|a| races(&p, a, true)));
        let r = run(&p, settings(7, false), &[]).unwrap();
        let in_race: Vec<&str> = r
            .arms
            .iter()
            .filter(|a| a.window == PosixSpawn)
            .map(|a| a.arm.as_str())
            .collect();
        assert_eq!(in_race, ["c", "race-only", "race-only-sham"]);
        assert!(
            r.arms
                .iter()
                .filter(|a| a.window == PosixSpawn && a.role == Role::Mitigation)
                .all(|a| !covered(ARMS.iter().find(|d| d.id == a.arm).unwrap()))
        );
        let left: Vec<(&str, Window)> = r
            .left_out
            .iter()
            .map(|l| (l.arm.as_str(), l.window))
            .collect();
        assert_eq!(left, [("covered", PosixSpawn)]);
        assert!(r.find("covered", InProcess).is_some());
        let thorough = run(&p, settings(7, true), &["covered".into()]).unwrap();
        assert!(thorough.find("covered", PosixSpawn).is_some());
        assert!(thorough.left_out.is_empty());
    }

    /// A deterministic control of all hits stops at 7 trials, and so does a
    /// fix that 7/7 against 0/7 decides; a control that missed runs to the
    /// cap, and its fixes with it.
    #[test]
    fn trial_counted_cells_stop_once_decided() {
        use crate::report::verdict::Window::InProcess;
        static ALL_HITS: &[Arm] = &[
            Arm {
                id: "c",
                windows: &[InProcess],
                trial: hit,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
            Arm {
                id: "m",
                role: Role::Mitigation,
                windows: &[InProcess],
                trial: ok,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
        ];
        let r = run(&probe(ALL_HITS), settings(10, false), &[]).unwrap();
        let count = |r: &ProbeReport, i: usize| r.arms[i].outcome.count().unwrap();
        assert_eq!((count(&r, 0).hits, count(&r, 0).trials), (7, 7));
        assert_eq!((count(&r, 1).hits, count(&r, 1).trials), (0, 7));
        assert_eq!(
            r.judgement(&r.arms[1]).verdict,
            crate::report::verdict::Verdict::Valid
        );
        /// Hits in every other trial.
        fn half(_: &mut Trial<'_>) -> Result<bool, Fault> {
            static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            Ok(CALLS.fetch_add(1, Ordering::Relaxed).is_multiple_of(2))
        }
        static PARTIAL: &[Arm] = &[
            Arm {
                id: "c",
                windows: &[InProcess],
                trial: half,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
            Arm {
                id: "m",
                role: Role::Mitigation,
                windows: &[InProcess],
                trial: ok,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
        ];
        let r = run(&probe(PARTIAL), settings(10, false), &[]).unwrap();
        assert_eq!(count(&r, 0).trials, 10);
        assert_eq!(count(&r, 1).trials, 10);
    }

    /// A statistical fix with 0 hits runs all its trials: a later trial
    /// could still hit, so `valid` after the few trials Fisher needs would
    /// rest on less evidence than the cap asks for; a hit (invalid) stops it.
    #[test]
    fn statistical_fixes_stop_early_only_at_a_hit() {
        use crate::report::verdict::Window::InProcess;
        static ARMS: &[Arm] = &[
            Arm {
                id: "c",
                windows: &[InProcess],
                trial: hit,
                kind: Some(Kind::Statistical),
                ..ARM
            },
            Arm {
                id: "m",
                role: Role::Mitigation,
                windows: &[InProcess],
                trial: ok,
                kind: Some(Kind::Statistical),
                ..ARM
            },
            Arm {
                id: "leaky",
                role: Role::Mitigation,
                windows: &[InProcess],
                trial: hit,
                kind: Some(Kind::Statistical),
                ..ARM
            },
        ];
        let p = Probe {
            hazard: "env-race",
            ..probe(ARMS)
        };
        let r = run(&p, settings(40, false), &[]).unwrap();
        let count = |i: usize| r.arms[i].outcome.count().unwrap();
        assert_eq!((count(0).hits, count(0).trials), (40, 40));
        assert_eq!((count(1).hits, count(1).trials), (0, 40));
        assert_eq!(
            r.judgement(&r.arms[1]).verdict,
            crate::report::verdict::Verdict::Valid
        );
        assert_eq!(count(2).trials, MIN_DETERMINISTIC_TRIALS);
    }

    #[test]
    fn unconfirmed_trials_are_excluded_counted_and_bounded() {
        use crate::report::verdict::Window::InProcess;
        static ARMS: &[Arm] = &[
            Arm {
                id: "c",
                windows: &[InProcess],
                trial: flaky,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
            Arm {
                id: "m",
                role: Role::Mitigation,
                windows: &[InProcess],
                trial: never,
                kind: Some(Kind::Deterministic),
                ..ARM
            },
        ];
        let probe = Probe {
            hazard: "unconfirmed",
            about: "",
            trials: 7,
            race: Duration::from_millis(1),
            arms: ARMS,
            observe: None,
        };
        let settings = Settings {
            trials: 7,
            race: Duration::from_millis(1),
            thorough: false,
            deadline: None,
            hold_by: HoldBy::Fork,
        };
        let r = run(&probe, settings, &[]).unwrap();
        let Outcome::Observed {
            trials,
            hits,
            broken_trials,
            ..
        } = r.arms[0].outcome
        else {
            panic!("{:?}", r.arms[0].outcome)
        };
        assert_eq!((trials, hits), (7, 7));
        assert!((7..=8).contains(&broken_trials), "{broken_trials}");
        // A window that never confirms ends broken, after a bounded number of tries.
        assert_eq!(r.arms[1].outcome.count().map(|c| c.trials), Some(0));
        assert_eq!(r.arms[1].outcome.broken_trials(), 15);
        assert_eq!(
            r.judgement(&r.arms[1]).verdict,
            crate::report::verdict::Verdict::Broken
        );
    }

    /// A fork-window fix whose code never opens the window cannot read
    /// `valid`: its trials are unconfirmed and the cell is broken, while the
    /// control that opens it is measured.
    #[test]
    fn a_trial_that_never_opens_its_window_is_unconfirmed() {
        use crate::report::verdict::Window::ForkWindow;
        fn opens(t: &mut Trial<'_>) -> Result<bool, Fault> {
            let (_r, w) = io::pipe().ctx("pipe")?;
            t.during_window(std::os::fd::AsRawFd::as_raw_fd(&w), || Ok(true))
        }
        static ARMS: &[Arm] = &[
            Arm {
                id: "c",
                windows: &[ForkWindow],
                trial: opens,
                ..ARM
            },
            Arm {
                id: "m",
                role: Role::Mitigation,
                windows: &[ForkWindow],
                // The control's lock, released with no child holding a copy.
                trial: ok,
                ..ARM
            },
        ];
        let r = run(&probe(ARMS), settings(7, false), &[]).unwrap();
        let control = r.find("c", ForkWindow).unwrap();
        assert_eq!(
            control.outcome.count().map(|c| (c.hits, c.trials)),
            Some((7, 7))
        );
        let fix = r.find("m", ForkWindow).unwrap();
        assert_eq!(fix.outcome.count().map(|c| c.trials), Some(0), "{fix:?}");
        assert_eq!(
            r.judgement(fix).verdict,
            crate::report::verdict::Verdict::Broken
        );
        let Outcome::Observed { tallies, .. } = &fix.outcome else {
            panic!("{fix:?}")
        };
        assert!(
            tallies["last-unconfirmed"].contains_key(NEVER_OPENED),
            "{tallies:?}"
        );
    }
}
