//! The tallies a cell may carry that more than the harness reads, by name:
//! the harness writes them, the claims checker and the timing view look
//! them up in the report.

/// Whether a fork-window or inherited trial's child (or holder) held the
/// trial's own descriptor, once per trial that opened its window or asked
/// its own child: [`COPY_HELD`] or [`COPY_NONE`].
pub const COPY_TALLY: &str = "child-copy";

/// [`COPY_TALLY`]'s value when the child held the same open file.
pub const COPY_HELD: &str = "held";

/// [`COPY_TALLY`]'s value when it did not.
pub const COPY_NONE: &str = "none";

/// A cell's own time, in milliseconds (`total`): where a run spends its
/// time, per arm and window.
pub const TIME_TALLY: &str = "time-ms";
