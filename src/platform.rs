//! Platform detection: what every result carries so that a verdict is never
//! separated from the machine that produced it.
//!
//! Detection happens at run time, never from compile-time guesses: a binary
//! built on one kernel may run on another (LTP's ground rules).

use serde::{Deserialize, Serialize};

use crate::sys as os;

/// The machine a result was measured on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    /// Stable id, also the results file's name: os, release, arch, libc.
    pub id: String,
    /// `linux`, `macos`, or uname's sysname in lower case.
    pub os: String,
    /// The distribution or product version (`Debian GNU/Linux 12 (bookworm)`, `15.3`).
    pub os_release: String,
    /// uname's release: the kernel, whose behaviour the probes measure.
    pub kernel_release: String,
    /// uname's machine, normalised to Rust's names (`x86_64`, `aarch64`).
    pub arch: String,
    /// The C library (`glibc`, `musl`, `libSystem`).
    pub libc: String,
    /// Its version where it can be read at run time, else empty.
    pub libc_version: String,
    /// CPUs this process may run on.
    pub cpus: u32,
}

impl Platform {
    /// Detects the platform this process runs on.
    pub fn detect() -> Platform {
        let uts = uname();
        let (libc, libc_version) = os::libc_name_version();
        let os = os::OS_ID.map_or_else(|| uts.sysname.to_lowercase(), str::to_owned);
        let os_release = os::os_release().unwrap_or_default();
        let arch = match uts.machine.as_str() {
            "arm64" => "aarch64".to_owned(),
            "amd64" => "x86_64".to_owned(),
            m => m.to_owned(),
        };
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        let version_part = os::id_version(&os_release, &uts.release);
        let id = format!("{os}-{version_part}-{arch}-{libc}{libc_version}");
        Platform {
            id,
            os,
            os_release,
            kernel_release: uts.release,
            arch,
            libc,
            libc_version,
            cpus,
        }
    }
}

struct Uname {
    sysname: String,
    release: String,
    machine: String,
}

/// `uname(2)`—Get name and information about the current kernel (through
/// rustix, which cannot fail).
fn uname() -> Uname {
    let uts = rustix::system::uname();
    let field = |f: &std::ffi::CStr| f.to_string_lossy().into_owned();
    Uname {
        sysname: field(uts.sysname()),
        release: field(uts.release()),
        machine: field(uts.machine()),
    }
}

/// The first two dot-separated parts of a version (`6.1.0-13-amd64` → `6.1`).
pub(crate) fn major_minor(version: &str) -> String {
    let digits: Vec<&str> = version
        .split(['.', '-', ' '])
        .take_while(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        .take(2)
        .collect();
    if digits.is_empty() {
        "unknown".into()
    } else {
        digits.join(".")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_something_plausible() {
        let p = Platform::detect();
        assert!(
            !p.os.is_empty() && !p.kernel_release.is_empty() && p.cpus >= 1,
            "{p:?}"
        );
        assert!(p.id.starts_with(&p.os), "{p:?}");
        assert!(
            p.id.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)),
            "{}",
            p.id
        );
    }

    #[test]
    fn major_minor_takes_leading_numbers() {
        assert_eq!(major_minor("6.1.0-13-amd64"), "6.1");
        assert_eq!(major_minor("15.3"), "15.3");
        assert_eq!(major_minor("26"), "26");
        assert_eq!(major_minor("weird"), "unknown");
    }
}
