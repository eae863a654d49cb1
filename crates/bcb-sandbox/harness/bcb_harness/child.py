"""A sample's process, from its fork to its report: descriptors moved where the sample cannot
predict them, isolation, the job read from its pipe, the run, the report with its nonce."""

import json
import os
import sys
import time

from .audit import make_emitter
from .channel import write_all
from .integrity import harness_namespaces, harness_snapshot, unittest_modules, unittest_snapshot
from .isolate import isolate_child
from .kernel import close_all_but, random_fd
from .rootfs import SANDBOX_MPLCONFIG
from .runner import run_sample
from .script import run_script
from .watch import compare_snapshot


def make_report_encoder():
    """A JSON encoder built from the C accelerator's functions, captured before any sample
    runs: replacing `json.dumps` or the `json` module's attributes does not reach it."""
    import json.encoder as je

    make, esc = je.c_make_encoder, je.c_encode_basestring_ascii
    if make is None or esc is None:
        return json.dumps

    def refuse(o):
        raise TypeError("not JSON serializable: %s" % type(o).__name__)

    enc = make(None, refuse, esc, None, ": ", ", ", False, False, True)
    join = "".join
    return lambda obj: join(enc(obj, 0))


def read_job(fd):
    """The job the supervisor hands a pre-forked child: one JSON object, then end of file."""
    data = bytearray()
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
    os.close(fd)
    return json.loads(data)


def prefault():
    """Walks what the integrity snapshots walk, once, before the job comes: a forked child's
    first touch of each inherited object copies its page (refcounts are writes), thousands of
    pages here, which would otherwise land on the job's path. Results are thrown away; the
    snapshots that count are taken again in `run_sample`, with the job."""
    import unittest

    harness_snapshot(harness_namespaces())
    unittest_snapshot(*unittest_modules(unittest))
    compare_snapshot()


def make_clone_stop():
    """The harness's code runs its tests and reports in the sample's own process only. A fork
    of it that comes back into that code (a sample's `os.fork()` whose child does not exit:
    under upstream's guard `os.execvp` returns, so a fork-and-exec falls through into the rest
    of the module) ends there, at once: it would otherwise run the whole suite a second time
    beside the first, taking a core from its own tests, and could send the report."""
    own, getpid, exit_ = os.getpid(), os.getpid, os._exit

    def stop_clone():
        if getpid() != own:
            exit_(0)

    return stop_clone


def child_main(cfg, wfd, kfd, jfd, base):
    """A sample's process: isolates itself first (while the slot is idle: see `Forked`),
    then waits for its job on `jfd` and runs it."""
    # Captured before the sample exists: the report path uses only these locals.
    encode, write, read, exit_ = make_report_encoder(), os.write, os.read, os._exit
    stop_clone = make_clone_stop()
    stamps = {"child": time.monotonic()}
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        # The report fd and the key fd move to numbers the sample cannot predict; every other
        # descriptor closes (the job fd too, once the job is read).
        rep = random_fd({0, 1, 2, wfd, kfd, jfd})
        os.dup2(wfd, rep, inheritable=False)
        key = random_fd({0, 1, 2, wfd, kfd, jfd, rep})
        os.dup2(kfd, key, inheritable=False)
        job_in = random_fd({0, 1, 2, wfd, kfd, jfd, rep, key})
        os.dup2(jfd, job_in, inheritable=False)
        close_all_but({0, 1, 2, rep, key, job_in})
        del wfd, kfd, jfd
        base = isolate_child(cfg, base)
        os.environ.clear()
        os.environ.update(cfg["env"])
        if cfg["isolation"].get("mountns") and "MPLCONFIGDIR" in os.environ:
            os.environ["MPLCONFIGDIR"] = SANDBOX_MPLCONFIG
        home = os.path.join(base, "home")
        os.makedirs(home, exist_ok=True)
        os.environ["HOME"] = home
        os.environ["TMPDIR"] = base
        import tempfile

        tempfile.tempdir = None
        import random

        random.seed()
        np = sys.modules.get("numpy")
        if np is not None:
            np.random.seed(int.from_bytes(os.urandom(4), "little"))
        emit = make_emitter(encode, write, rep) if cfg.get("hacks") else None
        stamps["isolated"] = time.monotonic()
        prefault()
        stamps["prefaulted"] = time.monotonic()
        job = read_job(job_in)
        stamps["job"] = time.monotonic()
        job["stamps"] = stamps
        if job.get("script") is not None:
            res = run_script(job, cfg, base)
        else:
            res = run_sample(job, cfg, base, emit, stop_clone)
        stop_clone()
        # The nonce exists in this process only from here on: the supervisor wrote it into the
        # key pipe after the fork. A sample that read it first leaves nothing to read.
        nonce = b""
        try:
            nonce = read(key, 64)  # the supervisor wrote and closed it right after the fork
        except OSError:
            pass
        res["nonce"] = nonce.decode("ascii", "replace")
        stamps["report"] = time.monotonic()
        res["stamps"] = stamps
        if not nonce:
            res["integrity"] = "the report key was consumed before the tests finished"
        line = (encode(res) + "\n").encode()
        while line:
            line = line[write(rep, line) :]
        # Closed before the exit, which frees a large copy-on-write address space (most of a
        # warm job's wall): once no process holds the channel, no other line can follow, so the
        # supervisor may judge the report without waiting for the exit.
        os.close(rep)
        exit_(0)
    except BaseException as e:  # harness failure, not the sample's
        stop_clone()
        try:
            fds = locals()
            out, key = fds.get("rep", fds.get("wfd")), fds.get("key", fds.get("kfd"))
            msg = {"nonce": read(key, 64).decode("ascii", "replace"), "harness_error": "%s: %s" % (type(e).__name__, e)}
            write_all(out, (json.dumps(msg) + "\n").encode())
        finally:
            exit_(71)
