#!/usr/bin/env python3
"""The workspace benchmark of `fdwindow audit` (README.md here; issue 52).

Builds the workspace's test binaries, then audits the whole workspace at
the audit's defaults, as a user would, once per way of running it:
`cargo test --release -- --test-threads=16` and `cargo nextest run --release
--test-threads 16`. Each report is scored against labels.json: every
labelled exposed test found (verdict `exposed`) with its hazard and site,
no other test flagged, every test screened with every close held
(`held_screened`), and the audit's own time (`seconds.total`: the build is
done before it starts). Writes RESULTS/audits/workspace-bench-<platform>.json
atomically.

Python 3.9 or newer, standard library only; runs from any folder.
"""

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "flakes"))
import benchlib as B  # noqa: E402

SCHEMA = 1
MODES = {
    "cargo-test": ["test", "--release", "--locked", "--", "--test-threads=16"],
    "nextest": ["nextest", "run", "--release", "--locked", "--test-threads", "16"],
}
# Verdicts that flag a test (the flakes benchmark's FLAGGED, and the
# ones that say the audit could not tell).
FLAGGED = {"exposed", "pressure-only", "load", "undecided"}


def log(msg):
    print(f"bench-workspace: {msg}", file=sys.stderr, flush=True)


def target_dir():
    return Path(os.environ.get("CARGO_TARGET_DIR") or HERE / "target")


def cargo_env():
    return dict(os.environ, CARGO_TARGET_DIR=str(target_dir()))


def build(cargo):
    cmd = [cargo, "test", "--release", "--locked", "--no-run"]
    if subprocess.run(cmd, cwd=HERE, env=cargo_env(), stderr=subprocess.DEVNULL).returncode:
        sys.exit(f"build failed: {' '.join(cmd)} (in {HERE})")


def audit(fdwindow, cargo, mode, timeout_s):
    """One audit of the workspace: (its JSON report or None, wall seconds, exit status)."""
    cmd = [str(fdwindow), "audit", "--format", "json", "--", cargo, *MODES[mode]]
    log(f"{mode}: {shlex.join(cmd)}")
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=HERE, env=cargo_env(), stdout=subprocess.PIPE, text=True,
                            errors="replace")
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        # SIGTERM stops an audit cleanly (its runs killed, its injector's
        # holders gone with their sockets).
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        return None, time.monotonic() - t0, None
    wall = time.monotonic() - t0
    try:
        return json.loads(out), wall, proc.returncode
    except ValueError:
        return None, wall, proc.returncode


def check_sites(labels):
    """Each label's site is a line that drops something: a label left
    behind by an edit that moved the line stops the run here rather than
    scoring the audit against the wrong line."""
    for e in labels["exposed"]:
        path, line = e["site"].rsplit(":", 1)
        lines = (HERE / path).read_text().splitlines()
        if not 0 < int(line) <= len(lines) or "drop(" not in lines[int(line) - 1]:
            sys.exit(f"labels.json: {e['binary']} {e['test']}: {e['site']} is not a drop; "
                     "the code moved, so move the label")


def score(report, labels):
    """What the report got right and wrong, against the labels."""
    want = {(e["binary"], e["test"]): e for e in labels["exposed"]}
    tests = report.get("tests", [])
    per_exposed, false_flags, verdicts = [], [], {}
    for t in tests:
        key = (t.get("binary"), t.get("name"))
        verdicts[t.get("verdict")] = verdicts.get(t.get("verdict"), 0) + 1
        site = (t.get("diagnosis") or {}).get("site") or {}
        named = site.get("file") and f"{site['file']}:{site.get('line')}"
        label = want.pop(key, None)
        if label is None:
            if t.get("verdict") in FLAGGED:
                false_flags.append({"binary": key[0], "test": key[1], "verdict": t.get("verdict"),
                                    "hazard": t.get("hazard"), "site": named})
            continue
        per_exposed.append({
            "binary": key[0], "test": key[1], "cause": label["cause"], "site": label["site"],
            "verdict": t.get("verdict"), "hazard": t.get("hazard"), "named_site": named,
            "found": t.get("verdict") == "exposed" and t.get("hazard") == label["cause"]
            and named == label["site"],
        })
    missing = [{"binary": b, "test": n} for (b, n) in want]
    return {
        "tests": len(tests),
        "binaries": len({t.get("binary") for t in tests}),
        "held_screened_false": sum(1 for t in tests if not t.get("held_screened")),
        "exposed_labelled": len(labels["exposed"]),
        "exposed_found": sum(1 for e in per_exposed if e["found"]),
        "false_flags": len(false_flags),
        "verdicts": verdicts,
        "causes": [{"site": c.get("site") and f"{c['site'].get('file')}:{c['site'].get('line')}",
                    "hazard": c.get("hazard"), "tests": c.get("tests")}
                   for c in report.get("causes", [])],
        "warnings": report.get("warnings", []),
        "exposed": per_exposed,
        "flagged_not_exposed": false_flags,
        "missing_from_report": missing,
    }


