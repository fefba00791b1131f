//! Call sites: the line of the user's code whose dropped descriptor a held
//! copy kept alive.
//!
//! The injector's close-hold mode walks the stack of each close it holds
//! (`shims/inject.c`, "call sites") and reports every frame as a module and
//! an address in the module's own address space. Here each frame becomes
//! its chain of inlined functions and their lines (DWARF line tables, read
//! with [`addr2line`]): std's descriptor drop is shared by every type and is
//! often inlined into the function that dropped it. The site is the first of
//! those frames whose file is in the user's workspace; else a dependency's
//! frame; else, without debug info, the symbol of the first frame in the
//! test binary, which may be the caller of the real site.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One frame of a held close's stack: a module (empty: the injector knew
/// none) and an address in that module's own addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Frame {
    /// The module's path as loaded.
    pub module: String,
    /// The address of the call (a return address less one).
    pub addr: u64,
}

/// How a site was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Found {
    /// A line in the user's workspace.
    Workspace,
    /// A line of a dependency (no frame of the user's had line tables).
    Dependency,
    /// A function from the symbol table only: the test binary has no line
    /// tables, and the function may be the caller of the real site.
    Symbol,
}

/// A line of source a held copy came from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Site {
    /// The file, relative to the workspace root when under it.
    pub file: Option<String>,
    /// Its line.
    pub line: Option<u32>,
    /// The function the line is in (demangled, without its hash).
    pub function: Option<String>,
    /// How it was found.
    pub found: Found,
    /// Where the descriptor was dropped inside a dependency, the
    /// dependency's lines the user's call went through: `file:line`, joined
    /// by `` `, ` `` (a registry crate's file as `name-version/src/…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

impl Site {
    /// `tests/a.rs:12`, else the function.
    pub fn location(&self) -> String {
        match (&self.file, self.line) {
            (Some(f), Some(l)) => format!("{f}:{l}"),
            (Some(f), None) => f.clone(),
            _ => self.function.clone().unwrap_or_default(),
        }
    }

    /// `` `tests/a.rs:12` in `a::picks_a_port` `` (and the dependency's line
    /// it went through)., or the function alone.
    pub fn label(&self) -> String {
        let func = self.function.as_deref().unwrap_or("?");
        let label = match (&self.file, self.line) {
            (Some(f), Some(l)) => format!("`{f}:{l}` in `{func}`"),
            (Some(f), None) => format!("`{f}` in `{func}`"),
            _ => format!("`{func}` (from the symbol table: it may be the caller of the site)"),
        };
        match &self.via {
            Some(via) => format!("{label} (through `{via}`)"),
            None => label,
        }
    }
}

/// What to do when a test binary has no line tables.
pub const DEBUG_HINT: &str = "build the tests with line tables to name the line: \
     `[profile.test] debug = \"line-tables-only\"` in Cargo.toml, or \
     CARGO_PROFILE_RELEASE_DEBUG=line-tables-only for `--release` tests";

/// One resolved frame of an inline chain.
struct Line {
    file: Option<String>,
    line: Option<u32>,
    function: Option<String>,
}

/// A call site of a class's held copies, over that class's runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteRuns {
    /// The site.
    pub site: Site,
    /// Runs of the class that held a copy from it.
    pub runs: u64,
    /// Of those, runs in which the test failed.
    pub failing: u64,
    /// Whether it was the only site held in every failing run: those runs
    /// decide that its copy breaks the test, with nothing more to run.
    pub only: bool,
    /// Where the class's runs held several sites: the runs holding this
    /// site's closes only (`close-site=`); `None` when not run.
    pub alone: Option<AloneRuns>,
    /// The addresses in the test binary of the frames it was named from:
    /// what `close-site=` holds.
    #[serde(skip)]
    pub addrs: BTreeSet<u64>,
}

impl SiteRuns {
    /// Whether the site alone breaks the test: it decided the class's
    /// failing runs by itself, or holding its closes alone failed by the
    /// rule that names a class (at least half the runs, twice at least).
    pub fn breaks(&self) -> bool {
        self.only
            || self
                .alone
                .is_some_and(|a| a.held > 0 && a.failures >= 2 && 2 * a.failures >= a.runs)
    }
}

