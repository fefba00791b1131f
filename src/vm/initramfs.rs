//! The guest's initramfs: busybox, the probes, the shared libraries they load,
//! `/usr/bin/true`, `/bin/cat` and an `/init` that runs `fdwindow run` and
//! sends the results down the results channel.
//!
//! The archive is the kernel's "newc" cpio format
//! (<https://docs.kernel.org/driver-api/early-userspace/buffer-format.html>),
//! written here so that the device node `/dev/console` needs no root. It is
//! cached under a key hashed from every input's path, mode and bytes and the
//! `/init` script, so any change to any of them builds a new one.

use crate::error::{Error, Result, failed, usage};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::channel::Fnv1a;

/// Where the probes and `fdwindow` live in the guest: the runner finds the
/// probes beside its own binary.
pub const GUEST_BIN_DIR: &str = "/opt/fdwindow";

/// Bump when the layout changes in a way the inputs do not show.
const LAYOUT: &str = "fdwindow-initramfs-1";

/// The busybox applets `/init` calls, linked in /bin.
const APPLETS: &[&str] = &["sh", "mkdir", "mount", "ip", "poweroff", "sync", "uname"];

/// The standard `/init`. The boot parameters carry what the host asked
/// (`fdwindow.only=a,b`, `fdwindow.smoke=1`); the kernel passes unknown
/// dotted words to no one, and `/proc/cmdline` shows them all.
pub const INIT_SCRIPT: &str = r#"#!/bin/sh
# fdwindow's guest init (src/vm/initramfs.rs): mount, run the probes, send
# the results on ttyS1 (the results channel), power off.
export PATH=/bin:/usr/bin
mkdir -p /proc /sys /dev /tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o mode=1777 tmpfs /tmp
ip link set lo up
only=""
smoke=""
for word in $(cat /proc/cmdline); do
  case "$word" in
    fdwindow.only=*) only="${word#fdwindow.only=}" ;;
    fdwindow.smoke=1) smoke=1 ;;
  esac
done
echo "fdwindow-guest: kernel $(uname -r) up"
if [ -n "$smoke" ]; then
  /opt/fdwindow/fdwindow vm-send --port /dev/ttyS1 --status 0
else
  set --
  IFS_SAVED="$IFS"; IFS=,
  for hazard in $only; do set -- "$@" --only "$hazard"; done
  IFS="$IFS_SAVED"
  /opt/fdwindow/fdwindow run --results /tmp/results "$@"
  /opt/fdwindow/fdwindow vm-send --port /dev/ttyS1 --status $? --results /tmp/results
fi
sync
poweroff -f
"#;

/// One entry of the archive.
#[derive(Clone, Debug)]
pub enum Entry {
    /// A regular file from the host (stripped of symbols when `strip`).
    File {
        /// Its bytes come from here.
        source: PathBuf,
        /// Permission bits.
        mode: u32,
        /// Strip symbols and debug info (smaller archive, same code).
        strip: bool,
    },
    /// A regular file with these bytes.
    Bytes {
        /// Contents.
        data: Vec<u8>,
        /// Permission bits.
        mode: u32,
    },
    /// A symbolic link to this target.
    Symlink(String),
    /// A character device (major, minor).
    CharDev(u32, u32),
}

/// What goes into an initramfs, by absolute guest path.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    /// Every entry; parent folders are added when the archive is written.
    pub entries: BTreeMap<String, Entry>,
}

