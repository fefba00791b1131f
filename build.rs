//! Builds the preload libraries fdwindow ships (`fdwindow::cotenant::preload`).
//!
//! Every `shims/NAME.c` becomes a shared library `$OUT_DIR/shims/NAME`, built
//! with the C compiler the `cc` crate picks for the target (its flags, `CC`,
//! `CFLAGS` and cross-compiler rules apply), and `src/cotenant/preload.rs` embeds it
//! with `include_bytes!`. Adding a shim is adding its `.c` file here and one
//! line in `src/cotenant/preload.rs`.
//!
//! When the target has no preload mechanism (only Linux and macOS have one
//! fdwindow uses), or its C toolchain cannot build a shared library (`make
//! check-macos` type-checks the Apple targets from Linux, where there is no
//! macOS SDK), every shim becomes an empty file and `$OUT_DIR/shims.rs` says
//! why; `fdwindow::cotenant::preload` then answers `Unsupported` with that reason at run
//! time. `FDWINDOW_NO_SHIMS=1` forces that stub (to test the path).
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

    let built = build_all(&shims, &dir);
    let stub_reason = match &built {
        Ok(()) => None,
        Err(why) => {
            println!(
                "cargo::warning=preload libraries not built ({why}); fdwindow::preload will answer Unsupported"
            );
            for src in &shims {
                std::fs::write(dir.join(stem(src)), b"").expect("write a stub shim");
            }
            Some(why.clone())
        }
    };
    let generated = format!(
        "/// Why the preload libraries are empty stubs in this build, if they are.\n\
         pub(crate) const STUB_REASON: Option<&str> = {stub_reason:?};\n"
    );
    std::fs::write(out.join("shims.rs"), generated).expect("write OUT_DIR/shims.rs");
}

fn stem(src: &Path) -> String {
    src.file_stem()
        .expect("a shim file name")
        .to_string_lossy()
        .into_owned()
}

/// Compiles every shim, or says why none can be.
fn build_all(shims: &[PathBuf], dir: &Path) -> Result<(), String> {
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
    for src in shims {
        let lib = dir.join(stem(src));
        let mut cmd = compiler.to_command();
        cmd.args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-pthread"])
            .arg("-o")
            .arg(&lib)
            .arg(src);
        if os == "linux" {
            // dlsym(RTLD_NEXT, …) for interposers: in libc from glibc 2.34, in libdl before.
            cmd.arg("-ldl");
        }
        let output = cmd
            .output()
            .map_err(|e| format!("cannot run the C compiler for {target}: {e}"))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            return Err(format!(
                "the C compiler for {target} cannot build {}: {first}",
                src.display()
            ));
        }
        // A shim ships warning-free: show what the compiler said.
        for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
            println!("cargo::warning={}: {line}", src.display());
        }
    }
    Ok(())
}
