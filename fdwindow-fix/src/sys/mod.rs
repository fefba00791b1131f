//! Everything that differs between operating systems, one file per OS chosen
//! here and nowhere else. Callers detect features at run time: a constant being
//! defined here says the OS may have the call, not that this kernel does.
//!
//! The lowest layer: takes in descriptors, paths and plain settings (the types
//! it needs, such as a holder scan's [`Object`] or an isolated spawn's
//! settings, are defined here); gives out the calls' results and `io::Error`s.
//! It imports nothing else from the crate.

// Pure helpers the OS files use, compiled everywhere so they are tested here.
mod compat;

// The one `pre_exec`: the code a forked child runs before exec, the same on
// every Unix (std's `CommandExt`), re-exported at the crate root.
pub mod child_hook;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::*;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
pub use macos::*;

// POSIX wrappers shared by every OS (posix_spawn; wait, kill, poll via rustix).
mod posix;
pub use posix::*;

// Other Unixes compile; their probes report `unsupported` where a call is missing.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod other;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub use other::*;

/// Whether child `pid`'s descriptor `fd` is this process's `fd`, the same
/// open file: the copy a fork or an exec'd child inherits keeps its number
/// ([`same_open_file_as`] compares a copy passed to another number).
pub fn same_open_file(pid: u32, fd: std::os::fd::RawFd) -> std::io::Result<bool> {
    same_open_file_as(pid, fd, fd)
}

/// What identifies one open object across processes, as a holder scan
/// (`fdwindow`'s `hazards::holders`) compares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Object {
    /// A file (or, on Linux, any descriptor: sockets have a sockfs inode):
    /// `stat(2)`'s device and inode.
    Inode {
        /// `st_dev`.
        dev: u64,
        /// `st_ino`.
        ino: u64,
    },
    /// A socket on macOS, where `fstat` gives sockets no inode: xnu's opaque
    /// per-socket handle (`soi_so`, a hash of the socket's address), the same
    /// through every descriptor of that socket in every process.
    Socket(u64),
}

/// How one of a child's stdio descriptors is set up: `fix::spawn::Stdio`, as
/// the platform's `spawn_isolated` reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnStdio {
    /// The parent's own descriptor.
    Inherit,
    /// `/dev/null`.
    Null,
    /// A pipe to the parent.
    Piped,
}

/// The settings of a `fix::spawn::Command` that the platform's
/// `spawn_isolated` reads: the program, its arguments and environment, and
/// which descriptors the child keeps.
#[derive(Clone, Debug)]
pub struct IsolatedSpawn {
    pub program: std::ffi::OsString,
    pub args: Vec<std::ffi::OsString>,
    pub env_clear: bool,
    pub env: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)>,
    pub cwd: Option<std::path::PathBuf>,
    pub keep: Vec<std::os::fd::RawFd>,
    /// Linux: walk `/proc/self/fd` even where `close_range` works.
    pub walk_fds: bool,
    /// The probe's sham: the same spawn path with the close-on-exec step off.
    pub sham: bool,
}

/// What `spawn_isolated` started: the child and the parent's ends of its
/// piped stdio.
#[derive(Debug)]
pub struct Spawned {
    pub stdin: Option<std::process::ChildStdin>,
    pub stdout: Option<std::process::ChildStdout>,
    pub stderr: Option<std::process::ChildStderr>,
    pub process: SpawnedProcess,
}

// Holder scans: Linux walks /proc, macOS asks libproc; elsewhere the scan
// reports ENOSYS, which the probes show as unsupported.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod no_scan {
    use super::Object;

    fn no_scan<T>() -> std::io::Result<T> {
        Err(std::io::Error::from_raw_os_error(libc::ENOSYS))
    }

    /// A file's identity, as `stat(2)` gives it.
    pub fn inode_object(dev: u64, ino: u64) -> Object {
        Object::Inode { dev, ino }
    }

    /// Unsupported here: see `no_scan`.
    pub fn object_of(_fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<Object> {
        no_scan()
    }

    /// Unsupported here: see `no_scan`.
    pub fn holders_of_object(_object: Object) -> std::io::Result<Vec<u32>> {
        no_scan()
    }

    /// Unsupported here: see `no_scan`.
    pub fn exe_of(_pid: u32) -> std::io::Result<std::path::PathBuf> {
        no_scan()
    }

    /// Unsupported here: see `no_scan`.
    pub fn children_of(_parent: u32) -> std::io::Result<Vec<u32>> {
        no_scan()
    }
}
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub use no_scan::*;

