#!/usr/bin/env python3
"""Holds descriptors both ways the audit can (issue 52): passed to one
holder process (`hold-by=pass`, the audit's default) and by a fork (`fork`).

- The labelled binaries: every closed descriptor held by the injector, each
  way with its sham (`drop=all`), counting per test the runs it failed, the
  copies held and the closes let through. The two must break the same
  exposed tests; their shams none.
- The probes' own fork windows: every probe run as `fdwindow probe HAZARD
  --hold-by fork` and `--hold-by pass` (the trial's descriptor passed to a
  holder instead of a parked child), comparing each fork-window cell's hits.

    python3 benches/flakes/hold_compare.py --fdwindow target/release/fdwindow --runs 7

Writes RESULTS/audits/hold-compare-<platform>.json.
"""
import argparse
import datetime
import glob
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib as B

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = 1


def injector(path):
    if path:
        return path
    found = sorted(glob.glob(str(ROOT / "target/*/build/fdwindow-*/out/shims/inject")),
                   key=os.path.getmtime)
    if not found:
        sys.exit("no injector built: cargo build first, or --injector PATH")
    return found[-1]


def held_runs(cmd, inject, spec, runs):
    fails, held, skipped, secs = {}, 0, 0, []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            report = os.path.join(tmp, "report")
            env = dict(os.environ, LD_PRELOAD=inject, FDWINDOW_PRESSURE=spec,
                       FDWINDOW_PRESSURE_REPORT=report)
            start = time.monotonic()
            proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, timeout=600,
                                  cwd=B.HERE)
            secs.append(time.monotonic() - start)
            for test, word in B.parse_run_output(proc.stdout.splitlines()).items():
                if word == "FAILED":
                    fails[test] = fails.get(test, 0) + 1
            text = Path(report).read_text() if os.path.exists(report) else ""
        for line in text.splitlines():
            if line.startswith("holds "):
                f = line.split()
                held += int(f[2])
                skipped += int(f[3])
    return {"spec": spec, "runs": runs, "failures": fails, "held": held, "unheld": skipped,
            "median_s": B.median(secs)}


def probe_names(fdwindow):
    """The probes this fdwindow has, from its own refusal of an unknown one."""
    proc = subprocess.run([fdwindow, "probe", "-"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    listed = proc.stderr.rsplit("probes: ", 1)
    if proc.returncode != 2 or len(listed) != 2:
        sys.exit(f"{fdwindow} probe - did not list its probes: {proc.stderr.strip()}")
    return [p.strip() for p in listed[1].split(",")]


def fork_window_cells(fdwindow, hazard, how):
    """{arm: outcome} of HAZARD's fork-window cells held `how` (races cut short:
    only the deterministic cells are compared)."""
    proc = subprocess.run([fdwindow, "probe", hazard, "--hold-by", how, "--race-ms", "1"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                          timeout=600)
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}"}
    report = json.loads(proc.stdout)
    if report.get("scope", {}).get("held_by") != (None if how == "fork" else how):
        sys.exit(f"{hazard} --hold-by {how}: its report does not say it was held so")
    cells = {}
    for arm in report["arms"]:
        if arm["window"] != "fork-window":
            continue
        o = arm["outcome"]
        cells[arm["arm"]] = {"role": arm["role"], "status": o["status"],
                             "hits": o.get("hits"), "trials": o.get("trials"),
                             "unconfirmed": o.get("broken_trials", 0),
                             "copies": o.get("tallies", {}).get("child-copy", {}),
                             "error": o.get("error")}
    return cells


def word(cell):
    """What a deterministic cell says: every trial hit, none, or some."""
    if cell["status"] != "observed":
        return cell["status"]
    return {0: "none", cell["trials"]: "all"}.get(cell["hits"], "some")


def compare_probes(fdwindow):
    probes, same, differ = {}, 0, []
    for hazard in probe_names(fdwindow):
        fork = fork_window_cells(fdwindow, hazard, "fork")
        passed = fork_window_cells(fdwindow, hazard, "pass")
        if not fork and not passed:
            continue
        cells = {}
        for arm in sorted(set(fork) | set(passed)):
            f, p = fork.get(arm), passed.get(arm)
            agree = bool(f and p and "status" in f and "status" in p and word(f) == word(p))
            cells[arm] = {"fork": f, "pass": p, "same": agree}
            if agree:
                same += 1
            else:
                differ.append(f"{hazard} {arm}")
            print(f"{hazard} {arm}: fork {f and word(f)}, pass {p and word(p)}", flush=True)
        probes[hazard] = cells
    return {"cells_same": same, "cells_differ": differ, "probes": probes}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fdwindow", required=True)
    ap.add_argument("--injector", help="the injector library (default: the newest built)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--hold", default="100ms")
    ap.add_argument("--results", default=str(ROOT / "results"))
    args = ap.parse_args()
    inject = injector(args.injector)
    bins = B.build(quiet=True)
    labels = B.load_labels()
    version = subprocess.run([args.fdwindow, "--version"], stdout=subprocess.PIPE,
                             text=True).stdout.strip()
    out = {"schema": SCHEMA, "about": __doc__.split("\n\n")[0],
           "command": "python3 benches/flakes/hold_compare.py " + shlex.join(sys.argv[1:]),
           "measured_at": datetime.datetime.now(datetime.timezone.utc)
           .strftime("%Y-%m-%dT%H:%M:%SZ"),
           "fdwindow_version": version, "runs": args.runs, "hold": args.hold,
           "binaries": {}}
    for b in labels["binaries"]:
        name = b["binary"]
        cmd = B.argv([bins[name]] + b["args"])
        exposed = sorted(t["name"] for t in b["tests"] if B.is_exposed(t))
        arms = {}
        for by, extra in [("pass", ""), ("fork", ",max-alive=1024")]:
            for sham in (False, True):
                spec = f"close-hold=all,hold={args.hold},hold-by={by}{extra}"
                arm = f"{by}-sham" if sham else by
                arms[arm] = held_runs(cmd, inject, spec + (",drop=all" if sham else ""), args.runs)
                a = arms[arm]
                print(f"{name} {arm}: exposed failed "
                      f"{sum(1 for t in exposed if a['failures'].get(t))}/{len(exposed)}, "
                      f"{a['held']} held, {a['unheld']} unheld, median {a['median_s']:.2f} s",
                      flush=True)
        out["binaries"][name] = {"exposed": exposed, "arms": arms}
    out["probes"] = compare_probes(args.fdwindow)
    platform = B.platform_id(args.fdwindow)
    out["platform"] = platform
    path = Path(args.results) / "audits" / f"hold-compare-{platform}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    tmp.rename(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
