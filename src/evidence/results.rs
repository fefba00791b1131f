//! The results folder: loading every `results/*.json`, and writing files
//! atomically (a temp file in the same folder, fsync, rename), so a failed or
//! interrupted run never leaves a half-written or emptied file behind.
//!
//! Writers take [`FolderLock`] for the whole read-merge-write, so two runs on
//! one folder at once both land: each re-reads the file under the lock and
//! merges only the reports it measured itself.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result, usage};
use crate::report::ResultsFile;

/// Checks a document's `"schema"` against the version this build reads:
/// a missing field, a value that is no version, a newer schema and an older
/// one each get their own one-line message; an older one names `regenerate`,
/// the command that writes the current schema.
pub fn check_schema(
    head: &serde_json::Value,
    current: u32,
    kind: &str,
    regenerate: &str,
) -> Result<()> {
    let Some(field) = head.get("schema") else {
        return Err(usage!("no \"schema\" field: not an fdwindow {kind} file"));
    };
    match field.as_u64() {
        None => Err(usage!(
            "\"schema\" is {field}, not a version number: not an fdwindow {kind} file"
        )),
        Some(v) if v > u64::from(current) => Err(usage!(
            "schema {v} is newer than this fdwindow reads ({current}); upgrade fdwindow"
        )),
        Some(v) if v < u64::from(current) => Err(usage!(
            "schema {v} is older than this fdwindow reads ({current}); regenerate it with `{regenerate}`"
        )),
        Some(_) => Ok(()),
    }
}

/// Loads one results file; `Ok(None)` when it does not exist.
pub fn load(path: &Path) -> Result<Option<ResultsFile>, Error> {
    load_with(path, parse)
}

/// Parses and checks a results document as every reader of the folder
/// must, since each may rewrite or merge from what it read: strictly (no
/// repeated key, nothing a rewrite would drop: [`strict_json`]), valid
/// ([`ResultsFile::from_value`]: each report under its own hazard), and every
/// report run on the file's own platform. A file with another platform's
/// report is refused rather than mended: which file the report belongs in,
/// and whether it is newer than the one there, is for a person to decide.
///
/// [`strict_json`]: crate::evidence::strict_json
pub fn parse(text: &str) -> Result<ResultsFile> {
    use crate::evidence::strict_json;
    let doc = strict_json::parse(text)?;
    let file = ResultsFile::from_value(doc.clone())?;
    strict_json::kept(&doc, &file)?;
    if let Some((hazard, r)) = file
        .probes
        .iter()
        .find(|(_, r)| r.platform.id != file.platform.id)
    {
        return Err(usage!(
            "the {hazard} report ran on platform {}, not on this file's {}",
            r.platform.id,
            file.platform.id
        ));
    }
    Ok(file)
}

/// Fails unless `dir` is a folder (one that is not there yet passes when
/// `missing_ok`: a writer creates it). A read command passes `false`: there a
/// missing folder is a mistyped path, not an empty results folder.
pub fn check_folder(dir: &Path, missing_ok: bool) -> Result<()> {
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(usage!(
            "results folder {} is not a directory",
            dir.display()
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound && missing_ok => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(usage!("results folder {} does not exist", dir.display()))
        }
        Err(e) => Err(usage!("results folder {}: {e}", dir.display())),
    }
}

/// Reads and parses one JSON document with `parse`; `Ok(None)` when the file
/// does not exist. Shared by every kind of file in the results folder.
pub fn load_with<T>(
    path: &Path,
    parse: impl FnOnce(&str) -> Result<T>,
) -> Result<Option<T>, Error> {
    let bad = |problem: Error| Error::BadFile {
        path: path.to_owned(),
        problem: problem.to_string(),
    };
    match fs::read_to_string(path) {
        Ok(text) => parse(&text).map(Some).map_err(bad),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(bad(Error::usage(e))),
    }
}

