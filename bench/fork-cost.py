"""What the kernel charges for one forked copy of a warm slot: the pool's preloads imported
(crates/bcb-execute/src/local/launch.rs, PRELOAD), then N forks whose child exits at once.
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

usage: $BCB_PYTHON bench/fork-cost.py [N=40] [touch|work] [freeze] [collapse] [tabular]
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


n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
parent0, children0, wall0 = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        if "touch" in opts:
            gc.collect()
        if "work" in opts:
            work()
        os._exit(0)
    os.waitpid(pid, 0)
parent1, children1, wall1 = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
child = (children1.ru_utime + children1.ru_stime - children0.ru_utime - children0.ru_stime) / n
print(f"{mappings} mappings, RSS {rollup['Rss'] >> 10} MB, anonymous {rollup['Anonymous'] >> 10} MB, on huge pages "
      f"{rollup['AnonHugePages'] >> 10} MB; fork {1000 * (parent1 - parent0) / n:.1f} ms in the parent; "
      f"child, exit included, {1000 * child:.1f} ms; wall {1000 * (wall1 - wall0) / n:.1f} ms "
      f"({' '.join(sorted(opts)) or 'no options'})")
