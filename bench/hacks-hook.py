"""Per-sample cost of the reward-hack watch, in harness terms (issue 19).

Imports the embedded harness's package (crates/bcb-execute/src/local/harness/bcb_harness), preloads
what a pool slot preloads, then for each task forks one child per run and times
`run_sample` on the canonical solution with the watch off and on, alternating (no sandbox:
this measures the harness's own work, not isolation). Prints per task the median child
wall and CPU off/on, and the median per-sample overhead over all tasks with the CPU
floor beside it.

usage: $BCB_PYTHON bench/hacks-hook.py [runs per task, default 7] [task ids...]
env:   BCB_DATASET_DIR (the directory of bigcodebench-v0.1.4.jsonl.gz)
"""
import gzip
import json
import os
import resource
import statistics
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "crates/bcb-execute/src/local/harness"))
from bcb_harness.audit import make_emitter  # noqa: E402
from bcb_harness.runner import run_sample  # noqa: E402

runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
ids = sys.argv[2:] or ["BigCodeBench/4", "BigCodeBench/23", "BigCodeBench/371", "BigCodeBench/922", "BigCodeBench/13", "BigCodeBench/100", "BigCodeBench/241", "BigCodeBench/500"]
ds = os.environ.get("BCB_DATASET_DIR") or os.path.join(here, "..", "..", "shared", "bigcodebench")
tasks = {}
for line in gzip.open(os.path.join(ds, "bigcodebench-v0.1.4.jsonl.gz"), "rt"):
    t = json.loads(line)
    tasks[t["task_id"]] = t
for name in ("numpy", "pandas", "scipy", "sklearn"):
    try:
        __import__(name)
    except ImportError:
        pass
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot  # noqa: F401,E402

cfg = {"limits": {}, "isolation": {}}


def expected_tests(test_code):
    """The job's `expected`, which bcb reads in Rust (`bcb_sanitize::read_test_code`)."""
    import ast

    classes = [n for n in ast.parse(test_code).body if isinstance(n, ast.ClassDef) and n.name == "TestCases"]
    names = [f.name for f in classes[-1].body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name.startswith("test")]
    return list(dict.fromkeys(names))


def one(task, watch):
    r, w = os.pipe()
    t0 = time.perf_counter()
    c0 = os.times()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(os.open(os.devnull, os.O_RDWR), 1)
        emit = make_emitter(json.dumps, os.write, w) if watch else None
        job = {"code": task["complete_prompt"] + "\n" + task["canonical_solution"], "test": task["test"], "time_limit": 60.0}
        job["expected"] = expected_tests(job["test"])
        res = run_sample(job, cfg, tempfile.gettempdir(), emit)
        os.write(w, (json.dumps({"status": res["status"]}) + "\n").encode())
        os._exit(0)
    os.close(w)
    buf = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        buf += chunk
    os.close(r)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    cpu = usage.ru_utime + usage.ru_stime
    last = json.loads(buf.strip().split(b"\n")[-1])
    return wall, cpu, last["status"], buf.count(b'"hack"')


over, cpu_over = [], []
print("%-18s %9s %9s %9s %9s %6s %5s" % ("task", "wall off", "wall on", "cpu off", "cpu on", "status", "hacks"))
for tid in ids:
    t = tasks[tid]
    offs, ons = [], []
    for i in range(runs):
        offs.append(one(t, False))
        ons.append(one(t, True))
    med = lambda xs, k: statistics.median(x[k] for x in xs)
    print("%-18s %9.4f %9.4f %9.4f %9.4f %6s %5d" % (tid, med(offs, 0), med(ons, 0), med(offs, 1), med(ons, 1), ons[0][2], sum(x[3] for x in ons)))
    over.append(med(ons, 0) - med(offs, 0))
    cpu_over.append(med(ons, 1) - med(offs, 1))
print("median per-sample overhead: wall %+.4f s, CPU %+.4f s (load average %.1f on %d cores: the CPU figure is the floor)" % (
    statistics.median(over), statistics.median(cpu_over), os.getloadavg()[0], os.cpu_count()))
