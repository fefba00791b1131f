#!/usr/bin/env python3
"""`make bench-audit`: the labelled flake benchmark of issue 24 (item 4).

For each test binary of benches/flakes and one wall-clock budget B per
binary (default: the audit's own measured duration on that binary), four
arms:

  reruns   plain reruns of the binary for B;
  shaker   the binary rerun under each of the four stress-ng configurations
           the Shaker paper (ICSME 2020) chose, B/4 each:
           stress-ng --cpu W --cpu-load L --vm V --vm-bytes B% with
           (W, L, V, B) = (2, 2, 1, 21), (1, 58, 1, 33), (1, 61, 1, 73), (1, 34, 1, 37);
  stress   `fdwindow stress --duration B` at its default pressure (runs
           alternate alone and pressured, so half of B is pressured);
  audit    `fdwindow audit --format json -- BINARY` at its defaults.

Two more measurements, not under B:

  hold        the audit's deterministic mode on its own: every test, run
              alone with `--exact` under the injector's close-hold=CLASS
              (each closed descriptor of CLASS held in a child for 100 ms),
              3 runs per class, and 3 runs of the sham (same forks, the
              child keeps nothing) for each class that failed. Per test:
              the runs to its first failure under its labelled class, and
              the classes that make it vulnerable (held a copy, failed in
              at least 2 of 3 runs, its sham in none).
  controlled  N audits with --rates (--controlled, 20) of tests/controlled.rs, a
              suite whose one test fails in 1 of 100 pressured runs and
              never alone: how many flag it (detection's verdict), and how
              many flag one of its three tests with nothing to break.

Reruns and shaker run again at 10 x B (reruns-10x, shaker-10x). In the first
three arms a test is found when it failed at least once in the arm (for
stress: in a pressured run; the time of its first failure is kept); in the
audit when its verdict is "exposed". Per arm: the share of the exposed tests
found, the time to find 85% of them, the false flags among the expected not
exposed, and for the audit the confusion matrix of true cause x named
hazard and how many exposed tests it found at their labelled call site
(labels.json's `site`: the line whose drop a child's copy keeps alive).
Written to RESULTS/audit-bench-<platform>.json.

    python3 benches/flakes/run.py [--fdwindow PATH] [--budget SECONDS]
        [--arms reruns,shaker,stress,audit] [--no-10x] [--only BINARY]...
        [--results DIR]

Run from the repository root (`make bench-audit` does). --fdwindow defaults
to $FDWINDOW or ./target/release/fdwindow. Without --budget the audit arm
must run (it sets each binary's budget). stress-ng must be installed for the
shaker arms (Debian: apt-get install stress-ng).
"""

import argparse
import datetime
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib as B  # noqa: E402

SCHEMA = 1
SHAKER = [(2, 2, 1, 21), (1, 58, 1, 33), (1, 61, 1, 73), (1, 34, 1, 37)]
ARMS = ["reruns", "shaker", "stress", "audit", "hold"]
# The injector's close-hold classes (shims/inject.c CLASS_IDS, bar none/all).
HOLD_CLASSES = ["file", "listener", "bound", "stream", "dgram", "pipe"]
HOLD_RUNS = 3
HOLD_SPEC = "hold=100ms,max-alive=16,close-hold={}"
# An audit verdict that means detection flagged the test.
FLAGGED = {"exposed", "pressure-only", "load"}
FIND_SHARE = 0.85


def log(msg):
    print(f"bench-audit: {msg}", file=sys.stderr, flush=True)


class Tally:
    """Per-test failures over whole-binary runs, with the time of each
    test's first failure since the arm started."""

    def __init__(self, tests):
        self.tests = {t: {"failures": 0, "runs": 0, "first_failure_s": None} for t in tests}
        self.runs = 0
        self.runs_failed = 0
        self.timeouts = 0
        self.unknown = set()

    def record(self, outcomes, at_s):
        self.runs += 1
        if any(o == "FAILED" for o in outcomes.values()):
            self.runs_failed += 1
        for t, o in outcomes.items():
            if t not in self.tests:
                self.unknown.add(t)
                continue
            e = self.tests[t]
            e["runs"] += 1
            if o == "FAILED":
                e["failures"] += 1
                if e["first_failure_s"] is None:
                    e["first_failure_s"] = round(at_s, 3)

    def doc(self):
        d = {"runs": self.runs, "runs_with_a_failure": self.runs_failed,
             "timeouts": self.timeouts, "tests": self.tests}
        if self.unknown:
            d["unlabelled_tests"] = sorted(self.unknown)
        return d


