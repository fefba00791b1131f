//! The releases a claim holds for: a kernel, C library or OS release range,
//! and the platform's release of each, compared part by part.

use std::fmt;

use crate::report::platform::Platform;

/// A release number, compared part by part: `6.13` < `6.13.2` < `6.14`.
pub type Version = (u32, u32, u32);

/// What a claim's release range is measured on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// The kernel's upstream version (not a distribution's ABI name).
    Kernel,
    /// The C library's version.
    Libc,
    /// The OS's product release (macOS 13.3), for what ships with the OS
    /// and has no version of its own to read (macOS's Libc in libSystem).
    Os,
}

/// The releases a claim holds for: `since` inclusive, `until` exclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    /// Kernel or libc.
    pub of: Component,
    /// The first release it holds for.
    pub since: Option<Version>,
    /// The first release it no longer holds for.
    pub until: Option<Version>,
}

impl Range {
    /// Whether `platform`'s release is in the range; an unknown release is in none.
    pub fn contains(&self, platform: &Platform) -> bool {
        let version = match self.of {
            Component::Kernel => kernel_upstream(platform),
            Component::Libc => libc_version(platform),
            Component::Os => parse_version(&platform.os_release),
        };
        version
            .is_some_and(|v| self.since.is_none_or(|s| v >= s) && self.until.is_none_or(|u| v < u))
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let of = match self.of {
            Component::Kernel => "kernel",
            Component::Libc => "libc",
            Component::Os => "OS release",
        };
        let v = |v: Version| format!("{}.{}.{}", v.0, v.1, v.2);
        match (self.since, self.until) {
            (Some(s), Some(u)) => write!(f, "{of} {} to before {}", v(s), v(u)),
            (Some(s), None) => write!(f, "{of} {} and later", v(s)),
            (None, Some(u)) => write!(f, "{of} before {}", v(u)),
            (None, None) => write!(f, "every {of}"),
        }
    }
}

/// The leading `major.minor.patch` of a release string (`6.1.0-55-cloud-amd64` is 6.1.0).
pub fn parse_version(text: &str) -> Option<Version> {
    let mut parts = text
        .split(|c: char| !c.is_ascii_digit())
        .take_while(|p| !p.is_empty())
        .map(|p| p.parse::<u32>().ok());
    let major = parts.next()??;
    let minor = parts.next().flatten().unwrap_or(0);
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

/// The kernel's upstream version. Today from uname's release; where a
/// distribution's release is an ABI name (Debian's `6.1.0-55`, upstream
/// 6.1.1xx in `uname -v`), the platform record's upstream field takes over
/// once it has one.
pub fn kernel_upstream(platform: &Platform) -> Option<Version> {
    parse_version(&platform.kernel_release)
}

/// The C library's version, when the platform record has one.
pub fn libc_version(platform: &Platform) -> Option<Version> {
    parse_version(&platform.libc_version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_ranges() {
        assert_eq!(parse_version("6.1.0-55-cloud-amd64"), Some((6, 1, 0)));
        assert_eq!(parse_version("6.13"), Some((6, 13, 0)));
        assert_eq!(parse_version("2.41"), Some((2, 41, 0)));
        assert_eq!(parse_version(""), None);
        let mut p = Platform::detect();
        let r = Range {
            of: Component::Kernel,
            since: Some((6, 11, 0)),
            until: Some((6, 13, 0)),
        };
        for (release, inside) in [
            ("6.10.9", false),
            ("6.11.0-1-amd64", true),
            ("6.12.30", true),
            ("6.13.0", false),
        ] {
            p.kernel_release = release.into();
            assert_eq!(r.contains(&p), inside, "{release}");
        }
        p.kernel_release = "unknown".into();
        assert!(!r.contains(&p));
        p.libc_version = "2.41".into();
        let libc = Range {
            of: Component::Libc,
            since: None,
            until: Some((2, 41, 0)),
        };
        assert!(!libc.contains(&p));
        p.libc_version = "2.36".into();
        assert!(libc.contains(&p));
        p.os_release = "13.3.1".into();
        let os = Range {
            of: Component::Os,
            since: Some((13, 3, 0)),
            until: None,
        };
        assert!(os.contains(&p));
        p.os_release = "13.2".into();
        assert!(!os.contains(&p));
    }
}