/// Whether the C library this process runs with has the function `name`:
/// `dlsym(RTLD_DEFAULT, name)`, at run time, since the headers a binary was
/// built with say nothing about the libc it runs on (a missing weak import
/// is NULL on macOS; glibc adds calls release by release).
///
/// # References
/// - <https://man7.org/linux/man-pages/man3/dlsym.3.html>
pub fn has_function(name: &std::ffi::CStr) -> bool {
    symbol(name).is_some()
}

/// `dlsym(RTLD_DEFAULT, name)`: the address of `name` in any image loaded
/// into this process, or `None`. The one lookup every caller shares; turning
/// the address into a typed function or object is the caller's (unsafe) step.
///
/// # References
/// - <https://man7.org/linux/man-pages/man3/dlsym.3.html>
/// - <https://developer.apple.com/library/archive/documentation/System/Conceptual/ManPages_iPhoneOS/man3/dlsym.3.html>
pub fn symbol(name: &std::ffi::CStr) -> Option<std::ptr::NonNull<libc::c_void>> {
    // SAFETY: dlsym with a NUL-terminated name; RTLD_DEFAULT searches every
    // loaded image and only reads.
    std::ptr::NonNull::new(unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) })
}

/// Whether the dynamic loader can load the library at `path` into this
/// process: `dlopen(path, RTLD_NOW | RTLD_LOCAL)`, its error text
/// (`dlerror`) when it cannot. A library that loads stays loaded (no
/// `dlclose`: an interposer's tuples must not point into an unmapped image);
/// `RTLD_LOCAL` keeps its symbols out of `dlsym(RTLD_DEFAULT)`. For a smoke
/// test before naming it in the loader's preload variable: macOS's dyld halts
/// a process whose inserted library cannot load, before `main`.
///
/// # References
/// - <https://man7.org/linux/man-pages/man3/dlopen.3.html>
pub fn try_load(path: &std::path::Path) -> std::io::Result<()> {
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    // SAFETY: loading runs the library's initialisers in this process; the
    // callers pass fdwindow's own shims, whose constructors only read the
    // environment. The handle is never used again, so it needs no lifetime.
    match unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) } {
        Ok(library) => {
            // Never dlclose'd (above): the handle is dropped unclosed.
            let _ = library.into_raw();
            Ok(())
        }
        // libloading's own text is "dlopen failed"; the loader's reason
        // (dlerror) is its source.
        Err(e) => Err(std::io::Error::other(
            std::error::Error::source(&e).map_or(e.to_string(), |why| why.to_string()),
        )),
    }
}

/// A descriptor that a creating call made inside `sys` has just returned,
/// on its way to becoming an [`OwnedFd`](std::os::fd::OwnedFd): the one
/// place in the crate that takes ownership of a bare number.
///
/// # Invariant
///
/// A `FreshFd` holds a number that the kernel returned a moment ago, in this
/// process, as a new descriptor (a call's `-1` has already become its error,
/// as in `FreshFd::pair` or nix's `Result`), and that nothing else
/// owns: no `OwnedFd`, `File` or socket was made from it and nobody closed
/// it. That is the contract of `OwnedFd::from_raw_fd` (an open descriptor
/// with no other owner), so [`FreshFd::own`] is safe. The type enforces it
/// by where it can be made: the field is private and so are the
/// constructors, so only code in `sys` and its per-OS modules can build one,
/// and it does so only with the result of the call it just made; code
/// outside `sys` gets the `OwnedFd`, never the number in between.
#[derive(Debug)]
struct FreshFd(libc::c_int);

impl FreshFd {
    /// The two descriptors a pipe call just wrote into `fds`, if it
    /// succeeded (`rc` is its result: `0`, or `-1` with `errno` set).
    #[cfg(target_os = "macos")]
    fn pair(
        rc: libc::c_int,
        fds: [libc::c_int; 2],
    ) -> std::io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
        if rc < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok((FreshFd(fds[0]).own(), FreshFd(fds[1]).own()))
        }
    }

    /// Takes ownership: the crate's one `from_raw_fd`.
    fn own(self) -> std::os::fd::OwnedFd {
        // SAFETY: the type's invariant: a descriptor the kernel just created
        // in this process, open, and owned by nothing else.
        unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(self.0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_load_names_the_loaders_reason_for_a_file_that_is_no_library() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("libgarbage.so");
        std::fs::write(&garbage, b"not a shared library").unwrap();
        let why = try_load(&garbage).unwrap_err().to_string();
        assert!(why.contains("libgarbage.so"), "{why}");
        // The C library this process already runs with loads.
        let libc = if cfg!(target_os = "macos") {
            Some("/usr/lib/libSystem.B.dylib")
        } else {
            cfg!(target_env = "gnu").then_some("libc.so.6")
        };
        if let Some(libc) = libc {
            try_load(std::path::Path::new(libc)).unwrap();
        }
    }
}
