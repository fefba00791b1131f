//! The base of the `fdwindow` command: the one writer of stdout and stderr
//! ([`out`]). The building blocks below it (descriptors, locks, sockets,
//! held children, scratch names, the interrupt flag) are the
//! `fdwindow-fix` crate's `base`.

pub mod out;
