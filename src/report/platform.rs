//! Platform detection: what every result carries so that a verdict is never
//! separated from the machine that produced it.
//!
//! Detection happens at run time, never from compile-time guesses: a binary
//! built on one kernel may run on another (LTP's ground rules).
//!
//! The platform id names everything that can change a measurement: the full
//! kernel release with its build flavour (`6.1.0-55-cloud-amd64` and
//! `6.1.0-55-rt-amd64` are two platforms; so are `6.11.10` and `6.11.11`,
//! since the ETXTBSY check was reverted in a point release), the upstream
//! version where the release is a distribution's ABI name, the arch, the C
//! library and its version, and the virtualization. A TCG guest of this
//! machine's kernel gets its own id, since its races and clocks measure the
//! emulator. It stays a plain file name: any other byte becomes `_`.
//!
//! # Virtualization
//!
//! One of `bare`, `hypervisor` (some hypervisor, of unknown kind),
//! `kvm-guest` or `tcg`, decided in this order:
//! 1. `fdwindow.accel=kvm` or `fdwindow.accel=tcg` on the kernel command line
//!    (`/proc/cmdline`). `fdwindow vm` puts it there when it boots a guest,
//!    since QEMU's TCG can present any CPUID; when present it is authoritative.
//! 2. On x86_64, the hypervisor's CPUID signature at leaf `0x40000000`
//!    (`KVMKVMKVM` for KVM, `TCGTCGTCGTCG` for QEMU's TCG), read only when
//!    CPUID leaf 1 sets the hypervisor-present bit (ECX bit 31).
//! 3. The OS's own word that a hypervisor is present (Linux's `hypervisor`
//!    cpu flag in `/proc/cpuinfo`, macOS's `kern.hv_vmm_present`).
//! 4. Otherwise `bare`.
//!
//! # References
//! - <https://man7.org/linux/man-pages/man2/uname.2.html>
//! - <https://docs.kernel.org/virt/kvm/x86/cpuid.html> (the KVM signature at 0x40000000)
//! - <https://gitlab.com/qemu-project/qemu/-/blob/master/target/i386/cpu.c> (TCG's `TCGTCGTCGTCG`)

use serde::{Deserialize, Serialize};

use fdwindow_fix::sys as os;

/// The machine a result was measured on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    /// Stable id, also the results file's name; see [`Platform::make_id`].
    pub id: String,
    /// `linux`, `macos`, or uname's sysname in lower case.
    pub os: String,
    /// The distribution or product version (`Debian GNU/Linux 12 (bookworm)`, `15.3`).
    pub os_release: String,
    /// uname's release: the kernel, whose behaviour the probes measure.
    pub kernel_release: String,
    /// uname's version (`#1 SMP PREEMPT_DYNAMIC Debian 6.1.158-1 (2025-11-09)`).
    pub kernel_version: String,
    /// The upstream kernel version when the release is a distribution's ABI
    /// name (Debian's `6.1.0-55-amd64` is upstream `6.1.158`), else empty.
    pub upstream_version: String,
    /// uname's machine, normalised to Rust's names (`x86_64`, `aarch64`).
    pub arch: String,
    /// The C library (`glibc`, `musl`, `libSystem`).
    pub libc: String,
    /// Its version where it can be read at run time, else empty.
    pub libc_version: String,
    /// CPUs this process may run on.
    pub cpus: u32,
    /// Bare metal, a guest, or an emulator.
    pub virtualization: Virtualization,
}

/// What the probes ran on: the hardware, or something in between.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Virtualization {
    /// No hypervisor seen.
    Bare,
    /// A hypervisor of unknown kind (a cloud VM, a microVM).
    Hypervisor,
    /// A KVM guest: the guest's kernel on real CPUs.
    KvmGuest,
    /// QEMU's TCG: every instruction emulated, so races and clocks measure the emulator.
    Tcg,
}