/// The paths in `dir` that `keep` accepts, sorted; a missing folder has none.
pub fn list(dir: &Path, keep: impl Fn(&Path) -> bool) -> Result<Vec<PathBuf>, Error> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(Error::BadFile {
                path: dir.to_owned(),
                problem: e.to_string(),
            });
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| !is_hidden(p) && keep(p))
        .collect();
    paths.sort();
    Ok(paths)
}

/// Whether a path's file name starts with a dot: temp files, the lock file,
/// and anything else a reader should not take for a results file.
fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
}

/// The lock file every writer of a results folder locks.
pub const LOCK_FILE: &str = ".fdwindow.lock";

/// An exclusive advisory lock on a results folder, held by one writer for
/// its read-merge-write. Dropping it unlocks explicitly and then closes: the
/// lock belongs to the open file description, which a child forked meanwhile
/// would share, so closing alone is not a release (the `flock-survival`
/// hazard this project measures). No child is started while it is held.
///
/// # References
/// - <https://man7.org/linux/man-pages/man2/flock.2.html>
#[derive(Debug)]
pub struct FolderLock {
    file: fs::File,
}

impl FolderLock {
    /// Creates `dir` if need be and waits for its lock. `interrupted` is
    /// polled between bounded waits, so Ctrl-C still stops a waiting run.
    pub fn acquire(dir: &Path, interrupted: impl Fn() -> bool) -> io::Result<FolderLock> {
        fs::create_dir_all(dir)
            .map_err(|e| io::Error::new(e.kind(), format!("create {}: {e}", dir.display())))?;
        let path = dir.join(LOCK_FILE);
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("open {}: {e}", path.display())))?;
        // Bounded polling with backoff rather than a blocking flock: a
        // blocking call would not return on SIGINT (std restarts it).
        let mut pause = std::time::Duration::from_millis(1);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(FolderLock { file }),
                Err(fs::TryLockError::WouldBlock) => {}
                Err(fs::TryLockError::Error(e)) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("lock {}: {e}", path.display()),
                    ));
                }
            }
            if interrupted() {
                return Err(io::Error::new(
                    io::ErrorKind::Interrupted,
                    "interrupted while waiting for the results folder's lock",
                ));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(100));
        }
    }
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        // Explicit unlock before the close that follows.
        let _ = self.file.unlock();
    }
}

/// A costs file's name starts with this; [`load_dir`] skips such files.
pub const COSTS_PREFIX: &str = "costs-";

/// A pressure file's name starts with this; [`load_dir`] skips such files.
pub const PRESSURE_PREFIX: &str = "pressure-";

/// A timing file's name starts with this; [`load_dir`] skips such files.
pub const TIMING_PREFIX: &str = "timing-";

/// An audit benchmark file's name starts with this; [`load_dir`] skips such files.
pub const AUDIT_BENCH_PREFIX: &str = "audit-bench-";

/// Whether `path` is named as one of the folder's other kinds (costs,
/// pressure, timing, audit benchmark), each with a schema of its own. The folder owns the
/// names, so that this module needs none of the modules that read those kinds.
fn is_other_kind(path: &Path) -> bool {
    path.file_name().is_some_and(|n| {
        let n = n.to_string_lossy();
        [
            COSTS_PREFIX,
            PRESSURE_PREFIX,
            TIMING_PREFIX,
            AUDIT_BENCH_PREFIX,
        ]
        .iter()
        .any(|prefix| n.starts_with(prefix))
    })
}

/// Loads every `*.json` in `dir` but the costs, pressure and timing files, sorted by platform id.
/// A missing folder holds none.
pub fn load_dir(dir: &Path) -> Result<Vec<ResultsFile>, Error> {
    // Costs, pressure and timing files have schemas of their own.
    load_kind(
        dir,
        |p| p.extension().is_some_and(|x| x == "json") && !is_other_kind(p),
        parse,
        |f| &f.platform.id,
        ("", "platform"),
    )
}

