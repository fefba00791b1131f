//! `cargo test …`: built with `--no-run`, each binary with the environment
//! cargo would run it with.

use fdwindow::error::{Error, Result};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nextest_metadata::{RustBinaryId, RustTestBinaryKind};

use super::{binary::*, command::*};

/// `cargo test …`: built with `--no-run`, each test artifact listed. A
/// binary whose `--list` fails is named and left out, unless all fail.
pub(super) fn cargo_test(command: &[String], rest_at: usize) -> Result<(Vec<Binary>, Vec<String>)> {
    let rest = &command[rest_at..];
    let (before, after) = match rest.iter().position(|a| a == "--") {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let (build_args, testname) = split_cargo(before)?;
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..rest_at])
        .args(["--no-run", "--message-format=json-render-diagnostics"])
        .args(&build_args);
    let stdout = build(cmd)?;
    let mut artifacts = Vec::new();
    // Build scripts' outputs, by package: the library search paths, OUT_DIR
    // and `cargo::rustc-env` variables cargo gives the package's tests.
    let mut scripts: BTreeMap<String, cargo_metadata::BuildScript> = BTreeMap::new();
    for message in cargo_metadata::Message::parse_stream(stdout.as_bytes()) {
        match message.map_err(|e| usage!("cargo's JSON messages: {e}"))? {
            cargo_metadata::Message::CompilerArtifact(a)
                if a.profile.test && a.executable.is_some() =>
            {
                artifacts.push(a);
            }
            cargo_metadata::Message::BuildScriptExecuted(b) => {
                scripts.insert(b.package_id.repr.clone(), b);
            }
            _ => {}
        }
    }
    let mut warnings = Vec::new();
    let packages = packages(
        command,
        &build_args,
        artifacts.iter().map(|a| a.manifest_path.as_std_path()),
        &mut warnings,
    );
    let native: Vec<PathBuf> = scripts
        .values()
        .flat_map(|b| &b.linked_paths)
        .map(|p| native_dir(p.as_str()))
        .collect();
    let bin_args: Vec<String> = testname.into_iter().chain(after.iter().cloned()).collect();
    let recorded = match cargo_envs(command, rest_at, &build_args) {
        Ok(r) => r,
        Err(e) => {
            warnings.push(format!(
                "{e}: the tests get the environment fdwindow computes (CARGO_PKG_*, \
                 OUT_DIR, the library path), not cargo's `[env]`"
            ));
            BTreeMap::new()
        }
    };
    let mut binaries = Vec::new();
    let mut failures = Vec::new();
    for a in artifacts {
        let exe = a.executable.clone().expect("kept only with one");
        let (package, root) = match packages.get(a.manifest_path.as_std_path()) {
            Some((p, root)) => (Some(p), Some(root.clone())),
            None => (None, None),
        };
        let package_name = package.map_or_else(|| a.target.name.clone(), |p| p.name.to_string());
        let name = RustBinaryId::from_parts(&package_name, &binary_kind(&a.target), &a.target.name)
            .as_str()
            .to_owned();
        let cwd = a.manifest_path.parent().map(|p| p.as_std_path().to_owned());
        let mut bin = libtest_binary(name, exe.clone().into_std_path_buf(), cwd, &bin_args)?;
        bin.root = root;
        if let Some(env) = recorded.get(exe.as_std_path()) {
            bin.env.clone_from(env);
        } else {
            let mut dirs: Vec<PathBuf> = exe
                .parent()
                .map(|d| d.as_std_path().to_owned())
                .into_iter()
                .collect();
            dirs.extend(native.iter().cloned());
            bin.env = runtime_env(
                &command[0],
                package,
                &a.manifest_path,
                &a.target.name,
                &dirs,
            );
            if let Some(script) = scripts.get(&a.package_id.repr) {
                bin.env.push(("OUT_DIR".into(), script.out_dir.to_string()));
                bin.env.extend(script.env.iter().cloned());
            }
        }
        match list(&mut bin) {
            Ok(()) => binaries.push(bin),
            Err(e) => failures.push(e),
        }
    }
    if binaries.is_empty() && !failures.is_empty() {
        return Err(failures.swap_remove(0));
    }
    warnings.extend(failures.into_iter().map(|e| format!("not audited: {e}")));
    Ok((binaries, warnings))
}

