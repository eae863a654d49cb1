"""recorder.py: the result recorder's bookkeeping (each outcome noted and said on the
account), traceback clipping and the splicing of the watch's frames."""

import traceback
import unittest

from bcb_harness.recorder import TRACE_HEADER, clip_traceback, make_recorder_class, splice_tracebacks


class Cases(unittest.TestCase):
    __test__ = False  # run by the tests below through the recorder, not by pytest

    def test_a_pass(self):
        pass

    def test_b_fail(self):
        self.assertEqual(1, 2)

    def test_c_error(self):
        raise KeyError("k")

    def test_d_skip(self):
        self.skipTest("no network")

    @unittest.expectedFailure
    def test_e_xfail(self):
        self.assertTrue(False)

    @unittest.expectedFailure
    def test_f_xpass(self):
        pass

    def test_g_subtests(self):
        for i in range(2):
            with self.subTest(i=i):
                self.assertEqual(i, 0)


def run_cases(emit=None):
    stops = []
    Recorder = make_recorder_class(unittest, emit, set(), lambda: stops.append(1))
    result = Recorder()
    unittest.TestLoader().loadTestsFromTestCase(Cases).run(result)
    return result, stops


def test_the_recorder_notes_each_outcome_in_order():
    result, _ = run_cases()
    # A test whose subtests failed has no outcome of its own (unittest adds no success): its
    # subtests' failures are in `failures`, and the run fails.
    assert result._bcb_outcomes == ["test_a_pass", "test_b_fail", "test_c_error", "test_d_skip", "test_e_xfail", "test_f_xpass"]
    assert [t.id().split(".")[-1] for t, _ in result.failures] == ["test_b_fail", "test_g_subtests (i=1)"]
    assert [t.id().split(".")[-1] for t, _ in result.errors] == ["test_c_error"]
    assert len(result.skipped) == 1 and len(result.expectedFailures) == 1 and len(result.unexpectedSuccesses) == 1
    assert "AssertionError: 1 != 2" in result.failures[0][1]


def test_the_recorder_says_each_outcome_on_the_account_as_it_happens():
    said = []
    run_cases(said.append)
    assert [(o["t"], o["o"]) for o in said] == [
        ("test_a_pass", "success"),
        ("test_b_fail", "failure"),
        ("test_c_error", "error"),
        ("test_d_skip", "skip"),
        ("test_e_xfail", "xfail"),
        ("test_f_xpass", "xpass"),
        ("test_g_subtests", "subfailure"),
    ]
    assert all(o["acct"] == "outcome" for o in said)


def test_a_clone_of_the_sample_is_stopped_at_each_start_and_outcome():
    _, stops = run_cases()
    assert len(stops) >= 2 * 6 + 1


def test_a_short_traceback_is_kept_as_it_is():
    assert clip_traceback("Traceback (most recent call last):\nValueError: x\n") == "Traceback (most recent call last):\nValueError: x\n"


def test_a_long_traceback_keeps_its_last_frame_and_exception_line():
    frames = "".join('  File "__test__.py", line %d, in f%d\n    f%d()\n' % (i, i, i + 1) for i in range(200))
    trace = "Traceback (most recent call last):\nValueError: first\n\nDuring handling...\n\n" + TRACE_HEADER + frames + "RecursionError: " + "m" * 50 + "\n"
    clipped = clip_traceback(trace, cap=200)
    assert clipped.startswith(TRACE_HEADER + "  [bcb: traceback truncated, ")
    assert '  File "__test__.py", line 199, in f199\n' in clipped
    assert "RecursionError: mmm" in clipped
    assert "line 198" not in clipped
    marker, kept = clipped[len(TRACE_HEADER) :].split("\n", 1)
    assert int(marker.split("truncated, ")[1].split(" ")[0]) + len(kept) == len(trace)
    # The first unindented line after the header is still the exception line.
    body = clipped[len(TRACE_HEADER) :].splitlines()
    assert next(line for line in body if line and not line[0].isspace()).startswith("RecursionError")


def test_a_long_text_without_a_traceback_keeps_its_end():
    clipped = clip_traceback("a" * 100 + "b" * 50, cap=50)
    assert clipped == "[bcb: traceback truncated, 100 characters dropped]\n" + "b" * 50


def test_the_watchs_frames_are_spliced_out_of_a_traceback():
    def inner():
        raise ValueError("boom")

    def watch_wrapper():
        return inner()

    def outer():
        return watch_wrapper()

    try:
        outer()
    except ValueError as e:
        exc = e
    def names(e):
        return [f.name for f in traceback.extract_tb(e.__traceback__)]

    assert names(exc)[-3:] == ["outer", "watch_wrapper", "inner"]
    splice_tracebacks(exc, {watch_wrapper.__code__})
    assert names(exc)[-2:] == ["outer", "inner"]
    assert "watch_wrapper" not in names(exc)


def test_splicing_follows_the_exception_chain():
    def watch_wrapper():
        raise KeyError("first")

    try:
        try:
            watch_wrapper()
        except KeyError:
            raise ValueError("second")  # noqa: B904 -- the implicit chain (__context__) is what is tested
    except ValueError as e:
        exc = e
    splice_tracebacks(exc, {watch_wrapper.__code__})
    assert "watch_wrapper" not in [f.name for f in traceback.extract_tb(exc.__context__.__traceback__)]
