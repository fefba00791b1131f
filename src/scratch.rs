//! Scratch folders that are removed on every path out.
//!
//! A probe's folder lives under `$FDWINDOW_SCRATCH` when the runner sets it
//! (the runner removes that whole folder after the probe exits, however it
//! exits, SIGKILL included), else under the system temp folder. Drop removes
//! it, so unwinding from a panic cleans up too.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The variable through which the runner hands each probe its scratch root.
pub const SCRATCH_ENV: &str = "FDWINDOW_SCRATCH";

/// A fresh, exclusively created folder, removed with everything in it on drop.
#[derive(Debug)]
pub struct Scratch {
    dir: PathBuf,
    next: AtomicU64,
}

/// Makes names unique within this process; the pid makes them unique across
/// processes. A clock would not: macOS's wall clock ticks in microseconds.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

impl Scratch {
    /// Creates `<root>/fdwindow-<label>-<pid>-<n>`.
    pub fn new(label: &str) -> io::Result<Scratch> {
        let root = std::env::var_os(SCRATCH_ENV).map_or_else(std::env::temp_dir, PathBuf::from);
        Scratch::new_in(&root, label)
    }

    /// Creates a fresh folder under `root`.
    pub fn new_in(root: &Path, label: &str) -> io::Result<Scratch> {
        let pid = std::process::id();
        // A stale folder from a killed run with a recycled pid is skipped, not reused.
        for _ in 0..1000 {
            let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
            let dir = root.join(format!("fdwindow-{label}-{pid}-{n}"));
            match std::fs::create_dir(&dir) {
                Ok(()) => {
                    return Ok(Scratch {
                        dir,
                        next: AtomicU64::new(0),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("create {}: {e}", dir.display()),
                    ));
                }
            }
        }
        Err(io::Error::other(format!(
            "no free scratch name under {}",
            root.display()
        )))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A path inside the folder that no earlier call returned.
    pub fn fresh(&self, stem: &str) -> PathBuf {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.dir.join(format!("{stem}-{n}"))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_on_drop_and_on_panic() {
        let s = Scratch::new("test").unwrap();
        let dir = s.dir().to_owned();
        std::fs::write(s.fresh("f"), b"x").unwrap();
        assert_ne!(s.fresh("f"), s.fresh("f"));
        drop(s);
        assert!(!dir.exists());

        let dir = std::panic::catch_unwind(|| {
            let s = Scratch::new("test").unwrap();
            std::fs::write(s.fresh("f"), b"x").unwrap();
            std::panic::panic_any(s.dir().to_owned());
        })
        .unwrap_err()
        .downcast::<PathBuf>()
        .unwrap();
        assert!(!dir.exists(), "{} survived a panic", dir.display());
    }
}
