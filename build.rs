//! Builds the preload libraries fdwindow ships (`fdwindow::cotenant::preload`).
//!
//! Every `shims/NAME.c` becomes a shared library `$OUT_DIR/shims/NAME`, with
//! the `.c` files of a folder `shims/NAME/` beside it where one exists (the
//! library's parts: the injector's descriptor holder), built
//! with the C compiler the `cc` crate picks for the target (its flags, `CC`,
//! `CFLAGS` and cross-compiler rules apply), and `src/cotenant/preload.rs` embeds it
//! with `include_bytes!`. Adding a shim is adding its `.c` file here and one
//! line in `src/cotenant/preload.rs`.
//!
//! Each shim is built on its own. One that cannot be (the target has no
//! preload mechanism fdwindow uses, only Linux and macOS have one; its C
//! toolchain cannot build a shared library, as under `make check-macos`,
//! which has no C compiler for Apple targets; or the file does not compile)
//! becomes an empty file, the others are unaffected, and `$OUT_DIR/shims.rs`
//! records its own reason: `fdwindow::cotenant::preload` answers
//! `Unsupported` with it at run time, and the cells that needed the library
//! show it. `FDWINDOW_NO_SHIMS=1` stubs every shim (to test the path).
//! `make build-macos` builds them for both Apple targets with `zig cc`.
//!
//! cc builds objects and static archives only, so this script runs the
//! configured compiler itself with `-shared -fPIC -o`.

use std::path::{Path, PathBuf};

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let dir = out.join("shims");
    std::fs::create_dir_all(&dir).expect("create OUT_DIR/shims");
    println!("cargo::rerun-if-changed=shims");
    println!("cargo::rerun-if-env-changed=FDWINDOW_NO_SHIMS");

    let mut shims: Vec<PathBuf> = std::fs::read_dir("shims")
        .expect("read shims/")
        .map(|e| e.expect("read shims/").path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    shims.sort();

    // Each shim on its own: one that fails leaves the others built, and its
    // own reason reaches the cells that needed it.
    let mut stubs = Vec::new();
    for src in &shims {
        if let Err(why) = build(src, &dir) {
            println!(
                "cargo::warning=preload library {} not built ({why}); fdwindow will answer Unsupported for it",
                stem(src)
            );
            std::fs::write(dir.join(stem(src)), b"").expect("write a stub shim");
            stubs.push((stem(src), why));
        }
    }
    let generated = format!(
        "/// The preload libraries that are empty stubs in this build, by name, and why.\n\
         pub(crate) const STUBS: &[(&str, &str)] = &{stubs:?};\n"
    );
    std::fs::write(out.join("shims.rs"), generated).expect("write OUT_DIR/shims.rs");
}

fn stem(src: &Path) -> String {
    src.file_stem()
        .expect("a shim file name")
        .to_string_lossy()
        .into_owned()
}

/// The `.c` files of the folder named like `src` without `.c`, sorted: the
/// library's other parts (none when there is no such folder).
fn parts(src: &Path) -> Vec<PathBuf> {
    let mut parts: Vec<PathBuf> = std::fs::read_dir(src.with_extension(""))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "c"))
                .collect()
        })
        .unwrap_or_default();
    parts.sort();
    parts
}

/// Compiles one shim into `dir`, or says why it cannot be.
fn build(src: &Path, dir: &Path) -> Result<(), String> {
    if std::env::var_os("FDWINDOW_NO_SHIMS").is_some_and(|v| !v.is_empty() && v != "0") {
        return Err("FDWINDOW_NO_SHIMS is set".into());
    }
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os != "linux" && os != "macos" {
        return Err(format!("fdwindow knows no preload mechanism on {os}"));
    }
    let target = std::env::var("TARGET").unwrap_or_default();
    let compiler = cc::Build::new()
        .cargo_warnings(false)
        .try_get_compiler()
        .map_err(|e| format!("no C compiler for {target}: {e}"))?;
    let lib = dir.join(stem(src));
    let mut cmd = compiler.to_command();
    cmd.args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-pthread"])
        .arg("-o")
        .arg(&lib)
        .arg(src)
        .args(parts(src));
    if os == "linux" {
        // dlsym(RTLD_NEXT, …) for interposers: in libc from glibc 2.34, in libdl before.
        cmd.arg("-ldl");
    } else {
        // The dylib's own name (LC_ID_DYLIB): its file name as written, not
        // this build's OUT_DIR path.
        cmd.arg(format!("-Wl,-install_name,libfdwindow_{}.dylib", stem(src)));
    }
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run the C compiler for {target}: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        // The compiler's own reason: its first error, else its first line.
        let first = stderr
            .lines()
            .find(|l| l.contains("error"))
            .or_else(|| stderr.lines().find(|l| !l.trim().is_empty()))
            .unwrap_or("no message");
        return Err(format!(
            "the C compiler for {target} cannot build {}: {first}",
            src.display()
        ));
    }
    // A shim ships warning-free: show what the compiler said.
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        println!("cargo::warning={}: {line}", src.display());
    }
    Ok(())
}
