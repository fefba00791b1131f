//! The audit's progress on stderr: on a terminal one line rewritten in place
//! (`indicatif`) with each finished step printed above it; otherwise one line
//! per step and an update at most every [`EVERY`]. The lines go through
//! the writer (`fdwindow::base::out`): a closed stderr (`2>&1 | head -2`)
//! stops the audit as Ctrl-C does (the report of what ran, exit 141), a full
//! one loses the progress and makes the exit status 1, never a panic.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often a plain (non-terminal) stderr gets an update line.
const EVERY: Duration = Duration::from_secs(5);

/// Progress for one audit.
pub struct Progress {
    bar: Option<ProgressBar>,
    last: Instant,
}

impl Progress {
    /// A bar on a terminal, plain lines elsewhere.
    pub fn new() -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed}] {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            last: Instant::now(),
        }
    }

    /// A finished step: printed and kept.
    pub fn step(&mut self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => line(text),
        }
        self.last = Instant::now();
    }

    /// The state of the step in progress: rewritten in place, or a line at
    /// most every [`EVERY`].
    pub fn update(&mut self, text: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(text.to_owned()),
            None if self.last.elapsed() >= EVERY => {
                line(text);
                self.last = Instant::now();
            }
            None => {}
        }
    }

    /// Clears the bar.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// One line on stderr, through the writer.
pub fn line(text: &str) {
    fdwindow::note!("{text}");
}
