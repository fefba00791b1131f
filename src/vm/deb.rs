//! Kernel images out of Debian and Ubuntu `linux-image-*.deb` packages,
//! without dpkg, and the check that a kernel has built in what the guest needs.
//!
//! A `.deb` is an `ar(1)` archive whose `data.tar.xz` (or `.zst`, `.gz`) holds
//! the installed tree (deb(5)); the kernel is `boot/vmlinuz-<release>` and its
//! build configuration `boot/config-<release>`. The system `ar` and GNU `tar`
//! (which picks the decompressor from the member's suffix) extract only those.

use std::path::{Path, PathBuf};
use std::process::Command;

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

/// Opens `file`, a `.deb` (extracted under `scratch`) or a kernel image.
pub fn open(file: &Path, scratch: &Path) -> Result<Kernel, String> {
    if !file.is_file() {
        return Err(format!("{}: no such file", file.display()));
    }
    let is_deb = file.extension().is_some_and(|e| e == "deb");
    if is_deb {
        return extract_deb(file, scratch);
    }
    let name = file_name(file);
    let release = name.strip_prefix("vmlinuz-").unwrap_or(&name).to_owned();
    // /boot's layout: config-<release> beside vmlinuz-<release>.
    let config = name
        .strip_prefix("vmlinuz-")
        .map(|r| file.with_file_name(format!("config-{r}")))
        .filter(|c| c.is_file());
    Ok(Kernel {
        source: file.to_owned(),
        image: file.to_owned(),
        config,
        release,
    })
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn extract_deb(deb: &Path, scratch: &Path) -> Result<Kernel, String> {
    let deb_abs = std::fs::canonicalize(deb).map_err(|e| format!("{}: {e}", deb.display()))?;
    let listing = tool(Command::new("ar").arg("t").arg(&deb_abs), "ar t")?;
    let member = String::from_utf8_lossy(&listing)
        .lines()
        .map(str::trim)
        .find(|m| m.starts_with("data.tar"))
        .map(str::to_owned)
        .ok_or_else(|| format!("{}: no data.tar member: not a .deb", deb.display()))?;
    let dir = scratch.join("deb");
    std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    tool(
        Command::new("ar")
            .arg("x")
            .arg(&deb_abs)
            .arg(&member)
            .current_dir(&dir),
        "ar x",
    )?;
    let root = dir.join("root");
    std::fs::create_dir_all(&root).map_err(|e| format!("create {}: {e}", root.display()))?;
    // GNU tar chooses xz, zstd or gzip from the suffix; members are
    // `./boot/…` in Debian's packages and may be `boot/…` elsewhere.
    let tarred = tool(
        Command::new("tar")
            .arg("-xf")
            .arg(dir.join(&member))
            .arg("-C")
            .arg(&root)
            .arg("--wildcards")
            .arg("--no-same-owner")
            .arg("*boot/vmlinu*")
            .arg("*boot/config-*"),
        "tar -x",
    );
    // The data member is tens of megabytes: drop it whatever tar said.
    let _ = std::fs::remove_file(dir.join(&member));
    tarred.map_err(|e| {
        format!(
            "{}: {e} (a meta package or Ubuntu's linux-modules-* holds no boot/vmlinuz; \
             pass the linux-image-* package)",
            deb.display()
        )
    })?;
    let boot = root.join("boot");
    let mut images: Vec<PathBuf> = std::fs::read_dir(&boot)
        .map_err(|e| format!("{}: no boot/ in the package: {e}", deb.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| file_name(p).starts_with("vmlinuz-"))
        .collect();
    images.sort();
    let image = images
        .pop()
        .ok_or_else(|| format!("{}: no boot/vmlinuz-* in the package", deb.display()))?;
    let release = file_name(&image)["vmlinuz-".len()..].to_owned();
    let config = Some(boot.join(format!("config-{release}"))).filter(|c| c.is_file());
    Ok(Kernel {
        source: deb.to_owned(),
        image,
        config,
        release,
    })
}

/// Runs a short tool to completion; its stdout, or its stderr as the error.
fn tool(cmd: &mut Command, what: &str) -> Result<Vec<u8>, String> {
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("{what}: {e} (install binutils and tar)"))?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(format!(
            "{what} exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
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
        let err = open(Path::new("/nonexistent/vmlinuz-1"), Path::new("/tmp")).unwrap_err();
        assert!(err.contains("no such file"), "{err}");
    }
}
