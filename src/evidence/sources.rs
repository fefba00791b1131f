//! Where the read commands (`verdict`, `summary`, `advise`, `check`) find
//! their results, and which file each answer comes from.
//!
//! `--results DIR` means that folder and nothing else. Without it, they read
//! this machine's folder, [`LOCAL`] (where `fdwindow run` and `make
//! probe-linux` write), beside the committed one, [`COMMITTED`]; a platform
//! with a file in both is read from [`LOCAL`], this machine's own run. So
//! a user who ran the probes asks about them without naming a folder, and
//! every answer says whether this machine's measurements are among its
//! sources. Writers (`matrix`, `merge`, `vm`) still take one folder: the
//! committed README and MATRIX.md never include `results/local` unless asked.

use std::path::{Path, PathBuf};

use crate::error::{Result, usage};
use crate::evidence::costs::{self, CostsFile};
use crate::evidence::results;
use crate::report::ResultsFile;
use crate::report::platform::Platform;

/// The committed results, read by default.
pub const COMMITTED: &str = "results";
/// This machine's own results (git-ignored), where a run writes by default.
pub const LOCAL: &str = "results/local";

/// One results file read, and where from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Source {
    /// The platform it measured.
    pub platform: String,
    /// Its path, as the folder was named.
    pub file: PathBuf,
    /// Whether it measured this machine (its platform id is this machine's).
    pub this_machine: bool,
}

/// The results a read command answers from.
#[derive(Debug)]
pub struct Sources {
    /// The files, sorted by platform id, one per platform.
    pub files: Vec<ResultsFile>,
    /// Where each of `files` came from, in the same order.
    pub read: Vec<Source>,
    /// Committed files not read because `results/local` has their platform
    /// (this machine's own run, which a user reading by default means).
    pub shadowed: Vec<PathBuf>,
    /// This machine's platform id.
    pub here: String,
    /// The folders read, the one that wins a platform first.
    folders: Vec<PathBuf>,
}

impl Sources {
    /// Loads the folder `named`, or by default [`LOCAL`] beside
    /// [`COMMITTED`] (relative to the current directory). A named folder
    /// must exist; by default at least one of the two must. The error is one
    /// line.
    pub fn load(named: Option<&Path>) -> Result<Sources> {
        Self::load_from(
            named,
            Path::new(COMMITTED),
            Path::new(LOCAL),
            Platform::detect().id,
        )
    }

    /// [`Sources::load`] with the default folders and this machine's id given.
    pub fn load_from(
        named: Option<&Path>,
        committed: &Path,
        local: &Path,
        here: String,
    ) -> Result<Sources> {
        let folders: Vec<PathBuf> = match named {
            Some(dir) => {
                results::check_folder(dir, false)?;
                vec![dir.to_owned()]
            }
            None => {
                let present: Vec<PathBuf> = [local, committed]
                    .into_iter()
                    .filter(|d| d.is_dir())
                    .map(Path::to_owned)
                    .collect();
                if present.is_empty() {
                    return Err(usage!(
                        "no results here: neither {} nor {} is a folder (run `make probe-linux` \
                         in a clone of fdwindow, or pass --results DIR)",
                        local.display(),
                        committed.display()
                    ));
                }
                present
            }
        };
        // The first folder wins a platform both hold: LOCAL comes first.
        let mut read: Vec<(ResultsFile, Source)> = Vec::new();
        let mut shadowed = Vec::new();
        for dir in &folders {
            for file in results::load_dir(dir)? {
                let path = dir.join(format!("{}.json", file.platform.id));
                if read.iter().any(|(f, _)| f.platform.id == file.platform.id) {
                    shadowed.push(path);
                    continue;
                }
                let source = Source {
                    platform: file.platform.id.clone(),
                    file: path,
                    this_machine: file.platform.id == here,
                };
                read.push((file, source));
            }
        }
        read.sort_by(|a, b| a.1.platform.cmp(&b.1.platform));
        let (files, read) = read.into_iter().unzip();
        Ok(Sources {
            files,
            read,
            shadowed,
            here,
            folders,
        })
    }

    /// The benches' costs from the same folders, one file per platform (the
    /// first folder's where both hold one). Read only when asked: a command
    /// that shows no cost does not depend on the costs files.
    pub fn costs(&self) -> Result<Vec<CostsFile>> {
        let mut all: Vec<CostsFile> = Vec::new();
        for dir in &self.folders {
            for c in costs::load_dir(dir)? {
                if !all.iter().any(|k| k.platform.id == c.platform.id) {
                    all.push(c);
                }
            }
        }
        Ok(all)
    }

