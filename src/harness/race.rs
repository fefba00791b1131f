//! The race windows' scheduling: which cells race another round, the
//! rounds themselves (interleaved blocks, so load drift falls on every arm
//! alike), and which spawns a hit marks.

use std::time::Instant;

use crate::report::platform::Platform;
use crate::report::verdict::{Role, Verdict};

use super::cell::{Cells, judge_now};
use super::declare::Probe;
use super::declare::control_for;

/// Which of a race window's cells (`window`) race another round after
/// `rounds` rounds: a control for a default run's [`RACE_BLOCKS`] rounds,
/// and after that while any arm judged against it is undecided; a sham while
/// the report's judgement has not decided it (its verdict rests on its own
/// count alone); a mitigation while undecided, and also in every round its
/// control races unless a hit has made it `invalid` (or it `avoids`): a
/// verdict that rests on the control's count (`valid`, `not-needed`) must
/// rest on blocks the fix shared, so load drift in rounds it sat out cannot
/// decide it (DESIGN.md: interleaved blocks). A faulted cell stops.
pub(super) fn still_racing(
    probe: &Probe,
    cells: &Cells<'_>,
    window: &[usize],
    rounds: u32,
    platform: &Platform,
) -> Vec<usize> {
    let verdicts: Vec<(usize, Verdict)> = window
        .iter()
        .copied()
        .filter(|&i| cells[i].2.fault.is_none() && cells[i].0.role != Role::Control)
        .map(|i| (i, judge_now(probe, cells, i, platform).verdict))
        .collect();
    let verdict_of = |i: usize| verdicts.iter().find(|&&(j, _)| j == i).map(|&(_, v)| v);
    let against = |i: usize| control_for(probe, cells[i].0, cells[i].1);
    let racing_controls: Vec<&str> = window
        .iter()
        .copied()
        .filter(|&i| {
            let (arm, _, cell) = &cells[i];
            arm.role == Role::Control
                && cell.fault.is_none()
                && (rounds < RACE_BLOCKS
                    || verdicts
                        .iter()
                        .any(|&(j, v)| !v.is_decided() && against(j) == Some(arm.id)))
        })
        .map(|i| cells[i].0.id)
        .collect();
    window
        .iter()
        .copied()
        .filter(|&i| {
            let (arm, _, cell) = &cells[i];
            if cell.fault.is_some() {
                return false;
            }
            match (arm.role, verdict_of(i)) {
                (Role::Control, _) => racing_controls.contains(&arm.id),
                (Role::Sham, Some(v)) => !v.is_decided(),
                (Role::Mitigation, Some(v)) => {
                    !v.is_decided()
                        || (!matches!(v, Verdict::Invalid | Verdict::Avoids)
                            && against(i).is_some_and(|c| racing_controls.contains(&c)))
                }
                (Role::Sham | Role::Mitigation, None) => false,
            }
        })
        .collect()
}

/// Runs a race window's cells (`window`) in interleaved rounds, one block
/// of each racing cell per round in declaration order, so control and
/// mitigations share the machine's conditions; after each round `keep`
/// says which of the window's cells race the next. Stops when none does,
/// after `max_rounds` (the per-arm budget), or once `deadline` has passed.
/// Returns the rounds run.
pub(super) fn race_rounds<E>(
    window: Vec<usize>,
    max_rounds: u32,
    deadline: Option<Instant>,
    mut block: impl FnMut(usize) -> Result<(), E>,
    mut keep: impl FnMut(&[usize], u32) -> Vec<usize>,
) -> Result<u32, E> {
    let mut active = window.clone();
    let mut rounds = 0;
    while !active.is_empty() && rounds < max_rounds && deadline.is_none_or(|d| Instant::now() < d) {
        for &i in &active {
            block(i)?;
        }
        rounds += 1;
        active = keep(&window, rounds);
    }
    Ok(rounds)
}

/// Which spawns of the race a hit marks: those in progress when the trial
/// ended (else the latest), numbered from 1 in start order.
#[derive(Debug, Default)]
pub(super) struct SpawnHits {
    /// The highest spawn number already counted as a hit.
    pub(super) last_hit: u64,
    pub(super) hits: u64,
}

