"""A slot's main loop: its config, its user and PID namespaces, the preloads, `ready`, then
one job at a time, each in a sample process forked ahead of it."""

import gc
import json
import os
import signal
import sys
import time

from . import PROTOCOL, cgroupfs
from .channel import CTRL_IN, CTRL_OUT, LineReader, send
from .clock import frozen_clock_create
from .kernel import CLONE_NEWPID, CLONE_NEWUSER, PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, PR_SET_PDEATHSIG, collapse_heap, prctl, unshare
from .supervisor import Forked, run_job


def import_preloads(names):
    """Imports the modules a warm slot keeps; returns the ones that failed."""
    failed = []
    for name in names:
        try:
            if name == "matplotlib":
                import matplotlib

                matplotlib.use("Agg")
                import matplotlib.pyplot  # noqa: F401
            else:
                __import__(name)
        except BaseException as e:
            failed.append("%s (%s)" % (name, type(e).__name__))
    return failed


def leave_sample_cgroup(cfg):
    """An extra slot warms up inside its sample's freezer cgroup (so it can be frozen); every
    process of the slot must be out of it before a sample runs there."""
    if cfg.get("freezer") and cfg.get("cgroup_home"):
        try:
            cgroupfs.move(cfg["cgroup_home"], os.getpid())
        except OSError:
            pass


def main(forked_slot=False):
    """The slot: spawned by bcb, or forked by the zygote (`forked_slot`: warm, and says so)."""
    reader = LineReader(CTRL_IN)
    cfg = json.loads(reader.readline())
    if cfg.get("protocol") != PROTOCOL:
        sys.stderr.write("bcb harness: wire protocol %r, this harness speaks %d\n" % (cfg.get("protocol"), PROTOCOL))
        os._exit(2)
    if forked_slot and cfg.get("workroot"):
        os.chdir(cfg["workroot"])  # where a spawned slot starts
    frozen_clock_create()
    # Anything the interpreter prints goes nowhere useful; keep fds 0..2 valid.
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
    except OSError:
        pass
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    # Dumpable while the namespaces are made (a zygote's slot is not: /proc/self would be
    # root's, and uid_map closed to us).
    prctl(PR_SET_DUMPABLE, 1)
    pidns_fd = None
    forked = None
    if cfg["isolation"].get("userns"):
        uid, gid = os.getuid(), os.getgid()
        unshare(CLONE_NEWUSER)
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write("0 %d 1" % uid)
        with open("/proc/self/gid_map", "w") as f:
            f.write("0 %d 1" % gid)
        if cfg["isolation"].get("pidns"):
            # setns back into the host's PID namespace is not allowed from a user namespace:
            # move the supervisor into a PID namespace of our own first, which it may re-enter.
            unshare(CLONE_NEWPID)
            pid = os.fork()
            if pid:
                for fd in (CTRL_IN, CTRL_OUT):
                    os.close(fd)
                # Outside the supervisor's PID namespace: left in the sample's cgroup, it would
                # be a member the supervisor can neither see nor kill (pid 0 to it).
                leave_sample_cgroup(cfg)
                _, status = os.waitpid(pid, 0)
                os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    # Then not: a sample of our uid can neither trace us nor read our memory (the report key)
    # or environment through /proc (each sample makes itself dumpable again, isolate_child).
    if cfg["isolation"].get("supervisor_out_of_reach"):
        prctl(PR_SET_DUMPABLE, 0)
    if cfg["isolation"].get("pidns"):
        pidns_fd = os.open("/proc/self/ns/pid", os.O_RDONLY)
    t0 = time.time()
    # A slot forked by the zygote finds its preloads imported (each is a dict lookup here).
    failed = import_preloads(cfg.get("preload") or [])
    # The preloads' objects go to the collector's permanent generation: a sample's full
    # collection would otherwise write to every one of them, copying the whole shared heap
    # page by page (about 110 ms of a sample's CPU with the pool's preloads). No collection
    # first: in a slot the zygote forked, it would copy that heap into the slot itself.
    gc.freeze()
    if cfg.get("preload") and not forked_slot:
        collapse_heap()  # a forked slot shares the zygote's, collapsed there
    leave_sample_cgroup(cfg)
    send({"event": "ready", "pid": os.getpid(), "preload_secs": time.time() - t0, "preload_failed": failed, "forked": forked_slot})
    ran = False
    after_verdict = None
    while True:
        if forked is None:
            forked = Forked(cfg, pidns_fd)  # the next job's process, ready before it comes
            if ran:
                send({"event": "idle", "cpu_after_verdict_secs": after_verdict})
        line = reader.readline()
        received = time.monotonic()
        job = json.loads(line) if line else {"op": "exit"}
        if job.get("op") == "exit":
            forked.discard(cfg)
            return
        if "op" in job:
            continue  # a freeze or thaw that arrived after its job ended
        after_verdict = run_job(job, cfg, forked, reader, received)
        forked = None
        ran = True
        if cfg.get("one_shot"):
            return
