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
//! use fdwindow::cotenant::preload::Library;
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
    /// [`fdwindow_fix::pressure`] inside any process it is preloaded into,
    /// configured by [`fdwindow_fix::pressure::ENV_VAR`] in the
    /// [`fdwindow_fix::pressure::Spec`] syntax; `fdwindow stress` uses it.
    INJECT = "inject",
    /// The parked-call interposer (`shims/parked_call.c`): parks an armed
    /// thread right after a descriptor-creating call; see [`crate::harness::parked`].
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
        if let Some((_, why)) = generated::STUBS.iter().find(|(name, _)| *name == self.name) {
            return Err(unsupported(format!(
                "fdwindow was built without its {} library: {why}",
                self.name
            )));
        }
        if fdwindow_fix::sys::PRELOAD.is_none() {
            return Err(unsupported(
                "fdwindow knows no preload mechanism on this OS".into(),
            ));
        }
        Ok(self.bytes)
    }

    /// The file name the library gets when written:
    /// `libfdwindow_NAME.so` (`.dylib` on macOS).
    pub fn file_name(&self) -> String {
        let suffix = fdwindow_fix::sys::PRELOAD.map_or("so", |(_, suffix)| suffix);
        format!("libfdwindow_{}.{suffix}", self.name)
    }

    /// Writes the library to [`Library::file_name`] in a new private
    /// directory (mode 0700) under the scratch root
    /// ([`fdwindow_fix::base::scratch::root`]: the run's folder under `fdwindow
    /// run`, else the temporary folder); the file and the
    /// directory are removed when the returned guard drops (also when a panic
    /// unwinds past it). Keep the guard alive until every process that
    /// preloads the library has started: the loader opens it at exec.
    pub fn write(&self) -> io::Result<Written> {
        // Before the directory: a stub build leaves nothing behind.
        self.bytes()?;
        let dir = tempfile::Builder::new()
            .prefix("fdwindow-preload-")
            // Set at creation (mkdir's mode, less the umask), so the directory is
            // never open to others, not even between two calls.
            .permissions(std::fs::Permissions::from_mode(0o700))
            // Under `fdwindow run`, inside its swept scratch folder: a probe
            // killed between writing and removing it leaves nothing behind.
            .tempdir_in(fdwindow_fix::base::scratch::root())?;
        let path = self.write_in(dir.path())?;
        Ok(Written { dir, path })
    }

    /// Writes the library to [`Library::file_name`] in `dir`, a private
    /// directory of the caller's that removes it (a run's swept scratch
    /// folder, [`fdwindow_fix::base::scratch::Scratch::new_swept`], which the next run
    /// removes should this one be killed); its path. Fails if the file is
    /// there already.
    pub fn write_in(&self, dir: &Path) -> io::Result<PathBuf> {
        let bytes = self.bytes()?;
        let path = dir.join(self.file_name());
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o700)
            .open(&path)?;
        let written = file.write_all(bytes).and_then(|()| file.sync_all());
        if let Err(e) = written {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        Ok(path)
    }
}

/// The loader's preload variable on this OS (`LD_PRELOAD`,
/// `DYLD_INSERT_LIBRARIES`), or `None` where fdwindow knows no preload
/// mechanism. On macOS, System Integrity Protection strips `DYLD_*` from
/// protected binaries (those under /usr/bin and /bin), so the preloaded
/// program must be one of the user's own, not a shell that runs it.
pub fn variable() -> Option<&'static str> {
    fdwindow_fix::sys::PRELOAD.map(|(var, _)| var)
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

/// Why a file cannot be preloaded: [`check_preloadable`]'s error.
#[derive(Debug)]
pub enum NotPreloadable {
    /// It could not be opened or read.
    Unreadable(io::Error),
    /// It is something other than a shared library this OS's loader takes:
    /// what it is, e.g. "a position-independent executable (ELF `ET_DYN`
    /// marked `DF_1_PIE`)".
    Not(String),
}

impl std::fmt::Display for NotPreloadable {
    /// A predicate for a sentence that names the file first: "… is a
    /// position-independent executable …, not a shared library".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotPreloadable::Unreadable(e) => write!(f, "cannot be read: {e}"),
            NotPreloadable::Not(what) => write!(f, "is {what}"),
        }
    }
}

