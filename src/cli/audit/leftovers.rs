//! What the audited tests leave behind in their working folders.
//!
//! A test that writes `./target/create.persy`, fails before its cleanup and
//! refuses to start while the file exists fails in every later run, alone
//! too, once a held copy has broken it once: the audit would call it
//! `fails-alone`, and leave the user a tree whose `cargo test` fails. So the
//! folders the tests run in (each binary's package folder) are listed when
//! the audit begins, to [`DEPTH`] levels. A path that appears in the
//! package's `target/` afterwards (cargo's scratch space, where such tests
//! write and nobody edits) is removed after each failing run (when no other
//! run is in flight) and when the audit ends; one that appears elsewhere is
//! only reported (an editor's swap file may appear there too). Only paths
//! that did not exist when the audit began; never through a symbolic link;
//! never outside those folders.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, RwLock, RwLockReadGuard};

/// The one folder of a package whose new paths are removed.
const SWEPT: &str = "target";

/// How deep below each folder paths are listed: the folder itself and its
/// folders' entries (`./scratch.db`, `./target/create.persy`), where tests
/// write with relative paths. Deeper paths appear inside a new folder, which
/// goes whole, or inside an old one, which is left as it is.
const DEPTH: usize = 2;

/// The folders' listings when the audit began, and what was removed since.
pub(super) struct Leftovers {
    roots: Vec<(PathBuf, BTreeSet<PathBuf>)>,
    /// Held (shared) by every run while it runs; a sweep takes it whole, so
    /// it never removes what a running test has just made.
    running: RwLock<()>,
    removed: Mutex<BTreeSet<PathBuf>>,
    /// New paths outside `target/`, left where they are.
    left: Mutex<BTreeSet<PathBuf>>,
    /// The audit's own outputs (`--keep-failures`), never removed.
    spared: Vec<PathBuf>,
}

impl Leftovers {
    /// Lists `folders` (each once) as they are now; nothing at or below a
    /// path of `spared` is ever removed.
    pub(super) fn snapshot<'a>(
        folders: impl IntoIterator<Item = &'a Path>,
        spared: &[PathBuf],
    ) -> Leftovers {
        let mut seen = BTreeSet::new();
        let roots = folders
            .into_iter()
            .filter(|f| seen.insert(f.to_path_buf()))
            .map(|f| (f.to_path_buf(), listing(f)))
            .collect();
        Leftovers {
            roots,
            running: RwLock::new(()),
            removed: Mutex::new(BTreeSet::new()),
            left: Mutex::new(BTreeSet::new()),
            spared: spared
                .iter()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
                .collect(),
        }
    }

    /// Held for the length of one run.
    pub(super) fn run_guard(&self) -> RwLockReadGuard<'_, ()> {
        self.running.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes what appeared since the snapshot, unless a run is in flight
    /// (then a later sweep does it).
    pub(super) fn sweep_if_idle(&self) {
        if let Ok(_all) = self.running.try_write() {
            self.remove_new();
        }
    }

    /// Removes what appeared in `target/` since the snapshot, waiting for
    /// any run in flight to end; every path removed so far and every new
    /// path left elsewhere, relative to its folder.
    pub(super) fn sweep(&self) -> Swept {
        let _all = self.running.write().unwrap_or_else(|e| e.into_inner());
        self.remove_new();
        let all = |m: &Mutex<BTreeSet<PathBuf>>| {
            m.lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .cloned()
                .collect()
        };
        Swept {
            removed: all(&self.removed),
            left: all(&self.left),
        }
    }

    fn remove_new(&self) {
        for (root, before) in &self.roots {
            for path in listing(root).difference(before) {
                let full = root.join(path);
                if self
                    .spared
                    .iter()
                    .any(|s| full.starts_with(s) || s.starts_with(&full))
                {
                    continue;
                }
                if !path.starts_with(SWEPT) || path == Path::new(SWEPT) {
                    self.left
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(path.clone());
                    continue;
                }
                // A path inside a new folder went with it.
                let Ok(meta) = std::fs::symlink_metadata(&full) else {
                    continue;
                };
                let gone = if meta.is_dir() {
                    std::fs::remove_dir_all(&full)
                } else {
                    std::fs::remove_file(&full)
                };
                if gone.is_ok() {
                    self.removed
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(path.clone());
                }
            }
        }
    }
}

/// What [`Leftovers::sweep`] found.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Swept {
    /// Removed from `target/`.
    pub(super) removed: Vec<PathBuf>,
    /// Left where they are, outside `target/`.
    pub(super) left: Vec<PathBuf>,
}

/// Every way out of the audit (an error, an interrupt) leaves the folders as
/// they were too.
impl Drop for Leftovers {
    fn drop(&mut self) {
        self.remove_new();
    }
}

/// The paths below `root` to [`DEPTH`] levels, relative to it, in order
/// (a folder before what is in it); `.git` and symbolic links' targets are
/// not entered.
fn listing(root: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut next = vec![(PathBuf::new(), 0)];
    while let Some((rel, depth)) = next.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = rel.join(entry.file_name());
            let dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if dir && depth + 1 < DEPTH && entry.file_name() != ".git" {
                next.push((path.clone(), depth + 1));
            }
            out.insert(path);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_only_what_appeared_and_only_when_no_run_is_in_flight() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("target/old")).unwrap();
        std::fs::write(root.join("Cargo.toml"), "").unwrap();
        std::fs::write(root.join("target/kept.db"), "").unwrap();
        let kept = root.join("failures");
        let left = Leftovers::snapshot([root, root], std::slice::from_ref(&kept));

        std::fs::write(root.join("target/create.persy"), "").unwrap();
        std::fs::create_dir_all(root.join("target/scratch/deep")).unwrap();
        std::fs::write(root.join("target/scratch/deep/file"), "").unwrap();
        // Outside target/: reported, never removed.
        std::fs::write(root.join(".Cargo.toml.swp"), "").unwrap();
        // Deeper than the listing, inside a folder that was there: left.
        std::fs::write(root.join("target/old/new"), "").unwrap();
        std::fs::remove_file(root.join("target/kept.db")).unwrap();
        // The audit's own output folder (--keep-failures), made after the listing.
        std::fs::create_dir(&kept).unwrap();
        std::fs::write(kept.join("run-1.log"), "").unwrap();

        let running = left.run_guard();
        left.sweep_if_idle();
        assert!(
            root.join("target/create.persy").exists(),
            "a run was in flight"
        );
        drop(running);

        let swept = left.sweep();
        assert_eq!(
            swept.removed,
            [
                PathBuf::from("target/create.persy"),
                PathBuf::from("target/scratch")
            ]
        );
        assert_eq!(swept.left, [PathBuf::from(".Cargo.toml.swp")]);
        assert!(!root.join("target/scratch").exists());
        assert!(root.join(".Cargo.toml.swp").exists());
        assert!(root.join("target/old/new").exists());
        assert!(root.join("Cargo.toml").exists());
        assert!(kept.join("run-1.log").exists());
    }

    #[test]
    fn never_follows_a_link_out_of_the_folder() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("precious"), "").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let left = Leftovers::snapshot([dir.path()], &[]);
        std::fs::create_dir(dir.path().join("target")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("target/link")).unwrap();
        let swept = left.sweep();
        assert_eq!(swept.removed, [PathBuf::from("target/link")]);
        assert_eq!(swept.left, [PathBuf::from("target")]);
        assert!(outside.path().join("precious").exists());
    }
}
