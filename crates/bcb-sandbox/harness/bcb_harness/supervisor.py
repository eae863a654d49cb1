"""The supervisor's side of a job: the sample's process forked ahead (`Forked`), the job
handed to it and watched to its deadline (frozen time excluded), its leftovers killed, and
its report judged into the `result` event."""

import json
import os
import signal
import time

from .account import judge_account
from .channel import CTRL_IN, send, write_all
from .child import child_main
from .freezer import Freezer
from .kernel import CLONE_NEWPID, setns, unshare
from .reap import cgroup_oom_kills, cleanup_after, kill_orphans, live_cpu, process_limit_hits
from .script import SCRIPT_SLACK


# Forks (and thread starts) the process limit refused, since the job started, that make a
# sample a process bomb: it is ended there, its verdict a timeout as at its deadline. A bomb
# racks up thousands a second, each failing fork copying and freeing its address space in the
# kernel; left to its deadline it took CPU and kernel locks from the sample beside it (a
# one-thread correct answer ran 3x its time alone). A program that meets the limit by
# accident fails a fork or two and raises.
PROCESS_BOMB_FORKS = 100
# How often the supervisor reads the refusals while the sample runs.
PROCESS_BOMB_POLL_SECS = 0.1


class Forked:
    """A sample process forked ahead of its job: it isolates itself while the slot is idle
    (fork, namespaces, root, cgroups, privileges: most of a job's fixed cost), then blocks
    reading `job_w` until the supervisor hands it a job. It runs no code but the harness's
    until then, and takes nothing from the previous sample: that one's processes and
    cgroup members are gone before the next fork."""

    def __init__(self, cfg, pidns_fd):
        self.started = time.monotonic()
        self.rfd, wfd = os.pipe()
        krfd, self.kwfd = os.pipe()
        jrfd, self.job_w = os.pipe()
        self.own_pidns = pidns_fd is not None
        if pidns_fd is not None:
            unshare(CLONE_NEWPID)
        self.pid = os.fork()
        if self.pid == 0:
            child_main(cfg, wfd, krfd, jrfd, cfg.get("workroot") or "/tmp")
            os._exit(72)
        if pidns_fd is not None:
            setns(pidns_fd, CLONE_NEWPID)
        self.forked = time.monotonic()
        for fd in (wfd, krfd, jrfd):
            os.close(fd)

    def discard(self, cfg):
        """Kills the waiting process (the slot is exiting)."""
        for fd in (self.rfd, self.kwfd, self.job_w):
            os.close(fd)
        cleanup_after(self.pid, cfg)
        os.waitpid(self.pid, 0)


