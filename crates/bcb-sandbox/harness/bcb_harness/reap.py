"""After a sample: killing what it left (its group, its cgroups, descendants that escaped
the group), reaping, and what it cost (CPU time before the reap, OOM kills)."""

import os
import signal
import time

from . import cgroupfs


def list_descendants(root):
    """Pids whose parent chain leads to `root` (we are a subreaper, so orphans come back here)."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, stack = [], [root]
    while stack:
        for c in children.get(stack.pop(), []):
            out.append(c)
            stack.append(c)
    return out


# How long killed processes get to finish exiting: a fork bomb's thousands of SIGKILLed
# children need CPU time to go, which a loaded machine hands out slowly; leaving before they
# are gone would hand them to init when the slot exits.
REAP_SECS = 5.0


def kill_cgroups(paths):
    deadline = time.time() + REAP_SECS
    while time.time() < deadline:
        alive = False
        for path in paths:
            # 0: a member outside our PID namespace (kill(0) would end our own group).
            for p in [p for p in cgroupfs.members(path) if p > 0 and p != os.getpid()]:
                alive = True
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        if not alive:
            return
        time.sleep(0.01)


def reap_all():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def cleanup_after(pid, cfg):
    """Kill the sample's group and cgroups (the child itself is an unreaped zombie here)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    kill_cgroups(cfg.get("cgroups") or [])


def kill_orphans():
    """Kill descendants that escaped the group (setsid); as subreaper they are ours."""
    deadline = time.time() + REAP_SECS
    while time.time() < deadline:
        rest = list_descendants(os.getpid())
        if not rest:
            break
        for p in rest:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        reap_all()
        time.sleep(0.005)


def cgroup_oom_kills(cfg):
    return cgroupfs.oom_kills(cfg.get("cgroups") or [])


def process_limit_hits(cfg):
    """Forks and thread starts the sample's process limit refused so far; None without a
    pids cgroup."""
    return cgroupfs.process_limit_hits(cfg.get("cgroups") or [])


def live_cpu(pid):
    """User + system CPU of a child that has not been reaped, and of the children it waited
    for; None when /proc cannot tell. Its own part is the larger of two lower bounds: its live
    threads' run time (ns, from schedstat), which misses threads that already exited (a
    sample that computed in a thread pool would look idle), and the whole process's
    utime + stime, which counts them but in whole clock ticks."""
    try:
        live = 0
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                    live += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
        fields = stat[stat.rindex(b")") + 2 :].split()
        tick = os.sysconf("SC_CLK_TCK")
        own = max(live / 1e9, (int(fields[11]) + int(fields[12])) / tick)
        return own + (int(fields[13]) + int(fields[14])) / tick
    except (OSError, ValueError, IndexError):
        return None