/// The environment cargo gives each test binary, learned from cargo itself:
/// `cargo test` with the same build options runs every binary through
/// `fdwindow __record-env` as its target runner, which records what it was
/// given and runs nothing. This holds all cargo sets (`CARGO_PKG_*`, the
/// library path, build scripts' variables, the config's `[env]`), as only
/// cargo knows it. Doctests are skipped (`RUSTDOC=true`).
///
/// # References
/// - <https://doc.rust-lang.org/cargo/reference/config.html#targetcfgrunner>
pub(super) fn cargo_envs(
    command: &[String],
    rest_at: usize,
    build_args: &[String],
) -> Result<BTreeMap<PathBuf, Vec<(String, String)>>> {
    let me = std::env::current_exe().map_err(|e| usage!("fdwindow's own path: {e}"))?;
    let file = tempfile::Builder::new()
        .prefix("fdwindow-env-")
        .tempfile()
        .map_err(|e| usage!("a file for cargo's environment: {e}"))?;
    let quote = |s: &str| serde_json::to_string(s).expect("a string");
    let runner = format!(
        "target.'cfg(all())'.runner=[{}, \"__record-env\", {}]",
        quote(&me.to_string_lossy()),
        quote(&file.path().to_string_lossy())
    );
    // cargo refuses a flag given twice.
    let given = |flags: &[&str]| build_args.iter().any(|a| flags.contains(&a.as_str()));
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..rest_at]).args(["--config", &runner]);
    if !given(&["--no-fail-fast"]) {
        cmd.arg("--no-fail-fast");
    }
    if !given(&["-q", "--quiet"]) {
        cmd.arg("--quiet");
    }
    cmd.args(build_args)
        .env("RUSTDOC", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let status = cmd
        .status()
        .map_err(|e| usage!("cargo, to learn its test environment: {e}"))?;
    let text = std::fs::read_to_string(file.path()).unwrap_or_default();
    let mut envs = BTreeMap::new();
    let ours = std::env::var_os("RUSTDOC");
    for line in text.lines() {
        let Ok(record) = serde_json::from_str::<EnvRecord>(line) else {
            continue;
        };
        let env: Vec<(String, String)> = record
            .env
            .into_iter()
            // RUSTDOC was the capture's own, to skip doctests.
            .filter(|(k, _)| k != "RUSTDOC" || ours.is_some())
            .collect();
        envs.insert(record.program, env);
    }
    if envs.is_empty() {
        return Err(usage!(
            "cargo ran no test binary through fdwindow's recorder ({status}; a target runner \
             of the project's own takes precedence)"
        ));
    }
    Ok(envs)
}

/// The `[env]` table of cargo's configuration where the command runs, as
/// cargo applies it: a variable already set stays unless `force = true`.
/// (nextest applies it as cargo does; it runs its tests itself, so the
/// recorder of [`cargo_envs`] cannot learn it.) Read with `cargo config
/// get`, an unstable command, so `RUSTC_BOOTSTRAP=1` for that call only;
/// none when it fails. A `relative = true` value is taken as written.
///
/// # References
/// - <https://doc.rust-lang.org/cargo/reference/config.html#env>
pub(super) fn cargo_config_env(command: &[String]) -> Vec<(String, String)> {
    let out = Command::new(&command[0])
        .args([
            "-Zunstable-options",
            "config",
            "get",
            "env",
            "--format",
            "json-value",
        ])
        .env("RUSTC_BOOTSTRAP", "1")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let Ok(out) = out else {
        return Vec::new();
    };
    let Ok(serde_json::Value::Object(table)) = serde_json::from_slice(&out.stdout) else {
        return Vec::new();
    };
    table
        .into_iter()
        .filter_map(|(key, entry)| {
            let (value, force) = match &entry {
                serde_json::Value::String(v) => (v.clone(), false),
                serde_json::Value::Object(t) => (
                    t.get("value")?.as_str()?.to_owned(),
                    t.get("force").and_then(serde_json::Value::as_bool) == Some(true),
                ),
                _ => return None,
            };
            (force || std::env::var_os(&key).is_none()).then_some((key, value))
        })
        .collect()
}

/// One test binary's run as cargo would start it.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct EnvRecord {
    pub(super) program: PathBuf,
    pub(super) env: Vec<(String, String)>,
}

/// `fdwindow __record-env FILE PROGRAM ARGS…`: appends the environment this
/// process was given for `PROGRAM` to `FILE` as one JSON line (one write,
/// `O_APPEND`), and runs nothing.
pub fn record_env(file: &Path, run: &[String]) -> Result<()> {
    let program = run
        .first()
        .ok_or_else(|| Error::usage("__record-env: no program"))?;
    let record = EnvRecord {
        program: PathBuf::from(program),
        env: std::env::vars_os()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect(),
    };
    let mut line = serde_json::to_string(&record).expect("plain JSON");
    line.push('\n');
    std::fs::OpenOptions::new()
        .append(true)
        .open(file)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(|e| usage!("__record-env {}: {e}", file.display()))
}

/// A build script's `cargo::rustc-link-search=[KIND=]PATH` as a folder.
pub(super) fn native_dir(path: &str) -> PathBuf {
    match path.split_once('=') {
        Some((kind, dir))
            if ["native", "crate", "dependency", "framework", "all"].contains(&kind) =>
        {
            dir.into()
        }
        _ => path.into(),
    }
}

