"""Unit tests of the harness's pure parts, run by crates/bcb-sandbox/tests/harness_python.rs
(`python -B -m pytest` in the venv of .ci/setup-harness-checks.sh, Python 3.11 like the eval
env). None needs root, namespaces or the network. In the sandbox the package is loaded from
its directory by `bcb_harness.py`; here it is imported by name from the directory above."""

import os
import sys

import pytest


HARNESS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if HARNESS not in sys.path:
    sys.path.insert(0, HARNESS)


@pytest.fixture
def fds():
    """Opens pipes for a test (`fds.pipe()` -> (read end, write end)) and closes what is left."""

    class Pipes:
        def __init__(self):
            self.opened = []

        def pipe(self):
            r, w = os.pipe()
            self.opened += [r, w]
            return r, w

        def close(self, fd):
            os.close(fd)
            self.opened.remove(fd)

    pipes = Pipes()
    yield pipes
    for fd in pipes.opened:
        try:
            os.close(fd)
        except OSError:
            pass


def run_forked(body):
    """Runs `body()` in a forked child (for what patches the process: the guard, a clone's
    exit) and returns its exit status: `body`'s return value, 99 if it raised."""
    pid = os.fork()
    if pid == 0:
        code = 99
        try:
            code = body()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)
