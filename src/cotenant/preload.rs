//! Preload libraries shipped inside fdwindow: the fork-pressure injector and
//! any other shim in `shims/`, embedded in the crate at build time and written
//! to a private file when a process needs one.
//!
//! The dynamic loader takes a library only as a file named in its preload
//! variable (`LD_PRELOAD` on Linux, `DYLD_INSERT_LIBRARIES` on macOS; see
//! [`variable`]). fdwindow carries each library's bytes ([`Library::bytes`])
//! so that `cargo install`, a fresh `make probe-linux`, or a crate depending
//! on fdwindow needs no second build step: [`Library::write`] puts them in a
//! new directory that only this user can enter (mode 0700, made by
//! [`tempfile`]), and dropping the returned [`Written`] removes both.
//!
//! ```
//! use fdwindow::preload::Library;
//!
//! match Library::INJECT.write() {
//!     Ok(lib) => {
//!         let mut cmd = std::process::Command::new("/usr/bin/true");
//!         lib.add_to(&mut cmd)?; // LD_PRELOAD / DYLD_INSERT_LIBRARIES, prepended
//!         cmd.env("FDWINDOW_PRESSURE", "threads=1,for=1s");
//!         assert!(cmd.status()?.success());
//!     } // the file and its directory are gone here
//!     // A target without a C toolchain or a preload mechanism: say so.
//!     Err(e) if e.kind() == std::io::ErrorKind::Unsupported => eprintln!("unsupported: {e}"),
//!     Err(e) => return Err(e),
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Why C shims built by `build.rs`
//!
//! One mechanism serves every library, on stable Rust: `build.rs` compiles
//! each `shims/NAME.c` with the C compiler the `cc` crate configures for the
//! target, and this module `include_bytes!`s the result from `OUT_DIR`. An
//! interposer must define variadic functions (`open`, `fcntl`), which stable
//! Rust cannot, and Apple's arm64 ABI passes their variadic arguments on the
//! stack, so a Rust shim with a fixed third argument would read garbage there.
//! A Rust `cdylib` also cannot be a build product of the crate that embeds it
//! (cargo has no artifact dependencies on stable), which is why the injector
//! used to need `cargo build --workspace`. Where the target has no working C
//! toolchain or no preload mechanism, the build embeds empty stubs and every
//! call here returns [`std::io::ErrorKind::Unsupported`] naming why; callers
//! report that as `unsupported`.
//!
//! # References
//! - <https://man7.org/linux/man-pages/man8/ld.so.8.html> (`LD_PRELOAD`)
//! - `man 1 dyld` (`DYLD_INSERT_LIBRARIES`)
//! - <https://developer.apple.com/documentation/xcode/writing-arm64-code-for-apple-platforms>
//!   ("Apple platforms diverge from the standard ABI": variadic arguments on the stack)
//! - <https://doc.rust-lang.org/cargo/reference/unstable.html#artifact-dependencies>

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

mod generated {
    include!(concat!(env!("OUT_DIR"), "/shims.rs"));
}

/// One preload library built from `shims/NAME.c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Library {
    name: &'static str,
    bytes: &'static [u8],
}

/// Declares the shipped libraries: one line per shim in `shims/`.
macro_rules! libraries {
    ($($(#[$doc:meta])* $id:ident = $name:literal,)*) => {
        impl Library {
            $(
                $(#[$doc])*
                pub const $id: Library = Library {
                    name: $name,
                    bytes: include_bytes!(concat!(env!("OUT_DIR"), "/shims/", $name)),
                };
            )*
            /// Every library fdwindow ships, in `shims/` order of declaration.
            pub const ALL: &'static [Library] = &[$(Library::$id),*];
        }
    };
}

libraries! {
    /// The fork-pressure injector (`shims/inject.c`): the spawn loop of
    /// [`crate::pressure`] inside any process it is preloaded into,
    /// configured by [`crate::pressure::ENV_VAR`] in the
    /// [`crate::pressure::Spec`] syntax; `fdwindow stress` uses it.
    INJECT = "inject",
    /// The parked-call interposer (`shims/parked_call.c`): parks an armed
    /// thread right after a descriptor-creating call; see [`crate::parked`].
    PARKED_CALL = "parked_call",
}

impl Library {
    /// The shim's name: its file stem in `shims/` (`inject`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The library by name, if fdwindow ships it.
    pub fn named(name: &str) -> Option<Library> {
        Library::ALL.iter().copied().find(|l| l.name == name)
    }

    /// The shared library's bytes, built for the target fdwindow was compiled
    /// for (for an initramfs or a file of the caller's own); `Unsupported`
    /// when this build has only a stub.
    pub fn bytes(&self) -> io::Result<&'static [u8]> {
        if let Some(why) = generated::STUB_REASON {
            return Err(unsupported(format!(
                "fdwindow was built without its preload libraries: {why}"
            )));
        }
        if crate::sys::PRELOAD.is_none() {
            return Err(unsupported(
                "fdwindow knows no preload mechanism on this OS".into(),
            ));
        }
        Ok(self.bytes)
    }

    /// The file name the library gets when written:
    /// `libfdwindow_NAME.so` (`.dylib` on macOS).
    pub fn file_name(&self) -> String {
        let suffix = crate::sys::PRELOAD.map_or("so", |(_, suffix)| suffix);
        format!("libfdwindow_{}.{suffix}", self.name)
    }

    /// Writes the library to [`Library::file_name`] in a new private
    /// directory (mode 0700) under [`std::env::temp_dir`]; the file and the
    /// directory are removed when the returned guard drops (also when a panic
    /// unwinds past it). Keep the guard alive until every process that
    /// preloads the library has started: the loader opens it at exec.
    pub fn write(&self) -> io::Result<Written> {
        let bytes = self.bytes()?;
        let dir = tempfile::Builder::new()
            .prefix("fdwindow-preload-")
            // Set at creation (mkdir's mode, less the umask), so the directory is
            // never open to others, not even between two calls.
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()?;
        let path = dir.path().join(self.file_name());
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o700)
            .open(&path)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        Ok(Written { dir, path })
    }
}

/// The loader's preload variable on this OS (`LD_PRELOAD`,
/// `DYLD_INSERT_LIBRARIES`), or `None` where fdwindow knows no preload
/// mechanism. On macOS, System Integrity Protection strips `DYLD_*` from
/// protected binaries (those under /usr/bin and /bin), so the preloaded
/// program must be one of the user's own, not a shell that runs it.
pub fn variable() -> Option<&'static str> {
    crate::sys::PRELOAD.map(|(var, _)| var)
}

