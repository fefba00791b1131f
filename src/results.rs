//! The results folder: loading every `results/*.json`, and writing files
//! atomically (a temp file in the same folder, fsync, rename), so a failed or
//! interrupted run never leaves a half-written or emptied file behind.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::report::ResultsFile;

/// A results file that could not be used, with its path.
#[derive(Debug)]
pub struct BadResults {
    /// The file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub problem: String,
}

impl std::fmt::Display for BadResults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

/// Loads one results file; `Ok(None)` when it does not exist.
pub fn load(path: &Path) -> Result<Option<ResultsFile>, BadResults> {
    load_with(path, ResultsFile::from_json)
}

/// Reads and parses one JSON document with `parse`; `Ok(None)` when the file
/// does not exist. Shared by every kind of file in the results folder.
pub fn load_with<T>(
    path: &Path,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<Option<T>, BadResults> {
    let bad = |problem: String| BadResults {
        path: path.to_owned(),
        problem,
    };
    match fs::read_to_string(path) {
        Ok(text) => parse(&text).map(Some).map_err(bad),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(bad(e.to_string())),
    }
}

/// The paths in `dir` that `keep` accepts, sorted; a missing folder has none.
pub fn list(dir: &Path, keep: impl Fn(&Path) -> bool) -> Result<Vec<PathBuf>, BadResults> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(BadResults {
                path: dir.to_owned(),
                problem: e.to_string(),
            });
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| keep(p))
        .collect();
    paths.sort();
    Ok(paths)
}

/// Loads every `*.json` in `dir` but the costs files, sorted by platform id.
/// A missing folder holds none.
pub fn load_dir(dir: &Path) -> Result<Vec<ResultsFile>, BadResults> {
    // Costs files (`costs-*.json`) have a schema of their own: crate::costs.
    let paths = list(dir, |p| {
        p.extension().is_some_and(|x| x == "json") && !crate::costs::is_costs_file(p)
    })?;
    let mut files = Vec::new();
    for path in paths {
        let file = load(&path)?.expect("listed file vanished");
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        if stem.as_deref() != Some(file.platform.id.as_str()) {
            return Err(BadResults {
                path,
                problem: format!(
                    "holds platform {}, so it must be named {}.json",
                    file.platform.id, file.platform.id
                ),
            });
        }
        files.push(file);
    }
    files.sort_by(|a, b| a.platform.id.cmp(&b.platform.id));
    Ok(files)
}

/// Writes `contents` to `path` atomically: readers see the old file or the
/// new one, never a part. The temporary file's name is predictable, so it is
/// made with `O_CREAT|O_EXCL` (which never follows a symbolic link, open(2))
/// after removing whatever has that name: in a shared folder such as /tmp a
/// planted link cannot make this write through it into another file.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        // A stale temp of ours, or a planted link (removed, not followed).
        match fs::remove_file(&tmp) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|e| io::Error::new(e.kind(), format!("write {}: {e}", path.display())))
}

/// Fails early, before any probe runs, if `dir` cannot take a results file.
pub fn check_writable(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("create {}: {e}", dir.display())))?;
    write_atomic(&dir.join(".fdwindow-write-check"), b"")?;
    fs::remove_file(dir.join(".fdwindow-write-check"))
}

/// Merges results files: for each platform, each probe's most recent report
/// wins (by its start time). Used to combine the files that CI runners on
/// different OSes upload into one results folder.
pub fn merge(files: Vec<ResultsFile>) -> Vec<ResultsFile> {
    let mut merged: Vec<ResultsFile> = Vec::new();
    for file in files {
        match merged
            .iter_mut()
            .find(|m| m.platform.id == file.platform.id)
        {
            None => merged.push(file),
            Some(into) => {
                for (hazard, report) in file.probes {
                    let newer = into
                        .probes
                        .get(&hazard)
                        .is_none_or(|old| report.started_at > old.started_at);
                    if newer {
                        into.probes.insert(hazard, report);
                    }
                }
            }
        }
    }
    merged.sort_by(|a, b| a.platform.id.cmp(&b.platform.id));
    merged
}

/// Every results file under `path` (a file, or a folder searched recursively).
pub fn collect(path: &Path) -> Result<Vec<ResultsFile>, BadResults> {
    let meta = fs::metadata(path).map_err(|e| BadResults {
        path: path.to_owned(),
        problem: e.to_string(),
    })?;
    if meta.is_file() {
        return Ok(vec![load(path)?.expect("file exists")]);
    }
    let mut entries: Vec<PathBuf> = fs::read_dir(path)
        .map_err(|e| BadResults {
            path: path.to_owned(),
            problem: e.to_string(),
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    let mut files = Vec::new();
    for p in entries {
        if p.is_dir() {
            files.extend(collect(&p)?);
        } else if p.extension().is_some_and(|x| x == "json")
            && !crate::costs::is_costs_file(&p)
            && !p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            files.push(load(&p)?.expect("listed file exists"));
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scratch::Scratch;

    #[test]
    fn atomic_write_replaces_whole_files_and_leaves_no_temp() {
        let s = Scratch::new("results").unwrap();
        let path = s.dir().join("a.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(fs::read_dir(s.dir()).unwrap().count(), 1);
        assert!(load_dir(&s.dir().join("missing")).unwrap().is_empty());
        let err = load(&path).unwrap_err();
        assert!(err.to_string().contains("not JSON"), "{err}");
    }

    #[test]
    fn a_link_planted_at_the_temp_name_is_not_written_through() {
        let s = Scratch::new("results-link").unwrap();
        let victim = s.dir().join("victim");
        fs::write(&victim, b"precious").unwrap();
        let path = s.dir().join("lib.so");
        let tmp = s.dir().join(format!(".lib.so.tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        write_atomic(&path, b"library bytes").unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert_eq!(fs::read(&path).unwrap(), b"library bytes");
        assert!(fs::symlink_metadata(&path).unwrap().file_type().is_file());
        assert!(!tmp.exists() && fs::symlink_metadata(&tmp).is_err());
    }
}
