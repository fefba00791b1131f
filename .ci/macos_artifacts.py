#!/usr/bin/env python3
"""Collects and checks `make build-macos`'s Mach-O files for one Apple target.

Reads cargo's JSON messages (stdin) from `cargo zigbuild build
--message-format=json-render-diagnostics --target TARGET`, copies the fdwindow
executable and each preload library the build script embedded (OUT_DIR/shims/
NAME, as build.rs writes them) to OUT/TARGET/, and checks each file:

- `file` says Mach-O 64-bit, of the target's arch (executable or dylib);
- it links libSystem alone (`llvm-objdump --macho --dylibs-used`): a Mac has
  no other library these need;
- on arm64, it carries a code signature (ad hoc), without which Apple Silicon
  kills it at exec;
- the parked-call interposer's __DATA,__interpose section holds one entry (two
  pointers, 16 bytes) per INTERPOSE(name) line of shims/parked_call.c, so no
  wrapped call was lost to a macro or the linker.

One line per failure and exit 1; an empty stub (build.rs could not build a
shim) is a failure naming the build's reason from OUT_DIR/shims.rs.
"""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ARCH = {"aarch64-apple-darwin": "arm64", "x86_64-apple-darwin": "x86_64"}
SHIMS = Path("shims")


def run(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def interposed_calls() -> int:
    """INTERPOSE(name); lines in the interposer's source, the macros' own
    definitions left out."""
    text = (SHIMS / "parked_call.c").read_text()
    return len(re.findall(r"^INTERPOSE\(\w+\);", text, re.MULTILINE))


def interpose_entries(path: Path) -> int:
    out = run("llvm-objdump", "--macho", "--section-headers", str(path))
    for line in out.splitlines():
        fields = line.split()
        # Idx Name Size VMA Type
        if len(fields) >= 3 and fields[1] == "__interpose":
            return int(fields[2], 16) // 16
    return 0


def check(path: Path, arch: str, kind: str) -> list[str]:
    problems = []
    described = run("file", "-b", str(path)).strip()
    if not (described.startswith("Mach-O 64-bit") and kind in described and arch in described):
        problems.append(f"{path}: not a Mach-O 64-bit {arch} {kind}: {described}")
    used = run("llvm-objdump", "--macho", "--dylibs-used", str(path)).splitlines()[1:]
    # A dylib lists its own name (LC_ID_DYLIB) among them.
    own = {line.strip() for line in run("llvm-objdump", "--macho", "--dylib-id", str(path)).splitlines()[1:]}
    libs = [lib for lib in (line.split()[0] for line in used if line.strip()) if lib not in own]
    if libs != ["/usr/lib/libSystem.B.dylib"]:
        problems.append(f"{path}: links {libs}, not libSystem alone")
    # Apple Silicon runs no unsigned code: the linker must have signed it ad hoc.
    headers = run("llvm-objdump", "--macho", "--private-headers", str(path))
    if arch == "arm64" and "LC_CODE_SIGNATURE" not in headers:
        problems.append(f"{path}: no code signature, which arm64 macOS requires")
    return problems


def main() -> int:
    target, out = sys.argv[1], Path(sys.argv[2])
    arch = ARCH[target]
    exe, shim_dir = None, None
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        reason = msg.get("reason")
        if reason == "compiler-artifact" and msg["target"]["name"] == "fdwindow" and msg.get("executable"):
            exe = Path(msg["executable"])
        # The workspace's one build script (fdwindow's; fdwindow-fix has none):
        # the only path package among the registry's.
        if reason == "build-script-executed" and msg["package_id"].startswith("path+"):
            shim_dir = Path(msg["out_dir"]) / "shims"
    if exe is None or shim_dir is None:
        print(f"build-macos: cargo built no fdwindow executable or build script for {target}", file=sys.stderr)
        return 1
    dest = out / target
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    problems = []
    shutil.copy2(exe, dest / "fdwindow")
    problems += check(dest / "fdwindow", arch, "executable")
    stubs = (shim_dir.parent / "shims.rs").read_text()
    for src in sorted(SHIMS.glob("*.c")):
        built = shim_dir / src.stem
        lib = dest / f"libfdwindow_{src.stem}.dylib"
        if built.stat().st_size == 0:
            problems.append(f"{src}: not built for {target}: {stubs.strip()}")
            continue
        shutil.copy2(built, lib)
        problems += check(lib, arch, "shared library")
        if src.stem == "parked_call":
            want, got = interposed_calls(), interpose_entries(lib)
            if got != want:
                problems.append(f"{lib}: __interpose holds {got} entries, shims/parked_call.c interposes {want} calls")
    for p in problems:
        print(f"build-macos: {p}", file=sys.stderr)
    if not problems:
        print(f"build-macos: {dest}: " + ", ".join(sorted(p.name for p in dest.iterdir())) + f" (Mach-O {arch}, libSystem only)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
