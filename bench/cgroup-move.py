#!/usr/bin/env python3
"""What a process's move into a cgroup costs when moves come a few tens of milliseconds
apart, as each sample's move into its slot's cgroups does: the wall of one write of
`cgroup.procs` per v1 hierarchy (cpu, memory, freezer, pids), 30 moves each, with a pause
between rounds. `favor` first mounts a controller-less named hierarchy with `favordynmods` for
a moment, as bcb does at start (crates/bcb-sandbox/src/move_lock.rs); on Linux 6.18+
that mode lasts until reboot, so run it without `favor` first on a fresh boot to see both.

usage (root, cgroup v1): bench/cgroup-move.py [pause ms, default 50] [favor]
"""
import os
import subprocess
import sys
import tempfile
import time

pause = float(sys.argv[1]) / 1000 if len(sys.argv) > 1 and sys.argv[1] != "favor" else 0.05
if "favor" in sys.argv[1:]:
    with tempfile.TemporaryDirectory(prefix="bcb-cgroup-") as d:
        subprocess.run(["mount", "-t", "cgroup", "-o", f"none,name=bcb-bench-{os.getpid()},favordynmods", "cgroup", d], check=True)
        subprocess.run(["umount", d], check=True)
hierarchies = [h for h in ("cpu", "memory", "freezer", "pids") if os.path.exists(f"/sys/fs/cgroup/{h}/cgroup.procs")]
if not hierarchies:
    sys.exit("no cgroup v1 hierarchy here")
made = []
try:
    for h in hierarchies:
        os.makedirs(f"/sys/fs/cgroup/{h}/bcb-bench-{os.getpid()}")
        made.append(h)
    walls = {h: [] for h in hierarchies}
    for i in range(30):
        for h in hierarchies:
            group = f"/sys/fs/cgroup/{h}/bcb-bench-{os.getpid()}" if i % 2 == 0 else f"/sys/fs/cgroup/{h}"
            t = time.perf_counter()
            with open(group + "/cgroup.procs", "w") as f:
                f.write("0")
            walls[h].append(time.perf_counter() - t)
        time.sleep(pause)
    for h in hierarchies:
        w = sorted(walls[h])
        print(f"pause {pause * 1000:.0f} ms  {h:8s} move: median {w[len(w) // 2] * 1000:6.2f} ms  "
              f"max {w[-1] * 1000:6.2f} ms  sum {sum(w) * 1000:7.1f} ms")
finally:
    for h in hierarchies:
        with open(f"/sys/fs/cgroup/{h}/cgroup.procs", "w") as f:
            f.write("0")
    for h in made:
        os.rmdir(f"/sys/fs/cgroup/{h}/bcb-bench-{os.getpid()}")
