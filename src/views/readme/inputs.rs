//! What the sections are rendered from: the results folder's files, loaded
//! once.

use std::path::Path;

use crate::error::{Error, Result};
use crate::evidence::costs::CostsFile;
use crate::evidence::pressure_file::PressureFile;
use crate::report::ResultsFile;

/// Everything a section is rendered from.
pub struct Inputs {
    /// Every results file, sorted by platform id.
    pub files: Vec<ResultsFile>,
    /// Every costs file.
    pub costs: Vec<CostsFile>,
    /// Every pressure file.
    pub pressure: Vec<PressureFile>,
    /// Every timing file (`make timing`).
    pub timing: Vec<crate::evidence::timing::TimingFile>,
    /// Every audit benchmark file (`make bench-audit`).
    pub audit_bench: Vec<crate::evidence::audit_bench::AuditBench>,
    /// Every workspace benchmark document (`make bench-workspace`,
    /// `audits/workspace-bench-<platform>.json`).
    pub workspace_bench: Vec<serde_json::Value>,
    /// Every hold comparison document (`benches/flakes/hold_compare.py`,
    /// `audits/hold-compare-<platform>.json`).
    pub hold_compare: Vec<serde_json::Value>,
    /// MATRIX.md as rendered now from the same folder, whose
    /// `flock-survival` table the README quotes. The caller renders it (the
    /// runner's `render_outputs`): no view calls another.
    pub matrix: String,
}

impl Inputs {
    /// Loads the results, costs and pressure files of `dir`; `matrix` is
    /// MATRIX.md rendered from them.
    pub fn load(dir: &Path, matrix: String) -> Result<Inputs, Error> {
        Ok(Inputs {
            files: crate::evidence::results::load_dir(dir)?,
            costs: crate::evidence::costs::load_dir(dir)?,
            pressure: crate::evidence::pressure_file::load_dir(dir)?,
            timing: crate::evidence::timing::load_dir(dir).map_err(|problem| Error::BadFile {
                path: dir.to_owned(),
                problem: problem.to_string(),
            })?,
            audit_bench: crate::evidence::audit_bench::load_dir(dir)?,
            workspace_bench: crate::evidence::audit_bench::load_workspace_dir(&dir.join("audits"))?,
            hold_compare: crate::evidence::audit_bench::load_hold_compare_dir(&dir.join("audits"))?,
            matrix,
        })
    }

    /// The Linux results file the README quotes
    /// ([`quoted_file`](crate::evidence::query::quoted_file)); each section that
    /// quotes it names its platform.
    pub(super) fn linux(&self) -> Option<&ResultsFile> {
        crate::evidence::query::quoted_file(&self.files, "linux")
    }
}

pub(super) fn no_data(what: &str) -> String {
    format!("*(no {what} in the results folder yet)*\n")
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Inputs with nothing loaded.
    pub(in crate::views::readme) fn empty() -> Inputs {
        Inputs {
            files: Vec::new(),
            costs: Vec::new(),
            pressure: Vec::new(),
            timing: Vec::new(),
            audit_bench: Vec::new(),
            workspace_bench: Vec::new(),
            hold_compare: Vec::new(),
            matrix: String::new(),
        }
    }
}
