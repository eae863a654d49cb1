"""The unittest result the harness records with, and the traceback text it keeps: the
watch's frames spliced out, clipped to a size that keeps what a reader looks for."""


def make_recorder_class(unittest, emit=None, codes=None, stop_clone=lambda: None):
    """`stop_clone` ends a fork of the sample's process that a test's code made and that
    came back into unittest's (the test's outcome, or the next test's start)."""
    exc_info_to_string = unittest.TestResult._exc_info_to_string
    base_init = unittest.TestResult.__init__
    base_start = unittest.TestResult.startTest
    base_sub = unittest.TestResult.addSubTest
    splice = splice_tracebacks

    def formatted(self, err, test):
        if codes:
            splice(err[1], codes)
            err = (err[0], err[1], err[1].__traceback__ if err[1] is not None else err[2])
        return exc_info_to_string(self, err, test)

    class Recorder(unittest.TestResult):
        """A unittest.TestResult that also notes which tests reported an outcome (and, with
        the hack watch on, says each outcome on the account channel as it happens)."""

        def __init__(self):
            base_init(self)
            self._bcb_outcomes = []

        def startTest(self, test):
            stop_clone()
            base_start(self, test)

        def _note(self, test, outcome):
            stop_clone()
            try:
                name = test.id().split(".")[-1]
            except Exception:
                name = "?"
            self._bcb_outcomes.append(name)
            if emit is not None:
                emit({"acct": "outcome", "t": name, "o": outcome})

        def addSuccess(self, test):
            self._note(test, "success")

        def addFailure(self, test, err):
            self._note(test, "failure")
            self.failures.append((test, formatted(self, err, test)))
            self._mirrorOutput = True

        def addError(self, test, err):
            self._note(test, "error")
            self.errors.append((test, formatted(self, err, test)))
            self._mirrorOutput = True

        def addSkip(self, test, reason):
            self._note(test, "skip")
            self.skipped.append((test, reason))

        def addExpectedFailure(self, test, err):
            self._note(test, "xfail")
            self.expectedFailures.append((test, formatted(self, err, test)))

        def addUnexpectedSuccess(self, test):
            self._note(test, "xpass")
            self.unexpectedSuccesses.append(test)

        def addSubTest(self, test, subtest, err):
            stop_clone()
            if err is not None and emit is not None:
                try:
                    name = test.id().split(".")[-1]
                except Exception:
                    name = "?"
                emit({"acct": "outcome", "t": name, "o": "subfailure"})
            if err is not None and codes:
                splice(err[1], codes)
                err = (err[0], err[1], err[1].__traceback__)
            base_sub(self, test, subtest, err)

    return Recorder


MAX_TRACE = 1 << 20
TRACE_HEADER = "Traceback (most recent call last):\n"


def clip_traceback(trace, cap=MAX_TRACE):
    """A traceback of at most about `cap` characters that keeps what a reader (and bcb's
    failure classifier) looks for: the last traceback's header, its last frame and its
    exception line, with as much of the message as fits. An indented marker says how much
    went, so the first unindented line after the header stays the exception line."""
    if len(trace) <= cap:
        return trace
    start = trace.rfind(TRACE_HEADER)
    if start < 0:
        return "[bcb: traceback truncated, %d characters dropped]\n" % (len(trace) - cap) + trace[-cap:]
    pos = frame = start + len(TRACE_HEADER)
    while pos < len(trace):
        end = trace.find("\n", pos)
        end = len(trace) if end < 0 else end + 1
        line = trace[pos:end]
        if line.strip() and not line[0].isspace():
            break  # the exception line
        if line.startswith("  File "):
            frame = pos
        pos = end
    kept = trace[frame : frame + cap]
    tail = "\n[bcb: traceback truncated]" if frame + cap < len(trace) else ""
    dropped = len(trace) - len(kept)
    return TRACE_HEADER + "  [bcb: traceback truncated, %d characters dropped]\n" % dropped + kept + tail


def splice_tracebacks(exc, codes):
    """Removes the harness's watch frames (`codes`) from an exception's traceback chain, so
    the recorded traceback is the one the test run would have without them."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code in codes:
            tb = tb.tb_next
        head = tb
        while tb is not None:
            nxt = tb.tb_next
            while nxt is not None and nxt.tb_frame.f_code in codes:
                nxt = nxt.tb_next
            if nxt is not tb.tb_next:
                tb.tb_next = nxt
            tb = nxt
        if head is not exc.__traceback__:
            exc.__traceback__ = head
        exc = exc.__cause__ or exc.__context__
    return