/// Loads every file of one kind in `dir` (those `keep` selects), each parsed
/// by `parse` and named `<prefix><platform id>.json`, sorted by platform id.
/// A file gone since the listing, or a dangling link, holds nothing; one
/// named for another platform is refused. `name` is the kind's file-name
/// prefix and the words that say what a file holds in that refusal.
pub fn load_kind<T>(
    dir: &Path,
    keep: impl Fn(&Path) -> bool,
    parse: impl Fn(&str) -> Result<T>,
    platform_id: impl Fn(&T) -> &str,
    (prefix, holds): (&str, &str),
) -> Result<Vec<T>, Error> {
    let mut files = Vec::new();
    for path in list(dir, keep)? {
        let Some(file) = load_with(&path, &parse)? else {
            continue;
        };
        let id = platform_id(&file).to_owned();
        if path != dir.join(format!("{prefix}{id}.json")) {
            return Err(Error::BadFile {
                path,
                problem: format!("holds {holds} {id}, so it must be named {prefix}{id}.json"),
            });
        }
        files.push(file);
    }
    files.sort_by(|a, b| platform_id(a).cmp(platform_id(b)));
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

/// Fails early, before any probe runs, if `dir` cannot take a results file
/// or its lock file ([`FolderLock`]) cannot be opened: a folder of that
/// name, say. A folder that is not there yet is not made (the first write,
/// under the lock, makes it: a run refused or failed before measuring leaves
/// no folder behind); its nearest existing ancestor must be a folder this
/// process may create entries in.
pub fn check_writable(dir: &Path) -> io::Result<()> {
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.display()),
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return check_creatable(dir),
        Err(e) => {
            return Err(io::Error::new(e.kind(), format!("{}: {e}", dir.display())));
        }
    }
    // Opened as the lock will be (not created: a refusal after this check
    // leaves the folder as it was), not locked: a writer holding the lock
    // now is no failure.
    let lock = dir.join(LOCK_FILE);
    match fs::OpenOptions::new().write(true).open(&lock) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            return Err(io::Error::new(
                e.kind(),
                format!("open {}: {e}", lock.display()),
            ));
        }
        _ => {}
    }
    // A name of this process's own, so concurrent checks never remove each
    // other's file.
    let probe = dir.join(format!(".fdwindow-write-check-{}", std::process::id()));
    write_atomic(&probe, b"")?;
    fs::remove_file(probe)
}

/// Whether `dir`, which does not exist, could be created: its nearest
/// existing ancestor is a folder this process may write to (access(2)).
fn check_creatable(dir: &Path) -> io::Result<()> {
    let ancestor = dir
        .ancestors()
        .skip(1)
        .map(|a| {
            if a.as_os_str().is_empty() {
                Path::new(".")
            } else {
                a
            }
        })
        .find(|a| fs::symlink_metadata(a).is_ok())
        .unwrap_or(Path::new("/"));
    let named = |e: io::Error, what: &str| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot create {}: {} {what}",
                dir.display(),
                ancestor.display()
            ),
        )
    };
    if !fs::metadata(ancestor).is_ok_and(|m| m.is_dir()) {
        return Err(named(
            io::Error::from(io::ErrorKind::NotADirectory),
            "is not a directory",
        ));
    }
    rustix::fs::access(
        ancestor,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    )
    .map_err(|e| named(e.into(), "is not writable"))
}

/// Tables that only a thorough run (`--thorough`) measures, by hazard. A
/// default run's report lacks them; [`carry_thorough`] keeps the last
/// thorough run's, so a default run never replaces a sweep with less.
pub const THOROUGH_TABLES: &[(&str, &str)] =
    &[("spawn-window", crate::hazards::spawn::TABLE_BY_NOFILE)];

/// Copies into `new` each thorough-only table of `old` that `new` lacks,
/// noting in its description the run that measured it.
pub fn carry_thorough(
    hazard: &str,
    new: &mut crate::report::ProbeReport,
    old: &crate::report::ProbeReport,
) {
    for &(h, id) in THOROUGH_TABLES {
        if h != hazard || new.tables.iter().any(|t| t.id == id) {
            continue;
        }
        if let Some(table) = old.tables.iter().find(|t| t.id == id) {
            let mut table = table.clone();
            const NOTE: &str = " Carried over from the thorough run started at ";
            if !table.about.contains(NOTE) {
                table.about = format!("{}{NOTE}{}.", table.about, old.started_at);
            }
            new.tables.push(table);
        }
    }
}