/// The runs that held one site's closes only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AloneRuns {
    /// Runs in which the test failed (or timed out).
    pub failures: u64,
    /// Runs.
    pub runs: u64,
    /// Copies held over those runs: none means the filter matched no close.
    pub held: u64,
}

/// A stack's site, and the address in the test binary it was named from.
type Named = (Site, Option<u64>);

/// The symbolizer: each module's debug information loaded once, each stack
/// resolved once.
#[derive(Default)]
pub struct Symbols {
    loaders: HashMap<String, Option<addr2line::Loader>>,
    sites: HashMap<(Vec<Frame>, PathBuf), Option<Named>>,
}

/// The user's workspace: where its files are, and the folders under it
/// that are not the user's (cargo's home, the build output).
pub struct Workspace {
    root: PathBuf,
    foreign: Vec<PathBuf>,
}

impl Workspace {
    /// The workspace at `root` (cargo's workspace root, else the current
    /// folder).
    pub fn new(root: PathBuf) -> Workspace {
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
        let mut foreign: Vec<PathBuf> = home.into_iter().collect();
        foreign.push(
            std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from),
        );
        Workspace { root, foreign }
    }

    /// Whether `file` is in the user's workspace.
    fn has(&self, file: Option<&str>) -> bool {
        let Some(file) = file else { return false };
        let path = Path::new(file);
        path.starts_with(&self.root) && !self.foreign.iter().any(|f| path.starts_with(f))
    }
}

impl Symbols {
    /// The sites of a class's runs (each run's held stacks, and whether the
    /// test failed in it), the sites held in the most failing runs first.
    pub fn attribute(
        &mut self,
        runs: &[(bool, BTreeSet<Vec<Frame>>)],
        exe: &Path,
        workspace: &Workspace,
    ) -> Vec<SiteRuns> {
        // The injector names the executable as the kernel does.
        let exe = std::fs::canonicalize(exe).unwrap_or_else(|_| exe.to_owned());
        // A site is its line: the dependency lines it went through (`via`)
        // are gathered, not told apart (close-site= holds the user's line).
        let mut addrs: BTreeMap<Site, BTreeSet<u64>> = BTreeMap::new();
        let mut vias: BTreeMap<Site, BTreeSet<String>> = BTreeMap::new();
        let per_run: Vec<(bool, BTreeSet<Site>)> = runs
            .iter()
            .map(|(failed, stacks)| {
                let mut sites = BTreeSet::new();
                for (mut site, at) in stacks.iter().filter_map(|s| self.site(s, &exe, workspace)) {
                    let via = site.via.take();
                    addrs.entry(site.clone()).or_default().extend(at);
                    vias.entry(site.clone()).or_default().extend(via);
                    sites.insert(site);
                }
                (*failed, sites)
            })
            .collect();
        let failing_runs = per_run.iter().filter(|(f, _)| *f).count();
        let mut out: Vec<SiteRuns> = addrs
            .into_iter()
            .map(|(site, addrs)| {
                let held: Vec<&(bool, BTreeSet<Site>)> =
                    per_run.iter().filter(|(_, s)| s.contains(&site)).collect();
                SiteRuns {
                    runs: held.len() as u64,
                    failing: held.iter().filter(|(f, _)| *f).count() as u64,
                    only: failing_runs > 0
                        && per_run
                            .iter()
                            .filter(|(f, _)| *f)
                            .all(|(_, s)| s.len() == 1 && s.contains(&site)),
                    alone: None,
                    addrs,
                    site: Site {
                        via: vias
                            .get(&site)
                            .filter(|v| !v.is_empty())
                            .map(|v| v.iter().cloned().collect::<Vec<_>>().join("`, `")),
                        ..site
                    },
                }
            })
            .collect();
        out.sort_by(|a, b| b.failing.cmp(&a.failing).then(b.runs.cmp(&a.runs)));
        out
    }

