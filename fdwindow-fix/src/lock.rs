//! Releasing a flock so that it is released for every copy of the descriptor.
//!
//! Closing a locked file releases its flock only when the last copy of the
//! open file description goes; a child between fork and exec (or one that
//! inherited the descriptor) keeps it. `flock(LOCK_UN)` releases it through
//! any copy. Backed by `flock-survival unlock-then-close`, `std-unlock` and
//! `fs2-unlock`.

use std::fs::File;
use std::io;

use crate::base::locks::flock;

/// Unlocks `file` with `flock(LOCK_UN)`, then closes it.
///
/// Works for locks taken by std's `File::lock`, fs2's `FileExt::lock_*` and
/// raw `flock(2)` alike: all three are flock locks.
///
/// ```
/// use std::fs::File;
/// let dir = std::env::temp_dir().join(format!("fdwindow-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let file = File::create(dir.join("lock"))?;
/// file.lock()?;
/// // ... critical section ...
/// fdwindow_fix::lock::unlock_then_close(file)?; // free now, even if a child holds a copy
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn unlock_then_close(file: File) -> io::Result<()> {
    flock(&file, libc::LOCK_UN)
}

/// An exclusive flock that is released with `LOCK_UN` when dropped, so a
/// child's copy of the descriptor cannot keep it.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("fdwindow-doc-guard-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// {
///     let _guard = fdwindow_fix::lock::ExclusiveLock::acquire(&dir.join("lock"))?;
///     // ... critical section ...
/// } // unlocked here, for every copy
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct ExclusiveLock {
    file: File,
}

impl ExclusiveLock {
    /// Opens (creating if needed) and locks `path`, waiting for the lock.
    pub fn acquire(path: &std::path::Path) -> io::Result<ExclusiveLock> {
        let file = crate::base::locks::open_rw(path)?;
        flock(&file, libc::LOCK_EX)?;
        Ok(ExclusiveLock { file })
    }

    /// The locked file.
    pub fn file(&self) -> &File {
        &self.file
    }
}

impl Drop for ExclusiveLock {
    fn drop(&mut self) {
        // Nothing useful can be done with an error here; the close that
        // follows still releases the lock when no copy exists.
        let _ = flock(&self.file, libc::LOCK_UN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::child::HeldChild;
    use crate::base::locks::flock_is_held;
    use crate::base::scratch::Scratch;

    #[test]
    fn released_while_a_child_holds_a_copy() {
        let _serial = crate::test_serial();
        let s = Scratch::new("fix-lock").unwrap();
        let (a, b) = (s.fresh("a"), s.fresh("b"));
        let file = crate::base::locks::open_rw(&a).unwrap();
        flock(&file, libc::LOCK_EX).unwrap();
        let guard = ExclusiveLock::acquire(&b).unwrap();
        let held = HeldChild::hold().unwrap();
        unlock_then_close(file).unwrap();
        drop(guard);
        assert!(
            !flock_is_held(&a).unwrap(),
            "unlock_then_close left the lock held"
        );
        assert!(
            !flock_is_held(&b).unwrap(),
            "ExclusiveLock's drop left the lock held"
        );
        held.release().unwrap();
    }
}