/// A library written by [`Library::write`]; dropping it removes the file and
/// its directory.
#[derive(Debug)]
pub struct Written {
    dir: tempfile::TempDir,
    path: PathBuf,
}

impl Written {
    /// The library's path, for the loader's preload variable.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The value for [`variable`]: this library before whatever the variable
    /// holds in this process now (`:`-separated, as both loaders read it).
    pub fn preload_value(&self) -> io::Result<OsString> {
        let var = variable().ok_or_else(|| unsupported("no preload mechanism".into()))?;
        let mut value = self.path.clone().into_os_string();
        if let Some(old) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            value.push(":");
            value.push(old);
        }
        Ok(value)
    }

    /// Sets [`variable`] on `cmd` to [`Written::preload_value`].
    pub fn add_to(&self, cmd: &mut Command) -> io::Result<()> {
        let var = variable().ok_or_else(|| unsupported("no preload mechanism".into()))?;
        cmd.env(var, self.preload_value()?);
        Ok(())
    }

    /// The private directory holding the library.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

fn unsupported(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shim_is_declared_once_and_found_by_name() {
        let on_disk: Vec<String> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/shims"))
            .unwrap()
            .filter_map(|e| {
                let p = e.unwrap().path();
                (p.extension()? == "c").then(|| p.file_stem().unwrap().to_string_lossy().into())
            })
            .collect();
        let mut declared: Vec<&str> = Library::ALL.iter().map(|l| l.name()).collect();
        declared.sort();
        let mut on_disk_sorted: Vec<&str> = on_disk.iter().map(String::as_str).collect();
        on_disk_sorted.sort();
        assert_eq!(
            declared, on_disk_sorted,
            "a shim in shims/ without a line in libraries!"
        );
        assert_eq!(Library::named("inject"), Some(Library::INJECT));
        assert_eq!(Library::named("no-such-shim"), None);
    }

    #[cfg(any(target_os = "linux", target_os = "macos"))]
    #[test]
    fn written_library_is_private_loadable_and_removed_on_drop() {
        let bytes = match Library::INJECT.bytes() {
            Ok(b) => b,
            // A build without a C toolchain: the error names why, nothing else to check.
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                assert!(
                    e.to_string().contains("without its preload libraries"),
                    "{e}"
                );
                assert!(Library::INJECT.write().is_err());
                return;
            }
            Err(e) => panic!("{e}"),
        };
        // A shared library: ELF on Linux, Mach-O on macOS.
        #[cfg(target_os = "linux")]
        assert_eq!(&bytes[..4], b"\x7fELF");
        #[cfg(target_os = "macos")]
        assert!(bytes.len() > 4 && bytes[..4] != *b"\x7fELF");
        let written = Library::INJECT.write().unwrap();
        let (dir, path) = (written.dir().to_owned(), written.path().to_owned());
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
        let dir_mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir_mode, 0o700, "the directory is not private");
        assert!(path.ends_with(Library::INJECT.file_name()));
        let value = written.preload_value().unwrap();
        assert!(
            value
                .to_string_lossy()
                .starts_with(&*path.to_string_lossy())
        );
        drop(written);
        assert!(
            !path.exists() && !dir.exists(),
            "{} was left",
            dir.display()
        );
    }
}
