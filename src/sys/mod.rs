//! Everything that differs between operating systems, one file per OS chosen
//! here and nowhere else. Callers detect features at run time: a constant being
//! defined here says the OS may have the call, not that this kernel does.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::*;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub(crate) use macos::*;

// Other Unixes compile; their probes report `unsupported` where a call is missing.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod other;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(crate) use other::*;
