//! Before the screen: the timing run, and the seed of the pairs' coin.

use std::time::Instant;

use fdwindow_fix::base::interrupts;

use super::model::TestCase;
use super::progress::Progress;
use super::runner::Runner;
use crate::cli::discover::Binary;
use fdwindow::error::Result;

/// The timing run: each binary once, alone, with libtest's `--report-time`
/// (an unstable option, so `RUSTC_BOOTSTRAP=1` for that run only), for
/// each test's run time in the JUnit report. A binary that refuses the
/// option gives no times; nothing else is read from this run.
pub(super) fn timing(
    runner: &mut Runner,
    binaries: &[Binary],
    tests: &mut [TestCase],
    progress: &mut Progress,
) -> Result<(f64, Vec<f64>)> {
    let started = Instant::now();
    let mut each = vec![0.0; binaries.len()];
    progress.update("timing run: each binary once, alone");
    for (b, bin) in binaries.iter().enumerate() {
        if interrupts::interrupted() {
            break;
        }
        // The binary's tests, in its order.
        let mine: Vec<usize> = (0..tests.len()).filter(|&t| tests[t].binary == b).collect();
        let bin_started = Instant::now();
        let runs = bin.runs();
        let args: Vec<Vec<String>> = runs
            .iter()
            .map(|(args, _)| {
                [
                    &["-Zunstable-options".into(), "--report-time".into()][..],
                    args,
                ]
                .concat()
            })
            .collect();
        let results = runner.run_all(bin, &args, None, "timing", true)?;
        for ((_, only), run) in runs.iter().zip(results) {
            let timed = match *only {
                Some(i) => std::slice::from_ref(&mine[i]),
                None => &mine[..],
            };
            for &t in timed {
                tests[t].time = run.parsed.times.get(&tests[t].name).copied();
            }
        }
        each[b] = bin_started.elapsed().as_secs_f64();
    }
    Ok((started.elapsed().as_secs_f64(), each))
}

/// A seed from the clock, for the coins that order pairs.
pub(super) fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
