//! Undoing macOS's version-compatibility answers: pure, so it is tested on
//! every OS (the only caller is the macOS file).
//!
//! When Apple changes its version scheme, a binary linked against an older
//! SDK is told the "next" version of the old scheme: 10.16 on macOS 11, 16.0
//! on macOS 26. The kernel's own release (Darwin) is never shimmed, so it
//! says which one this really is.
//!
//! # References
//! - xnu `bsd/kern/kern_sysctl.c` (`sysctl_osproductversion`,
//!   `osproductversioncompat`: "The ProductVersion from SystemVersionCompat.plist")
//! - dotnet/runtime#116536 (16 → 26 on macOS Tahoe); osquery/osquery#6840 (10.16 on Big Sur)
//! - python/cpython#136339 (`platform.mac_ver()` and `SYSTEM_VERSION_COMPAT`)

/// The product version to record, given what `kern.osproductversion`
/// answered and the Darwin major (`kern.osrelease`). A known compatibility
/// answer becomes the real major alone (its minor is not recoverable);
/// anything else is returned as it came.
#[cfg_attr(
    all(not(target_os = "macos"), not(test)),
    expect(dead_code, reason = "called only on macOS; tested everywhere")
)]
pub fn product_version(reported: &str, darwin_major: Option<u32>) -> String {
    let mut parts = reported.split('.');
    let (major, minor) = (parts.next(), parts.next());
    match (major, minor, darwin_major) {
        // Big Sur to Sequoia (Darwin 20–24) are macOS 11–15.
        (Some("10"), Some("16"), Some(d @ 20..=24)) => (d - 9).to_string(),
        // Tahoe (Darwin 25) is macOS 26.
        (Some("16"), _, Some(25)) => "26".to_owned(),
        _ => reported.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::product_version;

    #[test]
    fn compatibility_answers_map_to_the_real_major() {
        assert_eq!(product_version("16.0", Some(25)), "26");
        assert_eq!(product_version("10.16", Some(20)), "11");
        assert_eq!(product_version("10.16", Some(24)), "15");
    }

    #[test]
    fn real_answers_pass_through() {
        assert_eq!(product_version("26.1", Some(25)), "26.1");
        assert_eq!(product_version("15.3.1", Some(24)), "15.3.1");
        // 10.16 on a Darwin older than 20 is not a compatibility answer.
        assert_eq!(product_version("10.16", Some(19)), "10.16");
        assert_eq!(product_version("16.0", None), "16.0");
        assert_eq!(product_version("", Some(25)), "");
    }
}
