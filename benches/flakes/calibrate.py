#!/usr/bin/env python3
"""Measures each benchmark test's failure rate per whole-binary run, alone and
under `fdwindow stress`'s default pressure, and writes calibration.json.

For each test binary: `fdwindow stress --runs N --show-output -- BINARY`
(alternating runs alone and under the default pressure), with each run's
libtest lines (`test NAME ... ok|FAILED`) read per run and arm; and the
binary's wall time over a few plain runs. Every figure in the output is
measured by this script; nothing is typed in.

    python3 benches/flakes/calibrate.py [--fdwindow PATH] [--runs N] [--only BINARY]...

Defaults: --fdwindow ./target/release/fdwindow (run from the repository
root), --runs 150, every binary. The binaries are built first
(cargo test --release --no-run; CARGO_TARGET_DIR is honoured).
"""

import argparse
import datetime
import hashlib
import json
import os
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402

TARGET = (0.005, 0.05)


def source_sha256(binary):
    """What the binary is built from: its test file, the shared library and
    the manifest and lock file, so a stale calibration can be told."""
    h = hashlib.sha256()
    for rel in (f"tests/{binary}.rs", "src/lib.rs", "Cargo.toml", "Cargo.lock"):
        h.update(rel.encode() + b"\0" + (B.HERE / rel).read_bytes() + b"\0")
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fdwindow", default="./target/release/fdwindow")
    ap.add_argument("--runs", type=int, default=150, help="runs per arm and binary")
    ap.add_argument("--timing-runs", type=int, default=10,
                    help="plain runs per binary for its run time alone")
    ap.add_argument("--only", action="append", help="a binary (repeatable)")
    ap.add_argument("--out", default=str(B.HERE / "calibration.json"))
    ap.add_argument("--timeout", type=int, default=60, help="seconds per run")
    ap.add_argument("--cargo", default="cargo", help="the cargo that builds the test binaries")
    ap.add_argument("--pressure", default="",
                    help="fdwindow stress --pressure (default: stress's own default)")
    args = ap.parse_args()

    fdwindow = Path(args.fdwindow).resolve()
    if not os.access(fdwindow, os.X_OK):
        sys.exit(f"no fdwindow binary at {fdwindow} (--fdwindow)")
    labels = B.load_labels()
    bins = B.build(cargo=args.cargo, quiet=True)
    names = args.only or [b["binary"] for b in labels["binaries"]]
    for n in names:
        if n not in bins:
            sys.exit(f"no test binary {n} (built: {', '.join(sorted(bins))})")

    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    version = os.popen(f"'{fdwindow}' --version").read().strip()
    doc = {
        "about": "Per-test failure rate per whole-binary run, alone and under `fdwindow stress`'s "
                 "default pressure, measured by calibrate.py (stress --show-output, libtest's "
                 "per-test lines per run and arm). Target for exposed tests: 0.5%-5% under "
                 "pressure, ~0% alone.",
        "command": "python3 benches/flakes/calibrate.py " + shlex.join(sys.argv[1:]),
        "measured_at": started,
        "fdwindow": str(fdwindow),
        "fdwindow_version": version,
        "runs_per_arm": args.runs,
        "target_pressure_rate": list(TARGET),
        "binaries": [],
    }
    by_binary = {b["binary"]: b for b in labels["binaries"]}
    for name in names:
        print(f"calibrate: {name}: timing {args.timing_runs} plain runs", file=sys.stderr)
        binary = [bins[name], *by_binary[name]["args"]]
        times = B.time_alone(binary, args.timing_runs)
        print(f"calibrate: {name}: stress --runs {args.runs}", file=sys.stderr)
        load_before = B.loadavg()
        t0 = time.monotonic()
        summary, per_run, rc, own = B.stress(fdwindow, binary, runs=args.runs,
                                        timeout_s=args.timeout,
                                        extra=["--pressure", args.pressure])
        took = time.monotonic() - t0
        if summary is None:
            sys.exit(f"fdwindow stress gave no summary for {name} (exit {rc}):\n"
                     + "\n".join(own[-10:]))
        tests = []
        for label in by_binary[name]["tests"]:
            t = label["name"]
            arms = {}
            for arm in ("alone", "pressure"):
                runs = [e for (r, a), e in per_run.items() if a == arm]
                reported = [e["tests"][t] for e in runs if t in e["tests"]]
                failed = sum(1 for o in reported if o == "FAILED")
                arms[arm] = dict(B.rate(failed, len(reported)),
                                 runs_without_a_result=len(runs) - len(reported))
            p = arms["pressure"]["rate"]
            entry = {
                "name": t,
                "cause": label["cause"],
                "class": label["class"],
                "alone": arms["alone"],
                "pressure": arms["pressure"],
            }
            if B.is_exposed(label):
                entry["in_target"] = (p is not None and TARGET[0] <= p <= TARGET[1]
                                      and arms["alone"]["failures"] == 0)
            tests.append(entry)
            print(f"  {t:45s} alone {arms['alone']['failures']}/{arms['alone']['runs']}"
                  f"  pressure {arms['pressure']['failures']}/{arms['pressure']['runs']}",
                  file=sys.stderr)
        arm_summary = {a["arm"]: {k: a[k] for k in ("runs", "failures", "timeouts", "run_time_s")}
                       for a in summary["arms"]}
        doc["platform"] = summary["platform"]["id"]
        doc["pressure"] = summary["pressure"]
        doc["binaries"].append({
            "binary": name,
            "source_sha256": source_sha256(name),
            "alone_wall_s": {"runs": len(times), "median": B.median(times),
                             "min": min(times), "max": max(times)},
            "stress": {"arms": arm_summary, "exit_status": rc,
                       "pressure_spawns": summary.get("pressure_spawns"),
                       "pressure_overlap_share": summary.get("pressure_overlap_share"),
                       "wall_s": took},
            "loadavg_before": load_before,
            "loadavg_after": B.loadavg(),
            "tests": tests,
        })
    exposed = [t for b in doc["binaries"] for t in b["tests"] if "in_target" in t]
    doc["exposed_in_target"] = f"{sum(t['in_target'] for t in exposed)}/{len(exposed)}"
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(tmp, args.out)
    print(f"calibrate: wrote {args.out}; exposed tests in target: {doc['exposed_in_target']}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
