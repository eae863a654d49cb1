"""guard.py: upstream's output sink, swallow_io and kill guard (the guard patches the process,
so it is tried in a forked child)."""

import os
import signal
import subprocess
import sys

import pytest
from conftest import run_forked

from bcb_harness.guard import Guard, make_sink_class


def test_the_sink_keeps_at_most_its_cap_and_refuses_reads():
    sink = make_sink_class()()
    sink.cap = 10
    assert sink.write("hello ") == 6
    assert sink.write("world, long") == 11
    sink.writelines(["more"])
    assert sink.getvalue() == "hello worl"
    for read in (sink.read, sink.readline, sink.readlines):
        with pytest.raises(IOError):
            read()
    assert not sink.readable()
    with pytest.raises(TypeError):
        sink.write(b"bytes")


def test_swallow_io_sends_output_to_the_sink_and_restores_everything():
    sink = make_sink_class()()
    saved = (sys.stdout, sys.stderr, sys.stdin, subprocess.Popen, subprocess.run)
    with Guard(sink).swallow_io():
        print("to the sink")
        sys.stderr.write("also\n")
        assert subprocess.Popen is not saved[3]
        assert subprocess.run(["echo", "child"]).stdout == b"child\n"  # captured, as upstream
    assert (sys.stdout, sys.stderr, sys.stdin, subprocess.Popen, subprocess.run) == saved
    assert sink.getvalue() == "to the sink\nalso\n"


def guarded(own_pidns, body):
    """Runs `body(said)` in a child with the guard installed; `said` is what the guard said."""

    def child():
        said = []
        g = Guard(make_sink_class()())
        g.say = said.append
        g.install_safe_environment(own_pidns=own_pidns)
        return body(said)

    return run_forked(child)


def test_the_guard_refuses_a_kill_of_another_process_but_not_of_its_own():
    def body(said):
        os.kill(os.getppid(), 0)  # signal 0: a refused kill and an allowed one look alike
        os.kill(os.getpid(), 0)
        os.killpg(os.getpgid(0), 0)
        return 0 if said == ["Prevented attempt to kill PID %d with signal 0" % os.getppid()] else 1

    assert guarded(False, body) == 0


def test_in_its_own_pid_namespace_the_sample_may_signal_what_it_sees():
    def body(said):
        os.kill(os.getppid(), 0)
        return 0 if said == [] else 1

    assert guarded(True, body) == 0


def test_the_guard_swallows_kill_commands_and_execs():
    def body(said):
        ok = os.system("kill -9 1") == 0 and subprocess.call(["killall", "x"]) == 0
        ok = ok and subprocess.run(["kill", "1"]).returncode == 0 and os.execv("/bin/false", ["false"]) is None
        return 0 if ok and said[0] == "Intercepted system command: kill -9 1" else 1

    assert guarded(False, body) == 0


def test_a_popen_child_is_the_samples_to_kill():
    def body(said):
        p = subprocess.Popen(["sleep", "30"])
        p.kill()
        p.wait()
        return 0 if p.returncode == -signal.SIGTERM and "Intercepted kill call for PID %d" % p.pid in said else 1

    assert guarded(False, body) == 0