impl std::error::Error for NotPreloadable {}

/// Checks, from its bytes alone, that `path` is a shared library the loader
/// of this OS could preload: on macOS a Mach-O dylib (`MH_DYLIB`, alone or
/// as this machine's slice of a universal file), elsewhere an ELF shared
/// object (`ET_DYN` with a dynamic section) that is not a
/// position-independent executable. A PIE is `ET_DYN` too, like a library;
/// it carries `DF_1_PIE` in `DT_FLAGS_1` (binutils and lld set it), or, from
/// an older linker, an interpreter (`PT_INTERP`) and no `DT_SONAME`. Some
/// libraries have an interpreter as well (glibc's `libc.so.6` runs as a
/// program) but they have a soname. The file is only read, never loaded:
/// the injector's constructors would start spawning in this process.
///
/// # References
/// - <https://man7.org/linux/man-pages/man5/elf.5.html>
/// - <https://refspecs.linuxfoundation.org/elf/gabi4+/ch5.dynamic.html>
/// - <https://sourceware.org/git/?p=glibc.git;a=blob;f=elf/elf.h> (`DF_1_PIE`, `DT_FLAGS_1`)
/// - <https://github.com/apple-oss-distributions/xnu/blob/main/EXTERNAL_HEADERS/mach-o/loader.h>
/// - <https://github.com/apple-oss-distributions/xnu/blob/main/EXTERNAL_HEADERS/mach-o/fat.h>
pub fn check_preloadable(path: &Path) -> Result<(), NotPreloadable> {
    let file = std::fs::File::open(path).map_err(NotPreloadable::Unreadable)?;
    check_file(&file, std::env::consts::OS == "macos")
}

/// [`check_preloadable`] on an open file, for the loader of macOS (`macos`)
/// or of an ELF system.
fn check_file(file: &std::fs::File, macos: bool) -> Result<(), NotPreloadable> {
    let mut head = [0u8; 64];
    let read = object::read_up_to(file, 0, &mut head)?;
    let head = &head[..read];
    match head {
        [0x7f, b'E', b'L', b'F', ..] if macos => Err(NotPreloadable::Not(
            "an ELF file; the loader here takes Mach-O dylibs".into(),
        )),
        [0x7f, b'E', b'L', b'F', ..] => object::check_elf(file, head),
        [0xcf, 0xfa, 0xed, 0xfe, ..]
        | [0xca, 0xfe, 0xba, 0xbe, ..]
        | [0xca, 0xfe, 0xba, 0xbf, ..]
            if !macos =>
        {
            Err(NotPreloadable::Not(
                "a Mach-O file; the loader here takes ELF shared libraries".into(),
            ))
        }
        [0xcf, 0xfa, 0xed, 0xfe, ..] => object::check_macho(file, 0),
        [0xca, 0xfe, 0xba, 0xbe, ..] | [0xca, 0xfe, 0xba, 0xbf, ..] => {
            object::check_fat(file, head)
        }
        _ => Err(NotPreloadable::Not(if macos {
            "not a Mach-O dylib".into()
        } else {
            "not an ELF shared library".into()
        })),
    }
}

/// The object-file parsing behind [`check_preloadable`]: bounds-checked
/// reads at offsets, nothing mapped.
mod object {
    use super::NotPreloadable;
    use std::os::unix::fs::FileExt;

    /// `e_type`: an executable, a shared object (or PIE), a relocatable file.
    const ET_REL: u16 = 1;
    const ET_EXEC: u16 = 2;
    const ET_DYN: u16 = 3;
    /// `p_type`: the dynamic section, the interpreter's path.
    const PT_DYNAMIC: u32 = 2;
    const PT_INTERP: u32 = 3;
    /// `d_tag`s, and the flag that marks a position-independent executable.
    const DT_NULL: u64 = 0;
    const DT_SONAME: u64 = 14;
    const DT_FLAGS_1: u64 = 0x6fff_fffb;
    const DF_1_PIE: u64 = 0x0800_0000;
    /// Mach-O `filetype`s.
    const MH_EXECUTE: u32 = 2;
    const MH_DYLIB: u32 = 6;
    /// The most dynamic-section bytes read: real ones hold a few dozen entries.
    const MAX_DYNAMIC: u64 = 1 << 20;
    /// The most slices a universal file is believed to hold (a Java class
    /// file starts with the same magic, then its version).
    const MAX_SLICES: u32 = 64;