/// The environment cargo gives a test process of `package` (cargo's
/// `Compilation::fill_env`): its manifest, its `CARGO_PKG_*` metadata, the
/// crate name, and the library path with `dirs` first.
///
/// # References
/// - <https://doc.rust-lang.org/cargo/reference/environment-variables.html#environment-variables-cargo-sets-for-crates>
pub(super) fn runtime_env(
    cargo: &str,
    package: Option<&cargo_metadata::Package>,
    manifest: &cargo_metadata::camino::Utf8Path,
    target: &str,
    dirs: &[PathBuf],
) -> Vec<(String, String)> {
    let mut env = vec![
        (
            "CARGO".to_owned(),
            std::env::var("CARGO").unwrap_or_else(|_| cargo.to_owned()),
        ),
        ("CARGO_MANIFEST_PATH".to_owned(), manifest.to_string()),
        ("CARGO_CRATE_NAME".to_owned(), target.replace('-', "_")),
    ];
    if let Some(dir) = manifest.parent() {
        env.push(("CARGO_MANIFEST_DIR".into(), dir.to_string()));
    }
    if let Some(p) = package {
        let v = &p.version;
        let text = |o: Option<String>| o.unwrap_or_default();
        env.extend(
            [
                ("NAME", p.name.to_string()),
                ("VERSION", v.to_string()),
                ("VERSION_MAJOR", v.major.to_string()),
                ("VERSION_MINOR", v.minor.to_string()),
                ("VERSION_PATCH", v.patch.to_string()),
                ("VERSION_PRE", v.pre.to_string()),
                ("AUTHORS", p.authors.join(":")),
                ("DESCRIPTION", text(p.description.clone())),
                ("HOMEPAGE", text(p.homepage.clone())),
                ("REPOSITORY", text(p.repository.clone())),
                ("LICENSE", text(p.license.clone())),
                (
                    "LICENSE_FILE",
                    text(p.license_file.as_ref().map(|f| f.to_string())),
                ),
                (
                    "RUST_VERSION",
                    text(p.rust_version.as_ref().map(|r| r.to_string())),
                ),
                ("README", text(p.readme.as_ref().map(|r| r.to_string()))),
            ]
            .map(|(k, v)| (format!("CARGO_PKG_{k}"), v)),
        );
    }
    let var = if cfg!(target_os = "macos") {
        "DYLD_FALLBACK_LIBRARY_PATH"
    } else {
        "LD_LIBRARY_PATH"
    };
    let old = std::env::var_os(var);
    let paths = dirs
        .iter()
        .cloned()
        .chain(old.iter().flat_map(std::env::split_paths));
    if let Ok(joined) = std::env::join_paths(paths) {
        env.push((var.into(), joined.to_string_lossy().into_owned()));
    }
    env
}

/// nextest's kind of a cargo target: every library crate type is `lib`.
pub(super) fn binary_kind(target: &cargo_metadata::Target) -> RustTestBinaryKind {
    use cargo_metadata::TargetKind as K;
    match target.kind.first() {
        Some(K::Lib | K::RLib | K::DyLib | K::CDyLib | K::StaticLib) | None => {
            RustTestBinaryKind::LIB
        }
        Some(K::ProcMacro) => RustTestBinaryKind::PROC_MACRO,
        Some(K::Test) => RustTestBinaryKind::TEST,
        Some(K::Bench) => RustTestBinaryKind::BENCH,
        Some(K::Example) => RustTestBinaryKind::EXAMPLE,
        Some(K::Bin) => RustTestBinaryKind::BIN,
        Some(other) => RustTestBinaryKind::new(other.to_string()),
    }
}

/// Packages by manifest path, from `cargo metadata --no-deps` of the
/// workspace the command builds (and of any other manifest in
/// `manifests`): nextest's binary ids start with their names, and their
/// metadata is the tests' `CARGO_PKG_*`. With each, its workspace root.
pub(super) fn packages<'a>(
    command: &[String],
    build_args: &[String],
    manifests: impl Iterator<Item = &'a Path>,
    warnings: &mut Vec<String>,
) -> BTreeMap<PathBuf, (cargo_metadata::Package, PathBuf)> {
    let mut found = BTreeMap::new();
    let mut add =
        |meta: &mut cargo_metadata::MetadataCommand,
         found: &mut BTreeMap<PathBuf, (cargo_metadata::Package, PathBuf)>| {
            match meta.cargo_path(&command[0]).no_deps().exec() {
                Ok(m) => {
                    let root = m.workspace_root.into_std_path_buf();
                    for p in m.packages {
                        found.insert(
                            p.manifest_path.clone().into_std_path_buf(),
                            (p, root.clone()),
                        );
                    }
                }
                Err(e) => warnings.push(format!(
                    "cargo metadata: {e}: binaries are named by their targets, without CARGO_PKG_*"
                )),
            }
        };
    let mut meta = cargo_metadata::MetadataCommand::new();
    let manifest_path = build_args
        .iter()
        .position(|a| a == "--manifest-path")
        .and_then(|i| build_args.get(i + 1).map(String::as_str))
        .or_else(|| {
            build_args
                .iter()
                .find_map(|a| a.strip_prefix("--manifest-path="))
        });
    if let Some(p) = manifest_path {
        meta.manifest_path(p);
    }
    add(&mut meta, &mut found);
    // A package outside the workspace (`-p` of a path dependency).
    for m in manifests {
        if !found.contains_key(m) {
            add(
                cargo_metadata::MetadataCommand::new().manifest_path(m),
                &mut found,
            );
        }
    }
    found
}
