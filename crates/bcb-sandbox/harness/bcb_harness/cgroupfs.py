"""The files of the sample's cgroups, v1 or v2 (the Rust side: cgroups/layout.rs): the one
place here that names them. v1 gives a folder per controller, v2 one folder for all."""

import os


PROCS = "cgroup.procs"


def join(path):
    """Moves the calling process into the cgroup `path`."""
    with open(os.path.join(path, PROCS), "w") as f:
        f.write("0")


def members(path):
    """The pids in the cgroup `path`; [] when it cannot be read."""
    try:
        with open(os.path.join(path, PROCS)) as f:
            return [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return []


def move(path, pid):
    """Moves process `pid` into the cgroup `path` (OSError when refused)."""
    with open(os.path.join(path, PROCS), "w") as f:
        f.write(str(pid))


def set_frozen(path, frozen):
    """Freezes or thaws every member of the freezer cgroup `path` (v1 `freezer.state`, v2
    `cgroup.freeze`); a refusal is ignored (the cgroup may be gone)."""
    v1 = os.path.join(path, "freezer.state")
    name, value = (v1, "FROZEN" if frozen else "THAWED") if os.path.exists(v1) else (os.path.join(path, "cgroup.freeze"), "1" if frozen else "0")
    try:
        with open(name, "w") as f:
            f.write(value)
    except OSError:
        pass


def count(paths, filename, key):
    """The count `key` of the first of `paths` that has `filename` (a file of `key value`
    lines); None where none has it."""
    for path in paths:
        try:
            with open(os.path.join(path, filename)) as f:
                for line in f:
                    if line.startswith(key + " "):
                        return int(line.split()[1])
        except (OSError, ValueError):
            pass
    return None


def oom_kills(paths):
    """Processes the memory limit's OOM killer ended (v1 `memory.oom_control`, v2
    `memory.events`); None without a memory cgroup."""
    v1 = count(paths, "memory.oom_control", "oom_kill")
    return v1 if v1 is not None else count(paths, "memory.events", "oom_kill")


def process_limit_hits(paths):
    """Forks and thread starts the process limit refused so far (`pids.events`' `max`, both
    versions); None without a pids cgroup."""
    return count(paths, "pids.events", "max")
