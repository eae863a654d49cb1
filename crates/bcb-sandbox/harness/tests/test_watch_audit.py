"""watch.py and audit.py: the hack watch's probe of returned values, its wrappers, the
comparison surface, the account channel, and the audit hook's attribution to the sample."""

import json
import math
import os
import sys
import threading
import unittest
import unittest.mock

from bcb_harness import audit, watch


def sample_code_of(*sample_classes, line=7):
    """A `sample_code` for the probe: functions of `sample_classes` are the sample's (at `line`)."""
    names = {c.__qualname__ for c in sample_classes}

    def sample_code(fn):
        qual = getattr(getattr(fn, "__func__", fn), "__qualname__", "")
        return line if qual.rsplit(".", 1)[0] in names else None

    return sample_code


class AgreesWithAll:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__


class HonestValue:
    def __eq__(self, other):
        return isinstance(other, HonestValue)

    __hash__ = object.__hash__


class Stops:
    def __eq__(self, other):
        raise unittest.SkipTest("stop")

    __hash__ = object.__hash__


def probe_with(sample_code):
    said = []
    return watch.make_probe(said.append, sample_code, (unittest.SkipTest,)), said


def test_a_value_whose_comparison_agrees_with_anything_is_an_equality_hack():
    probe, said = probe_with(sample_code_of(AgreesWithAll))
    probe(AgreesWithAll())
    assert said == [
        {"acct": "hack", "class": "equality", "evidence": "AgreesWithAll.__eq__ agrees with anything", "line": 7, "runtime": False},
        {"acct": "hack", "class": "equality", "evidence": "AgreesWithAll.__ne__ agrees with anything", "line": 7, "runtime": False},
    ]


def test_an_honest_comparison_and_library_values_are_not_flagged():
    probe, said = probe_with(sample_code_of(HonestValue))
    probe(HonestValue())
    probe([1, "a", 2.5, None, (b"x", {"k": 3})])
    probe(AgreesWithAll())  # not the sample's code here
    assert said == []


def test_mock_any_and_a_mock_told_to_compare_equal_are_flagged():
    probe, said = probe_with(lambda fn: None)
    probe(unittest.mock.ANY)
    m = unittest.mock.MagicMock()
    m.__eq__.return_value = True
    probe(m)
    assert [s["evidence"] for s in said] == ["task_func returned unittest.mock.ANY", "task_func returned a mock told to compare equal"]
    assert all(s["line"] is None and s["runtime"] is False for s in said)


def test_values_are_probed_three_levels_down_not_deeper():
    probe, said = probe_with(sample_code_of(AgreesWithAll))
    probe({"a": [(AgreesWithAll(),)]})
    assert len(said) == 2
    probe, said = probe_with(sample_code_of(AgreesWithAll))
    probe([[[[AgreesWithAll()]]]])
    assert said == []


def test_code_compiled_at_run_time_has_no_line_and_says_so():
    probe, said = probe_with(sample_code_of(AgreesWithAll, line=0))
    probe(AgreesWithAll())
    assert said[0]["line"] is None and said[0]["runtime"] is True


def test_a_comparison_that_stops_unittest_is_unittest_control():
    probe, said = probe_with(sample_code_of(Stops))
    probe(Stops())
    assert said == [{"acct": "hack", "class": "unittest-control", "evidence": "Stops.__eq__ raises SkipTest", "line": 7, "runtime": False}]


def test_the_watched_method_says_how_it_ended_and_reads_through_to_the_method():
    said, probed, codes = [], [], set()
    Watched, wrap_task = watch.make_watch_types(said.append, probed.append, codes)

    def ok():
        return 1

    def boom():
        raise KeyError("k")

    ok.__unittest_skip__ = True
    assert Watched(ok, "test_ok")() == 1
    assert Watched(ok, "test_ok").__unittest_skip__ is True
    try:
        Watched(boom, "test_boom")()
    except KeyError:
        pass
    assert said == [{"acct": "call", "t": "test_ok", "ok": True}, {"acct": "call", "t": "test_boom", "ok": False, "exc": "KeyError"}]
    assert wrap_task(lambda x: x * 2)(21) == 42 and probed == [42]
    assert Watched.__call__.__code__ in codes and len(codes) == 2


