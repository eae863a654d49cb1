"""The integrity check of a pass: identity snapshots of unittest, of the harness's own
functions (every module of this package and the entry's) and of the builtins and modules it
relies on, taken before and after the sample's code ran (what changed was tampered with),
and where the expected test methods' code comes from."""

import sys


def unittest_modules(unittest):
    """unittest's modules and core classes, captured before the sample runs (the integrity
    check then needs no import a sample's `__import__` hook could answer)."""
    import unittest.case
    import unittest.loader
    import unittest.result
    import unittest.suite

    mods = (unittest, unittest.case, unittest.loader, unittest.result, unittest.suite)
    classes = (
        unittest.TestCase,
        unittest.TestSuite,
        unittest.suite.BaseTestSuite,
        unittest.TestResult,
        unittest.TestLoader,
        unittest.case._Outcome,
    )
    return mods, classes


def unittest_snapshot(mods, classes):
    """Identity of every attribute of the given modules and classes, to detect patching."""
    snap = {}
    for mod in mods:
        for k, v in list(vars(mod).items()):
            snap[(mod.__name__, k)] = v
    for cls in classes:
        for k, v in list(vars(cls).items()):
            snap[(cls.__qualname__, k)] = v
            code = getattr(v, "__code__", None)
            if code is not None:
                snap[(cls.__qualname__, k + ".__code__")] = code
    return snap


# Builtins the harness itself relies on while running and checking the tests.
WATCHED_BUILTINS = (
    "__build_class__", "__import__", "exec", "compile", "getattr", "setattr", "isinstance",
    "len", "id", "vars", "type", "str", "dict", "list", "sorted", "set", "print", "open",
)
# Modules whose attributes the harness uses after the sample started.
WATCHED_MODULES = ("json", "json.encoder", "os", "posix", "sys", "signal", "time", "builtins", "traceback")


# The harness's namespaces: every module of this package and the entry's globals, given
# once by the entry (`register`) before any sample exists.
_namespaces = ()


def register(namespaces):
    global _namespaces
    _namespaces = tuple(namespaces)


def harness_namespaces():
    return _namespaces


def harness_snapshot(namespaces):
    """Identity of the harness's own functions (and their code) in each of its `namespaces`
    (a name bound in several is watched in each), the builtins and modules it relies on, and
    which module objects sys.modules hands out for them."""
    import builtins

    snap = {}
    for i, ns in enumerate(namespaces):
        for k, v in list(ns.items()):
            if callable(v):
                snap[("harness", k, i)] = v
                code = getattr(v, "__code__", None)
                if code is not None:
                    snap[("harness", k + ".__code__", i)] = code
    for k in WATCHED_BUILTINS:
        snap[("builtins", k)] = getattr(builtins, k, None)
    for name in WATCHED_MODULES:
        mod = sys.modules.get(name)
        snap[("sys.modules", name)] = mod
        if mod is not None:
            for k, v in list(vars(mod).items()):
                if callable(v):
                    snap[(name, k)] = v
    for name in [n for n in sys.modules if n == "unittest" or n.startswith("unittest.")]:
        snap[("sys.modules", name)] = sys.modules[name]
    return snap


def foreign_tests(test_class, names, first_test_line):
    """Expected test methods not defined by the dataset's test code (a sample's class hook
    or a later rewrite replaced them): their code must come from `__test__.py`, below the
    sample's own lines."""
    bad = []
    for n in names or ():
        fn = vars(test_class).get(n)
        for _ in range(16):  # through decorators (mock.patch, skip...) to the defined function
            code = getattr(fn, "__code__", None)
            if code is not None and code.co_filename == "__test__.py":
                break
            fn = getattr(fn, "__wrapped__", None)
        if code is None or code.co_filename != "__test__.py" or code.co_firstlineno < first_test_line:
            bad.append("TestCases.%s" % n)
    return bad


def snapshot_diff(a, b):
    # Added names are fine (lazy submodule imports add attributes); changed or removed are not.
    missing = object()
    changed = sorted(k for k in a if a[k] is not b.get(k, missing))
    return ["%s.%s" % k[:2] for k in changed]
