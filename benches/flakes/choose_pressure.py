#!/usr/bin/env python3
"""Which pressure finds the benchmark's exposed tests: the audit's screen default.

Reads calibration files written by `calibrate.py --pressure P --only BINARY`
(one per pressure and binary; "" is `fdwindow stress`'s default) and writes
one document: per pressure, each exposed test's failures in its pressured
runs, their total, the fewest for any one test, and the machine's load
average when each run began (rates move with load).

    python3 benches/flakes/choose_pressure.py --out benches/flakes/pressure-choice.json CAL.json...
"""

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402


def pressure_of(command):
    """The --pressure value of a calibrate.py command line ("" if none)."""
    words = shlex.split(command)
    for i, w in enumerate(words):
        if w == "--pressure" and i + 1 < len(words):
            # An empty value joined with spaces (no quotes) leaves the next option.
            return "" if words[i + 1].startswith("--") else words[i + 1]
        if w.startswith("--pressure="):
            return w.split("=", 1)[1]
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    per = {}
    for f in args.files:
        with open(f) as fh:
            doc = json.load(fh)
        p = pressure_of(doc["command"]) or "(fdwindow stress default)"
        entry = per.setdefault(p, {"binaries": {}, "sources": []})
        entry["sources"].append({"command": doc["command"], "measured_at": doc["measured_at"]})
        for b in doc["binaries"]:
            if b["binary"] in entry["binaries"]:
                sys.exit(f"{f}: {b['binary']} under {p!r} twice")
            entry["binaries"][b["binary"]] = {
                "loadavg_before": b.get("loadavg_before"),
                "pressured_runs": b["stress"]["arms"]["pressure"]["runs"],
                "pressure_spawns": b["stress"].get("pressure_spawns"),
                "exposed": {t["name"]: t["pressure"]["failures"]
                            for t in b["tests"] if B.is_exposed(t)},
                "not_exposed_pressured_failures": {
                    t["name"]: t["pressure"]["failures"] for t in b["tests"]
                    if not B.is_exposed(t)},
            }
    binaries = sorted({b for e in per.values() for b in e["binaries"]})
    summary = []
    for p, e in per.items():
        if sorted(e["binaries"]) != binaries:
            continue
        counts = [n for b in e["binaries"].values() for n in b["exposed"].values()]
        summary.append({"pressure": p, "exposed_failures": sum(counts),
                        "fewest_for_one_test": min(counts), "exposed_tests": len(counts)})
    summary.sort(key=lambda s: (-s["fewest_for_one_test"], -s["exposed_failures"]))
    out = {
        "about": "Failures of each exposed benchmark test in 150 pressured runs of its whole "
                 "binary, per candidate pressure (calibrate.py --pressure), merged by "
                 "choose_pressure.py. The audit's screen default is the first row of summary: "
                 "the most failures for the test found least, then the most in all. One sample "
                 "per pressure and binary, at the load averages recorded.",
        "binaries": binaries,
        "summary": summary,
        "pressures": per,
    }
    tmp = Path(args.out + ".tmp")
    tmp.write_text(json.dumps(out, indent=1) + "\n")
    os.replace(tmp, args.out)
    for s in summary:
        print(f"{s['pressure']:28s} total {s['exposed_failures']:3d}  fewest {s['fewest_for_one_test']}")


if __name__ == "__main__":
    main()
