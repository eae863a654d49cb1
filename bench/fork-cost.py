"""What the kernel charges for one forked copy of a warm slot: the pool's preloads imported
(crates/bcb-execute/src/local/launch.rs, PRELOAD), then N forks whose child exits at once
(or, with `touch`, after `gc.collect()` walks every object as a sample's first steps touch
them). Prints the CPU per fork in the parent and per child, its exit included.

usage: $BCB_PYTHON bench/fork-cost.py [N=40] [touch]
"""
import gc
import os
import re
import resource
import sys
import time

# The pool's list itself, read from the Rust source (one list, not a copy that drifts).
_launch = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "bcb-execute", "src",
                            "local", "launch.rs")).read()
_body = _launch[_launch.index("pub(crate) const PRELOAD"):]
PRELOAD = re.findall(r'"([^"]+)"', _body[: _body.index("];")])

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot  # noqa: E402,F401

for name in PRELOAD:
    __import__(name)
gc.collect()
rss_mb = int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20
n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
touch = "touch" in sys.argv[2:]
parent0, children0 = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        if touch:
            gc.collect()
        os._exit(0)
    os.waitpid(pid, 0)
parent1, children1 = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
child = (children1.ru_utime + children1.ru_stime - children0.ru_utime - children0.ru_stime) / n
print(f"RSS {rss_mb} MB; fork {1000 * (parent1 - parent0) / n:.1f} ms in the parent; "
      f"child, exit included, {1000 * child:.1f} ms (touch={touch})")
