"""integrity.py: the identity snapshots that tell what a sample changed, and where the
expected test methods' code comes from."""

import functools
import types
import unittest

from bcb_harness import integrity


def test_changed_and_removed_names_count_but_added_ones_do_not():
    a = {("mod", "f"): len, ("mod", "g"): print, ("mod", "h"): 1}
    b = {("mod", "f"): len, ("mod", "g"): repr, ("mod", "new"): abs}
    assert integrity.snapshot_diff(a, b) == ["mod.g", "mod.h"]
    assert integrity.snapshot_diff(a, dict(a)) == []


class Result:
    def add(self):
        return 1


def test_the_unittest_snapshot_sees_a_patched_attribute_and_a_swapped_code():
    mod = types.ModuleType("fake_unittest")
    mod.main = lambda: None
    before = integrity.unittest_snapshot((mod,), (Result,))
    mod.main = lambda: None
    Result.add.__code__ = (lambda self: 2).__code__
    after = integrity.unittest_snapshot((mod,), (Result,))
    assert integrity.snapshot_diff(before, after) == ["Result.add.__code__", "fake_unittest.main"]


def test_unittests_modules_and_classes_are_captured():
    mods, classes = integrity.unittest_modules(unittest)
    assert unittest.case in mods and unittest.result in mods
    assert unittest.TestResult in classes and unittest.case._Outcome in classes


def test_the_harness_snapshot_sees_a_replaced_harness_function_per_namespace():
    def f():
        return 1

    ns1, ns2 = {"f": f, "x": 1}, {"f": f}
    before = integrity.harness_snapshot([ns1, ns2])
    assert before[("harness", "f", 0)] is f and ("harness", "x", 0) not in before
    assert before[("builtins", "getattr")] is getattr
    ns2["f"] = lambda: 1
    assert integrity.snapshot_diff(before, integrity.harness_snapshot([ns1, ns2])) == ["harness.f", "harness.f.__code__"]


def test_register_gives_the_namespaces_back(monkeypatch):
    monkeypatch.setattr(integrity, "_namespaces", ())
    ns = {"a": 1}
    integrity.register([ns])
    assert integrity.harness_namespaces() == (ns,)


def wrap(fn):
    """A decorator from a library (`mock.patch`, say): its code is not the test code's."""

    @functools.wraps(fn)
    def inner(*a):
        return fn(*a)

    return inner


def test_expected_tests_must_come_from_the_test_code():
    # Lines 1-3 are the sample's, the test code starts at line 4 (as `code + "\n" + test`).
    src = (
        "def sample_made(self):\n"
        "    pass\n"
        "\n"
        "class TestCases:\n"
        "    def test_plain(self):\n"
        "        pass\n"
        "    @wrap\n"
        "    def test_wrapped(self):\n"
        "        pass\n"
        "    test_swapped = sample_made\n"
    )
    ns = {"wrap": wrap}
    exec(compile(src, "__test__.py", "exec"), ns)
    TestCases = ns["TestCases"]
    TestCases.test_other = functools.partial(print)
    names = ["test_plain", "test_wrapped", "test_swapped", "test_missing", "test_other"]
    assert integrity.foreign_tests(TestCases, names, 4) == ["TestCases.test_swapped", "TestCases.test_missing", "TestCases.test_other"]
    assert integrity.foreign_tests(TestCases, None, 4) == []
