//! Views: what people read, rendered from the [`evidence`](crate::evidence).
//!
//! Takes in results files, costs and the reported facts, and asks every
//! question of them through [`evidence::query`](crate::evidence::query);
//! gives out text: the platform matrix (`results/MATRIX.md`, [`matrix`]),
//! the spawn-window chart (an SVG, [`chart`]), a review comment for one
//! hazard ([`advise`]) and the README's generated sections ([`readme`]).
//! No view imports another: a fact two views show comes from one query.

/// The spawn-window chart's file name, beside MATRIX.md: the chart writes
/// it, the matrix links to it, the runner puts it in the results folder.
pub const SPAWN_WINDOW_SVG: &str = "spawn-window.svg";

pub mod advise;
pub mod chart;
pub mod matrix;
pub mod readme;