/// Merges results files: each report goes to the platform it ran on (its
/// own `platform`, whatever file held it), and for each platform each
/// probe's most recent report wins (by its start time). Used to combine the
/// files that CI runners on different OSes upload into one results folder.
pub fn merge(files: Vec<ResultsFile>) -> Vec<ResultsFile> {
    let mut merged: Vec<ResultsFile> = Vec::new();
    for file in files {
        for (hazard, report) in file.probes {
            let into = match merged
                .iter()
                .position(|m| m.platform.id == report.platform.id)
            {
                Some(i) => &mut merged[i],
                None => {
                    merged.push(ResultsFile {
                        schema: file.schema,
                        platform: report.platform.clone(),
                        probes: Default::default(),
                    });
                    merged.last_mut().expect("just pushed")
                }
            };
            let newer = into
                .probes
                .get(&hazard)
                .is_none_or(|old| report.started_at > old.started_at);
            if newer {
                let mut report = report;
                if let Some(old) = into.probes.get(&hazard) {
                    carry_thorough(&hazard, &mut report, old);
                }
                into.probes.insert(hazard, report);
            } else if let Some(old) = into.probes.get_mut(&hazard) {
                carry_thorough(&hazard, old, &report);
            }
        }
    }
    merged.sort_by(|a, b| a.platform.id.cmp(&b.platform.id));
    merged
}