    /// The site of a stack (see the module doc), and the address in the
    /// test binary of the frame it came from (what `close-site=` matches;
    /// `None` when that frame is in another module). `None` when no frame
    /// says anything of the user's or a dependency's (no module known, or
    /// only the toolchain's lines: a close inside libtest).
    pub fn site(&mut self, stack: &[Frame], exe: &Path, workspace: &Workspace) -> Option<Named> {
        let key = (stack.to_vec(), workspace.root.clone());
        if let Some(site) = self.sites.get(&key) {
            return site.clone();
        }
        let site = self.resolve(stack, exe, workspace);
        self.sites.insert(key, site.clone());
        site
    }

    fn resolve(&mut self, stack: &[Frame], exe: &Path, workspace: &Workspace) -> Option<Named> {
        let exe = exe.to_string_lossy();
        // Each line with the address of its frame, if in the test binary.
        let mut lines = Vec::new();
        let mut exe_has_lines = false;
        for f in stack {
            let chain = self.lines(f);
            let in_exe = f.module == exe;
            exe_has_lines |= in_exe && chain.iter().any(|l| l.file.is_some());
            lines.extend(chain.into_iter().map(|l| (l, in_exe.then_some(f.addr))));
        }
        let users = lines
            .iter()
            .position(|(l, _)| workspace.has(l.file.as_deref()));
        if let Some(i) = users {
            let mut site = site_of(&lines[i].0, Found::Workspace, workspace);
            // A dependency's line nearer the close: the drop was its.
            site.via = lines[..i]
                .iter()
                .rev()
                .find(|(l, _)| l.file.as_deref().is_some_and(|f| !is_toolchain(f)))
                .map(|(l, _)| {
                    let file = short_path(l.file.as_deref().unwrap_or(""));
                    l.line.map_or(file.clone(), |n| format!("{file}:{n}"))
                });
            return Some((site, lines[i].1));
        }
        if let Some((l, at)) = lines
            .iter()
            .find(|(l, _)| l.file.as_deref().is_some_and(|f| !is_toolchain(f)))
        {
            return Some((site_of(l, Found::Dependency, workspace), *at));
        }
        if exe_has_lines {
            return None;
        }
        // No line tables: the first frame in the test binary outside the
        // toolchain's functions, by symbol.
        let (frame, symbol) = stack
            .iter()
            .filter(|f| f.module == exe)
            .filter_map(|f| {
                let symbol = self.loader(&f.module)?.find_symbol(f.addr)?;
                Some((
                    f,
                    addr2line::demangle_auto(symbol.into(), None).into_owned(),
                ))
            })
            .find(|(_, symbol)| !is_toolchain_symbol(symbol))?;
        let site = Site {
            file: None,
            line: None,
            function: Some(symbol),
            found: Found::Symbol,
            via: None,
        };
        Some((site, Some(frame.addr)))
    }

    fn loader(&mut self, module: &str) -> Option<&addr2line::Loader> {
        self.loaders
            .entry(module.to_owned())
            .or_insert_with(|| addr2line::Loader::new(module).ok())
            .as_ref()
    }

    /// The inline chain at one frame, innermost first.
    fn lines(&mut self, frame: &Frame) -> Vec<Line> {
        if frame.module.is_empty() {
            return Vec::new();
        }
        let Some(loader) = self.loader(&frame.module) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Ok(mut frames) = loader.find_frames(frame.addr) {
            while let Ok(Some(f)) = frames.next() {
                out.push(Line {
                    file: f.location.as_ref().and_then(|l| l.file.map(str::to_owned)),
                    line: f.location.as_ref().and_then(|l| l.line),
                    function: f
                        .function
                        .as_ref()
                        .and_then(|n| n.demangle().ok())
                        .map(|n| n.into_owned()),
                });
            }
        }
        out
    }
}

fn site_of(l: &Line, found: Found, workspace: &Workspace) -> Site {
    let file = l.file.as_deref().map(|f| {
        Path::new(f)
            .strip_prefix(&workspace.root)
            .map_or_else(|_| f.to_owned(), |p| p.to_string_lossy().into_owned())
    });
    Site {
        file,
        line: l.line,
        function: l.function.clone(),
        found,
        via: None,
    }
}

/// A registry crate's file as `name-version/src/…`; any other as it is.
fn short_path(file: &str) -> String {
    match file.split_once("/registry/src/") {
        // After the index's folder (`index.crates.io-HASH/`).
        Some((_, rest)) => rest.split_once('/').map_or(rest, |(_, p)| p).to_owned(),
        None => file.to_owned(),
    }
}

