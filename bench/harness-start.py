"""Start-up time of the execution harness: from spawn to the zygote's `ready` (no preloads),
that is the interpreter's start plus loading the harness, the fixed cost of every zygote and
cold slot. Given several harness entry files, runs them alternately (a busy machine then
slows each alike) and prints per entry the median, mean and 90th percentile of the wall in ms,
and the median CPU time (user + system) of the harness process, which a busy machine
disturbs less.

The package's modules are compiled on a session's first start and cached beside them
(`__pycache__`); `--fresh` removes that cache before every run, so each run compiles.

usage: $BCB_PYTHON bench/harness-start.py [--fresh] RUNS ENTRY [ENTRY...]
       (ENTRY: a harness entry file as bcb writes it, e.g. <dir>/bcb_harness.py next to its
       package <dir>/bcb_harness/; `bcb` writes one per session under $TMPDIR/bcb-exec-*)
"""
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import time


def once(entry, fresh):
    if fresh:
        shutil.rmtree(os.path.join(os.path.dirname(entry), "bcb_harness", "__pycache__"), ignore_errors=True)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    fd = theirs.fileno()

    def to_fd3():
        os.dup2(fd, 3)

    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-I", entry, "--zygote"],
        env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"},
        preexec_fn=to_fd3,
        pass_fds=(fd, 3),  # fd 3 kept: preexec_fn runs before the close
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    theirs.close()
    ours.send(json.dumps({"preload": []}).encode())
    msg = json.loads(ours.recv(1 << 16))
    wall = time.perf_counter() - t0
    assert msg.get("event") == "ready", msg
    ours.close()
    p.wait(timeout=30)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall * 1000, cpu * 1000


def main():
    args = sys.argv[1:]
    fresh = args[:1] == ["--fresh"]
    if fresh:
        args = args[1:]
    runs, entries = int(args[0]), args[1:]
    times = {e: [] for e in entries}
    cpus = {e: [] for e in entries}
    for i in range(runs):
        for e in entries:
            wall, cpu = once(e, fresh)
            times[e].append(wall)
            cpus[e].append(cpu)
        print("run %d/%d" % (i + 1, runs), file=sys.stderr, flush=True)
    for e in entries:
        t = sorted(times[e])
        p90 = t[min(len(t) - 1, int(0.9 * len(t)))]
        print("%s: wall median %.1f ms, mean %.1f ms, p90 %.1f ms; CPU median %.1f ms (%d runs)" % (e, statistics.median(t), statistics.mean(t), p90, statistics.median(cpus[e]), len(t)))


if __name__ == "__main__":
    main()