impl Spec {
    /// The standard guest: `fdwindow` from `bin_dir` (it runs every probe as
    /// `fdwindow probe HAZARD`), busybox, `/usr/bin/true`, `/bin/cat`, their
    /// shared libraries, `/init`.
    pub fn standard(bin_dir: &Path) -> Result<Spec> {
        let mut spec = Spec::default();
        let fdwindow = bin_dir.join("fdwindow");
        if !fdwindow.is_file() {
            return Err(usage!(
                "{}: not built (run `cargo build --release --bins`)",
                fdwindow.display()
            ));
        }
        spec.file(&format!("{GUEST_BIN_DIR}/fdwindow"), &fdwindow, 0o755, true);
        // The preload libraries, written from the copies embedded in this
        // fdwindow (src/cotenant/preload.rs), beside it, every one of
        // `Library::ALL`: two-step-cloexec re-executes itself with the
        // parked-call interposer (src/harness/parked.rs), written from the bytes
        // embedded in it to the guest's /tmp, and the guest's own fdwindow
        // carries the same bytes for `fdwindow stress`; these copies let a
        // guest preload one by path. A build without them (a stub) leaves
        // them out.
        for library in crate::cotenant::preload::Library::ALL {
            if let Ok(bytes) = library.bytes() {
                spec.entries.insert(
                    format!("{GUEST_BIN_DIR}/{}", library.file_name()),
                    Entry::Bytes {
                        data: bytes.to_vec(),
                        mode: 0o755,
                    },
                );
            }
        }
        let busybox = ["/bin/busybox", "/usr/bin/busybox"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .ok_or_else(|| Error::usage("busybox not found (install busybox-static)"))?;
        spec.file("/bin/busybox", &busybox, 0o755, false);
        for applet in APPLETS {
            spec.entries
                .insert(format!("/bin/{applet}"), Entry::Symlink("busybox".into()));
        }
        // The programs the probes' children exec (src/base/child.rs), the host's own.
        spec.file(
            fdwindow_fix::base::child::TRUE_PROGRAM,
            Path::new(fdwindow_fix::base::child::TRUE_PROGRAM),
            0o755,
            false,
        );
        spec.file(
            fdwindow_fix::base::child::CAT_PROGRAM,
            Path::new(fdwindow_fix::base::child::CAT_PROGRAM),
            0o755,
            false,
        );
        let programs = [
            fdwindow,
            busybox,
            PathBuf::from(fdwindow_fix::base::child::TRUE_PROGRAM),
            PathBuf::from(fdwindow_fix::base::child::CAT_PROGRAM),
        ];
        for program in &programs {
            for lib in shared_libraries(program)? {
                let guest = lib.to_string_lossy().into_owned();
                spec.file(&guest, &lib, 0o755, false);
            }
        }
        spec.entries.insert(
            "/init".into(),
            Entry::Bytes {
                data: INIT_SCRIPT.as_bytes().to_vec(),
                mode: 0o755,
            },
        );
        spec.entries
            .insert("/dev/console".into(), Entry::CharDev(5, 1));
        // What the platform's os_release shows for a guest: no distribution,
        // but this initramfs (os-release(5)).
        spec.entries.insert(
            "/etc/os-release".into(),
            Entry::Bytes {
                data: b"PRETTY_NAME=\"fdwindow initramfs (busybox, the host's glibc)\"\n".to_vec(),
                mode: 0o644,
            },
        );
        Ok(spec)
    }

    fn file(&mut self, guest: &str, source: &Path, mode: u32, strip: bool) {
        self.entries.insert(
            guest.to_owned(),
            Entry::File {
                source: source.to_owned(),
                mode,
                strip,
            },
        );
    }

    /// The cache key: every entry's path, kind, mode and bytes.
    pub fn key(&self) -> Result<String> {
        let mut h = Fnv1a::default();
        h.update(LAYOUT.as_bytes());
        for (path, entry) in &self.entries {
            h.update(path.as_bytes());
            h.update(&[0]);
            match entry {
                Entry::File {
                    source,
                    mode,
                    strip,
                } => {
                    let bytes = read(source)?;
                    h.update(format!("file {mode:o} {strip} {}\0", bytes.len()).as_bytes());
                    h.update(&bytes);
                }
                Entry::Bytes { data, mode } => {
                    h.update(format!("bytes {mode:o} {}\0", data.len()).as_bytes());
                    h.update(data);
                }
                Entry::Symlink(target) => h.update(format!("link {target}\0").as_bytes()),
                Entry::CharDev(major, minor) => {
                    h.update(format!("chr {major} {minor}\0").as_bytes())
                }
            }
        }
        Ok(format!("{:016x}", h.finish()))
    }

    /// The archive's bytes; `scratch` holds stripped copies while it is built.
    pub fn build(&self, scratch: &Path) -> Result<Vec<u8>> {
        let mut cpio = Cpio::default();
        for (path, entry) in &self.entries {
            let mut parent = Path::new(path).parent();
            let mut parents = Vec::new();
            while let Some(p) = parent.filter(|p| *p != Path::new("/")) {
                parents.push(p.to_string_lossy().into_owned());
                parent = p.parent();
            }
            for dir in parents.into_iter().rev() {
                cpio.dir(&dir);
            }
            match entry {
                Entry::File {
                    source,
                    mode,
                    strip,
                } => {
                    let bytes = if *strip {
                        stripped(source, scratch)?
                    } else {
                        read(source)?
                    };
                    cpio.push(path, 0o100_000 | mode, &bytes, (0, 0));
                }
                Entry::Bytes { data, mode } => cpio.push(path, 0o100_000 | mode, data, (0, 0)),
                Entry::Symlink(target) => cpio.push(path, 0o120_777, target.as_bytes(), (0, 0)),
                Entry::CharDev(major, minor) => {
                    cpio.push(path, 0o020_600, &[], (*major, *minor));
                }
            }
        }
        Ok(cpio.finish())
    }

    /// The archive in `cache_dir`, built when no archive has this key.
    /// Returns its path and whether it was built now.
    pub fn cached(&self, cache_dir: &Path, scratch: &Path) -> Result<(PathBuf, bool)> {
        let key = self.key()?;
        let path = cache_dir.join(format!("initramfs-{key}.cpio"));
        if path.is_file() {
            return Ok((path, false));
        }
        let bytes = self.build(scratch)?;
        std::fs::create_dir_all(cache_dir)
            .map_err(|e| failed!("create {}: {e}", cache_dir.display()))?;
        crate::evidence::results::write_atomic(&path, &bytes)
            .map_err(|e| failed!("write {}: {e}", path.display()))?;
        prune(cache_dir, &path);
        Ok((path, true))
    }
}

/// Keeps the cache to the archive just written and the two before it.
fn prune(cache_dir: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(cache_dir) else {
        return;
    };
    let mut old: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p != keep
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("initramfs-"))
                && p.extension().is_some_and(|e| e == "cpio")
        })
        .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
        .collect();
    old.sort();
    let excess = old.len().saturating_sub(2);
    for (_, p) in old.into_iter().take(excess) {
        let _ = std::fs::remove_file(p);
    }
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| failed!("read {}: {e}", path.display()))
}