/// Every results file under `path` (a file, or a folder searched recursively).
pub fn collect(path: &Path) -> Result<Vec<ResultsFile>, Error> {
    let meta = fs::metadata(path).map_err(|e| Error::BadFile {
        path: path.to_owned(),
        problem: e.to_string(),
    })?;
    if meta.is_file() {
        return Ok(vec![load(path)?.expect("file exists")]);
    }
    let mut entries: Vec<PathBuf> = fs::read_dir(path)
        .map_err(|e| Error::BadFile {
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
        } else if p.extension().is_some_and(|x| x == "json") && !is_other_kind(&p) && !is_hidden(&p)
        {
            files.push(load(&p)?.expect("listed file exists"));
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdwindow_fix::base::scratch::Scratch;

    #[test]
    fn atomic_write_replaces_whole_files_and_leaves_no_temp() {
        let s = Scratch::new("results").unwrap();
        let path = s.dir().join("a.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(fs::read_dir(s.dir()).unwrap().count(), 1);
        assert!(load_dir(&s.dir().join("missing")).unwrap().is_empty());
        let err = load(&path).unwrap_err().to_string();
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

    #[test]
    fn a_dangling_link_in_the_folder_is_no_panic() {
        let s = Scratch::new("results-dangling").unwrap();
        for name in ["x.json", "costs-x.json", "pressure-x.json"] {
            std::os::unix::fs::symlink(s.dir().join("nowhere"), s.dir().join(name)).unwrap();
        }
        assert!(load_dir(s.dir()).unwrap().is_empty());
        assert!(
            crate::evidence::costs::load_dir(s.dir())
                .unwrap()
                .is_empty()
        );
        assert!(
            crate::evidence::pressure_file::load_dir(s.dir())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn one_writer_at_a_time() {
        let s = Scratch::new("results-lock").unwrap();
        let dir = s.dir().join("created");
        let held = FolderLock::acquire(&dir, || false).unwrap();
        // flock locks belong to open file descriptions: a second one in
        // this process waits like another process would, until stopped.
        let err = FolderLock::acquire(&dir, || true).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Interrupted, "{err}");
        drop(held);
        let again = FolderLock::acquire(&dir, || true).unwrap();
        drop(again);
        // The lock file is hidden from every reader of the folder.
        fs::write(dir.join(".hidden.json"), "{").unwrap();
        assert!(load_dir(&dir).unwrap().is_empty());
        assert!(collect(&dir).unwrap().is_empty());
    }

    #[test]
    fn schema_messages_say_what_is_wrong() {
        let check = |text: &str| {
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            check_schema(&v, 3, "results", "fdwindow run")
        };
        assert!(
            check("{}")
                .unwrap_err()
                .to_string()
                .contains("no \"schema\" field")
        );
        assert!(
            check("{\"schema\": -1}")
                .unwrap_err()
                .to_string()
                .contains("-1, not a version number")
        );
        assert!(
            check("{\"schema\": \"3\"}")
                .unwrap_err()
                .to_string()
                .contains("not a version number")
        );
        assert!(
            check("{\"schema\": 4}")
                .unwrap_err()
                .to_string()
                .contains("newer")
        );
        let old = check("{\"schema\": 1}").unwrap_err().to_string();
        assert!(
            old.contains("older") && old.contains("`fdwindow run`"),
            "{old}"
        );
        assert!(check("{\"schema\": 3}").is_ok());
    }

    fn spawn_window_report(started_at: &str, tables: &[&str]) -> crate::report::ProbeReport {
        crate::report::ProbeReport {
            left_out: Vec::new(),
            schema: crate::report::SCHEMA_VERSION,
            hazard: "spawn-window".into(),
            about: "a".into(),
            fdwindow_version: "0".into(),
            platform: crate::report::platform::Platform::detect(),
            started_at: started_at.into(),
            elapsed_ms: 1,
            arms: vec![],
            tables: tables
                .iter()
                .map(|id| crate::report::Table {
                    id: (*id).into(),
                    about: format!("measured {started_at}."),
                    columns: vec!["k".into()],
                    rows: vec![],
                    problem: None,
                })
                .collect(),
            scope: None,
        }
    }

    fn results(report: crate::report::ProbeReport) -> ResultsFile {
        ResultsFile {
            schema: crate::report::SCHEMA_VERSION,
            platform: report.platform.clone(),
            probes: [("spawn-window".to_owned(), report)].into(),
        }
    }

    #[test]
    fn a_default_run_keeps_the_thorough_sweep() {
        use crate::hazards::spawn::{TABLE_BY_NOFILE, TABLE_BY_RSS};
        let thorough =
            spawn_window_report("2026-01-01T00:00:00Z", &[TABLE_BY_RSS, TABLE_BY_NOFILE]);
        let default = spawn_window_report("2026-02-01T00:00:00Z", &[TABLE_BY_RSS]);
        // Either order of merging: the newer report wins, with the sweep.
        for files in [
            vec![results(thorough.clone()), results(default.clone())],
            vec![results(default.clone()), results(thorough.clone())],
        ] {
            let merged = merge(files);
            let r = &merged[0].probes["spawn-window"];
            assert_eq!(r.started_at, "2026-02-01T00:00:00Z");
            let ids: Vec<&str> = r.tables.iter().map(|t| t.id.as_str()).collect();
            assert_eq!(ids, [TABLE_BY_RSS, TABLE_BY_NOFILE]);
            let sweep = &r.tables[1].about;
            assert!(sweep.starts_with("measured 2026-01-01"), "{sweep}");
            assert!(
                sweep.ends_with("thorough run started at 2026-01-01T00:00:00Z."),
                "{sweep}"
            );
        }
        // A newer thorough sweep replaces an older one.
        let newer = spawn_window_report("2026-03-01T00:00:00Z", &[TABLE_BY_NOFILE]);
        let mut r = newer.clone();
        carry_thorough("spawn-window", &mut r, &thorough);
        assert_eq!(r, newer);
        // Carrying twice notes the source once.
        let mut once = default.clone();
        carry_thorough("spawn-window", &mut once, &thorough);
        let mut twice = spawn_window_report("2026-04-01T00:00:00Z", &[]);
        carry_thorough("spawn-window", &mut twice, &once);
        assert_eq!(twice.tables[0].about.matches("Carried over").count(), 1);
        // Other hazards are left alone.
        let mut other = default.clone();
        carry_thorough("flock-survival", &mut other, &thorough);
        assert_eq!(other, default);
    }
}