impl Virtualization {
    /// The id used in platform ids and reports.
    pub fn id(self) -> &'static str {
        match self {
            Virtualization::Bare => "bare",
            Virtualization::Hypervisor => "hypervisor",
            Virtualization::KvmGuest => "kvm-guest",
            Virtualization::Tcg => "tcg",
        }
    }
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
        let upstream_version = upstream_version(&uts.release, &uts.version);
        let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
        let virtualization = classify_virtualization(
            accel_word(&cmdline),
            cpuid_signature().as_deref(),
            os::hypervisor_present(),
        );
        let version_part = os::id_version(&os_release, &uts.release);
        let id = Platform::make_id(
            &os,
            &version_part,
            &upstream_version,
            &arch,
            &libc,
            &libc_version,
            virtualization,
        );
        Platform {
            id,
            os,
            os_release,
            kernel_release: uts.release,
            kernel_version: uts.version,
            upstream_version,
            arch,
            libc,
            libc_version,
            cpus,
            virtualization,
        }
    }

    /// `<os>-<release>[-up<upstream>]-<arch>-<libc><version>-<virtualization>`,
    /// e.g. `linux-6.18.44-fc-x86_64-glibc2.36-hypervisor`, with every byte
    /// that is not a letter, digit, `.`, `_` or `-` replaced by `_`.
    pub fn make_id(
        os: &str,
        release: &str,
        upstream: &str,
        arch: &str,
        libc: &str,
        libc_version: &str,
        virtualization: Virtualization,
    ) -> String {
        let upstream = if upstream.is_empty() {
            String::new()
        } else {
            format!("-up{upstream}")
        };
        let raw = format!(
            "{os}-{release}{upstream}-{arch}-{libc}{libc_version}-{}",
            virtualization.id()
        );
        let plain: String = raw
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        // A leading dot would hide the file; os ids never start with one, but
        // uname's sysname is free text.
        plain.trim_start_matches('.').to_owned()
    }

    /// The kernel version that release ranges are matched against: the
    /// upstream version where the release is an ABI name, else the release.
    pub fn kernel_upstream(&self) -> &str {
        if self.upstream_version.is_empty() {
            &self.kernel_release
        } else {
            &self.upstream_version
        }
    }

    /// Whether statistical and timed measurements here measure an emulator.
    pub fn emulated(&self) -> bool {
        self.virtualization == Virtualization::Tcg
    }
}

/// The parameter `fdwindow vm` puts on a guest's kernel command line, naming
/// the accelerator QEMU runs it under (see `src/vm/qemu.rs`).
pub const ACCEL_PARAM: &str = "fdwindow.accel";

/// The word `fdwindow.accel=kvm|tcg` on a kernel command line, if any.
pub fn accel_word(cmdline: &str) -> Option<Virtualization> {
    cmdline
        .split_ascii_whitespace()
        .rev()
        .find_map(|w| w.strip_prefix(ACCEL_PARAM)?.strip_prefix('='))
        .and_then(|v| match v {
            "kvm" => Some(Virtualization::KvmGuest),
            "tcg" => Some(Virtualization::Tcg),
            _ => None,
        })
}

/// Decides the virtualization from what was seen, in the order the module
/// doc gives: the command-line word, the CPUID signature, the OS's flag.
pub fn classify_virtualization(
    accel: Option<Virtualization>,
    cpuid_signature: Option<&str>,
    hypervisor_flag: bool,
) -> Virtualization {
    if let Some(v) = accel {
        return v;
    }
    match cpuid_signature {
        Some(s) if s.starts_with("KVMKVMKVM") => Virtualization::KvmGuest,
        Some(s) if s.starts_with("TCGTCGTCGTCG") => Virtualization::Tcg,
        Some(_) => Virtualization::Hypervisor,
        None if hypervisor_flag => Virtualization::Hypervisor,
        None => Virtualization::Bare,
    }
}