    fn not(what: impl Into<String>) -> NotPreloadable {
        NotPreloadable::Not(what.into())
    }

    /// Reads as much of `buf` as the file holds from `offset` on.
    pub(super) fn read_up_to(
        file: &std::fs::File,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<usize, NotPreloadable> {
        let mut got = 0;
        while got < buf.len() {
            match file.read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(NotPreloadable::Unreadable(e)),
            }
        }
        Ok(got)
    }

    /// Exactly `len` bytes at `offset`, or "a truncated …" file.
    fn read_exact(
        file: &std::fs::File,
        offset: u64,
        len: u64,
        format: &str,
    ) -> Result<Vec<u8>, NotPreloadable> {
        let mut buf =
            vec![0u8; usize::try_from(len).map_err(|_| not(format!("a truncated {format} file")))?];
        if read_up_to(file, offset, &mut buf)? < buf.len() {
            return Err(not(format!("a truncated {format} file")));
        }
        Ok(buf)
    }

    /// Fixed-width integers in one byte order, bounds-checked.
    #[derive(Clone, Copy)]
    struct Endian {
        big: bool,
    }

    impl Endian {
        fn bytes<const N: usize>(self, b: &[u8], at: usize) -> Result<[u8; N], NotPreloadable> {
            b.get(at..at + N)
                .and_then(|s| <[u8; N]>::try_from(s).ok())
                .ok_or_else(|| not("a truncated object file"))
        }
        fn u16(self, b: &[u8], at: usize) -> Result<u16, NotPreloadable> {
            let a = self.bytes(b, at)?;
            Ok(if self.big {
                u16::from_be_bytes(a)
            } else {
                u16::from_le_bytes(a)
            })
        }
        fn u32(self, b: &[u8], at: usize) -> Result<u32, NotPreloadable> {
            let a = self.bytes(b, at)?;
            Ok(if self.big {
                u32::from_be_bytes(a)
            } else {
                u32::from_le_bytes(a)
            })
        }
        fn u64(self, b: &[u8], at: usize) -> Result<u64, NotPreloadable> {
            let a = self.bytes(b, at)?;
            Ok(if self.big {
                u64::from_be_bytes(a)
            } else {
                u64::from_le_bytes(a)
            })
        }
        /// A 4- or 8-byte field, as the ELF class says.
        fn word(self, wide: bool, b: &[u8], at: usize) -> Result<u64, NotPreloadable> {
            if wide {
                self.u64(b, at)
            } else {
                self.u32(b, at).map(u64::from)
            }
        }
    }

    /// This machine's ELF `e_machine`, where known (elf.h's `EM_*`).
    pub(super) fn host_elf_machine() -> Option<u16> {
        Some(match std::env::consts::ARCH {
            "x86" => 3,
            "arm" => 40,
            "x86_64" => 62,
            "aarch64" => 183,
            "riscv64" => 243,
            "powerpc64" => 21,
            "s390x" => 22,
            "loongarch64" => 258,
            _ => return None,
        })
    }

    /// This machine's Mach-O `cputype`, where known (machine.h's
    /// `CPU_TYPE_X86_64`, `CPU_TYPE_ARM64`).
    pub(super) fn host_macho_cpu() -> Option<u32> {
        Some(match std::env::consts::ARCH {
            "x86_64" => 0x0100_0007,
            "aarch64" => 0x0100_000c,
            _ => return None,
        })
    }