    /// Where the file of platform `id` came from.
    pub fn source_of(&self, id: &str) -> Option<&Source> {
        self.read.iter().find(|s| s.platform == id)
    }

    /// Whether this machine's measurements are among the files read.
    pub fn has_this_machine(&self) -> bool {
        self.read.iter().any(|s| s.this_machine)
    }

    /// The lines that say what was read: each file of `os` (every file
    /// when `None`), this machine's marked, the shadowed ones, and a last
    /// line when this machine (of that OS) has no measurements among them.
    pub fn describe(&self, os: Option<&str>) -> Vec<String> {
        let mut lines: Vec<String> = self
            .files
            .iter()
            .zip(&self.read)
            .filter(|(f, _)| os.is_none_or(|os| f.platform.os == os))
            .map(|(_, s)| {
                let mark = if s.this_machine {
                    " (this machine)"
                } else {
                    ""
                };
                format!("read {}{mark}", s.file.display())
            })
            .collect();
        for path in &self.shadowed {
            lines.push(format!(
                "not read {}: {} has this platform's file",
                path.display(),
                LOCAL
            ));
        }
        // A platform id starts with its OS (`Platform::make_id`).
        let this_os = os.is_none_or(|os| self.here.starts_with(&format!("{os}-")));
        if this_os && !self.has_this_machine() {
            lines.push(format!(
                "this machine ({}) has no measurements among them: `make probe-linux` (or \
                 probe-macos) measures it into {LOCAL}",
                self.here
            ));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A results folder holding one file per id, each a copy of `template`
    /// under that platform id.
    fn folder(dir: &Path, ids: &[&str], template: &ResultsFile) {
        std::fs::create_dir_all(dir).unwrap();
        for id in ids {
            let mut f = template.clone();
            f.platform.id = (*id).to_owned();
            for r in f.probes.values_mut() {
                r.platform.id = (*id).to_owned();
            }
            let json = serde_json::to_string_pretty(&f).unwrap();
            std::fs::write(dir.join(format!("{id}.json")), json).unwrap();
        }
    }

    fn template() -> ResultsFile {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(COMMITTED);
        results::load_dir(&dir).unwrap().remove(0)
    }

    #[test]
    fn local_beside_committed_local_wins_and_this_machine_is_named() {
        let s = fdwindow_fix::base::scratch::Scratch::new("sources-test").unwrap();
        let (committed, local) = (s.dir().join("results"), s.dir().join("results/local"));
        let t = template();
        folder(&committed, &["linux-a", "linux-here"], &t);
        folder(&local, &["linux-here"], &t);
        let got = Sources::load_from(None, &committed, &local, "linux-here".into()).unwrap();
        let ids: Vec<&str> = got.files.iter().map(|f| f.platform.id.as_str()).collect();
        assert_eq!(ids, ["linux-a", "linux-here"]);
        assert_eq!(
            got.source_of("linux-here").unwrap().file,
            local.join("linux-here.json")
        );
        assert!(got.source_of("linux-here").unwrap().this_machine);
        assert_eq!(got.shadowed, [committed.join("linux-here.json")]);
        let lines = got.describe(Some("linux"));
        assert!(
            lines
                .iter()
                .any(|l| l.ends_with("linux-here.json (this machine)")),
            "{lines:?}"
        );
        assert!(
            !lines.iter().any(|l| l.contains("no measurements")),
            "{lines:?}"
        );

        // Named: exactly that folder.
        let named =
            Sources::load_from(Some(&committed), &committed, &local, "linux-new".into()).unwrap();
        assert_eq!(
            named.source_of("linux-here").unwrap().file,
            committed.join("linux-here.json")
        );
        assert!(named.shadowed.is_empty());
        let lines = named.describe(Some("linux"));
        assert!(
            lines
                .last()
                .unwrap()
                .starts_with("this machine (linux-new) has no measurements"),
            "{lines:?}"
        );
        // Another OS's advice does not ask for this machine's run.
        assert!(
            !named
                .describe(Some("macos"))
                .iter()
                .any(|l| l.contains("no measurements"))
        );
    }

    #[test]
    fn without_either_folder_it_says_where_it_looked() {
        let s = fdwindow_fix::base::scratch::Scratch::new("sources-test").unwrap();
        let (committed, local) = (s.dir().join("results"), s.dir().join("results/local"));
        let err = Sources::load_from(None, &committed, &local, "x".into())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("no results here"), "{err}");
        let err = Sources::load_from(Some(&local), &committed, &local, "x".into())
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not exist"), "{err}");
    }
}
