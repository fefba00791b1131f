//! `results/audit-bench-<platform-id>.json`: the labelled flake benchmark of
//! `fdwindow audit` (`make bench-audit`, `benches/flakes/run.py`), so the
//! README's comparison of the audit with reruns, CPU stress and `fdwindow
//! stress` is generated from committed data like every other figure.
//!
//! The driver is Python and owns the document's shape; this module checks
//! its schema version and reads the fields the README shows.

use std::path::Path;

use crate::evidence::results::BadResults;

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
    pub fn from_json(text: &str) -> Result<AuditBench, String> {
        let doc = crate::evidence::strict_json::parse(text)?;
        let schema = doc["schema"].as_u64();
        if schema != Some(AUDIT_BENCH_SCHEMA) {
            return Err(format!(
                "schema {schema:?}, this build reads {AUDIT_BENCH_SCHEMA}: rerun `make bench-audit`"
            ));
        }
        let field = |k: &str| {
            doc[k]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("no {k:?}"))
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
pub fn load_dir(dir: &Path) -> Result<Vec<AuditBench>, BadResults> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(out);
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(AUDIT_BENCH_PREFIX))
        })
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|e| BadResults {
            path: path.clone(),
            problem: e.to_string(),
        })?;
        out.push(AuditBench::from_json(&text).map_err(|problem| BadResults {
            path: path.clone(),
            problem,
        })?);
    }
    Ok(out)
}