    /// An ELF file whose first bytes are `head`.
    pub(super) fn check_elf(file: &std::fs::File, head: &[u8]) -> Result<(), NotPreloadable> {
        let wide = match head.get(4) {
            Some(1) => false,
            Some(2) => true,
            _ => return Err(not("an ELF file of no known class")),
        };
        let e = Endian {
            big: head.get(5) == Some(&2),
        };
        let e_type = e.u16(head, 16)?;
        let machine = e.u16(head, 18)?;
        match e_type {
            ET_DYN => {}
            ET_EXEC => return Err(not("an executable (ELF ET_EXEC), not a shared library")),
            ET_REL => {
                return Err(not(
                    "a relocatable object (ELF ET_REL), not a shared library: link it with -shared",
                ));
            }
            other => {
                return Err(not(format!(
                    "an ELF file of type {other}, not a shared library"
                )));
            }
        }
        if let Some(host) = host_elf_machine()
            && (machine != host || wide != cfg!(target_pointer_width = "64"))
        {
            return Err(not(format!(
                "a shared library for another machine (ELF machine {machine}, {}-bit; this is {})",
                if wide { 64 } else { 32 },
                std::env::consts::ARCH
            )));
        }
        let (phoff, phentsize, phnum) = if wide {
            (e.u64(head, 32)?, e.u16(head, 54)?, e.u16(head, 56)?)
        } else {
            (
                u64::from(e.u32(head, 28)?),
                e.u16(head, 42)?,
                e.u16(head, 44)?,
            )
        };
        let entry = if wide { 56 } else { 32 };
        if usize::from(phentsize) < entry {
            return Err(not("an ELF file with malformed program headers"));
        }
        let table = read_exact(file, phoff, u64::from(phentsize) * u64::from(phnum), "ELF")?;
        let (mut dynamic, mut interp) = (None, false);
        for ph in table.chunks_exact(usize::from(phentsize)) {
            match e.u32(ph, 0)? {
                PT_INTERP => interp = true,
                PT_DYNAMIC => {
                    let (offset, size) = if wide {
                        (e.u64(ph, 8)?, e.u64(ph, 32)?)
                    } else {
                        (u64::from(e.u32(ph, 4)?), u64::from(e.u32(ph, 16)?))
                    };
                    dynamic = Some((offset, size.min(MAX_DYNAMIC)));
                }
                _ => {}
            }
        }
        let Some((offset, size)) = dynamic else {
            return Err(not(
                "an ELF shared object without a dynamic section, which the loader cannot preload",
            ));
        };
        let section = read_exact(file, offset, size, "ELF")?;
        let (mut soname, mut pie) = (false, false);
        for d in section.chunks_exact(if wide { 16 } else { 8 }) {
            let tag = e.word(wide, d, 0)?;
            let value = e.word(wide, d, if wide { 8 } else { 4 })?;
            match tag {
                DT_NULL => break,
                DT_SONAME => soname = true,
                DT_FLAGS_1 => pie |= value & DF_1_PIE != 0,
                _ => {}
            }
        }
        if pie {
            Err(not(
                "a position-independent executable (ELF ET_DYN marked DF_1_PIE), not a shared library",
            ))
        } else if interp && !soname {
            Err(not(
                "a position-independent executable (ELF ET_DYN with an interpreter and no soname), \
                 not a shared library",
            ))
        } else {
            Ok(())
        }
    }

    /// A 64-bit little-endian Mach-O image at `offset`.
    pub(super) fn check_macho(file: &std::fs::File, offset: u64) -> Result<(), NotPreloadable> {
        let header = read_exact(file, offset, 16, "Mach-O")?;
        let e = Endian { big: false };
        if e.u32(&header, 0)? != 0xfeed_facf {
            return Err(not("not a 64-bit Mach-O image"));
        }
        let cpu = e.u32(&header, 4)?;
        if let Some(host) = host_macho_cpu()
            && cpu != host
        {
            return Err(not(format!(
                "a Mach-O file for another machine (cputype {cpu:#x}; this is {})",
                std::env::consts::ARCH
            )));
        }
        match e.u32(&header, 12)? {
            MH_DYLIB => Ok(()),
            MH_EXECUTE => Err(not("a Mach-O executable (MH_EXECUTE), not a dylib")),
            other => Err(not(format!(
                "a Mach-O file of type {other}, not a dylib (MH_DYLIB)"
            ))),
        }
    }

