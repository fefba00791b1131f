//! The base: safe building blocks over the OS calls (`sys`) that the fixes, the
//! probes and the co-tenant share.
//!
//! Takes in descriptors, paths and programs to run; gives out descriptor
//! flags and locks ([`locks`]), bound and connected sockets ([`sockets`]),
//! children held on purpose between fork and exec or for their whole life
//! ([`child`]), process-unique scratch folders ([`scratch`]), errno names
//! with their meaning for a probe ([`errno`]), the interrupt flag
//! ([`interrupts`]) and the one writer of stdout and stderr ([`out`]).
//! Nothing here knows about hazards, arms, reports or results.

pub mod child;
pub mod errno;
pub mod interrupts;
pub mod locks;
pub mod out;
pub mod scratch;
pub mod sockets;
