"""What calibrate.py and run.py share: building the test binaries, reading
libtest's per-test lines, the labels, Wilson intervals, and running
`fdwindow stress --show-output` with per-test outcomes read as they come.

Python 3.9 or newer, standard library only.
"""

import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABELS = HERE / "labels.json"

# libtest's line for one finished test (parallel or not):
# "test NAME ... ok", "test NAME ... FAILED", "test NAME ... ignored".
TEST_LINE = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)\b")
# `fdwindow stress --show-output` marks each line of a run's output.
STRESS_LINE = re.compile(r"^\[run (\d+) (alone|pressure)\] (.*)$")


def target_dir():
    """CARGO_TARGET_DIR when set, else benches/flakes/target (ignored by git)."""
    return Path(os.environ.get("CARGO_TARGET_DIR") or HERE / "target")


def build(cargo="cargo", quiet=False):
    """Builds the test binaries (release) and returns {name: executable path}."""
    cmd = [cargo, "test", "--release", "--locked", "--no-run", "--message-format=json"]
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir()))
    proc = subprocess.run(
        cmd, cwd=HERE, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if quiet else None, text=True)
    if proc.returncode != 0:
        sys.exit(f"build failed: {' '.join(cmd)} (in {HERE})")
    bins = {}
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        target = msg["target"]
        if "test" in target.get("kind", []):
            bins[target["name"]] = msg["executable"]
    return bins


def argv(binary):
    """A test binary's command: its path, or a list of its path and the
    arguments every run of it takes (a label's `args`)."""
    if isinstance(binary, (list, tuple)):
        return [str(a) for a in binary]
    return [str(binary)]


def load_labels():
    """The labels, each binary's `count` entries expanded into one entry per
    test (`busy::t{:04}` with count 1000: busy::t0000 to busy::t0999)."""
    with open(LABELS) as f:
        labels = json.load(f)
    for b in labels["binaries"]:
        tests = []
        for t in b["tests"]:
            if "count" not in t:
                tests.append(t)
                continue
            prefix, _, suffix = t["name"].partition("{:04}")
            rest = {k: v for k, v in t.items() if k not in ("name", "count")}
            tests.extend(dict(rest, name=f"{prefix}{i:04}{suffix}", generated=True)
                         for i in range(t["count"]))
        b["tests"] = tests
        b.setdefault("args", [])
    return labels


def labelled_tests(labels):
    """[(binary, test, label)] in the labels file's order."""
    return [(b["binary"], t["name"], t) for b in labels["binaries"] for t in b["tests"]]


def is_exposed(label):
    return not label["cause"].startswith("not-exposed")


def wilson(k, n, z=1.959964):
    if n == 0:
        return [0.0, 1.0]
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [max(0.0, c - h), min(1.0, c + h)]


def rate(k, n):
    return {"failures": k, "runs": n, "rate": (k / n) if n else None, "wilson95": wilson(k, n)}


def parse_run_output(lines):
    """{test: "ok"|"FAILED"|"ignored"} from one run's libtest output."""
    out = {}
    for line in lines:
        m = TEST_LINE.match(line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return [float(x) for x in f.read().split()[:3]]
    except OSError:
        return None


def stress(fdwindow, binary, runs=None, duration_s=None, timeout_s=60, on_line=None,
           extra=()):
    """Runs `fdwindow stress --show-output` on one binary.

    Returns (summary JSON or None, runs, exit status, stress's own stderr
    lines) where runs maps (run, arm) to {"tests": {name: outcome},
    "ended_s": seconds since the start when its last line came}.
    on_line(elapsed_s, run, arm, test, outcome) is called for each test
    line as it arrives.
    """
    cmd = [str(fdwindow), "stress", "--show-output", "--timeout", str(timeout_s)]
    if runs is not None:
        cmd += ["--runs", str(runs)]
    if duration_s is not None:
        cmd += ["--duration", f"{max(1, round(duration_s * 1000))}ms"]
    cmd += list(extra)
    cmd += ["--", *argv(binary)]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace")
    per_run = {}
    own = []
    # stdout is one JSON document at the end; stderr is read line by line
    # meanwhile, so it can never fill its pipe (stdout stays small).
    for line in proc.stderr:
        m = STRESS_LINE.match(line.rstrip("\n"))
        if not m:
            own.append(line.rstrip("\n"))
            del own[:-40]
            continue
        key = (int(m.group(1)), m.group(2))
        entry = per_run.setdefault(key, {"tests": {}, "ended_s": None})
        entry["ended_s"] = time.monotonic() - start
        t = TEST_LINE.match(m.group(3))
        if t:
            entry["tests"][t.group(1)] = t.group(2)
            if on_line:
                on_line(entry["ended_s"], key[0], key[1], t.group(1), t.group(2))
    out = proc.stdout.read()
    proc.wait()
    try:
        summary = json.loads(out)
    except ValueError:
        summary = None
    return summary, per_run, proc.returncode, own


def platform_id(fdwindow):
    """The platform id `fdwindow run` names this machine, from a short stress run."""
    proc = subprocess.run([str(fdwindow), "stress", "--runs", "1", "--", "/bin/true"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return json.loads(proc.stdout)["platform"]["id"]


def time_alone(binary, n):
    """Wall time of n plain runs of the binary (seconds), each a whole run."""
    times = []
    for _ in range(n):
        t = time.monotonic()
        subprocess.run(argv(binary), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.monotonic() - t)
    return times


def median(xs):
    s = sorted(xs)
    if not s:
        return None
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2
