//! `results/audit-bench-<platform-id>.json`: the labelled flake benchmark of
//! `fdwindow audit` (`make bench-audit`, `benches/flakes/run.py`), so the
//! README's comparison of the audit with reruns, CPU stress and `fdwindow
//! stress` is generated from committed data like every other figure.
//!
//! The driver is Python and owns the document's shape; this module checks
//! its schema version and reads the fields the README shows.

use crate::error::{Error, Result, usage};
use std::path::Path;

/// The schema version of the benchmark's document this build reads.
pub const AUDIT_BENCH_SCHEMA: u64 = 1;

pub use crate::evidence::results::AUDIT_BENCH_PREFIX;

/// One benchmark document.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditBench {
    /// The platform id it was measured on.
    pub platform: String,
    /// When (UTC, RFC 3339).
    pub measured_at: String,
    /// The driver's command line.
    pub command: String,
    /// The whole document.
    pub doc: serde_json::Value,
}

impl AuditBench {
    /// Parses a document strictly (no repeated key: the whole document is
    /// kept, so nothing else can be lost); refuses another schema.
    pub fn from_json(text: &str) -> Result<AuditBench> {
        let doc = crate::evidence::strict_json::parse(text)?;
        let schema = doc["schema"].as_u64();
        if schema != Some(AUDIT_BENCH_SCHEMA) {
            return Err(usage!(
                "schema {schema:?}, this build reads {AUDIT_BENCH_SCHEMA}: rerun `make bench-audit`"
            ));
        }
        let field = |k: &str| {
            doc[k]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| usage!("no {k:?}"))
        };
        Ok(AuditBench {
            platform: field("platform")?,
            measured_at: field("measured_at")?,
            command: field("command")?,
            doc,
        })
    }
}

/// Loads every benchmark document of `dir`, sorted by platform id.
pub fn load_dir(dir: &Path) -> Result<Vec<AuditBench>, Error> {
    json_files(dir, AUDIT_BENCH_PREFIX)?
        .into_iter()
        .map(|(path, text)| {
            AuditBench::from_json(&text).map_err(|problem| Error::BadFile {
                path,
                problem: problem.to_string(),
            })
        })
        .collect()
}

/// A workspace benchmark file's name starts with this (`audits/`,
/// `benches/workspace/run.py`).
pub const WORKSPACE_BENCH_PREFIX: &str = "workspace-bench-";

/// The schema version of the workspace benchmark's document this build reads.
pub const WORKSPACE_BENCH_SCHEMA: u64 = 1;

/// Loads every workspace benchmark document of `dir` (the results folder's
/// `audits/`), sorted by platform id; refuses another schema.
pub fn load_workspace_dir(dir: &Path) -> Result<Vec<serde_json::Value>, Error> {
    load_documents(
        dir,
        WORKSPACE_BENCH_PREFIX,
        WORKSPACE_BENCH_SCHEMA,
        "make bench-workspace",
    )
}

/// A hold comparison file's name starts with this (`audits/`,
/// `benches/flakes/hold_compare.py`).
pub const HOLD_COMPARE_PREFIX: &str = "hold-compare-";

/// The schema version of the hold comparison's document this build reads.
pub const HOLD_COMPARE_SCHEMA: u64 = 1;

/// Loads every hold comparison document of `dir` (the results folder's
/// `audits/`), sorted by platform id; refuses another schema.
pub fn load_hold_compare_dir(dir: &Path) -> Result<Vec<serde_json::Value>, Error> {
    load_documents(
        dir,
        HOLD_COMPARE_PREFIX,
        HOLD_COMPARE_SCHEMA,
        "python3 benches/flakes/hold_compare.py",
    )
}

/// The `PREFIX*.json` documents of `dir`, each of `schema` (else the error
/// says to rerun `remedy`).
fn load_documents(
    dir: &Path,
    prefix: &str,
    schema: u64,
    remedy: &str,
) -> Result<Vec<serde_json::Value>, Error> {
    json_files(dir, prefix)?
        .into_iter()
        .map(|(path, text)| {
            let doc =
                crate::evidence::strict_json::parse(&text).map_err(|problem| Error::BadFile {
                    path: path.clone(),
                    problem: problem.to_string(),
                })?;
            match doc["schema"].as_u64() {
                Some(found) if found == schema => Ok(doc),
                other => Err(Error::BadFile {
                    path,
                    problem: format!(
                        "schema {other:?}, this build reads {schema}: rerun `{remedy}`"
                    ),
                }),
            }
        })
        .collect()
}

/// The `PREFIX*.json` files of `dir` with their text, sorted by name. A
/// missing folder holds none.
fn json_files(dir: &Path, prefix: &str) -> Result<Vec<(std::path::PathBuf, String)>, Error> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| match std::fs::read_to_string(&path) {
            Ok(text) => Ok((path, text)),
            Err(e) => Err(Error::BadFile {
                problem: e.to_string(),
                path,
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hold_comparison_loader_reads_only_its_own_files_and_schema() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, schema: u64| {
            std::fs::write(dir.path().join(name), format!(r#"{{"schema": {schema}}}"#)).unwrap();
        };
        write("hold-compare-linux-a.json", HOLD_COMPARE_SCHEMA);
        write("workspace-bench-linux-a.json", WORKSPACE_BENCH_SCHEMA);
        assert_eq!(load_hold_compare_dir(dir.path()).unwrap().len(), 1);
        write("hold-compare-linux-b.json", HOLD_COMPARE_SCHEMA + 1);
        let Error::BadFile { problem, .. } = load_hold_compare_dir(dir.path()).unwrap_err() else {
            panic!("not a bad file");
        };
        assert!(problem.contains("hold_compare.py"), "{problem}");
    }

    #[test]
    fn the_workspace_loader_reads_its_schema_and_refuses_another() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, schema: u64| {
            let doc = format!(r#"{{"schema": {schema}, "runs": []}}"#);
            std::fs::write(dir.path().join(name), doc).unwrap();
        };
        write("workspace-bench-linux-a.json", WORKSPACE_BENCH_SCHEMA);
        write("other-linux-a.json", 99);
        let docs = load_workspace_dir(dir.path()).unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0]["schema"], WORKSPACE_BENCH_SCHEMA);
        write("workspace-bench-linux-b.json", WORKSPACE_BENCH_SCHEMA + 1);
        let Error::BadFile { path, problem } = load_workspace_dir(dir.path()).unwrap_err() else {
            panic!("not a bad file");
        };
        assert!(path.ends_with("workspace-bench-linux-b.json"), "{path:?}");
        assert!(
            problem.contains("rerun `make bench-workspace`"),
            "{problem}"
        );
        assert!(
            load_workspace_dir(&dir.path().join("missing"))
                .unwrap()
                .is_empty()
        );
    }
}