/// A copy of `source` without symbols (`strip(1)`), or its bytes as they are
/// when no `strip` runs here.
fn stripped(source: &Path, scratch: &Path) -> Result<Vec<u8>> {
    let out = scratch.join(format!(
        "stripped-{}",
        source.file_name().expect("a file").to_string_lossy()
    ));
    let ok = Command::new("strip")
        .arg("-o")
        .arg(&out)
        .arg(source)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let bytes = if ok { read(&out) } else { read(source) };
    let _ = std::fs::remove_file(&out);
    bytes
}

/// The shared libraries `program` loads, as `ldd(1)` lists them (the loader
/// included, the vDSO excluded); none for a static program.
pub fn shared_libraries(program: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(program)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| failed!("ldd {}: {e}", program.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        // "not a dynamic executable": a static program needs nothing.
        return Ok(Vec::new());
    }
    Ok(parse_ldd(&text))
}

fn parse_ldd(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let path = match line.split_once("=>") {
                Some((_, rest)) => rest.split_whitespace().next()?,
                None => line.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

/// A newc cpio archive being written.
#[derive(Default)]
struct Cpio {
    out: Vec<u8>,
    ino: u32,
    dirs: std::collections::BTreeSet<String>,
}

impl Cpio {
    fn dir(&mut self, path: &str) {
        if self.dirs.insert(path.to_owned()) {
            self.push(path, 0o040_755, &[], (0, 0));
        }
    }

    fn push(&mut self, path: &str, mode: u32, data: &[u8], rdev: (u32, u32)) {
        self.ino += 1;
        let name = path.trim_start_matches('/');
        let fields = [
            self.ino,
            mode,
            0, // uid
            0, // gid
            if mode & 0o170_000 == 0o040_000 { 2 } else { 1 },
            0, // mtime: fixed, so the same inputs give the same bytes
            data.len() as u32,
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() as u32 + 1,
            0, // check: unused in newc
        ];
        self.out.extend_from_slice(b"070701");
        for f in fields {
            self.out.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        self.pad();
        self.out.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
    }

    fn finish(mut self) -> Vec<u8> {
        self.push("TRAILER!!!", 0, &[], (0, 0));
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_lines_give_paths() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        assert_eq!(
            parse_ldd(text),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libc.so.6"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
    }

    fn tiny() -> Spec {
        let mut spec = Spec::default();
        spec.entries.insert(
            "/init".into(),
            Entry::Bytes {
                data: b"#!/bin/sh\n".to_vec(),
                mode: 0o755,
            },
        );
        spec.entries
            .insert("/bin/sh".into(), Entry::Symlink("busybox".into()));
        spec
    }

    #[test]
    fn the_archive_is_newc_with_parents_and_a_trailer() {
        let bytes = tiny().build(Path::new("/tmp")).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(bytes.starts_with(b"070701"));
        assert_eq!(bytes.len() % 4, 0);
        // /bin comes before /bin/sh; the trailer ends it.
        let bin = text.find("bin\0").unwrap();
        let sh = text.find("bin/sh\0").unwrap();
        assert!(bin < sh, "{text:?}");
        assert!(text.contains("TRAILER!!!\0"));
        // The same inputs give the same bytes.
        assert_eq!(bytes, tiny().build(Path::new("/tmp")).unwrap());
    }

    #[test]
    fn the_key_changes_with_any_input() {
        let base = tiny().key().unwrap();
        let mut changed = tiny();
        changed.entries.insert(
            "/init".into(),
            Entry::Bytes {
                data: b"#!/bin/sh\nexit 1\n".to_vec(),
                mode: 0o755,
            },
        );
        assert_ne!(base, changed.key().unwrap());
        let mut moded = tiny();
        moded.entries.insert(
            "/init".into(),
            Entry::Bytes {
                data: b"#!/bin/sh\n".to_vec(),
                mode: 0o700,
            },
        );
        assert_ne!(base, moded.key().unwrap());
        assert_eq!(base, tiny().key().unwrap());
    }
}