/// The hypervisor's 12-byte CPUID signature (leaf `0x40000000`, EBX ECX
/// EDX), when CPUID leaf 1 says a hypervisor is present.
///
/// # References
/// - <https://docs.kernel.org/virt/kvm/x86/cpuid.html>
#[cfg(target_arch = "x86_64")]
fn cpuid_signature() -> Option<String> {
    use std::arch::x86_64::__cpuid;
    // Bit 31 of ECX in leaf 1 is reserved for hypervisors on real CPUs; only
    // when it is set does leaf 0x40000000 hold a signature rather than
    // whatever the highest basic leaf returns.
    if __cpuid(1).ecx & (1 << 31) == 0 {
        return None;
    }
    let r = __cpuid(0x4000_0000);
    let bytes: Vec<u8> = [r.ebx, r.ecx, r.edx]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let text: String = bytes
        .iter()
        .take_while(|&&b| b != 0)
        .map(|&b| if b.is_ascii_graphic() { b as char } else { '?' })
        .collect();
    Some(text)
}

/// CPUID is an x86 instruction; elsewhere only the command line and the OS say.
#[cfg(not(target_arch = "x86_64"))]
fn cpuid_signature() -> Option<String> {
    None
}

/// The upstream kernel version in uname's `version` where the release is a
/// distribution's ABI name: a `X.Y.Z` token in `version` with the release's
/// `X.Y` and a different `Z` (Debian's release `6.1.0-55-cloud-amd64` with
/// version `… Debian 6.1.158-1 (…)` gives `6.1.158`). Empty when the version
/// names none, or names the release's own numbers.
pub fn upstream_version(release: &str, version: &str) -> String {
    let numbers = |s: &str| -> Vec<u64> {
        s.split(['.', '-', '+', '_', '~'])
            .map_while(|p| p.parse().ok())
            .take(3)
            .collect()
    };
    let rel = numbers(release);
    if rel.len() < 2 {
        return String::new();
    }
    for token in version.split_ascii_whitespace() {
        let n = numbers(token);
        if n.len() == 3 && n[..2] == rel[..2] && rel.get(2) != Some(&n[2]) {
            return format!("{}.{}.{}", n[0], n[1], n[2]);
        }
    }
    String::new()
}

struct Uname {
    sysname: String,
    release: String,
    version: String,
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
        version: field(uts.version()),
        machine: field(uts.machine()),
    }
}