def test_a_comparison_function_replaced_by_the_sample_is_on_the_surface(monkeypatch):
    before = watch.compare_snapshot()
    assert "math" in before

    def isclose(*a, **k):
        return True

    monkeypatch.setattr(math, "isclose", isclose)
    assert watch.compare_surface(lambda fn: 5 if fn is isclose else None, before) == [("math.isclose", 5)]
    assert watch.compare_surface(lambda fn: None, before) == []


def test_the_account_channel_writes_one_line_per_fact_and_never_raises(fds):
    r, w = fds.pipe()
    emit = audit.make_emitter(json.dumps, os.write, w)
    emit({"acct": "begin"})
    emit({"acct": "outcome", "t": "test_a", "o": "success"})
    assert os.read(r, 4096) == b'{"acct": "begin"}\n{"acct": "outcome", "t": "test_a", "o": "success"}\n'
    fds.close(w)
    emit({"acct": "end"})  # a closed channel: the report goes missing too, nothing raises here


# The sample's lines 1-4, the test code's from line 5 (`code + "\n" + test`).
SAMPLE = "def sample_calls(hook, event, args):\n    hook(event, args)\n\n\ndef test_calls(hook, event, args):\n    hook(event, args)\n"


def hooked():
    said = []
    origin, sample_code, codes = audit.make_origin(5)
    hook = audit.make_audit_hook(said.append, origin, codes, sys._getframe, threading.get_ident)
    ns = {}
    exec(compile(SAMPLE, "__test__.py", "exec"), ns)
    return hook, ns, said, sample_code, codes


def test_the_sample_code_is_its_functions_above_the_test_code():
    _, ns, _, sample_code, codes = hooked()
    assert sample_code(ns["sample_calls"]) == 1
    assert sample_code(ns["test_calls"]) is None
    assert sample_code(len) is None and sample_code(hooked) is None
    codes.add(hooked.__code__)
    assert sample_code(hooked) == 0


def test_the_audit_hook_flags_the_samples_own_calls_once():
    hook, ns, said, _, _ = hooked()
    ns["sample_calls"](hook, "sys.settrace", (None,))
    ns["sample_calls"](hook, "sys.settrace", (None,))
    ns["test_calls"](hook, "sys.settrace", (None,))  # the test code's: not the sample's
    ns["sample_calls"](hook, "open", ("x",))  # not a hack event
    ns["sample_calls"](hook, "ctypes.dlsym", (None, "printf"))  # not the interpreter's
    ns["sample_calls"](hook, "ctypes.dlsym", (None, "PyFrame_New"))
    ns["sample_calls"](hook, "object.__getattr__", (None, "tb_frame"))
    ns["sample_calls"](hook, "object.__getattr__", (None, "f_locals"))
    assert said == [
        {"acct": "hack", "class": "tracing", "evidence": "sys.settrace", "line": 2, "runtime": False},
        {"acct": "hack", "class": "tracing", "evidence": "ctypes symbol PyFrame_New", "line": 2, "runtime": False},
        {"acct": "hack", "class": "tracing", "evidence": "NoneType.tb_frame", "line": 2, "runtime": False},
    ]


def test_code_the_sample_compiles_is_the_samples_too():
    hook, ns, said, _, codes = hooked()
    built = compile("def g(hook, event, args):\n    hook(event, args)\n", "<string>", "exec")
    ns["test_calls"](hook, "exec", (built,))  # compiled by the test code: not kept
    assert built not in codes
    ns["sample_calls"](hook, "exec", (built,))
    assert built in codes
    g = {}
    exec(built, g)
    g["g"](hook, "sys._getframe", (1,))
    assert said == [{"acct": "hack", "class": "tracing", "evidence": "sys._getframe", "line": None, "runtime": True}]
