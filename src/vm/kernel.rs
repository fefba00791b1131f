//! The kernel a guest boots, checked before anything is built or booted: a
//! bzImage with a boot header QEMU can load, out of a file or a
//! `linux-image-*.deb` ([`deb`](super::deb)), and a configuration with
//! everything the guest needs built in.

use crate::error::{Error, Result, usage};
use std::io::Read;
use std::path::{Path, PathBuf};

/// A bootable kernel image, and its configuration when one was found.
#[derive(Debug)]
pub struct Kernel {
    /// What the user named (`--kernel FILE`).
    pub source: PathBuf,
    /// The image QEMU boots (`-kernel`).
    pub image: PathBuf,
    /// Its `.config`, from the package or beside the image.
    pub config: Option<PathBuf>,
    /// The release its file name gives (`6.1.0-57-cloud-amd64`), else the file name.
    pub release: String,
}

/// Opens `file`, a `.deb` (its kernel extracted under `scratch`) or a kernel
/// image, and checks the image's boot header. Every error is one line that
/// names `file`.
pub fn open(file: &Path, scratch: &Path) -> Result<Kernel> {
    let named = |why: Error| why.context(file.display());
    let meta = std::fs::metadata(file).map_err(|e| named(Error::usage(e)))?;
    if !meta.is_file() {
        return Err(named(Error::usage("not a file")));
    }
    let kernel = if file.extension().is_some_and(|e| e == "deb") {
        let found = super::deb::extract_kernel(file, scratch).map_err(named)?;
        Kernel {
            source: file.to_owned(),
            image: found.image,
            config: found.config,
            release: found.release,
        }
    } else {
        let name = file_name(file);
        // /boot's layout: config-<release> beside vmlinuz-<release>.
        let config = name
            .strip_prefix("vmlinuz-")
            .map(|r| file.with_file_name(format!("config-{r}")))
            .filter(|c| c.is_file());
        Kernel {
            source: file.to_owned(),
            image: file.to_owned(),
            config,
            release: name.strip_prefix("vmlinuz-").unwrap_or(&name).to_owned(),
        }
    };
    check_image(&kernel.image).map_err(named)?;
    Ok(kernel)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The part of an x86 bzImage that [`check_image`] reads: the real-mode
/// header, whose fields end at 0x268 in boot protocol 2.15.
const HEADER_LEN: usize = 0x268;

/// Checks that `image` is an x86 bzImage that QEMU's `-kernel` can load
/// with an initramfs: the boot sector's 0xAA55 at 0x1FE, the `HdrS` magic at
/// 0x202, boot protocol 2.00 or later (initrd support), and a file as long
/// as the header says its setup and protected-mode parts are.
///
/// # References
/// - The Linux/x86 Boot Protocol: <https://www.kernel.org/doc/html/latest/arch/x86/boot.html>
pub fn check_image(image: &Path) -> Result<()> {
    let mut f = std::fs::File::open(image).map_err(|e| usage!("{}: {e}", image.display()))?;
    let size = f.metadata().map_err(Error::usage)?.len();
    let mut head = Vec::with_capacity(HEADER_LEN);
    (&mut f)
        .take(HEADER_LEN as u64)
        .read_to_end(&mut head)
        .map_err(|e| usage!("read {}: {e}", image.display()))?;
    check_header(&head, size)
}

/// [`check_image`] on the file's first bytes and its size.
pub fn check_header(head: &[u8], size: u64) -> Result<()> {
    const NOT: &str = "not an x86 kernel image (bzImage)";
    if size == 0 {
        return Err(usage!("empty file: {NOT}"));
    }
    if head.starts_with(b"\x7fELF") {
        return Err(usage!(
            "an ELF file (vmlinux?), {NOT}: pass arch/x86/boot/bzImage or /boot/vmlinuz-*"
        ));
    }
    let u16_at = |at: usize| {
        head.get(at..at + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| {
        head.get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    if u16_at(0x1FE) != Some(0xAA55) || head.get(0x202..0x206) != Some(b"HdrS".as_slice()) {
        return Err(usage!("no Linux boot header (HdrS at 0x202): {NOT}"));
    }
    let version = u16_at(0x206).unwrap_or(0);
    if version < 0x0200 {
        return Err(usage!(
            "boot protocol {}.{:02}: an initramfs needs 2.00 or later",
            version >> 8,
            version & 0xff
        ));
    }
    // setup_sects 0 means 4 (the boot protocol); syssize counts 16-byte units.
    let setup_sects = match head.get(0x1F1).copied().unwrap_or(0) {
        0 => 4,
        n => u64::from(n),
    };
    let expected = (setup_sects + 1) * 512 + u64::from(u32_at(0x1F4).unwrap_or(0)) * 16;
    if size < expected {
        return Err(usage!(
            "cut short: {size} bytes, its boot header says {expected}"
        ));
    }
    Ok(())
}

/// What the guest needs built into the kernel (`=y`): the initramfs has no
/// modules of the kernel's build to load, so a feature built as a module is
/// missing in the guest. Each with why.
pub const REQUIRED: &[(&str, &str)] = &[
    ("CONFIG_BLK_DEV_INITRD", "boots the initramfs"),
    ("CONFIG_BINFMT_ELF", "runs the probes"),
    ("CONFIG_BINFMT_SCRIPT", "runs /init, a shell script"),
    ("CONFIG_PROC_FS", "/proc: holder scans, the boot parameters"),
    ("CONFIG_SYSFS", "/sys"),
    ("CONFIG_DEVTMPFS", "/dev: the serial ports"),
    ("CONFIG_TMPFS", "/tmp, where the probes make their files"),
    ("CONFIG_UNIX", "Unix sockets"),
    ("CONFIG_INET", "TCP and UDP on loopback"),
    ("CONFIG_FILE_LOCKING", "flock and fcntl locks"),
    ("CONFIG_FUTEX", "threads"),
    ("CONFIG_EPOLL", "the Rust runtime's waits"),
    (
        "CONFIG_SERIAL_8250",
        "ttyS0, the console, and ttyS1, the results channel",
    ),
    ("CONFIG_SERIAL_8250_CONSOLE", "the console on ttyS0"),
];

/// The options in `config` (a kernel `.config`) that keep the guest from
/// running the probes, each as one line; empty when it can.
pub fn config_gaps(config: &str) -> Vec<String> {
    let value = |key: &str| {
        config.lines().find_map(|l| {
            l.strip_prefix(key)
                .and_then(|rest| rest.strip_prefix('='))
                .map(str::trim)
        })
    };
    let mut gaps = Vec::new();
    for (key, why) in REQUIRED {
        match value(key) {
            Some("y") => {}
            Some("m") => gaps.push(format!(
                "{key}=m, a module; the guest needs it built in ({why})"
            )),
            _ => gaps.push(format!("{key} is not set ({why})")),
        }
    }
    // Two ports: ttyS1 carries the results apart from kernel messages.
    if let Some(n) = value("CONFIG_SERIAL_8250_RUNTIME_UARTS").and_then(|v| v.parse::<u32>().ok())
        && n < 2
    {
        gaps.push(format!(
            "CONFIG_SERIAL_8250_RUNTIME_UARTS={n}: the results channel needs a second serial port"
        ));
    }
    gaps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_config() -> String {
        REQUIRED
            .iter()
            .map(|(k, _)| format!("{k}=y\n"))
            .collect::<String>()
            + "CONFIG_SERIAL_8250_RUNTIME_UARTS=4\n"
    }

    #[test]
    fn a_complete_config_has_no_gaps() {
        assert_eq!(config_gaps(&full_config()), Vec::<String>::new());
    }

    #[test]
    fn modules_unset_options_and_one_port_are_gaps() {
        let config = full_config()
            .replace("CONFIG_UNIX=y", "CONFIG_UNIX=m")
            .replace("CONFIG_TMPFS=y", "# CONFIG_TMPFS is not set")
            .replace("RUNTIME_UARTS=4", "RUNTIME_UARTS=1");
        let gaps = config_gaps(&config);
        assert_eq!(gaps.len(), 3, "{gaps:?}");
        assert!(gaps[0].starts_with("CONFIG_TMPFS is not set"), "{gaps:?}");
        assert!(gaps[1].starts_with("CONFIG_UNIX=m"), "{gaps:?}");
        assert!(gaps[2].contains("second serial port"), "{gaps:?}");
    }

    #[test]
    fn a_prefix_is_not_the_option() {
        // CONFIG_UNIX_DIAG=y must not count as CONFIG_UNIX.
        let config = full_config().replace("CONFIG_UNIX=y", "CONFIG_UNIX_DIAG=y");
        assert!(config_gaps(&config)[0].starts_with("CONFIG_UNIX is not set"));
    }

    #[test]
    fn a_missing_file_is_named() {
        let err = open(Path::new("/nonexistent/vmlinuz-1"), Path::new("/tmp"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("/nonexistent/vmlinuz-1: "), "{err}");
        assert!(err.contains("No such file"), "{err}");
    }

    /// A header as a bzImage of `total` bytes with protocol `version` has it.
    fn header(version: u16, setup_sects: u8, total: u64) -> Vec<u8> {
        let mut h = vec![0u8; HEADER_LEN];
        h[0x1F1] = setup_sects;
        let setup = (u64::from(setup_sects.max(1)) + 1) * 512;
        let syssize = u32::try_from((total - setup).div_ceil(16)).unwrap();
        h[0x1F4..0x1F8].copy_from_slice(&syssize.to_le_bytes());
        h[0x1FE..0x200].copy_from_slice(&0xAA55u16.to_le_bytes());
        h[0x202..0x206].copy_from_slice(b"HdrS");
        h[0x206..0x208].copy_from_slice(&version.to_le_bytes());
        h
    }

    #[test]
    fn a_whole_bzimage_passes() {
        check_header(&header(0x020f, 27, 8 << 20), 8 << 20).unwrap();
    }

    #[test]
    fn each_bad_image_is_named_for_what_is_wrong() {
        let bad = |head: &[u8], size: u64| check_header(head, size).unwrap_err().to_string();
        assert!(bad(b"", 0).starts_with("empty file"));
        assert!(bad(b"hello, world\n", 13).starts_with("no Linux boot header"));
        assert!(bad(b"\x7fELF\x02\x01\x01", 7).contains("ELF file (vmlinux?)"));
        assert!(bad(&header(0x0104, 4, 1 << 20), 1 << 20).contains("2.00 or later"));
        let whole = 8u64 << 20;
        let cut = bad(&header(0x020f, 27, whole), 3 << 20);
        assert!(cut.starts_with("cut short: 3145728 bytes"), "{cut}");
        // The boot sector alone, as a header cut before 0x202.
        assert!(bad(&header(0x020f, 27, whole)[..0x200], 0x200).starts_with("no Linux"));
    }
}
