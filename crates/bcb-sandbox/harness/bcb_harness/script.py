"""Script jobs (SandboxFusion's run_code): a program run as `python <file>.py` with stdin,
from the sandboxed child, which stays as the program's runner."""

import os
import signal
import sys
import time

from .clock import frozen_clock, frozen_clock_read
from .kernel import close_all_but


# Most bytes of fetched files one script may send back (the report travels through a pipe).
FETCH_BUDGET = 16 << 20
# Seconds the supervisor's deadline for a script job adds to limit + grace.
SCRIPT_SLACK = 2.0


def inside(workdir, rel):
    """The path of `rel` under `workdir`, or None if it would leave it (absolute, `..`)."""
    path = os.path.realpath(os.path.join(workdir, rel))
    return path if path.startswith(workdir.rstrip("/") + "/") else None


def script_limits(cfg, spec):
    """The rlimits of the program: the slot's, with its memory cap lowered (never raised)
    to the job's `memory_mb`."""
    limits = cfg["limits"]
    as_mb, data_mb, stack_mb = limits.get("max_as_mb"), limits.get("max_data_mb"), limits.get("max_stack_mb")
    for cap in (limits.get("memory_rlimit_mb"), spec.get("memory_mb")):
        if cap:
            as_mb = min(as_mb, cap) if as_mb else cap
            data_mb = min(data_mb, cap) if data_mb else cap
    return as_mb, data_mb, stack_mb


def exec_program(python, main, fds, rlimits):
    """In the forked program process: stdio onto the pipes, limits, then exec."""
    try:
        import resource

        os.setpgid(0, 0)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        close_all_but({0, 1, 2})
        for sig in ("SIGPIPE", "SIGXFSZ", "SIGXFZ"):
            if hasattr(signal, sig):
                signal.signal(getattr(signal, sig), signal.SIG_DFL)
        as_mb, data_mb, stack_mb = rlimits
        for what, mb in ((resource.RLIMIT_AS, as_mb), (resource.RLIMIT_DATA, data_mb), (resource.RLIMIT_STACK, stack_mb)):
            if mb:
                resource.setrlimit(what, (mb << 20, mb << 20))
        os.execve(python, [python, main], dict(os.environ))
    except BaseException:
        pass
    os._exit(127)


def run_script(job, cfg, base):
    """Runs one script job in this (child, sandboxed) process, which stays as the program's
    runner: writes its files, feeds stdin, keeps the first `output_cap_bytes` of stdout and
    stderr, kills it at its wall limit (frozen time excluded), reads the fetched files."""
    import base64
    import select
    import tempfile

    spec = job["script"]
    cap = int(cfg["limits"].get("output_cap_bytes") or 65536)
    workdir = os.path.realpath(tempfile.mkdtemp(dir=base))
    os.chdir(workdir)
    for rel, content in (spec.get("files") or {}).items():
        path = inside(workdir, rel)
        if path is None:
            raise ValueError("file path leaves the working directory: %r" % rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(content))
    fd, main = tempfile.mkstemp(suffix=".py", dir=workdir)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(job["code"])
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    rlimits = script_limits(cfg, spec)
    frozen0 = frozen_clock_read(frozen_clock())
    start = time.time()
    pid = os.fork()
    if pid == 0:
        exec_program(sys.executable, main, (in_r, out_w, err_w), rlimits)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    pending = spec.get("stdin") or ""
    pending = memoryview(pending.encode("utf-8"))
    streams = {out_r: bytearray(), err_r: bytearray()}
    for fd in (in_w, out_r, err_r):
        os.set_blocking(fd, False)
    if not pending:
        os.close(in_w)
        in_w = None

    def read_into(fd):
        """Reads what is there; False at end of file."""
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        if not data:
            return False
        buf = streams[fd]
        if len(buf) < cap:
            buf += data[: cap - len(buf)]
        return True

    open_fds = [out_r, err_r]
    timed_out = False
    limit = float(job["time_limit"])
    while True:
        frozen = frozen_clock_read(frozen_clock()) - frozen0
        left = start + limit + frozen - time.time()
        if left <= 0:
            timed_out = True
            break
        wl = [in_w] if in_w is not None else []
        ready_r, ready_w, _ = select.select(open_fds + [pidfd], wl, [], left)
        if ready_w:
            try:
                n = os.write(in_w, pending[: 1 << 16])
                pending = pending[n:]
            except BlockingIOError:
                pass
            except OSError:  # the program closed its stdin: the rest is not wanted
                pending = pending[:0]
            if not pending:
                os.close(in_w)
                in_w = None
        for fd in ready_r:
            if fd in open_fds and not read_into(fd):
                open_fds.remove(fd)
        if pidfd in ready_r:
            break
    # The program ended (or is killed now); so is everything it started.
    if os.getpid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)  # PID namespace init: every other process in it
        except OSError:
            pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    _, wstatus = os.waitpid(pid, 0)
    elapsed = time.time() - start - (frozen_clock_read(frozen_clock()) - frozen0)
    if in_w is not None:
        os.close(in_w)
    # Drain what the pipes still hold (their writers are gone: end of file comes).
    until = time.time() + 0.2
    while open_fds and time.time() < until:
        ready_r, _, _ = select.select(open_fds, [], [], 0.05)
        for fd in ready_r:
            if not read_into(fd):
                open_fds.remove(fd)
    for fd in (out_r, err_r, pidfd):
        os.close(fd)
    files, budget = {}, FETCH_BUDGET
    for rel in spec.get("fetch_files") or []:
        path = inside(workdir, rel)
        if path is None or not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            data = f.read(budget + 1)
        if len(data) > budget:
            continue  # past the budget: left out, like a file that is not there
        budget -= len(data)
        files[rel] = base64.b64encode(data).decode("ascii")
    return {
        "script": {
            "end": "time_limit_exceeded" if timed_out else "finished",
            "execution_time": elapsed,
            "return_code": None if timed_out else os.waitstatus_to_exitcode(wstatus),
            "stdout": bytes(streams[out_r]).decode("utf-8", "replace"),
            "stderr": bytes(streams[err_r]).decode("utf-8", "replace"),
            "files": files,
        }
    }
