"""One unittest sample in this (child) process, with upstream's verdict semantics
(bigcodebench 0.2.5 `unsafe_execute`): program = code + "\n" + test, exec'd as module
`__test__`, `TestCases` run under an itimer, failures + errors -> details; plus bcb's
integrity check and, with cfg["hacks"], the hack watch."""

import os
import signal
import sys
import time

from . import landlock
from .audit import make_audit_hook, make_origin
from .clock import frozen_clock, frozen_clock_read
from .guard import Guard, make_sink_class
from .integrity import (
    foreign_tests,
    harness_namespaces,
    harness_snapshot,
    snapshot_diff,
    unittest_modules,
    unittest_snapshot,
)
from .recorder import clip_traceback, make_recorder_class
from .watch import compare_snapshot, compare_surface, make_probe, make_watch_types


class TimeoutException(Exception):
    pass


def run_sample(job, cfg, base, emit=None, stop_clone=lambda: None):
    """Executes one sample in this (child) process; returns the result message.
    `stop_clone` ends a fork of this process that comes back into the harness's code
    (`child.make_clone_stop`): after the module, at each test's start and outcome."""
    import builtins
    import faulthandler
    import tempfile
    import types
    import unittest

    # The integrity check runs from these locals, captured before the sample exists
    # (replacing the harness's module attributes does not reach them).
    snap_unittest, snap_harness, diff, foreign = unittest_snapshot, harness_snapshot, snapshot_diff, foreign_tests
    clip = clip_traceback
    harness_globals = harness_namespaces()
    frozen_clock_page, clock_read = frozen_clock(), frozen_clock_read
    umods, uclasses = unittest_modules(unittest)
    limits = cfg["limits"]
    stamps = job.get("stamps", {})
    sink = make_sink_class()()
    sink.cap = int(limits.get("output_cap_bytes") or 65536)
    first_test_line = job["code"].count("\n") + 2
    watch_codes = set()
    sample_code = probe = None
    if emit is not None:
        # The hack watch: the audit hook goes in before the sample exists and stays for good.
        import _thread

        origin, sample_code, sample_codes = make_origin(first_test_line)
        control = (unittest.SkipTest, unittest.case._ShouldStop)
        probe = make_probe(emit, sample_code, control)
        compare_before = compare_snapshot()
        sys.addaudithook(make_audit_hook(emit, origin, sample_codes, sys._getframe, _thread.get_ident))
    Recorder = make_recorder_class(unittest, emit, watch_codes, stop_clone)
    uclasses = uclasses + (Recorder,)
    guard = Guard(sink)
    result = {"status": None, "details": {}, "test_secs": None, "ran": [], "skipped": 0, "integrity": None}
    details = result["details"]

    guard.install_safe_environment(own_pidns=landlock.signals_confined(cfg["isolation"]))
    workdir = tempfile.mkdtemp(dir=base)
    os.chdir(workdir)

    # reliability_guard
    os.environ["TZ"] = "UTC"
    time.tzset()
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
    as_mb, data_mb, stack_mb = limits.get("max_as_mb"), limits.get("max_data_mb"), limits.get("max_stack_mb")
    fallback = limits.get("memory_rlimit_mb")
    if fallback and as_mb and data_mb and stack_mb:
        # No memory cgroup: the address-space limit is the only memory cap there is.
        as_mb, data_mb = min(as_mb, fallback), min(data_mb, fallback)
    if as_mb and data_mb and stack_mb:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (as_mb << 20, as_mb << 20))
        resource.setrlimit(resource.RLIMIT_DATA, (data_mb << 20, data_mb << 20))
        resource.setrlimit(resource.RLIMIT_STACK, (stack_mb << 20, stack_mb << 20))
    faulthandler.disable()
    builtins.exit = None
    builtins.quit = None
    # Upstream closes every figure first, importing pyplot to do so. Figures exist only where
    # pyplot is loaded: a warm slot's samples close them as upstream does; a light slot's
    # (standard library only) do not pay half a second of imports to close none.
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close("all")

    module = types.ModuleType("__test__")
    module.__dict__.update(
        {
            "__builtins__": builtins,
            "__file__": "__test__.py",
            "__package__": None,
            "__doc__": None,
            "sys": sys,
            "os": os,
            "environ": os.environ,
        }
    )
    before = snap_unittest(umods, uclasses)
    harness_before = snap_harness(harness_globals)
    test_result = None
    alarm_fired = []
    try:
        full_code = job["code"] + "\n" + job["test"]
        with guard.swallow_io():
            if emit is not None:
                emit({"acct": "begin"})
            stamps["prepared"] = time.monotonic()
            exec(compile(full_code, "__test__.py", "exec"), module.__dict__)
            stop_clone()
            stamps["module"] = time.monotonic()
            sys.modules["__test__"] = module
            TestCases = getattr(module, "TestCases")  # noqa: B009 -- upstream's line; a call through builtins.getattr is not an attribute load
            loader = unittest.TestLoader()
            suite = loader.loadTestsFromTestCase(TestCases)
            if emit is not None:
                import functools

                Watched, wrap_task = make_watch_types(emit, probe, watch_codes)
                task = module.__dict__.get("task_func")
                if callable(task):
                    module.__dict__["task_func"] = functools.wraps(task)(wrap_task(task))
                for test in list(suite):
                    name = getattr(test, "_testMethodName", None)
                    method = getattr(test, name, None) if isinstance(name, str) else None
                    if method is not None:
                        object.__setattr__(test, name, Watched(method, name))
            test_result = Recorder()
            try:
                class_before = {k: id(v) for k, v in vars(TestCases).items()}
            except TypeError:
                class_before = None
            after_exec = snap_unittest(umods, uclasses)
            harness_after_exec = snap_harness(harness_globals)

            # Time spent frozen (the scheduler stopped this sample to keep a core for another)
            # does not count: the alarm re-arms itself for what it is owed.
            credited = [clock_read(frozen_clock_page)]

            def on_alarm(signum, frame):
                owed = clock_read(frozen_clock_page) - credited[0]
                if owed > 0.001:
                    credited[0] += owed
                    signal.setitimer(signal.ITIMER_REAL, owed)
                    return
                alarm_fired.append(time.time())
                raise TimeoutException("Timed out!")

            stamps["tests"] = time.monotonic()
            start = time.time()
            signal.setitimer(signal.ITIMER_REAL, float(job["time_limit"]))
            signal.signal(signal.SIGALRM, on_alarm)
            try:
                suite.run(test_result)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            result["test_secs"] = time.time() - start
            stamps["tests_end"] = time.monotonic()
            if emit is not None:
                emit({"acct": "end"})
        for test, trace in test_result.failures + test_result.errors:
            details[test.id().split(".")[-1]] = clip(trace)
        result["status"] = "pass" if not details else "fail"
        # Integrity: the sample must not have altered unittest or the test class, and every
        # expected test must have reported exactly one outcome.
        problems = diff(before, after_exec) + diff(before, snap_unittest(umods, uclasses))
        problems += diff(harness_before, harness_after_exec) + diff(harness_before, snap_harness(harness_globals))
        if class_before is not None:
            class_after = {k: id(v) for k, v in vars(TestCases).items()}
            problems += ["TestCases.%s" % k for k, v in class_before.items() if class_after.get(k) != v]
            problems += foreign(TestCases, job.get("expected"), first_test_line)
        if type(test_result) is not Recorder:
            problems.append("the result recorder")
        else:
            problems += [
                "result recorder instance.%s" % k
                for k, v in vars(test_result).items()
                if callable(v) and callable(getattr(Recorder, k, None))
            ]
        if emit is not None and not details:
            for what, line in compare_surface(sample_code, compare_before):
                emit({"acct": "hack", "class": "equality", "evidence": "%s is the sample's code" % what, "line": line or None, "runtime": line == 0})
            import threading

            tracers = (sys.gettrace(), sys.getprofile(), getattr(threading, "_trace_hook", None), getattr(threading, "_profile_hook", None))
            if any(t is not None for t in tracers):
                emit({"acct": "hack", "class": "tracing", "evidence": "a trace or profile hook still set after the tests", "line": None, "runtime": False})
        if problems:
            result["integrity"] = "unittest, the harness or TestCases modified by the sample: " + ", ".join(sorted(set(problems))[:10])
        result["ran"] = list(test_result._bcb_outcomes)
        result["skipped"] = len(test_result.skipped)
    except BaseException as e:
        stop_clone()
        try:
            details["ALL"] = str(e)
        except BaseException:
            details["ALL"] = "<unprintable %s>" % type(e).__name__
        result["status"] = "fail"
    if alarm_fired:
        # Upstream's join deadline (alarm + 1 s, counted from process start, which includes
        # ~1-3 s of imports) kills the sample before the alarm's traceback is ever recorded,
        # so a sample that reaches the alarm ends as `timeout` there; report the same.
        result["status"] = "timeout"
        result["details"] = {}
        result["test_secs"] = None
    return result
