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
//!    judges by its pid alone (it removes it only once no process has that
//!    pid: a run killed here leaves it), and takes an exclusive `flock` on
//!    `LOCK` inside it.
//! 2. It renames the folder to `fdwindow-<label>-<pid>-<n>` and keeps the
//!    lock for its whole life; the kernel drops the lock when the process
//!    dies, however it dies.
//! 3. A run that starts tries the lock of every `fdwindow-<label>-*` folder
//!    without blocking, and removes those whose lock it gets: their owner
//!    is gone. A live folder's lock is always held (it was locked before it
//!    got a sweepable name), and a recycled pid holds no lock, so neither a
//!    live run nor a reused pid fools the sweeper. A folder whose lock file
//!    is gone (its owner was killed while removing it) is judged by its pid,
//!    as in step 1: a reused pid only keeps it until that process ends. The
//!    pid rule holds within one pid namespace, so runs in containers that
//!    share one temporary folder need their own TMPDIR.

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
/// taken (its run is gone), and every one with no lock file, half-made
/// (`.fdwindow-<label>-*.new`) or half-removed, whose pid no process has
/// (the module doc). Folders it cannot judge are left alone.
pub fn sweep(root: &Path, label: &str) -> usize {
    let prefix = format!("fdwindow-{label}-");
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        let (rest, half_made) = match name.strip_prefix('.').and_then(|n| n.strip_suffix(".new")) {
            Some(hidden) => (hidden.strip_prefix(&prefix), true),
            None => (name.strip_prefix(&prefix), false),
        };
        // Only this module's names: `<pid>-<n>`.
        let Some((pid, n)) = rest.and_then(|r| r.split_once('-')) else {
            continue;
        };
        let (Ok(pid), Ok(_)) = (pid.parse::<i32>(), n.parse::<u64>()) else {
            continue;
        };
        let dir = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let lock = std::fs::OpenOptions::new().write(true).open(dir.join(LOCK));
        // A folder with no lock to judge it by is dead when its creator is:
        // one its run was killed in the middle of making (step 1 of the
        // module doc), or of removing (its lock file already removed). A
        // recycled pid only keeps it until that process ends.
        let no_lock = matches!(&lock, Err(e) if e.kind() == io::ErrorKind::NotFound);
        if half_made || no_lock {
            if !process_exists(pid) && std::fs::remove_dir_all(&dir).is_ok() {
                removed += 1;
            }
            continue;
        }
        let Ok(file) = lock else {
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

/// Whether `pid` names a process (`kill(2)` with signal 0: only ESRCH says
/// none does; EPERM is another user's live process). A number that is no
/// process id (0, negative) is taken as existing, so nothing is removed on
/// its account. Pids speak for this pid namespace only: a sweeper in
/// another container sharing the folder would take a live creator for dead.
pub fn process_exists(pid: i32) -> bool {
    rustix::process::Pid::from_raw(pid)
        .is_none_or(|pid| rustix::process::test_kill_process(pid) != Err(rustix::io::Errno::SRCH))
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
        // Names outside the scheme, and a folder a live run is still
        // setting up, stay; one a dead run was setting up goes.
        let other = root.dir().join("fdwindow-t-not-ours");
        std::fs::create_dir(&other).unwrap();
        let setting_up = root
            .dir()
            .join(format!(".fdwindow-t-{}-8.new", std::process::id()));
        std::fs::create_dir(&setting_up).unwrap();
        std::fs::write(setting_up.join(LOCK), b"").unwrap();
        // Above Linux's largest pid_max (2^22): no process has it.
        let half_made = root.dir().join(".fdwindow-t-4194305-9.new");
        std::fs::create_dir(&half_made).unwrap();
        // A live run's folder without its lock file (its owner is removing
        // it) stays; one a dead run was killed while removing goes.
        let removing = root
            .dir()
            .join(format!("fdwindow-t-{}-11", std::process::id()));
        std::fs::create_dir(&removing).unwrap();
        let half_removed = root.dir().join("fdwindow-t-4194305-10");
        std::fs::create_dir(&half_removed).unwrap();
        let next = Scratch::new_swept_in(root.dir(), "t").unwrap();
        assert!(!dead.exists(), "a dead run's folder survived the sweep");
        assert!(
            !half_removed.exists(),
            "a dead run's half-removed folder survived"
        );
        assert!(
            !half_made.exists(),
            "a dead run's half-made folder survived"
        );
        assert!(live.dir().exists() && next.dir().exists());
        assert!(other.exists() && setting_up.exists() && removing.exists());
        let live_dir = live.dir().to_owned();
        drop(live);
        assert!(!live_dir.exists());
    }
}
