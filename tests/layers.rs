//! Holds the layers of the workspace's two library crates: each stage
//! folder imports only from the folders below it, and no modules import each
//! other in a circle.
//!
//! The pipeline runs one way. `fdwindow-fix` ([`FIX`]) holds the OS calls,
//! the building blocks, and on top the fixes and the co-tenant users depend
//! on. `fdwindow` ([`FDWINDOW`]) builds on it: probes run on the harness,
//! which writes reports; the runner merges them into the results folder; the
//! evidence answers questions about it; the views render the answers. A
//! file's non-test `crate::…` paths (in `use` or inline; `super::` resolved
//! against the file's own place) name the module they reach; each must be in
//! the file's own folder or a lower one. Test modules (`#[cfg(test)]` items)
//! may reach anywhere: they are not part of the layering. Comments and
//! string literals are skipped. Modules import each other by their stage path
//! (`crate::report::verdict`): a path through a crate root names no stage
//! and fails, and neither root re-exports a module, so the imports draw the
//! pipeline and no module is reachable twice.
//!
//! The binary's own modules (`src/main.rs`, `src/cli/`) sit above all of
//! this and use the library through `fdwindow::…`; they are not checked.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A library crate of the workspace: where its sources are and its
/// top-level modules in layers, lowest first. A module may import from its
/// own layer's files and from any layer before it, never from one after it;
/// two modules of one layer must not import each other.
struct Crate {
    /// Its source folder, from the workspace root.
    src: &'static str,
    /// Its top-level modules by layer, lowest first.
    layers: &'static [&'static [&'static str]],
    /// Folders whose files must not import each other.
    independent: &'static [&'static str],
    /// Files and folders under `src` that are not the library's (a binary's).
    skip: &'static [&'static str],
}

/// The crate users depend on: the OS calls, the building blocks, then the
/// fixes and the co-tenant, none of which imports another.
const FIX: Crate = Crate {
    src: "fdwindow-fix/src",
    layers: &[
        &["sys"],  // the OS calls, one file per platform
        &["base"], // safe building blocks: descriptors, locks, sockets, children, scratch
        // the helpers users put in their tests, and the in-process co-tenant
        &[
            "env", "isolate", "listener", "lock", "pressure", "scratch", "spawn",
        ],
    ],
    independent: &[],
    skip: &[],
};

/// The `fdwindow` crate, on top of `fdwindow-fix` (whose paths it may use
/// anywhere: they are not `crate::` paths).
const FDWINDOW: Crate = Crate {
    src: "src",
    layers: &[
        &["error"],    // the one error type and its exit statuses
        &["report"],   // the vocabulary: windows, verdict rules, the platform, the documents
        &["base"],     // the one writer of stdout and stderr
        &["hazards"],  // what probes are made of beyond the fixes
        &["cotenant"], // the preloaded shims and the audit's detection rule
        &["harness"],  // runs a probe's arms and writes its report
        &["evidence"], // the results folder, claims, costs, and the queries over them
        // the matrix, the chart, advice, the README's sections: each view
        // renders from the evidence alone, so no view reaches into another
        &["views"],
        &["runner"], // runs the probes and writes results and views
        &["vm"],     // the same under other kernels in QEMU
    ],
    independent: &["views"],
    // The binary's own modules sit above all of this.
    skip: &["main.rs", "cli"],
};

/// Items defined in a crate's `lib.rs` itself that any module may use.
const ROOT_ITEMS: &[&str] = &["test_serial"];

/// One import that breaks the layers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Finding {
    file: String,
    import: String,
    why: String,
}

