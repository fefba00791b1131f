//! The base: safe building blocks over the OS calls ([`sys`](crate::sys))
//! that the fixes, the co-tenant and `fdwindow`'s probes share.
//!
//! Takes in descriptors, paths and programs to run; gives out descriptor
//! flags and locks ([`locks`]), bound and connected sockets ([`sockets`]),
//! children held on purpose between fork and exec or for their whole life
//! ([`child`]), a process holding passed copies ([`holder`]), process-unique scratch folders ([`scratch`]), errno names
//! with their meaning for a probe ([`errno`]) and the interrupt flag
//! ([`interrupts`]). Nothing here knows about hazards, arms, reports or
//! results.

pub mod child;
pub mod errno;
pub mod holder;
pub mod interrupts;
pub mod locks;
pub mod scratch;
pub mod sockets;
