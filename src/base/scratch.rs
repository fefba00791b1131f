//! Scratch folders that are removed on every path out.
//!
//! A probe's folder lives under `$FDWINDOW_SCRATCH` when the runner sets it
//! (the runner removes that whole folder after the probe exits, however it
//! exits, SIGKILL included), else under the system temp folder. Drop removes
//! it, so unwinding from a panic cleans up too.
//!
//! A run's own folder ([`Scratch::new_swept`]) also survives its owner's
//! SIGKILL only until the next run starts:
//! 1. The run creates `.fdwindow-<label>-<pid>-<n>.new`, a name the sweeper
//!    ignores, and takes an exclusive `flock` on `LOCK` inside it.
//! 2. It renames the folder to `fdwindow-<label>-<pid>-<n>` and keeps the
//!    lock for its whole life; the kernel drops the lock when the process
//!    dies, however it dies.
//! 3. A run that starts tries the lock of every `fdwindow-<label>-*` folder
//!    without blocking, and removes those whose lock it gets: their owner
//!    is gone. A live folder's lock is always held (it was locked before it
//!    got a sweepable name), and a recycled pid holds no lock, so neither a
//!    live run nor a reused pid fools the sweeper.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The variable through which the runner hands each probe its scratch root.
pub const SCRATCH_ENV: &str = "FDWINDOW_SCRATCH";

/// A fresh, exclusively created folder, removed with everything in it on drop.
#[derive(Debug)]
pub struct Scratch {
    dir: PathBuf,
    next: AtomicU64,
    /// The lock a swept folder holds while it lives (see the module doc).
    lock: Option<std::fs::File>,
}

/// The lock file inside a swept scratch folder.
const LOCK: &str = ".lock";

/// Makes names unique within this process; the pid makes them unique across
/// processes. A clock would not: macOS's wall clock ticks in microseconds.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Where a probe's temporary files go: the scratch root the runner handed it
/// ([`SCRATCH_ENV`]: inside the run's own swept folder, so a killed run's
/// files go with that folder), else the temporary folder.
pub fn root() -> PathBuf {
    std::env::var_os(SCRATCH_ENV).map_or_else(std::env::temp_dir, PathBuf::from)
}

impl Scratch {
    /// Creates `<root>/fdwindow-<label>-<pid>-<n>` under [`root`].
    pub fn new(label: &str) -> io::Result<Scratch> {
        Scratch::new_in(&root(), label)
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
                        lock: None,
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

    /// Creates `<temp>/fdwindow-<label>-<pid>-<n>` locked and renamed into
    /// place as the module doc describes, after removing the folders of
    /// `label` that dead runs left behind. The folder is private (mode 0700).
    pub fn new_swept(label: &str) -> io::Result<Scratch> {
        Scratch::new_swept_in(&std::env::temp_dir(), label)
    }

    /// [`Scratch::new_swept`] under `root`.
    pub fn new_swept_in(root: &Path, label: &str) -> io::Result<Scratch> {
        sweep(root, label);
        let pid = std::process::id();
        for _ in 0..1000 {
            let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
            let name = format!("fdwindow-{label}-{pid}-{n}");
            let hidden = root.join(format!(".{name}.new"));
            let dir = root.join(&name);
            if dir.exists() {
                continue;
            }
            // Private from its creation (mkdir's mode, less the umask): a
            // run's folder may hold a preload library its commands load.
            match std::fs::DirBuilder::new().mode(0o700).create(&hidden) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("create {}: {e}", hidden.display()),
                    ));
                }
            }
            let locked = (|| -> io::Result<std::fs::File> {
                let file = std::fs::File::create_new(hidden.join(LOCK))?;
                file.try_lock().map_err(io::Error::from)?;
                std::fs::rename(&hidden, &dir)?;
                Ok(file)
            })();
            return match locked {
                Ok(file) => Ok(Scratch {
                    dir,
                    next: AtomicU64::new(0),
                    lock: Some(file),
                }),
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&hidden);
                    Err(io::Error::new(
                        e.kind(),
                        format!("set up {}: {e}", dir.display()),
                    ))
                }
            };
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
        if let Some(lock) = self.lock.take() {
            // Unlocked explicitly, then closed by the drop.
            let _ = lock.unlock();
        }
    }
}

/// Removes every `fdwindow-<label>-*` folder under `root` whose lock can be
/// taken: its run is gone. Folders it cannot judge are left alone.
pub fn sweep(root: &Path, label: &str) -> usize {
    let prefix = format!("fdwindow-{label}-");
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        // Only this module's names: `<pid>-<n>`.
        if rest.split('-').count() != 2 || !rest.split('-').all(|p| p.parse::<u64>().is_ok()) {
            continue;
        }
        let dir = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        // A folder of this scheme always has its lock file: it got its name
        // only after the lock was taken. One without is left alone.
        let Ok(file) = std::fs::OpenOptions::new().write(true).open(dir.join(LOCK)) else {
            continue;
        };
        if file.try_lock().is_ok() {
            if std::fs::remove_dir_all(&dir).is_ok() {
                removed += 1;
            }
            let _ = file.unlock();
        }
    }
    removed
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

    #[test]
    fn sweeper_takes_dead_folders_only() {
        let root = Scratch::new("sweep-root").unwrap();
        let live = Scratch::new_swept_in(root.dir(), "t").unwrap();
        let name = live
            .dir()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with("fdwindow-t-"), "{name}");
        assert!(live.dir().join(LOCK).exists());
        // Private: a run's folder may hold the library its commands preload.
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(live.dir()).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o700, "a swept folder is not private");
        // A live folder is never taken, whoever sweeps.
        assert_eq!(sweep(root.dir(), "t"), 0);
        assert!(live.dir().exists());
        // A dead run's folder: its lock file is there but nobody holds it.
        let dead = root.dir().join("fdwindow-t-4000000-7");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(LOCK), b"").unwrap();
        std::fs::write(dead.join("left-behind"), b"x").unwrap();
        // Names outside the scheme, and a folder still being set up, stay.
        let other = root.dir().join("fdwindow-t-not-ours");
        std::fs::create_dir(&other).unwrap();
        let setting_up = root.dir().join(".fdwindow-t-4000000-8.new");
        std::fs::create_dir(&setting_up).unwrap();
        std::fs::write(setting_up.join(LOCK), b"").unwrap();
        let next = Scratch::new_swept_in(root.dir(), "t").unwrap();
        assert!(!dead.exists(), "a dead run's folder survived the sweep");
        assert!(live.dir().exists() && next.dir().exists());
        assert!(other.exists() && setting_up.exists());
        let live_dir = live.dir().to_owned();
        drop(live);
        assert!(!live_dir.exists());
    }
}