/// Replaces comments, string and char literals by spaces (lines kept), so
/// that a `crate::` in a doc comment or a message is not an import.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == b'r'
            && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            // A raw string: r"…", r#"…"#, …
            let mut j = i + 1;
            while b.get(j) == Some(&b'#') {
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            let mut end = j + 1;
            while end < b.len() {
                if b[end] == b'"'
                    && b[end + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == b'#')
                        .count()
                        == hashes
                {
                    end += 1 + hashes;
                    break;
                }
                end += 1;
            }
            for &x in &b[i..end.min(b.len())] {
                blank(&mut out, x);
            }
            i = end;
        } else if c == b'"' {
            blank(&mut out, c);
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    blank(&mut out, b[i]);
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            if i < b.len() {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            let close = if b.get(i + 1) == Some(&b'\\') {
                // The escaped character may itself be a quote ('\'').
                b.get(i + 3..)
                    .and_then(|rest| rest.iter().position(|&x| x == b'\''))
                    .map(|p| i + 3 + p)
            } else {
                // One UTF-8 character, then a quote.
                let len = match b.get(i + 1) {
                    Some(&x) if x >= 0xF0 => 4,
                    Some(&x) if x >= 0xE0 => 3,
                    Some(&x) if x >= 0xC0 => 2,
                    _ => 1,
                };
                (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 1 + len)
            };
            match close {
                Some(end) => {
                    for &x in &b[i..=end] {
                        blank(&mut out, x);
                    }
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8(out).expect("only ASCII bytes replaced")
}

/// Blanks every item under `#[cfg(test)]` (or `#[cfg(all(test, …))]`): the
/// attribute and the item after it, to its `;` or its closing brace.
fn drop_test_items(code: &str) -> String {
    let mut b = code.as_bytes().to_vec();
    let mut from = 0;
    while let Some(at) = find_cfg_test(&b, from) {
        let mut i = at;
        let mut depth = 0usize;
        // Skip the attribute itself.
        while i < b.len() && b[i] != b']' {
            i += 1;
        }
        i += 1;
        while i < b.len() {
            match b[i] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        for x in &mut b[at..i.min(code.len())] {
            if *x != b'\n' {
                *x = b' ';
            }
        }
        from = i;
    }
    String::from_utf8(b).expect("only ASCII bytes replaced")
}

fn find_cfg_test(b: &[u8], from: usize) -> Option<usize> {
    let text = std::str::from_utf8(&b[from..]).ok()?;
    ["#[cfg(test)]", "#[cfg(all(test"]
        .iter()
        .filter_map(|pat| text.find(pat))
        .min()
        .map(|p| from + p)
}

/// The module path of a file under `src/`: `evidence/costs.rs` is
/// `["evidence", "costs"]`, `harness/mod.rs` is `["harness"]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// Every path that leaves the file: `crate::a::b…` and `super::…`, each as
/// the absolute path of its first two segments, with the text it came from.
fn paths_out(code: &str, here: &[String]) -> Vec<(Vec<String>, String)> {
    let inline = inline_modules(code);
    let mut out = Vec::new();
    for (at, _) in code
        .match_indices("crate::")
        .chain(code.match_indices("super::"))
    {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue; // `foo::super::`, `$crate` is fine but `mycrate::` is not ours
        }
        let (base, rest) = if code[at..].starts_with("crate::") {
            (Vec::new(), &code[at + "crate::".len()..])
        } else {
            // `super::` inside an inline `mod name { … }` starts from it.
            let mut base = here.to_vec();
            base.extend(
                inline
                    .iter()
                    .filter(|(_, range)| range.contains(&at))
                    .map(|(name, _)| name.clone()),
            );
            let mut rest = &code[at..];
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r.trim_start();
            }
            (base, rest)
        };
        let line = code[..at].matches('\n').count() + 1;
        let mut heads: Vec<Vec<String>> = Vec::new();
        expand(base, rest, &mut heads);
        for h in heads {
            let text = format!("line {line}: {}", h.join("::"));
            out.push((h, text));
        }
    }
    out
}

/// The paths that `rest` (the text after `crate::` or the `super::`s)
/// names from `base`, each cut at two segments: a `{…}` group met before the
/// second segment, as in `crate::{a, b}` or `crate::views::{matrix, chart}`,
/// gives one path per entry (nested groups too).
fn expand(mut base: Vec<String>, rest: &str, heads: &mut Vec<Vec<String>>) {
    let ident = |s: &str| -> usize {
        s.bytes()
            .position(|c| !(c.is_ascii_alphanumeric() || c == b'_'))
            .unwrap_or(s.len())
    };
    let mut rest = rest.trim_start();
    while base.len() < 2 {
        if let Some(group) = rest.strip_prefix('{') {
            for entry in group_entries(group) {
                expand(base.clone(), &entry, heads);
            }
            return;
        }
        let n = ident(rest);
        if n == 0 {
            break;
        }
        base.push(rest[..n].to_string());
        rest = &rest[n..];
        match rest.trim_start().strip_prefix("::") {
            Some(r) => rest = r.trim_start(),
            None => break,
        }
    }
    heads.push(base);
}

/// The entries of a `{…}` group (the text after its `{`), split at its
/// top-level commas, up to its closing brace.
fn group_entries(group: &str) -> Vec<String> {
    let mut depth = 1;
    let mut entry = String::new();
    let mut entries = Vec::new();
    for ch in group.chars() {
        match ch {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => {
                entries.push(std::mem::take(&mut entry));
                continue;
            }
            _ => {}
        }
        entry.push(ch);
    }
    entries.push(entry);
    entries.retain(|e| !e.trim().is_empty());
    entries
}

/// Each inline `mod name { … }` of the file: its name and its byte range,
/// outer ones first.
fn inline_modules(code: &str) -> Vec<(String, std::ops::Range<usize>)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (at, _) in code.match_indices("mod ") {
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let rest = &code[at + 4..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || !rest[name.len()..].trim_start().starts_with('{') {
            continue; // `mod name;`: a file of its own
        }
        let open = at + 4 + name.len() + rest[name.len()..].find('{').expect("checked");
        let mut depth = 0usize;
        let mut end = b.len();
        for (i, &c) in b.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((name, open..end));
    }
    out
}

/// The names the crate root's `pub use` lines export (`pub use a::{b, c};`
/// gives `b` and `c`).
fn root_reexports(lib_rs: &str) -> BTreeSet<String> {
    let code = strip(lib_rs);
    let mut names = BTreeSet::new();
    for stmt in code.split(';') {
        let Some(rest) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let list = rest.rsplit_once("::{").map_or(rest, |(_, l)| l);
        for name in list.trim_end_matches('}').split(',') {
            let name = name.trim().rsplit("::").next().unwrap_or("").trim();
            if !name.is_empty() {
                names.insert(name.to_string());
            }
        }
    }
    names
}

/// The node a path reaches: its top-level module and, when it names one,
/// the file module inside it.
fn resolve(path: &[String], files: &BTreeSet<Vec<String>>) -> Vec<String> {
    let mut full = path.to_vec();
    full.truncate(2);
    if full.len() == 2 && !files.contains(&full) {
        full.truncate(1);
    }
    full
}

/// Checks the sources given as (path under `src/`, text): the layers, and no
/// circle among the modules. Returns every finding, sorted.
fn check(krate: &Crate, sources: &[(PathBuf, String)]) -> Vec<Finding> {
    let rank = |top: &str| krate.layers.iter().position(|l| l.contains(&top));
    let files: BTreeSet<Vec<String>> = sources.iter().map(|(p, _)| module_path(p)).collect();
    let mut findings = Vec::new();
    let mut edges: BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>> = BTreeMap::new();
    for (rel, text) in sources {
        let here = module_path(rel);
        let file = format!("{}/{}", krate.src, rel.display());
        let Some(top) = here.first() else {
            continue; // lib.rs: only declarations and re-exports
        };
        let Some(from) = rank(top) else {
            findings.push(Finding {
                file,
                import: String::new(),
                why: format!("module `{top}` is in no layer: add it to LAYERS in tests/layers.rs"),
            });
            continue;
        };
        let code = drop_test_items(&strip(text));
        for (path, import) in paths_out(&code, &here) {
            if path.len() == 1 && ROOT_ITEMS.contains(&path[0].as_str()) {
                continue;
            }
            let to = resolve(&path, &files);
            match rank(&to[0]) {
                None => findings.push(Finding {
                    file: file.clone(),
                    import,
                    why: format!(
                        "`{}` is no stage folder: import it by its stage path (crate::<stage>::…)",
                        to[0]
                    ),
                }),
                Some(r) if r > from => findings.push(Finding {
                    file: file.clone(),
                    import,
                    why: format!("`{top}` imports from `{}`, a higher layer", to[0]),
                }),
                Some(r) if r == from && to[0] != *top => findings.push(Finding {
                    file: file.clone(),
                    import,
                    why: format!(
                        "`{top}` imports `{}`, a module of its own layer: they must not import each other",
                        to[0]
                    ),
                }),
                Some(_)
                    if krate.independent.contains(&top.as_str())
                        && to[0] == *top
                        && to.len() == 2
                        && here.len() == 2
                        && to != here =>
                {
                    findings.push(Finding {
                        file: file.clone(),
                        import,
                        why: format!(
                            "`{}` imports `{}`: the {top} must not import each other",
                            here.join("::"),
                            to.join("::")
                        ),
                    })
                }
                Some(_) => {
                    let node = |p: &[String]| p.iter().take(2).cloned().collect::<Vec<_>>();
                    if node(&here) != to {
                        edges
                            .entry(node(&here))
                            .or_default()
                            .entry(to)
                            .or_insert_with(|| format!("{file} {import}"));
                    }
                }
            }
        }
    }
    for circle in circles(&edges) {
        let mut lines = Vec::new();
        for (i, a) in circle.iter().enumerate() {
            let b = &circle[(i + 1) % circle.len()];
            if let Some(at) = edges.get(a).and_then(|e| e.get(b)) {
                lines.push(format!("{} -> {} ({at})", a.join("::"), b.join("::")));
            }
        }
        findings.push(Finding {
            file: String::new(),
            import: circle
                .iter()
                .map(|n| n.join("::"))
                .collect::<Vec<_>>()
                .join(" -> "),
            why: format!("import circle: {}", lines.join("; ")),
        });
    }
    findings.sort();
    findings
}

/// One circle through each strongly connected group of modules (Tarjan's
/// algorithm finds the groups; a walk inside a group closes a circle).
fn circles(edges: &BTreeMap<Vec<String>, BTreeMap<Vec<String>, String>>) -> Vec<Vec<Vec<String>>> {
    type Node = Vec<String>;
    struct Tarjan<'a> {
        edges: &'a BTreeMap<Node, BTreeMap<Node, String>>,
        index: BTreeMap<Node, usize>,
        low: BTreeMap<Node, usize>,
        stack: Vec<Node>,
        on_stack: BTreeSet<Node>,
        groups: Vec<Vec<Node>>,
    }
    impl Tarjan<'_> {
        fn visit(&mut self, v: &Node) {
            let i = self.index.len();
            self.index.insert(v.clone(), i);
            self.low.insert(v.clone(), i);
            self.stack.push(v.clone());
            self.on_stack.insert(v.clone());
            let next: Vec<Node> = self
                .edges
                .get(v)
                .map(|e| e.keys().cloned().collect())
                .unwrap_or_default();
            for w in next {
                if !self.index.contains_key(&w) {
                    self.visit(&w);
                    let l = self.low[v].min(self.low[&w]);
                    self.low.insert(v.clone(), l);
                } else if self.on_stack.contains(&w) {
                    let l = self.low[v].min(self.index[&w]);
                    self.low.insert(v.clone(), l);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(&w);
                    let done = &w == v;
                    group.push(w);
                    if done {
                        break;
                    }
                }
                if group.len() > 1 {
                    self.groups.push(group);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        groups: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.groups
        .into_iter()
        .map(|group| {
            let members: BTreeSet<Node> = group.into_iter().collect();
            // Walk from the first member along edges inside the group until a
            // node repeats: the part from its first visit is a circle.
            let mut path: Vec<Node> = vec![members.iter().next().expect("non-empty").clone()];
            loop {
                let last = path.last().expect("non-empty");
                let next = edges[last]
                    .keys()
                    .find(|w| members.contains(*w))
                    .expect("a member of a strongly connected group has an edge inside it")
                    .clone();
                if let Some(p) = path.iter().position(|n| *n == next) {
                    break path.split_off(p);
                }
                path.push(next);
            }
        })
        .collect()
}

/// A crate's `lib.rs` and its library's other sources (path under its
/// `src`, text), sorted.
fn library_sources(krate: &Crate) -> (String, Vec<(PathBuf, String)>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(krate.src);
    let lib_rs = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let mut out = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read the source folder") {
            let path = entry.expect("a folder entry").path();
            let rel = path.strip_prefix(&src).expect("under src/").to_path_buf();
            if krate.skip.iter().any(|s| rel.starts_with(s)) {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a source file");
                out.push((rel, text));
            }
        }
    }
    out.sort();
    (lib_rs, out)
}

fn report(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| format!("{} {}: {}", f.file, f.import, f.why))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_import_goes_down_the_layers_and_none_closes_a_circle() {
    for (krate, at_least) in [(&FDWINDOW, 40), (&FIX, 15)] {
        let (_, sources) = library_sources(krate);
        assert!(
            sources.len() > at_least,
            "found only {} files under {}: is the walk broken?",
            sources.len(),
            krate.src
        );
        let findings = check(krate, &sources);
        assert!(
            findings.is_empty(),
            "layer violations in {} (the order, lowest first: {:?}):\n{}",
            krate.src,
            krate.layers,
            report(&findings)
        );
    }
}

/// Neither crate's root re-exports a module: each is reached once, by its
/// stage path.
#[test]
fn the_roots_reexport_nothing() {
    for krate in [&FDWINDOW, &FIX] {
        let (lib_rs, _) = library_sources(krate);
        let exported = root_reexports(&lib_rs);
        assert!(
            exported.is_empty(),
            "{}/lib.rs re-exports {exported:?}: a module reachable twice",
            krate.src
        );
    }
}

#[test]
fn every_top_level_module_is_in_a_layer() {
    for krate in [&FDWINDOW, &FIX] {
        let (_, sources) = library_sources(krate);
        let tops: BTreeSet<String> = sources
            .iter()
            .filter_map(|(p, _)| module_path(p).first().cloned())
            .collect();
        let listed: BTreeSet<String> = krate
            .layers
            .iter()
            .flat_map(|l| l.iter().map(|s| s.to_string()))
            .collect();
        assert_eq!(
            tops, listed,
            "{} and its layers list different top-level modules",
            krate.src
        );
    }
}

#[test]
fn src_holds_at_most_ten_files_directly() {
    for krate in [&FDWINDOW, &FIX] {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(krate.src);
        let files: Vec<String> = std::fs::read_dir(&src)
            .expect("read the source folder")
            .map(|e| e.expect("an entry").path())
            .filter(|p| p.is_file())
            .map(|p| p.display().to_string())
            .collect();
        assert!(
            files.len() <= 10,
            "{} holds {} files: {files:?}",
            krate.src,
            files.len()
        );
    }
}

// The mutations that must break the check (STYLE.md 14): each adds one bad
// import to the real tree, or a circle, and the check must name it.

fn with_file(sources: &[(PathBuf, String)], rel: &str, extra: &str) -> Vec<(PathBuf, String)> {
    let mut out = sources.to_vec();
    let file = out
        .iter_mut()
        .find(|(p, _)| p == Path::new(rel))
        .unwrap_or_else(|| panic!("src/{rel} exists"));
    file.1.push_str(extra);
    out
}

#[test]
fn an_upward_import_fails_and_names_the_file() {
    for (krate, rel, extra, offending) in [
        (
            &FIX,
            "sys/linux.rs",
            "\nuse crate::spawn::Command;\n",
            "spawn",
        ),
        (
            &FIX,
            "base/child.rs",
            "\nuse crate::pressure::Spec;\n",
            "pressure",
        ),
        (
            &FDWINDOW,
            "report/mod.rs",
            "\nfn f() { crate::harness::main(todo!()); }\n",
            "harness",
        ),
        (
            &FDWINDOW,
            "views/advise.rs",
            "\nuse crate::{evidence::query, runner::RunOptions};\n",
            "runner",
        ),
        (
            &FDWINDOW,
            "base/out.rs",
            "\nuse crate::harness::Probe;\n",
            "harness",
        ),
    ] {
        let (_, sources) = library_sources(krate);
        let findings = check(krate, &with_file(&sources, rel, extra));
        let file = format!("{}/{rel}", krate.src);
        assert!(
            findings
                .iter()
                .any(|f| f.file == file && f.import.contains(offending)),
            "adding `{}` to {file} was not caught: {findings:?}",
            extra.trim()
        );
    }
}

/// The fixes are siblings: one importing another fails.
#[test]
fn a_fix_importing_another_fails() {
    let (_, sources) = library_sources(&FIX);
    let findings = check(
        &FIX,
        &with_file(&sources, "listener.rs", "\nuse crate::lock::unlock;\n"),
    );
    assert!(
        findings
            .iter()
            .any(|f| f.file == "fdwindow-fix/src/listener.rs"
                && f.why.contains("must not import each other")),
        "listener importing lock was not caught: {findings:?}"
    );
}

/// A path through the crate root (the old `crate::results`, or
/// `crate::child_hook`) names no stage and fails, even where the module it
/// meant sits in a lower layer.
#[test]
fn an_import_through_the_root_fails() {
    let (_, sources) = library_sources(&FDWINDOW);
    for (rel, extra) in [
        ("views/advise.rs", "\nuse crate::results::load_dir;\n"),
        ("hazards/spawn.rs", "\nuse crate::child_hook::Hook as H;\n"),
    ] {
        let findings = check(&FDWINDOW, &with_file(&sources, rel, extra));
        assert!(
            findings
                .iter()
                .any(|f| f.file == format!("src/{rel}") && f.why.contains("no stage folder")),
            "adding `{}` to src/{rel} was not caught: {findings:?}",
            extra.trim()
        );
    }
}

#[test]
fn a_view_importing_another_view_fails() {
    let (_, sources) = library_sources(&FDWINDOW);
    let findings = check(
        &FDWINDOW,
        &with_file(
            &sources,
            "views/advise.rs",
            "\nuse crate::views::matrix::render;\n",
        ),
    );
    assert!(
        findings.iter().any(
            |f| f.file == "src/views/advise.rs" && f.why.contains("must not import each other")
        ),
        "advise importing the matrix renderer was not caught: {findings:?}"
    );
}

/// A group after a folder (`crate::views::{matrix, chart}`) names each of
/// its files, so a view cannot reach another view through one.
#[test]
fn a_group_after_a_folder_names_each_file() {
    let (_, sources) = library_sources(&FDWINDOW);
    for extra in [
        "\nuse crate::views::{chart, matrix::render};\n",
        "\nuse crate::{views::{matrix}, evidence::query};\n",
    ] {
        let findings = check(&FDWINDOW, &with_file(&sources, "views/advise.rs", extra));
        assert!(
            findings.iter().any(|f| f.file == "src/views/advise.rs"
                && f.import.contains("views::matrix")
                && f.why.contains("must not import each other")),
            "adding `{}` to src/views/advise.rs was not caught: {findings:?}",
            extra.trim()
        );
    }
    let sources = with_file(
        &sources,
        "evidence/results.rs",
        "\nuse crate::evidence::{costs::CostsFile};\n",
    );
    let sources = with_file(
        &sources,
        "evidence/costs.rs",
        "\nuse crate::evidence::{results};\n",
    );
    let findings = check(&FDWINDOW, &sources);
    assert!(
        findings.iter().any(|f| f.why.starts_with("import circle")),
        "a costs <-> results circle through grouped imports was not caught: {findings:?}"
    );
}

#[test]
fn a_mutual_import_is_a_circle() {
    let (_, sources) = library_sources(&FDWINDOW);
    let sources = with_file(
        &sources,
        "evidence/results.rs",
        "\nuse crate::evidence::costs::CostsFile;\n",
    );
    let sources = with_file(
        &sources,
        "evidence/costs.rs",
        "\nuse crate::evidence::results::load_dir;\n",
    );
    let findings = check(&FDWINDOW, &sources);
    assert!(
        findings.iter().any(|f| f.why.starts_with("import circle")
            && f.why.contains("evidence::costs -> evidence::results")),
        "a costs <-> results circle was not caught: {findings:?}"
    );
}

#[test]
fn comments_strings_and_test_modules_are_not_imports() {
    let (_, sources) = library_sources(&FDWINDOW);
    let extra = "\n/// See [`crate::vm`].\nconst S: &str = \"crate::vm::x\";\n\
                 #[cfg(test)]\nmod tests {\n    use crate::vm::emulated;\n    fn f() { let _ = ('{', '\\'', \"}\\\"\"); }\n}\n";
    let findings = check(&FDWINDOW, &with_file(&sources, "report/mod.rs", extra));
    assert!(findings.is_empty(), "{}", report(&findings));
    // And the same import outside the test module is one.
    let findings = check(
        &FDWINDOW,
        &with_file(&sources, "report/mod.rs", "\nuse crate::vm::emulated;\n"),
    );
    assert_eq!(findings.len(), 1, "{}", report(&findings));
}