def run_once(binary, timeout_s, args=(), env=None):
    """One run of a libtest binary: ({test: outcome}, timed_out)."""
    proc = subprocess.Popen([*B.argv(binary), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace",
                            start_new_session=True, env=env)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        return B.parse_run_output(out.splitlines()), False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return B.parse_run_output(out.splitlines()), True


def rerun_for(binary, tests, seconds, timeout_s, tally=None, t0=None):
    """Reruns the binary until `seconds` have passed (no run starts after)."""
    tally = tally or Tally(tests)
    t0 = time.monotonic() if t0 is None else t0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        outcomes, timed_out = run_once(binary, timeout_s)
        if timed_out:
            tally.timeouts += 1
        tally.record(outcomes, time.monotonic() - t0)
    return tally


def start_stress_ng(stress_ng, w, load, v, vm_pct, seconds):
    cmd = [stress_ng, "--cpu", str(w), "--cpu-load", str(load), "--vm", str(v),
           "--vm-bytes", f"{vm_pct}%", "--timeout", f"{int(seconds) + 30}s", "--quiet"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True), cmd


def stop_group(proc, grace_s=1):
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # stress-ng's workers are in its group; make sure none is left.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def children(pid):
    """The pids whose parent is pid (from /proc)."""
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:  # a kernel without CONFIG_PROC_CHILDREN: scan every process
        kids = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[1] == str(pid):
                kids.append(stat.parent.name)
        return kids


def wait_for_workers(proc, n, deadline_s=10.0):
    """Until stress-ng has forked its n workers (or exited): a bounded poll
    with backoff, not a guess at how long its start takes."""
    end = time.monotonic() + deadline_s
    delay = 0.002
    while time.monotonic() < end and proc.poll() is None and len(children(proc.pid)) < n:
        time.sleep(delay)
        delay = min(2 * delay, 0.1)


def shaker_arm(stress_ng, binary, tests, seconds, timeout_s):
    """B/4 of reruns under each Shaker configuration: one tally over all
    four, and one per configuration. The arm's clock runs only while the
    binary runs under a configuration: stress-ng's start (a moment for its
    workers to load the machine) and its stop (seconds, for a large --vm)
    are outside the budget and the first-failure times."""
    tally = Tally(tests)
    arm_clock = 0.0
    configs = []
    for (w, load, v, pct) in SHAKER:
        proc, cmd = start_stress_ng(stress_ng, w, load, v, pct, seconds / 4)
        try:
            wait_for_workers(proc, w + v)
            own = Tally(tests)
            slice_start = time.monotonic()
            slice_end = slice_start + seconds / 4
            while time.monotonic() < slice_end:
                outcomes, timed_out = run_once(binary, timeout_s)
                at = arm_clock + time.monotonic() - slice_start
                if timed_out:
                    tally.timeouts += 1
                    own.timeouts += 1
                tally.record(outcomes, at)
                own.record(outcomes, at)
            arm_clock += time.monotonic() - slice_start
            alive = proc.poll() is None
        finally:
            stop_group(proc)
        configs.append({"stress_ng": cmd, "stress_ng_ran_throughout": alive,
                        "runs": own.runs, "runs_with_a_failure": own.runs_failed,
                        "failed_tests": sorted(t for t, e in own.tests.items() if e["failures"])})
    d = tally.doc()
    d["configurations"] = configs
    d["clock_s"] = round(arm_clock, 3)
    return d


def stress_arm(fdwindow, binary, tests, seconds, timeout_s):
    tally_p = Tally(tests)
    tally_a = Tally(tests)
    t0 = time.monotonic()
    summary, per_run, rc, own = B.stress(fdwindow, binary, duration_s=seconds,
                                         timeout_s=timeout_s)
    for (run, arm), entry in sorted(per_run.items(), key=lambda kv: kv[1]["ended_s"] or 0):
        (tally_p if arm == "pressure" else tally_a).record(entry["tests"], entry["ended_s"] or 0)
    d = tally_p.doc()
    d["alone_runs"] = tally_a.doc()
    d["wall_s"] = round(time.monotonic() - t0, 3)
    d["exit_status"] = rc
    if summary is None:
        d["error"] = f"fdwindow stress exited {rc} with no summary: " + " / ".join(own[-5:])
        log("  " + d["error"])
    else:
        d["pressure"] = summary.get("pressure")
        d["pressure_spawns"] = summary.get("pressure_spawns")
        d["pressure_overlap_share"] = summary.get("pressure_overlap_share")
        d["summary_arms"] = summary.get("arms")
    return d


def audit_arm(fdwindow, binary, extra, timeout_s):
    cmd = [str(fdwindow), "audit", "--format", "json", *extra, "--", *B.argv(binary)]
    log("  " + " ".join(cmd))
    t0 = time.monotonic()
    # Its progress goes to our stderr; its JSON comes on stdout.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, errors="replace")
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        # SIGTERM stops an audit cleanly (its runs killed, pressure ended).
        proc.terminate()
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        out, rc = "", None
    wall = time.monotonic() - t0
    d = {"command": cmd, "exit_status": rc, "wall_s": round(wall, 3)}
    try:
        report = json.loads(out)
    except ValueError:
        d["error"] = "no JSON on stdout" if rc is not None else f"timed out after {timeout_s} s"
        return d, wall
    total = (report.get("seconds") or {}).get("total")
    d["seconds_total"] = total
    d["tests"] = {}
    for t in report.get("tests", []):
        e = {k: t.get(k) for k in ("verdict", "basis", "hazard", "candidates", "screen", "reruns")}
        dg = t.get("diagnosis")
        e["diagnosis"] = dg and {k: dg.get(k) for k in ("summary", "window_p", "cut_short")}
        # The call site the diagnosis named, as `file:line` (labels.json's form).
        site = dg and dg.get("site")
        e["site"] = site and site.get("file") and f"{site['file']}:{site.get('line')}"
        d["tests"][t.get("name")] = e
    return d, (total if isinstance(total, (int, float)) and total > 0 else wall)


def run_exact(binary, test, env, timeout_s):
    """One `BINARY TEST --exact` run: (outcome or None, seconds)."""
    t0 = time.monotonic()
    outcomes, timed_out = run_once(binary, timeout_s, [test, "--exact"], env)
    outcome = "TIMEOUT" if timed_out else outcomes.get(test)
    return outcome, round(time.monotonic() - t0, 3)


def hold_arm(injector, preload_var, binary, labelled, timeout_s):
    """The deterministic close-hold mode, test by test and class by class."""
    base = {k: v for k, v in os.environ.items() if k != "FDWINDOW_PRESSURE"}

    report = injector.with_name("holds.report")

    def runs(test, spec, n):
        """n runs; each (outcome, seconds, copies held: the report's `held` lines)."""
        env = dict(base, **{preload_var: str(injector), "FDWINDOW_PRESSURE": spec,
                            "FDWINDOW_PRESSURE_REPORT": str(report)})
        out = []
        for _ in range(n):
            report.unlink(missing_ok=True)
            outcome, secs = run_exact(binary, test, env, timeout_s)
            try:
                held = sum(1 for line in report.read_text(errors="replace").splitlines()
                           if line.startswith("held "))
            except OSError:
                held = 0
            out.append((outcome, secs, held))
        report.unlink(missing_ok=True)
        return out

    tests = {}
    for t in labelled:
        classes = {}
        for cls in HOLD_CLASSES:
            held = runs(t["name"], HOLD_SPEC.format(cls), HOLD_RUNS)
            bad = [o not in ("ok", "ignored") for o, _, _ in held]
            e = {"outcomes": [o for o, _, _ in held], "seconds": [s for _, s, _ in held],
                 "copies_held": sum(h for _, _, h in held),
                 "first_failure_run": bad.index(True) + 1 if any(bad) else None}
            if any(bad):
                sham = runs(t["name"], HOLD_SPEC.format(cls) + ",drop=all", HOLD_RUNS)
                e["sham_outcomes"] = [o for o, _, _ in sham]
                e["sham_seconds"] = [s for _, s, _ in sham]
            # As the audit's diagnosis names a class: only one whose runs
            # held a copy, so a random failure under a class the test never
            # closes is not a vulnerability.
            e["vulnerable"] = (sum(bad) >= 2 and e["copies_held"] > 0 and "sham_outcomes" in e
                               and all(o in ("ok", "ignored") for o in e["sham_outcomes"]))
            classes[cls] = e
        own = classes.get(t["class"])
        tests[t["name"]] = {
            "label_class": t["class"],
            "classes": classes,
            "vulnerable_to": [c for c, e in classes.items() if e["vulnerable"]],
            "first_failure_run_own_class": own["first_failure_run"] if own else None,
            "max_run_s": max(x for e in classes.values()
                             for x in e["seconds"] + e.get("sham_seconds", [])),
        }
    return {"spec": HOLD_SPEC.format("CLASS"), "runs_per_class": HOLD_RUNS,
            "vulnerable_rule": "held a copy, failed in at least 2 of 3 runs, its sham in none",
            "tests": tests}


CONTROLLED_ARGS = ["--rates"]


def controlled_audits(fdwindow, binary, n, timeout_s):
    """N audits of the controlled suite with `--rates`: its test breaks
    under pressure without any descriptor, which only the pressured screen
    and the sign rule can see (the held-copy screen, the default, holds
    nothing that breaks it)."""
    audits = []
    for i in range(n):
        log(f"  controlled audit {i + 1}/{n}")
        doc, _ = audit_arm(fdwindow, binary, CONTROLLED_ARGS, timeout_s)
        audits.append(doc)
    target = "fails_one_pressured_run_in_a_hundred"
    flagged = [a for a in audits if (a.get("tests", {}).get(target) or {}).get("verdict") in FLAGGED]
    others = sum(1 for a in audits for t, e in a.get("tests", {}).items()
                 if t != target and (e or {}).get("verdict") in FLAGGED)
    return {
        "binary": "controlled",
        "test": target,
        "pattern": "fails in 1 of 100 runs under pressure (the injector mapped), never alone; "
                   "three tests with nothing to break",
        "flagged_means": "verdict " + ", ".join(sorted(FLAGGED)) + " (detection said exposed)",
        "audit_args": CONTROLLED_ARGS,
        "audits": n,
        "flagged": len(flagged),
        "others_flagged": others,
        "others_tested": sum(len(a.get("tests", {})) - 1 for a in audits if a.get("tests")),
        "errors": sum(1 for a in audits if "error" in a),
        "runs": audits,
    }


def found_times(arm_doc, arm):
    """{test: time of first failure (s) or None} for the tests the arm found."""
    if arm == "audit":
        return {t: arm_doc.get("seconds_total") or arm_doc.get("wall_s")
                for t, e in arm_doc.get("tests", {}).items() if e.get("verdict") == "exposed"}
    return {t: e["first_failure_s"] for t, e in arm_doc.get("tests", {}).items()
            if e["failures"] > 0}


def summarise(binaries, arm):
    """The arm's figures over every binary it ran on."""
    exposed, quiet, times, ran = [], [], [], 0
    false_flags, found = [], []
    for b in binaries:
        if arm not in b["arms"] or "error" in b["arms"][arm]:
            continue
        ran += 1
        hits = found_times(b["arms"][arm], arm)
        for t in b["tests"]:
            key = f"{b['binary']}::{t['name']}"
            if B.is_exposed(t):
                exposed.append(key)
                if t["name"] in hits:
                    found.append(key)
                    times.append(hits[t["name"]])
            else:
                quiet.append(key)
                if t["name"] in hits:
                    false_flags.append(key)
    if not ran:
        return None
    need = -(-int(FIND_SHARE * 1000) * len(exposed) // 1000)  # ceil(0.85 n)
    times.sort()
    t85 = times[need - 1] if need and len(times) >= need else None
    d = {
        "binaries": ran,
        "exposed_found": f"{len(found)}/{len(exposed)}",
        "share_found": len(found) / len(exposed) if exposed else None,
        "time_to_85pct_s": t85,
        "time_to_85pct_means": "first-failure times pooled over the binaries, each from the "
                               "start of its own arm (for the audit: its total time)",
        "false_flags": f"{len(false_flags)}/{len(quiet)}",
        "false_flagged": false_flags,
        "not_found": [k for k in exposed if k not in found],
    }
    if arm == "audit":
        # The call site named for each exposed test found, against its label.
        named, wrong = 0, []
        for b in binaries:
            a = b["arms"].get(arm)
            if not a or "error" in a:
                continue
            for t in b["tests"]:
                e = a["tests"].get(t["name"])
                if not B.is_exposed(t) or not e or e.get("verdict") != "exposed":
                    continue
                if e.get("site") == t.get("site"):
                    named += 1
                else:
                    wrong.append({"test": f"{b['binary']}::{t['name']}", "named": e.get("site"),
                                  "labelled": t.get("site")})
        d["sites_named"] = f"{named}/{named + len(wrong)}"
        d["sites_not_named"] = wrong
    if arm == "stress":
        # What a user of stress would call exposed: failed under pressure
        # and never in the same session's runs alone.
        never_alone = set()
        for b in binaries:
            a = b["arms"].get(arm)
            if not a:
                continue
            alone = a.get("alone_runs", {}).get("tests", {})
            for t, e in a["tests"].items():
                if e["failures"] and not alone.get(t, {}).get("failures"):
                    never_alone.add(f"{b['binary']}::{t}")
        d["exposed_found_never_alone"] = f"{len([k for k in found if k in never_alone])}/{len(exposed)}"
        d["false_flags_never_alone"] = f"{len([k for k in false_flags if k in never_alone])}/{len(quiet)}"
    return d


def confusion(binaries):
    rows = {}
    for b in binaries:
        a = b["arms"].get("audit")
        if not a or "error" in a:
            continue
        for t in b["tests"]:
            e = a["tests"].get(t["name"])
            if e is None:
                col = "missing"
            elif e.get("verdict") == "exposed":
                col = e.get("hazard") or "exposed, no hazard named"
            else:
                col = e.get("verdict") or "no verdict"
            row = rows.setdefault(t["cause"], {})
            row[col] = row.get(col, 0) + 1
    return rows or None


def main():
    ap = argparse.ArgumentParser(description="The labelled flake benchmark of fdwindow audit")
    ap.add_argument("--fdwindow", default=os.environ.get("FDWINDOW", "./target/release/fdwindow"))
    ap.add_argument("--budget", type=float, help="seconds per binary (default: the audit's own)")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--no-10x", action="store_true", help="skip reruns and shaker at 10 x B")
    ap.add_argument("--only", action="append", help="a binary (repeatable)")
    ap.add_argument("--results", default="results")
    ap.add_argument("--out", help="the results file (default RESULTS/audit-bench-<platform>.json)")
    ap.add_argument("--audit-arg", action="append", default=[],
                    help="an extra argument for fdwindow audit (repeatable)")
    ap.add_argument("--run-timeout", type=int, default=60, help="seconds per run of a binary")
    ap.add_argument("--audit-timeout", type=int, default=1800, help="seconds per audit")
    ap.add_argument("--stress-ng", default=shutil.which("stress-ng"))
    ap.add_argument("--cargo", default="cargo", help="the cargo that builds the test binaries")
    ap.add_argument("--controlled", type=int, default=20,
                    help="default audits of the controlled 1%% suite (0: none)")
    args = ap.parse_args()

    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    for a in arms:
        if a not in ARMS:
            sys.exit(f"unknown arm {a!r}; arms: {', '.join(ARMS)}")
    needs_budget = any(a in arms for a in ("reruns", "shaker", "stress"))
    if args.budget is None and needs_budget and "audit" not in arms:
        sys.exit("without --budget the audit arm must run: it sets each binary's budget")
    if args.controlled < 0:
        sys.exit("--controlled must be 0 or more")
    if args.budget is not None and args.budget <= 0:
        sys.exit("--budget must be positive")
    if "shaker" in arms and not args.stress_ng:
        sys.exit("the shaker arm needs stress-ng (apt-get install stress-ng), "
                 "or leave it out with --arms")
    fdwindow = Path(args.fdwindow).resolve()
    if not os.access(fdwindow, os.X_OK):
        sys.exit(f"no fdwindow binary at {fdwindow} (--fdwindow or FDWINDOW)")

    labels = B.load_labels()
    bins = B.build(cargo=args.cargo, quiet=True)
    chosen = [b for b in labels["binaries"] if not args.only or b["binary"] in args.only]
    for b in chosen:
        if b["binary"] not in bins:
            sys.exit(f"no test binary {b['binary']} was built")
    platform = B.platform_id(fdwindow)
    version = subprocess.run([str(fdwindow), "--version"], stdout=subprocess.PIPE,
                             text=True).stdout.strip()
    sng_version = None
    if args.stress_ng:
        sng_version = subprocess.run([args.stress_ng, "--version"], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True).stdout.strip()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    t_all = time.monotonic()
    injector = preload_var = None
    scratch = None
    if "hold" in arms:
        scratch = Path(subprocess.run(["mktemp", "-d", "/tmp/fdwindow-bench-XXXXXX"],
                                      stdout=subprocess.PIPE, text=True, check=True).stdout.strip())
        injector = scratch / "inject.so"
        got = subprocess.run([str(fdwindow), "preload", "inject", "--out", str(injector)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if got.returncode != 0:
            shutil.rmtree(scratch, ignore_errors=True)
            sys.exit(f"fdwindow preload inject failed: {got.stderr.strip()}")
        preload_var = "DYLD_INSERT_LIBRARIES" if sys.platform == "darwin" else "LD_PRELOAD"
    try:
        results, controlled = measure(args, arms, chosen, bins, fdwindow, injector, preload_var)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    write(args, arms, results, controlled, fdwindow, platform, version, sng_version, started,
          t_all)


def measure(args, arms, chosen, bins, fdwindow, injector, preload_var):
    """Every arm on every chosen binary, then the controlled audits."""
    results = []
    for b in chosen:
        # The binary with the arguments every run of it takes.
        name, binary = b["binary"], [bins[b["binary"]], *b["args"]]
        tests = [t["name"] for t in b["tests"]]
        entry = {"binary": name, "tests": b["tests"], "arms": {},
                 "loadavg_before": B.loadavg()}
        log(f"{name}:")
        budget = args.budget
        if "audit" in arms:
            log(f"  audit (its own budget){'' if budget is None else '; budget B fixed'}")
            doc, took = audit_arm(fdwindow, binary, args.audit_arg, args.audit_timeout)
            entry["arms"]["audit"] = doc
            if budget is None:
                if "error" in doc:
                    log(f"  the audit failed ({doc['error']}): no budget for {name}; skipped")
                    results.append(entry)
                    continue
                budget = took
        entry["budget_s"] = None if budget is None else round(budget, 3)
        entry["budget_from"] = "--budget" if args.budget is not None else "the audit's seconds.total"
        plan = []
        if "reruns" in arms:
            plan.append(("reruns", 1))
        if "shaker" in arms:
            plan.append(("shaker", 1))
        if "stress" in arms:
            plan.append(("stress", 1))
        if not args.no_10x:
            if "reruns" in arms:
                plan.append(("reruns-10x", 10))
            if "shaker" in arms:
                plan.append(("shaker-10x", 10))
        for arm, k in plan:
            secs = budget * k
            log(f"  {arm}: {secs:.1f} s")
            t0 = time.monotonic()
            if arm.startswith("reruns"):
                doc = rerun_for(binary, tests, secs, args.run_timeout).doc()
            elif arm.startswith("shaker"):
                doc = shaker_arm(args.stress_ng, binary, tests, secs, args.run_timeout)
            else:
                doc = stress_arm(fdwindow, binary, tests, secs, args.run_timeout)
            doc["budget_s"] = round(secs, 3)
            doc.setdefault("wall_s", round(time.monotonic() - t0, 3))
            failed = sorted(t for t, e in doc["tests"].items() if e["failures"])
            log(f"    {doc['runs']} runs; failed: {', '.join(failed) or 'none'}")
            entry["arms"][arm] = doc
        if "hold" in arms:
            log("  hold: close-hold per class")
            # Test by test: the generated busy tests are left out (a thousand
            # of them would take hours, and they close nothing they need gone).
            named = [t for t in b["tests"] if not t.get("generated")]
            entry["arms"]["hold"] = hold_arm(injector, preload_var, binary, named,
                                             args.run_timeout)
        entry["loadavg_after"] = B.loadavg()
        results.append(entry)
    controlled = None
    if args.controlled:
        if "controlled" not in bins:
            sys.exit("no test binary controlled was built")
        log(f"controlled: {args.controlled} default audits")
        controlled = controlled_audits(fdwindow, bins["controlled"], args.controlled,
                                       args.audit_timeout)
        log(f"  flagged in {controlled['flagged']}/{controlled['audits']}; "
            f"others flagged {controlled['others_flagged']}/{controlled['others_tested']}")
    return results, controlled


def hold_summary(binaries):
    """Per labelled class: runs to the first failure of each exposed test
    under its own class; and the expected not exposed called vulnerable."""
    per_class, vulnerable, missed = {}, [], []
    ran = False
    for b in binaries:
        h = b["arms"].get("hold")
        if not h:
            continue
        ran = True
        for t in b["tests"]:
            e = h["tests"].get(t["name"])
            if e is None:
                continue
            key = f"{b['binary']}::{t['name']}"
            if B.is_exposed(t):
                per_class.setdefault(t["class"], []).append(
                    {"test": key, "first_failure_run": e["first_failure_run_own_class"],
                     "vulnerable_to": e["vulnerable_to"]})
                if t["class"] not in e["vulnerable_to"]:
                    missed.append(key)
            elif e["vulnerable_to"]:
                vulnerable.append({"test": key, "vulnerable_to": e["vulnerable_to"]})
    if not ran:
        return None
    slowest = max((e["max_run_s"] for b in binaries if b["arms"].get("hold")
                   for e in b["arms"]["hold"]["tests"].values()), default=None)
    return {"per_class": per_class, "exposed_not_vulnerable_to_own_class": missed,
            "not_exposed_called_vulnerable": vulnerable, "slowest_run_s": slowest}


def git_describe():
    """The checkout the benchmark ran from: the binary's version says too little."""
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def write(args, arms, results, controlled, fdwindow, platform, version, sng_version, started,
          t_all):
    arm_names = [a for a in ["reruns", "shaker", "stress", "audit", "reruns-10x", "shaker-10x",
                             "hold"]
                 if any(a in r["arms"] for r in results)]
    doc = {
        "schema": SCHEMA,
        "about": "The labelled flake benchmark of fdwindow audit (benches/flakes, issue 24 item 4), "
                 "written by benches/flakes/run.py. Every figure is measured.",
        "command": "python3 benches/flakes/run.py " + shlex.join(sys.argv[1:]),
        "measured_at": started,
        "wall_s": round(time.monotonic() - t_all, 3),
        "platform": platform,
        "fdwindow": str(fdwindow),
        "fdwindow_version": version,
        "git_describe": git_describe(),
        "stress_ng": sng_version,
        "shaker_configurations": [
            {"cpu": w, "cpu_load": l, "vm": v, "vm_bytes_percent": p} for (w, l, v, p) in SHAKER],
        "found_rule": {
            "reruns, shaker": "failed in at least one run of the arm",
            "stress": "failed in at least one pressured run (runs alone are kept apart)",
            "audit": "verdict exposed",
        },
        "summary": {a: summarise(results, a) for a in arm_names if a != "hold"},
        "hold_summary": hold_summary(results),
        "controlled": controlled,
        "audit_confusion": confusion(results),
        "binaries": results,
    }
    out = Path(args.out) if args.out else Path(args.results) / f"audit-bench-{platform}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(tmp, out)
    for a in arm_names:
        s = doc["summary"].get(a)
        if s:
            log(f"{a:11s} found {s['exposed_found']}, 85% at {s['time_to_85pct_s']} s, "
                f"false flags {s['false_flags']}")
    log(f"wrote {out}")


if __name__ == "__main__":
    main()
