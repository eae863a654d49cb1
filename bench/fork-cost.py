"""What the kernel charges for one forked copy of a warm slot: the pool's preloads imported
(crates/bcb-sandbox/src/launch.rs, PRELOAD), then N forks whose child exits at once.
Prints the CPU per fork in the parent and per child, its exit included, and the wall per fork.

Options (any order after N):
  touch     the child runs `gc.collect()` first, walking every object as a sample's first
            steps touch them
  work      the child does a small pandas, pyplot and json job, then collects
  freeze    the preloads' objects go to the collector's permanent generation first
            (`gc.freeze()`, as the zygote does)
  collapse  the heap moves onto huge pages first (the harness's own `collapse_heap`, as the
            zygote does); prints how much of it did
  tabular   only numpy, pandas and matplotlib of the preloads (and the standard library's):
            what a slot for the tasks that import nothing else would hold
  slot      the forks come from a child of the process that imported (a slot the zygote
            forked), not from that process itself (the zygote)
  churn     between forks the parent does a supervisor's share of Python (a job's JSON in
            and out, a result, attribute reads across the loaded modules): its writes split
            the huge pages it shares with its last child; 20 such rounds come first

Measured only between forks and after the warm-up rounds: the fork in the parent (its CPU
around `os.fork()` alone), and each child's CPU, its exit included. Also printed: the
parent's anonymous memory on huge pages before and after the warm-up, and its page tables
(`VmPTE`).

usage: $BCB_PYTHON bench/fork-cost.py [N=40] [touch|work] [freeze] [collapse] [tabular] [slot] [churn]
"""
import gc
import importlib.util
import os
import re
import resource
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
local = os.path.join(here, "..", "crates", "bcb-execute", "src", "local")
# The pool's list itself, read from the Rust source (one list, not a copy that drifts).
_launch = open(os.path.join(local, "launch.rs")).read()
_body = _launch[_launch.index("pub(crate) const PRELOAD"):]
PRELOAD = re.findall(r'"([^"]+)"', _body[: _body.index("];")])

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot  # noqa: E402,F401

opts = set(sys.argv[2:])
TABULAR = ("numpy", "pandas", "matplotlib")
for name in PRELOAD:
    if "tabular" not in opts or name.split(".")[0] in TABULAR or name.split(".")[0] in sys.stdlib_module_names:
        __import__(name)
gc.collect()
if "freeze" in opts:
    gc.freeze()
if "collapse" in opts:
    spec = importlib.util.spec_from_file_location("kernel", os.path.join(local, "harness", "bcb_harness", "kernel.py"))
    kernel = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kernel)
    kernel.collapse_heap()
mappings = sum(1 for _ in open("/proc/self/maps"))
rollup = {l.split(":")[0]: int(l.split()[1]) for l in open("/proc/self/smaps_rollup") if l.endswith("kB\n")}


def work():
    import json

    import numpy as np
    import pandas as pd

    df = pd.DataFrame({"a": np.arange(1000) % 7, "b": np.random.rand(1000)})
    means = df.groupby("a")["b"].agg(["mean", "sum"])
    fig, ax = matplotlib.pyplot.subplots()
    ax.plot(means["mean"])
    matplotlib.pyplot.close(fig)
    json.dumps({"x": list(range(100))})
    gc.collect()


def churn():
    """What a slot's supervisor does with one job, roughly: the job's JSON read and written
    again, a result sent, attribute reads over the loaded modules."""
    import json

    job = json.loads(json.dumps({"key": "k" * 32, "test": "x = 1\n" * 2000, "tests": ["test_%d" % i for i in range(50)]}))
    json.dumps({"event": "result", "key": job["key"], "stages": {k: float(i) for i, k in enumerate("abcdefghij")}})
    for m in list(sys.modules.values())[:: max(1, len(sys.modules) // 300)]:
        getattr(m, "__name__", None), getattr(m, "__doc__", None)


def page_tables_kb():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmPTE"))


if "slot" in opts:
    slot = os.fork()
    if slot:
        os.waitpid(slot, 0)
        sys.exit(0)


def fork_one():
    """The parent's CPU in `os.fork()` alone."""
    t = time.process_time()
    pid = os.fork()
    if pid == 0:
        if "touch" in opts:
            gc.collect()
        if "work" in opts:
            work()
        os._exit(0)
    spent = time.process_time() - t
    os.waitpid(pid, 0)
    if "churn" in opts:
        churn()
    return spent


n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
if "churn" in opts:
    for _ in range(20):
        fork_one()
huge_after = {l.split(":")[0]: int(l.split()[1]) for l in open("/proc/self/smaps_rollup") if l.endswith("kB\n")}["AnonHugePages"]
forks, children0, wall0 = 0.0, resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
for _ in range(n):
    forks += fork_one()
children1, wall1 = resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
child = (children1.ru_utime + children1.ru_stime - children0.ru_utime - children0.ru_stime) / n
print(f"{mappings} mappings, RSS {rollup['Rss'] >> 10} MB, anonymous {rollup['Anonymous'] >> 10} MB, on huge pages "
      f"{rollup['AnonHugePages'] >> 10} MB, then {huge_after >> 10} MB; page tables {page_tables_kb()} kB; "
      f"fork {1000 * forks / n:.1f} ms in the parent; child, exit included, {1000 * child:.1f} ms; "
      f"wall {1000 * (wall1 - wall0) / n:.1f} ms ({' '.join(sorted(opts)) or 'no options'})")
