//! The injector a pressured run preloads: where it comes from, the
//! controller it watches, and the report it writes as it goes (shared with
//! `fdwindow audit`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use fdwindow::cotenant::preload;
use fdwindow::error::{Error, Result};
use fdwindow_fix::base::scratch::Scratch;

/// The variable the injector appends its per-process line to.
pub(super) const REPORT_VAR: &str = "FDWINDOW_PRESSURE_REPORT";

/// This process as the controller of the pressure it starts
/// (`controller=PID@START`): the injector in the command watches it (a pidfd
/// on Linux, a kqueue on macOS) and stops its threads within one hold once
/// it ends, SIGKILL included. Nothing is passed down to the command: a
/// process the pressure does not reach (`match=`) holds no descriptor of ours.
pub(crate) fn controller() -> Result<fdwindow_fix::pressure::ProcessId> {
    fdwindow_fix::pressure::ProcessId::this_process()
        .map_err(|e| usage!("cannot name this process for the injector to watch: {e}"))
}

/// What the injector reported for one pressured run.
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct RunPressure {
    /// Processes in which pressure started.
    pub(crate) processes: u64,
    /// Children they spawned.
    pub(crate) spawns: u64,
    /// The longest time pressure ran in one of them (its overlap with the run).
    pub(crate) longest: Duration,
}

/// Reads an injector report: lines `pid spawns elapsed_s covered_s exe`,
/// written as pressure goes, the last per pid the latest.
pub(crate) fn read_report(path: &Path) -> RunPressure {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut last: std::collections::BTreeMap<&str, (u64, f64)> = Default::default();
    for line in text.lines() {
        let mut f = line.split(' ');
        let (Some(pid), Some(spawns), Some(elapsed)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        // close-hold's `held …` and `holds …` lines are the audit's to read.
        if pid.parse::<u32>().is_err() {
            continue;
        }
        let spawns = spawns.parse::<u64>().unwrap_or(0);
        let elapsed = elapsed.parse::<f64>().unwrap_or(0.0);
        let e = last.entry(pid).or_default();
        *e = (e.0.max(spawns), e.1.max(elapsed));
    }
    RunPressure {
        processes: last.len() as u64,
        spawns: last.values().map(|v| v.0).sum(),
        longest: Duration::from_secs_f64(
            last.values()
                .map(|v| v.1)
                .fold(0.0, f64::max)
                .clamp(0.0, 1e9),
        ),
    }
}

/// Removes the injector's report file on every path out (stress's and the
/// audit's runs).
pub(crate) struct ReportFile(pub(crate) PathBuf);

impl Drop for ReportFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Fails unless `path` is a shared library the loader could preload
/// ([`preload::check_preloadable`]): anything else (a PIE executable such as
/// `/bin/true` is `ET_DYN` like a library) would fail or run unpressured
/// every command. Read, never loaded.
pub(super) fn check_library(path: &Path) -> Result<()> {
    preload::check_preloadable(path).map_err(|e| {
        usage!(
            "injector {} {e}; give a shared library, or leave out --injector for the one built \
             into fdwindow (`fdwindow preload {} --out FILE` writes it)",
            path.display(),
            preload::Library::INJECT.name()
        )
    })
}

/// Fails unless the command names a program: an empty one would fail every
/// run with a bare "No such file or directory".
pub(crate) fn check_command(command: &[String]) -> Result<()> {
    match command.first() {
        Some(program) if !program.is_empty() => Ok(()),
        _ => Err(Error::usage(
            "the command is empty: name the program to run after --",
        )),
    }
}

/// A run's private folder, `<temp>/fdwindow-preload-<pid>-<n>` (mode 0700):
/// the built-in injector and the injector's per-run reports live in it, and
/// it goes when the run ends. It is swept ([`Scratch::new_swept`]): a stress
/// or audit killed by SIGKILL leaves it behind only until the next one
/// starts, which first removes every such folder of a dead run (its lock is
/// free) and never a live run's (its lock is held). The name keeps the
/// `fdwindow-preload-` of [`preload::Library::write`]'s folders, which a
/// preloaded process may look for in its mappings to tell it is pressured;
/// those folders (`fdwindow-preload-XXXXXX`) are not of this scheme and are
/// never swept.
pub(crate) fn run_folder() -> Result<Scratch> {
    let temp = std::env::temp_dir();
    Scratch::new_swept_in(&temp, "preload")
        .map_err(|e| usage!("a private folder for the run in {}: {e}", temp.display()))
}

/// The injector a run preloads: the file given by `--injector`, or the one
/// built into fdwindow, written to the run's private folder.
pub(crate) struct Injector {
    /// The loader's preload variable.
    pub(crate) var: &'static str,
    pub(super) path: PathBuf,
}

impl Injector {
    /// `given`, else the built-in injector written into `folder` (which
    /// removes it: [`run_folder`]); `Err` says why neither works.
    pub(crate) fn locate(given: Option<&Path>, folder: &Path) -> Result<Injector> {
        let Some(var) = preload::variable() else {
            return Err(Error::usage(
                "unsupported: this OS has no preload mechanism fdwindow knows",
            ));
        };
        let path = match given {
            Some(p) => {
                let path = std::fs::canonicalize(p)
                    .map_err(|e| usage!("--injector {}: {e}", p.display()))?;
                check_library(&path)?;
                path
            }
            None => preload::Library::INJECT
                .write_in(folder)
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::Unsupported => usage!("unsupported: {e}"),
                    _ => usage!("cannot write the injector: {e}"),
                })?,
        };
        Ok(Injector { var, path })
    }

    /// The library's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}
