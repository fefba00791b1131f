#!/usr/bin/env python3
"""Holds every closed descriptor of each labelled binary both ways the
injector can (issue 52): passed to one holder process (`hold-by=pass`, the
audit's) and a fork per copy (`hold-by=fork`, max-alive=1024), each with its
sham (`drop=all`), and counts per test the runs it failed, the copies held
and the closes let through. The two must break the same exposed tests;
their shams none.

    python3 benches/flakes/hold_compare.py --fdwindow target/release/fdwindow --runs 7

Writes RESULTS/audits/hold-compare-<platform>.json.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib as B

ROOT = Path(__file__).resolve().parents[2]


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
    out = {"about": __doc__.split("\n\n")[0], "hold": args.hold, "binaries": {}}
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
    platform = B.platform_id(args.fdwindow)
    out["platform"] = platform
    path = Path(args.results) / "audits" / f"hold-compare-{platform}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    tmp.rename(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
