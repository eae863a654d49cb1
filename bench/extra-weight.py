"""How a CPU weight (cgroup v1 `cpu.shares`) for an extra sample changes a test that times
its own sleeps, beside busy primaries: BigCodeBench/823's canonical solution and two of its
tests, run N times in a cpu cgroup at each weight while one busy loop per CPU runs in a
sibling cgroup at the default weight (1024), as primaries do. The tests are set up (numpy
imported, code compiled) at the default weight first: an extra drops to its lowest weight
only once it computed.

usage: $BCB_PYTHON bench/extra-weight.py [N=20] [SHARES=2,16,1024]   (root: makes cgroups)
env:   BCB_DATASET_DIR (the folder holding bigcodebench-v0.1.4.jsonl.gz)
"""
import glob
import gzip
import json
import os
import signal
import sys
import time
import unittest

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
weights = [int(w) for w in (sys.argv[2] if len(sys.argv) > 2 else "2,16,1024").split(",")]
root = "/sys/fs/cgroup/cpu/bcb-bench-extra-weight"
path = glob.glob(os.path.join(os.environ["BCB_DATASET_DIR"], "**", "bigcodebench-v0.1.4.jsonl.gz"), recursive=True)[0]
row = next(r for r in map(json.loads, gzip.open(path, "rt")) if r["task_id"] == "BigCodeBench/823")
ns = {"__name__": "__test__"}
exec(compile(row["code_prompt"] + row["canonical_solution"] + "\n" + row["test"], "__test__.py", "exec"), ns)


def cgroup(name, shares):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "cpu.shares"), "w") as f:
        f.write(str(shares))
    return d


def join(d, pid):
    with open(os.path.join(d, "cgroup.procs"), "w") as f:
        f.write(str(pid))


busy = cgroup("primaries", 1024)
loops = []
for _ in range(os.cpu_count() or 1):
    pid = os.fork()
    if pid == 0:
        join(busy, os.getpid())
        while True:
            pass
    loops.append(pid)
try:
    time.sleep(0.5)
    print(f"{len(loops)} busy loops at 1024; BigCodeBench/823 canonical, {n} runs of each test per weight")
    for shares in weights:
        low = cgroup("extra", shares)
        join(low, os.getpid())
        failed, worst = {}, {}
        for test in ("test_case_2", "test_case_3"):
            failed[test], worst[test] = 0, 0.0
            for _ in range(n):
                result = unittest.TestResult()
                t = time.time()
                ns["TestCases"](test).run(result)
                wall = time.time() - t
                want = 0.3 if test == "test_case_2" else 0.4
                worst[test] = max(worst[test], wall - want)
                failed[test] += not result.wasSuccessful()
        join(root, os.getpid())
        print(f"cpu.shares {shares:5d}: " + "; ".join(
            f"{t} failed {failed[t]} of {n}, worst overshoot {worst[t] * 1000:.0f} ms" for t in failed))
finally:
    for pid in loops:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    join("/sys/fs/cgroup/cpu", os.getpid())
    for name in ("extra", "primaries"):
        try:
            os.rmdir(os.path.join(root, name))
        except OSError:
            pass
    os.rmdir(root)