def main():
    ap = argparse.ArgumentParser(description="The workspace benchmark of fdwindow audit")
    ap.add_argument("--fdwindow", default=os.environ.get("FDWINDOW", "./target/release/fdwindow"))
    ap.add_argument("--cargo", default="cargo")
    ap.add_argument("--modes", default=",".join(MODES), help="cargo-test, nextest (comma list)")
    ap.add_argument("--repeats", type=int, default=1, help="audits per mode")
    ap.add_argument("--results", default="results")
    ap.add_argument("--out", help="default RESULTS/audits/workspace-bench-<platform>.json")
    ap.add_argument("--audit-timeout", type=int, default=600, help="seconds per audit")
    args = ap.parse_args()

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            sys.exit(f"unknown mode {m!r}; modes: {', '.join(MODES)}")
    if args.repeats < 1:
        sys.exit("--repeats must be 1 or more")
    if "nextest" in modes and subprocess.run(
            [args.cargo, "nextest", "--version"], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL).returncode:
        sys.exit("the nextest mode needs cargo-nextest (cargo install cargo-nextest), "
                 "or leave it out with --modes cargo-test")
    fdwindow = Path(args.fdwindow).resolve()
    if not os.access(fdwindow, os.X_OK):
        sys.exit(f"no fdwindow binary at {fdwindow} (--fdwindow or FDWINDOW)")
    labels = json.loads((HERE / "labels.json").read_text())
    check_sites(labels)

    build(args.cargo)
    platform = B.platform_id(fdwindow)
    version = subprocess.run([str(fdwindow), "--version"], stdout=subprocess.PIPE,
                             text=True).stdout.strip()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    load_before = B.loadavg()
    runs = []
    for m in modes:
        for _ in range(args.repeats):
            report, wall, rc = audit(fdwindow, args.cargo, m, args.audit_timeout)
            run = {"mode": m, "command": ["cargo", *MODES[m]], "exit_status": rc,
                   "wall_s": round(wall, 3)}
            if report is None:
                run["error"] = "timed out" if rc is None else "no JSON report on stdout"
            else:
                run["seconds"] = report.get("seconds")
                run.update(score(report, labels))
                log(f"{m}: {run['exposed_found']}/{run['exposed_labelled']} found, "
                    f"{run['false_flags']} false flags, {run['held_screened_false']} not "
                    f"held-screened, {run['seconds']['total']:.1f} s")
            runs.append(run)

    doc = {
        "schema": SCHEMA,
        "about": "The workspace benchmark of fdwindow audit (benches/workspace), written by "
                 "benches/workspace/run.py: the whole workspace audited at defaults per way of "
                 "running it, scored against labels.json. Every figure is measured.",
        "command": "python3 benches/workspace/run.py " + shlex.join(sys.argv[1:]),
        "measured_at": started,
        "platform": platform,
        "fdwindow_version": version,
        "git_describe": git_describe(),
        "loadavg_before": load_before,
        "loadavg_after": B.loadavg(),
        "found_rule": "verdict exposed, with the labelled hazard and site (file:line)",
        "runs": runs,
    }
    out = Path(args.out) if args.out else Path(args.results) / "audits" / \
        f"workspace-bench-{platform}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, out)
    log(f"wrote {out}")
    bad = [r for r in runs if "error" in r or r["exposed_found"] < r["exposed_labelled"]
           or r["false_flags"] or r["held_screened_false"]]
    sys.exit(1 if bad else 0)


def git_describe():
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], cwd=HERE,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


if __name__ == "__main__":
    main()