    /// A universal (fat) file whose first bytes are `head`: its slice for
    /// this machine must be a dylib.
    pub(super) fn check_fat(file: &std::fs::File, head: &[u8]) -> Result<(), NotPreloadable> {
        let e = Endian { big: true };
        let wide = e.u32(head, 0)? == 0xcafe_babf;
        let count = e.u32(head, 4)?;
        if count == 0 || count > MAX_SLICES {
            return Err(not("not a universal Mach-O file"));
        }
        let entry: u64 = if wide { 32 } else { 20 };
        let table = read_exact(file, 8, entry * u64::from(count), "universal Mach-O")?;
        let host = host_macho_cpu();
        for slice in table.chunks_exact(entry as usize) {
            let cpu = e.u32(slice, 0)?;
            let offset = if wide {
                e.u64(slice, 8)?
            } else {
                u64::from(e.u32(slice, 8)?)
            };
            if host.is_none_or(|h| h == cpu) {
                return check_macho(file, offset);
            }
        }
        Err(not(format!(
            "a universal Mach-O file with no slice for this machine ({})",
            std::env::consts::ARCH
        )))
    }
}

fn unsupported(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-bit little-endian ELF file of type `e_type` for this machine,
    /// with an interpreter if `interp` and a dynamic section of `dynamic`
    /// (tag, value) entries if given.
    fn elf(e_type: u16, interp: bool, dynamic: Option<&[(u64, u64)]>) -> Vec<u8> {
        let machine = object::host_elf_machine().unwrap_or(62);
        let mut phdrs: Vec<(u32, u64, u64)> = Vec::new();
        let mut tail = Vec::new();
        let phnum = usize::from(interp) + usize::from(dynamic.is_some());
        let data_at = 64 + 56 * phnum as u64;
        if interp {
            let path = b"/lib/ld.so\0";
            phdrs.push((3, data_at + tail.len() as u64, path.len() as u64));
            tail.extend_from_slice(path);
        }
        if let Some(entries) = dynamic {
            let at = data_at + tail.len() as u64;
            for &(tag, value) in entries.iter().chain([&(0, 0)]) {
                tail.extend_from_slice(&tag.to_le_bytes());
                tail.extend_from_slice(&value.to_le_bytes());
            }
            phdrs.push((2, at, data_at + tail.len() as u64 - at));
        }
        let mut b = vec![0x7f, b'E', b'L', b'F', 2, 1, 1];
        b.resize(16, 0);
        b.extend_from_slice(&e_type.to_le_bytes());
        b.extend_from_slice(&machine.to_le_bytes());
        b.resize(32, 0);
        b.extend_from_slice(&64u64.to_le_bytes()); // e_phoff
        b.resize(54, 0);
        b.extend_from_slice(&56u16.to_le_bytes()); // e_phentsize
        b.extend_from_slice(&(phnum as u16).to_le_bytes());
        b.resize(64, 0);
        for (p_type, offset, size) in phdrs {
            let mut ph = p_type.to_le_bytes().to_vec();
            ph.resize(8, 0);
            ph.extend_from_slice(&offset.to_le_bytes());
            ph.resize(32, 0);
            ph.extend_from_slice(&size.to_le_bytes());
            ph.resize(56, 0);
            b.extend_from_slice(&ph);
        }
        b.extend_from_slice(&tail);
        b
    }

    /// A 64-bit Mach-O header for this machine (arm64 elsewhere) of `filetype`.
    fn macho(filetype: u32) -> Vec<u8> {
        let mut b = 0xfeed_facfu32.to_le_bytes().to_vec();
        b.extend_from_slice(
            &object::host_macho_cpu()
                .unwrap_or(0x0100_000c)
                .to_le_bytes(),
        );
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&filetype.to_le_bytes());
        b.resize(32, 0);
        b
    }

    /// [`check_file`] on `bytes`, for macOS's loader or an ELF one.
    fn check(bytes: &[u8], macos: bool) -> Result<(), String> {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        check_file(&file, macos).map_err(|e| e.to_string())
    }

    const DT_SONAME: u64 = 14;
    const DT_FLAGS_1: u64 = 0x6fff_fffb;
    const DF_1_PIE: u64 = 0x0800_0000;

    #[test]
    fn a_shared_library_is_preloadable_and_a_pie_is_not() {
        // A library, with or without a soname; one with an interpreter too
        // (glibc's libc.so.6 runs as a program).
        assert_eq!(check(&elf(3, false, Some(&[])), false), Ok(()));
        assert_eq!(
            check(&elf(3, false, Some(&[(DT_SONAME, 1)])), false),
            Ok(())
        );
        assert_eq!(check(&elf(3, true, Some(&[(DT_SONAME, 1)])), false), Ok(()));
        // A PIE, as binutils and lld mark it, and as an older linker left it.
        let pie = check(&elf(3, true, Some(&[(DT_FLAGS_1, DF_1_PIE | 1)])), false);
        assert!(pie.as_ref().unwrap_err().contains("DF_1_PIE"), "{pie:?}");
        let static_pie = check(&elf(3, false, Some(&[(DT_FLAGS_1, DF_1_PIE)])), false);
        assert!(static_pie.is_err(), "{static_pie:?}");
        let old_pie = check(&elf(3, true, Some(&[])), false);
        assert!(
            old_pie.as_ref().unwrap_err().contains("no soname"),
            "{old_pie:?}"
        );
        // Neither a fixed-address executable nor an object without a
        // dynamic section, nor a truncated file.
        let exec = check(&elf(2, true, Some(&[])), false);
        assert!(exec.as_ref().unwrap_err().contains("ET_EXEC"), "{exec:?}");
        let no_dynamic = check(&elf(3, false, None), false);
        assert!(
            no_dynamic.as_ref().unwrap_err().contains("dynamic section"),
            "{no_dynamic:?}"
        );
        let whole = elf(3, false, Some(&[(DT_SONAME, 1)]));
        let cut = check(&whole[..whole.len() - 4], false);
        assert!(cut.as_ref().unwrap_err().contains("truncated"), "{cut:?}");
        // Another machine's library, where this machine's number is known.
        let mut other = whole.clone();
        other[18..20].copy_from_slice(&0xffffu16.to_le_bytes());
        if object::host_elf_machine().is_some() {
            let other = check(&other, false);
            assert!(
                other.as_ref().unwrap_err().contains("another machine"),
                "{other:?}"
            );
        }
        assert!(check(b"#!/bin/sh\n", false).is_err());
        assert!(check(b"", false).is_err());
    }

    #[test]
    fn a_dylib_is_preloadable_on_macos_only() {
        assert_eq!(check(&macho(6), true), Ok(()));
        let exe = check(&macho(2), true);
        assert!(exe.as_ref().unwrap_err().contains("MH_EXECUTE"), "{exe:?}");
        let bundle = check(&macho(8), true);
        assert!(bundle.is_err(), "{bundle:?}");
        // A universal file: its slice for this machine decides.
        let cpu = object::host_macho_cpu().unwrap_or(0x0100_000c);
        let fat = |filetype: u32| {
            let mut b = 0xcafe_babeu32.to_be_bytes().to_vec();
            b.extend_from_slice(&1u32.to_be_bytes());
            for field in [cpu, 3, 64, 32, 12] {
                b.extend_from_slice(&field.to_be_bytes());
            }
            b.resize(64, 0);
            b.extend_from_slice(&macho(filetype));
            b
        };
        assert_eq!(check(&fat(6), true), Ok(()));
        assert!(check(&fat(2), true).is_err());
        // A Java class file shares the universal magic.
        assert!(check(b"\xca\xfe\xba\xbe\x00\x00\x00\x34rest", true).is_err());
        // Each loader refuses the other's format, naming it.
        let elf_on_macos = check(&elf(3, false, Some(&[])), true);
        assert!(
            elf_on_macos.as_ref().unwrap_err().contains("an ELF file"),
            "{elf_on_macos:?}"
        );
        let macho_on_elf = check(&macho(6), false);
        assert!(
            macho_on_elf.as_ref().unwrap_err().contains("a Mach-O file"),
            "{macho_on_elf:?}"
        );
    }

    /// The real files: this OS's own libc and the built-in injector pass; an
    /// executable is refused.
    #[cfg(target_os = "linux")]
    #[test]
    fn libc_and_the_injector_pass_and_true_does_not() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let libc = maps
            .lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .find(|p| p.contains("/libc.so") || p.contains("/libc-"))
            .expect("a dynamically linked test binary maps libc");
        check_preloadable(Path::new(libc)).unwrap();
        if let Ok(written) = Library::INJECT.write() {
            check_preloadable(written.path()).unwrap();
        }
        let err = check_preloadable(Path::new("/usr/bin/true")).unwrap_err();
        assert!(err.to_string().contains("executable"), "{err}");
        let err = check_preloadable(Path::new("/no/such/file")).unwrap_err();
        assert!(matches!(err, NotPreloadable::Unreadable(_)), "{err}");
    }

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