impl SpawnHits {
    /// Marks spawns `first..=last` (clipped to those started in this block,
    /// `1..=started`) as hits, counting each spawn once.
    pub(super) fn mark(&mut self, first: u64, last: u64, started: u64) {
        let last = last.min(started);
        let first = first.max(self.last_hit + 1).max(1);
        if first <= last {
            self.hits += last - first + 1;
            self.last_hit = last;
        }
    }
}

/// How many interleaved blocks (rounds) a race window's arms run in by
/// default: every control races this many, and no arm more in a default run.
pub const RACE_BLOCKS: u32 = 4;

/// The most rounds a thorough run gives one arm in a race window (its
/// budget: 16 times a default run's time per arm), when the Fisher rule has
/// not decided it sooner.
pub const THOROUGH_RACE_ROUNDS: u32 = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::cell::Cell;
    use crate::harness::declare::{ARM, Arm};
    use crate::harness::schedule::tests::{ok, probe};
    use crate::report::verdict::Window;

    #[test]
    fn a_hit_marks_each_overlapping_spawn_once() {
        let mut h = SpawnHits::default();
        h.mark(1, 1, 1);
        h.mark(1, 2, 2); // spawn 1 again, and spawn 2
        h.mark(3, 5, 4); // clipped to the spawns started
        assert_eq!(h.hits, 4);
        h.mark(2, 2, 9); // already counted
        assert_eq!(h.hits, 4);
    }

    /// Cells of a race window with set counts, for the stopping rule.
    fn race_cells(arms: &'static [Arm], counts: &[(u64, u64)]) -> Cells<'static> {
        arms.iter()
            .zip(counts)
            .map(|(arm, &(hits, trials))| {
                let cell = Cell {
                    hits,
                    trials,
                    iterations: trials,
                    ..Cell::default()
                };
                (arm, Window::PosixSpawn, cell)
            })
            .collect()
    }

    static RACE: &[Arm] = &[
        Arm {
            id: "c",
            windows: &[Window::PosixSpawn],
            trial: ok,
            ..ARM
        },
        Arm {
            id: "m",
            role: Role::Mitigation,
            windows: &[Window::PosixSpawn],
            trial: ok,
            ..ARM
        },
        Arm {
            id: "n",
            role: Role::Mitigation,
            windows: &[Window::PosixSpawn],
            trial: ok,
            ..ARM
        },
    ];

    /// Each round adds `per_round` (hits, trials) to each raced cell; the
    /// rounds run through [`race_rounds`] and [`still_racing`], the run's own
    /// scheduler and stopping rule. Returns each cell's rounds.
    fn race(per_round: [(u64, u64); 3], max_rounds: u32) -> (Vec<u32>, u32) {
        race_with(|i, _| per_round[i], max_rounds).0
    }

    /// [`race`] with the counts of cell `i`'s block in round `r` (from 0)
    /// given by `per_round(i, r)`; also returns the final cells.
    fn race_with(
        per_round: impl Fn(usize, u32) -> (u64, u64),
        max_rounds: u32,
    ) -> ((Vec<u32>, u32), Cells<'static>) {
        let p = probe(RACE);
        let platform = Platform::detect();
        let cells = std::cell::RefCell::new(race_cells(RACE, &[(0, 0); 3]));
        let mut blocks = vec![0u32; 3];
        let rounds = race_rounds(
            vec![0, 1, 2],
            max_rounds,
            None,
            |i| {
                let (hits, trials) = per_round(i, blocks[i]);
                let cell = &mut cells.borrow_mut()[i].2;
                cell.hits += hits;
                cell.trials += trials;
                blocks[i] += 1;
                Ok::<(), ()>(())
            },
            |window, rounds| still_racing(&p, &cells.borrow(), window, rounds, &platform),
        )
        .unwrap();
        ((blocks, rounds), cells.into_inner())
    }

    /// A fix decided early races again when its control's later rounds undo
    /// the decision, so the verdict the report shows holds on final counts.
    #[test]
    fn a_fix_whose_verdict_the_control_undoes_races_again() {
        // The control hits 10 of 10 in its first round and never again; `n`
        // is valid after one round, then not, as the control's rate falls.
        let ((blocks, rounds), cells) = race_with(
            |i, r| match (i, r) {
                (0, 0) => (10, 10),
                (1, _) => (1, 10),
                _ => (0, 10),
            },
            THOROUGH_RACE_ROUNDS,
        );
        assert!(blocks[2] > 1, "{blocks:?}");
        // The control raced every round that `n` did.
        assert!(blocks[0] >= blocks[2].max(RACE_BLOCKS), "{blocks:?}");
        let p = probe(RACE);
        let decided = judge_now(&p, &cells, 2, &Platform::detect())
            .verdict
            .is_decided();
        assert!(decided || rounds == THOROUGH_RACE_ROUNDS, "{blocks:?}");
    }

    #[test]
    fn adaptive_races_stop_decided_arms_and_keep_the_control_for_undecided_ones() {
        // A hit decides `m` invalid after one round; `n` (0 of 10 a round
        // against 10 of 10) is valid after one round too; the control still
        // measures its rate for a default run's rounds, then stops.
        // `n`'s verdict rests on the control's count, so it shares every
        // block the control races; `m`'s hit decides it alone.
        let (blocks, rounds) = race([(10, 10), (1, 10), (0, 10)], THOROUGH_RACE_ROUNDS);
        assert_eq!(blocks, [RACE_BLOCKS, 1, RACE_BLOCKS]);
        assert_eq!(rounds, RACE_BLOCKS);
        // A rare control: 1 hit in 100 a round. `m` hits and stops at once;
        // `n` needs about 10 control hits for p <= 0.001, so the control
        // races on with it past the default's rounds until it is decided.
        let (blocks, _) = race([(1, 100), (1, 100), (0, 100)], THOROUGH_RACE_ROUNDS);
        assert_eq!(blocks[1], 1);
        assert!(blocks[2] > RACE_BLOCKS, "{blocks:?}");
        assert!(blocks[2] < THOROUGH_RACE_ROUNDS, "{blocks:?}");
        assert_eq!(blocks[0], blocks[2]);
        let p = probe(RACE);
        let cells = race_cells(
            RACE,
            &[
                (u64::from(blocks[2]), 100 * u64::from(blocks[2])),
                (0, 0),
                (0, 100 * u64::from(blocks[2])),
            ],
        );
        let platform = Platform::detect();
        assert!(judge_now(&p, &cells, 2, &platform).verdict.is_decided());
        let earlier = race_cells(
            RACE,
            &[
                (u64::from(blocks[2]) - 1, 100 * (u64::from(blocks[2]) - 1)),
                (0, 0),
                (0, 100 * (u64::from(blocks[2]) - 1)),
            ],
        );
        assert!(!judge_now(&p, &earlier, 2, &platform).verdict.is_decided());
    }

    /// A fix judged against its control's count races every block the
    /// control races: a fix stopped as `not-needed` while the control missed
    /// must not turn `valid` on hits from rounds it sat out (load drift).
    #[test]
    fn a_fix_shares_every_block_its_verdict_rests_on() {
        // The control misses its first 400 spawns (absent: `n` is
        // not-needed), then hits 20 of 400 a round; `n` never hits.
        let ((blocks, _), cells) = race_with(
            |i, r| match (i, r) {
                (0, 0) => (0, 400),
                (0, _) => (20, 400),
                (1, _) => (1, 400),
                _ => (0, 400),
            },
            THOROUGH_RACE_ROUNDS,
        );
        assert_eq!(blocks[1], 1, "{blocks:?}");
        assert_eq!(blocks[2], blocks[0], "{blocks:?}");
        let count = |i: usize| (cells[i].2.hits, cells[i].2.trials);
        assert_eq!(count(2).1, count(0).1, "{blocks:?}");
    }

    #[test]
    fn adaptive_races_respect_the_budget() {
        // A control that never hits decides nothing: every arm races to the
        // budget and no further.
        let (blocks, rounds) = race([(0, 10), (0, 10), (0, 10)], 9);
        assert_eq!(blocks, [9, 9, 9]);
        assert_eq!(rounds, 9);
        // A default run's budget is its rounds.
        let (blocks, _) = race([(0, 10), (0, 10), (0, 10)], RACE_BLOCKS);
        assert_eq!(blocks, [RACE_BLOCKS; 3]);
        // A deadline already passed starts no round.
        let rounds = race_rounds(
            vec![0],
            9,
            Some(Instant::now()),
            |_| Ok::<(), ()>(()),
            |a, _| a.to_vec(),
        )
        .unwrap();
        assert_eq!(rounds, 0);
    }
}
