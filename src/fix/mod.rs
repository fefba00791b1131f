//! Fix helpers that the matrix shows valid, ready for users' tests.

pub mod scratch;