/// Whether `file` is the toolchain's (std, core, alloc: remapped to
/// `/rustc/HASH/` in rustup's builds) or the system's C library.
fn is_toolchain(file: &str) -> bool {
    file.starts_with("/rustc/") || file.contains("/lib/rustlib/src/") || file.starts_with("/usr/")
}

/// Whether a demangled symbol is the toolchain's: std, core, alloc, libtest,
/// or an impl of theirs (`<std::os::fd::owned::OwnedFd as core::ops::drop::Drop>::drop`).
fn is_toolchain_symbol(symbol: &str) -> bool {
    let path = symbol.trim_start_matches('<');
    ["std::", "core::", "alloc::", "test::", "panic_unwind::"]
        .iter()
        .any(|p| path.starts_with(p))
}

/// Parses one `site PID FRAME…` line's frames: `INDEX:ADDRESS` (hex) with
/// the module of that index in `modules`, or `?:ADDRESS`.
pub fn parse_frames<'a>(
    frames: impl Iterator<Item = &'a str>,
    module: impl Fn(&str) -> Option<String>,
) -> Vec<Frame> {
    frames
        .filter_map(|f| {
            let (m, a) = f.split_once(':')?;
            let addr = u64::from_str_radix(a, 16).ok()?;
            Some(Frame {
                module: if m == "?" {
                    String::new()
                } else {
                    module(m).unwrap_or_default()
                },
                addr,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_name_their_modules() {
        let frames = parse_frames("0:1a ?:ff 3:10 junk 0:zz".split(' '), |i| {
            (i == "0").then(|| "/bin/t".to_owned())
        });
        assert_eq!(
            frames,
            [
                Frame {
                    module: "/bin/t".into(),
                    addr: 0x1a
                },
                Frame {
                    module: String::new(),
                    addr: 0xff
                },
                Frame {
                    module: String::new(),
                    addr: 0x10
                },
            ]
        );
    }

    /// A line the user's call reached a dependency's drop through names both.
    #[test]
    fn a_site_names_the_dependency_line_it_went_through() {
        let site = Site {
            file: Some("tests/server.rs".into()),
            line: Some(7),
            function: Some("server::binds".into()),
            found: Found::Workspace,
            via: Some("portpicker-0.1.1/src/lib.rs:58".into()),
        };
        assert_eq!(
            site.label(),
            "`tests/server.rs:7` in `server::binds` (through `portpicker-0.1.1/src/lib.rs:58`)"
        );
        assert_eq!(site.location(), "tests/server.rs:7");
    }

    #[test]
    fn the_workspace_excludes_cargo_home_and_the_build_output() {
        let s = Workspace {
            root: "/w".into(),
            foreign: vec!["/w/.cargo".into(), "/w/target".into()],
        };
        assert!(s.has(Some("/w/src/lib.rs")));
        assert!(!s.has(Some("/w/target/debug/build/x/out/gen.rs")));
        assert!(!s.has(Some("/w/.cargo/registry/src/a/b.rs")));
        assert!(!s.has(Some("/rustc/abc/library/std/src/os/fd/owned.rs")));
        assert!(!s.has(None));
        assert!(is_toolchain("/rustc/abc/library/core/src/ptr/mod.rs"));
        assert!(is_toolchain_symbol(
            "<std::os::fd::owned::OwnedFd as core::ops::drop::Drop>::drop"
        ));
        assert!(is_toolchain_symbol(
            "core::ptr::drop_in_place<std::net::tcp::TcpListener>"
        ));
        assert!(!is_toolchain_symbol("audit_fixture::picked_port_binds"));
        assert_eq!(
            short_path(
                "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/portpicker-0.1.1/src/lib.rs"
            ),
            "portpicker-0.1.1/src/lib.rs"
        );
        assert_eq!(short_path("/w/src/lib.rs"), "/w/src/lib.rs");
        assert!(!is_toolchain_symbol(
            "<my::Guard as core::ops::drop::Drop>::drop"
        ));
    }
}