/// The 1-minute load average, as `getloadavg(3)` reports it, or `None`
/// where the OS does not say: Linux's `/proc/loadavg` (what glibc's
/// getloadavg reads), macOS's `vm.loadavg` sysctl (what Apple's reads).
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/proc_loadavg.5.html>
/// - <https://man7.org/linux/man-pages/man3/getloadavg.3.html>
pub fn load_average() -> Option<f64> {
    fdwindow_fix::sys::load_average()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn the_load_average_is_read_here() {
        let load = load_average().expect("/proc/loadavg");
        assert!(load.is_finite() && load >= 0.0, "{load}");
    }

    #[test]
    fn detects_something_plausible() {
        let p = Platform::detect();
        assert!(
            !p.os.is_empty() && !p.kernel_release.is_empty() && p.cpus >= 1,
            "{p:?}"
        );
        assert!(p.id.starts_with(&p.os), "{p:?}");
        assert!(p.id.ends_with(p.virtualization.id()), "{p:?}");
        crate::report::check_platform_id(&p.id).unwrap();
    }

    /// The id of a Linux x86_64 glibc 2.36 machine with this release, uname
    /// version and command line, and no CPUID signature.
    fn linux_id(release: &str, version: &str, cmdline: &str, flag: bool) -> String {
        let virt = classify_virtualization(accel_word(cmdline), None, flag);
        Platform::make_id(
            "linux",
            release,
            &upstream_version(release, version),
            "x86_64",
            "glibc",
            "2.36",
            virt,
        )
    }

    #[test]
    fn ids_tell_apart_what_behaves_differently() {
        let debian = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.158-1 (2025-11-09)";
        let cloud = linux_id("6.1.0-55-cloud-amd64", debian, "", true);
        let rt = linux_id("6.1.0-55-rt-amd64", debian, "", true);
        assert_ne!(cloud, rt, "two builds of one release");
        assert_eq!(
            cloud,
            "linux-6.1.0-55-cloud-amd64-up6.1.158-x86_64-glibc2.36-hypervisor"
        );
        // The same ABI name over two upstream point releases.
        let older = linux_id(
            "6.1.0-55-cloud-amd64",
            "#1 SMP PREEMPT_DYNAMIC Debian 6.1.157-1 (2025-10-20)",
            "",
            true,
        );
        assert_ne!(cloud, older, "one ABI name, two upstream versions");
        let a = linux_id("6.11.10", "#1 SMP", "", false);
        let b = linux_id("6.11.11", "#1 SMP", "", false);
        assert_ne!(a, b, "two point releases");
        assert_eq!(b, "linux-6.11.11-x86_64-glibc2.36-bare");
        // This machine's release, as a microVM guest and under TCG and KVM.
        let here = linux_id("6.18.44-fc", "#1 SMP PREEMPT_DYNAMIC @0", "quiet", true);
        let tcg = linux_id(
            "6.18.44-fc",
            "#1 SMP PREEMPT_DYNAMIC @0",
            "console=ttyS0 fdwindow.accel=tcg",
            true,
        );
        let kvm = linux_id(
            "6.18.44-fc",
            "#1 SMP PREEMPT_DYNAMIC @0",
            "fdwindow.accel=kvm",
            true,
        );
        assert_eq!(here, "linux-6.18.44-fc-x86_64-glibc2.36-hypervisor");
        assert_eq!(tcg, "linux-6.18.44-fc-x86_64-glibc2.36-tcg");
        assert!(
            here != tcg && tcg != kvm && here != kvm,
            "{here} {tcg} {kvm}"
        );
        let ids = [&cloud, &rt, &older, &a, &b, &here, &tcg, &kvm];
        for id in ids {
            crate::report::check_platform_id(id).unwrap();
        }
    }

    #[test]
    fn upstream_only_where_the_release_is_an_abi_name() {
        let debian = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.158-1 (2025-11-09)";
        assert_eq!(upstream_version("6.1.0-55-amd64", debian), "6.1.158");
        // The release already is the upstream version.
        assert_eq!(upstream_version("6.1.158", debian), "");
        // Ubuntu's version names its own package, not the kernel.
        assert_eq!(
            upstream_version("6.8.0-45-generic", "#45~22.04.1-Ubuntu SMP"),
            ""
        );
        assert_eq!(
            upstream_version("6.18.44-fc", "#1 SMP PREEMPT_DYNAMIC @0"),
            ""
        );
    }

    #[test]
    fn virtualization_sources_in_order() {
        use Virtualization::*;
        assert_eq!(classify_virtualization(None, None, false), Bare);
        assert_eq!(classify_virtualization(None, None, true), Hypervisor);
        assert_eq!(
            classify_virtualization(None, Some("KVMKVMKVM"), true),
            KvmGuest
        );
        assert_eq!(
            classify_virtualization(None, Some("TCGTCGTCGTCG"), true),
            Tcg
        );
        assert_eq!(
            classify_virtualization(None, Some("Microsoft Hv"), true),
            Hypervisor
        );
        // The command line outranks a CPUID that TCG may dress up as KVM.
        assert_eq!(
            classify_virtualization(Some(Tcg), Some("KVMKVMKVM"), true),
            Tcg
        );
        assert_eq!(accel_word("a fdwindow.accel=kvm b"), Some(KvmGuest));
        assert_eq!(accel_word("fdwindow.accel=qemu"), None);
        assert_eq!(accel_word("quiet"), None);
    }

    #[test]
    fn ids_stay_plain_file_names() {
        let id = Platform::make_id(
            "linux",
            "6.1.0+deb/x",
            "",
            "x86_64",
            "glibc",
            "2.36",
            Virtualization::Bare,
        );
        assert_eq!(id, "linux-6.1.0_deb_x-x86_64-glibc2.36-bare");
        crate::report::check_platform_id(&id).unwrap();
    }
}