def run_job(job, cfg, forked, reader, received):
    """Runs `job` in `forked` to its reap. Returns the CPU the sample's process used after a
    verdict sent before its exit (its exit, mostly: the verdict's `cpu_secs` stops at the
    report), None when the verdict waited for the reap."""
    import select
    import shutil

    # Where the job's time goes (monotonic seconds since its line was read), for the stage
    # breakdown the orchestrator logs at debug level (bench/serve-breakdown.sh).
    stages = {"ahead_fork": forked.forked - forked.started}

    def mark(name):
        stages[name] = time.monotonic() - received

    freezer = Freezer(cfg.get("freezer"), float(cfg["limits"].get("freeze_budget_secs", 60.0)))

    script = job.get("script") is not None
    # Read from the test code by bcb before the job was sent (`read_test_code`).
    expected = job.get("expected")
    pid, rfd, kwfd = forked.pid, forked.rfd, forked.kwfd
    # Handed over in the wait loop below: a child that died while isolating never reads it.
    job_out = json.dumps(job).encode()
    job_w = forked.job_w
    os.set_blocking(job_w, False)
    base = cfg.get("workroot") or "/tmp"
    oom_before = cgroup_oom_kills(cfg)
    refused_before = process_limit_hits(cfg)
    bomb = False
    t0 = time.time()
    mark("handed")
    # The nonce is made after the fork, so the child's memory never held it before the tests.
    nonce = os.urandom(16).hex()
    write_all(kwfd, nonce.encode())
    os.close(kwfd)
    # The pid is only meaningful to the orchestrator outside a user namespace.
    send({"event": "started", "key": job["key"], "pid": None if cfg["isolation"].get("userns") else pid})
    deadline = t0 + float(job["time_limit"]) + float(cfg["limits"].get("kill_grace_secs", 1.0))
    if script:
        # The runner inside kills the program at its limit itself, counted from the program's
        # start (after the sandbox is built and its files written), then reports: room for that.
        deadline += SCRIPT_SLACK
    pidfd = os.pidfd_open(pid)
    while True:  # ops that came with the job line
        line = reader.take()
        if line is None:
            break
        freezer.op(line, job["key"])
    buf = bytearray()
    cap = 64 << 20
    killed = False
    # The report channel at EOF: every holder closed it (the child does right after its report;
    # a descendant that inherited it keeps it open until it dies), so nothing can be added.
    eof = False
    # Judged and sent at EOF, before the child's exit (pool slots outside a user namespace,
    # where the child's pid names it in /proc for its CPU time).
    answered = False
    may_answer_early = not cfg.get("one_shot") and not cfg["isolation"].get("userns")
    os.set_blocking(rfd, False)
    while True:
        # Frozen time does not count (and a frozen sample is never killed: its deadline
        # moves with the clock until it is thawed, or until its budget is spent).
        freezer.expire()
        left = deadline + freezer.frozen_secs() - time.time()
        if left <= 0 and not killed:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            killed = True
        if not killed and refused_before is not None:
            refused = process_limit_hits(cfg)
            if refused is not None and refused - refused_before >= PROCESS_BOMB_FORKS:
                # Never frozen again: a frozen process takes no SIGKILL.
                freezer.done = True
                freezer.thaw()
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
                killed = bomb = True
        watch = ([] if eof else [rfd]) + [pidfd] + ([] if reader.eof else [CTRL_IN])
        wait = max(left, 0.05) if not killed else 1.0
        if not killed and refused_before is not None:
            wait = min(wait, PROCESS_BOMB_POLL_SECS)
        spent_in = freezer.until_spent()
        if spent_in is not None:
            wait = min(wait, max(spent_in, 0.05))  # wake to thaw it when its budget runs out
        ready, writable, _ = select.select(watch, [job_w] if job_w is not None else [], [], wait)
        if writable:
            try:
                job_out = job_out[os.write(job_w, job_out[: 1 << 16]) :]
            except BlockingIOError:
                pass
            except OSError:
                job_out = b""  # the child is gone: the pidfd says so next
            if not job_out:
                os.close(job_w)
                job_w = None
        if CTRL_IN in ready:
            reader.fill()
            while True:
                line = reader.take()
                if line is None:
                    break
                freezer.op(line, job["key"])
        if rfd in ready:
            try:
                data = os.read(rfd, 1 << 16)
            except BlockingIOError:
                data = None
            if data and len(buf) < cap:
                buf += data
            eof = data == b""
            if eof and may_answer_early and not killed:
                mark("eof")
                msg = result_base(job, time.time() - t0, live_cpu(pid), expected)
                if judge(msg, buf, nonce, job, cfg, expected, script, stages, received):
                    mark("judged")
                    msg["stages"] = dict(stages)
                    send(msg)
                    answered = True
                    answered_cpu = msg["cpu_secs"]
                    freezer.done = True
                    freezer.thaw()
        if pidfd in ready:
            break
    mark("exited")
    if job_w is not None:
        os.close(job_w)
    # The child is gone (zombie, not reaped yet): kill its leftovers (thawed first: a frozen
    # process takes no signal), then drain.
    freezer.thaw()
    cleanup_after(pid, cfg)
    while True:
        try:
            data = os.read(rfd, 1 << 16)
        except BlockingIOError:
            break
        if not data:
            break
        if len(buf) < cap:
            buf += data
    os.close(rfd)
    os.close(pidfd)
    # wait4: the child's rusage covers it and every descendant it waited for.
    _, wstatus, usage = os.wait4(pid, 0)
    if not forked.own_pidns:
        kill_orphans()  # with a PID namespace, its init's death already took everything
    wall = time.time() - t0
    mark("reaped")
    frozen = freezer.frozen_secs()
    if not (cfg["isolation"].get("mountns")):
        for name in os.listdir(base):
            if name.startswith("s-"):
                shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    if answered:
        if answered_cpu is None:
            return None
        return max(usage.ru_utime + usage.ru_stime - answered_cpu, 0.0)
    msg = result_base(job, wall, usage.ru_utime + usage.ru_stime, expected)
    if os.WIFSIGNALED(wstatus):
        msg["signal"] = os.WTERMSIG(wstatus)
    else:
        msg["exit_code"] = os.WEXITSTATUS(wstatus)
    msg["killed_at_deadline"] = killed and not bomb
    if bomb:
        msg["process_bomb"] = True
    if frozen > 0:
        msg["frozen_secs"] = frozen
    oom_after = cgroup_oom_kills(cfg)
    if oom_before is not None and oom_after is not None and oom_after > oom_before:
        msg["oom_killed"] = True
    judge(msg, buf, nonce, job, cfg, expected, script, stages, received)
    mark("judged")
    msg["stages"] = stages
    send(msg)
    return None


def result_base(job, wall, cpu, expected):
    return {"event": "result", "key": job["key"], "wall_secs": wall, "cpu_secs": cpu, "expected": expected, "killed_at_deadline": False}


def judge(msg, buf, nonce, job, cfg, expected, script, stages, received):
    """Reads the report (the first line with the nonce) and the account lines before it from
    the channel's bytes into `msg`; True when there is a report."""
    report = None
    account = []
    for line in bytes(buf).split(b"\n"):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("nonce") == nonce:
            if report is not None:
                msg["integrity"] = "more than one report"
            report = obj
        elif isinstance(obj, dict) and "acct" in obj and "nonce" not in obj and report is None:
            account.append(obj)  # facts said before the report (none can follow it)
    if report is not None:
        report.pop("nonce", None)
        # The sample process's own timestamps: untrusted, display only (never a verdict input).
        stamps = report.pop("stamps", None)
        if isinstance(stamps, dict):
            for k, v in stamps.items():
                if isinstance(k, str) and type(v) is float:
                    stages.setdefault("child_" + k, v - received)
        msg["report"] = report
    if cfg.get("hacks") and not script:
        msg["hacks"] = judge_account(account, report, expected, job.get("declared_skips") or [])
    return report is not None
