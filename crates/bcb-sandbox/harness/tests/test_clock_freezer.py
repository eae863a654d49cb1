"""clock.py and freezer.py: the frozen clock shared with the sample, and the freezer's
bookkeeping of frozen and credited time within its budget."""

import mmap
import os
import types

import pytest
from conftest import run_forked

from bcb_harness import clock, freezer


@pytest.fixture
def page(monkeypatch):
    """A fresh frozen-clock page, as a slot makes before its first fork."""
    monkeypatch.setattr(clock, "_page", mmap.mmap(-1, 8))
    return clock._page


@pytest.fixture
def now(monkeypatch):
    """The freezer's clock, moved by the test: `now[0]` is the time."""
    t = [1000.0]
    monkeypatch.setattr(freezer, "time", types.SimpleNamespace(time=lambda: t[0]))
    return t


def state(path):
    """The freezer's state in v1's words, from whichever version's file it wrote (a folder
    without `freezer.state` is taken for a v2 cgroup)."""
    v1 = os.path.join(path, "freezer.state")
    if os.path.exists(v1):
        with open(v1) as f:
            return f.read()
    with open(os.path.join(path, "cgroup.freeze")) as f:
        return {"1": "FROZEN", "0": "THAWED"}[f.read()]


def test_a_v1_freezer_writes_its_state_and_a_v2_one_cgroup_freeze(tmp_path, page, now):
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    v1.mkdir()
    v2.mkdir()
    (v1 / "freezer.state").write_text("THAWED")
    for path in (v1, v2):
        f = freezer.Freezer(str(path), budget=10.0)
        f.op('{"op": "freeze", "key": "k"}', "k")
    assert (v1 / "freezer.state").read_text() == "FROZEN"
    assert not (v1 / "cgroup.freeze").exists()
    assert (v2 / "cgroup.freeze").read_text() == "1"


def test_no_page_reads_zero_and_takes_no_write(monkeypatch):
    monkeypatch.setattr(clock, "_page", None)
    clock.frozen_clock_write(5.0)
    assert clock.frozen_clock() is None
    assert clock.frozen_clock_read(None) == 0.0


def test_the_page_is_shared_with_a_process_forked_after_it(page, fds):
    r, w = fds.pipe()

    def child():
        os.read(r, 1)  # the parent has written
        return 0 if clock.frozen_clock_read(clock.frozen_clock()) == 3.25 else 1

    pid = os.fork()
    if pid == 0:
        os._exit(child())
    clock.frozen_clock_write(3.25)
    os.write(w, b"x")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert run_forked(lambda: 0 if clock.frozen_clock_read(clock.frozen_clock()) == 3.25 else 1) == 0


def test_a_new_freezer_thaws_its_group_and_zeroes_the_clock(page, now, tmp_path):
    clock.frozen_clock_write(9.0)
    f = freezer.Freezer(str(tmp_path), 60.0)
    assert state(tmp_path) == "THAWED"
    assert clock.frozen_clock_read(page) == 0.0
    assert f.frozen_secs() == 0.0 and f.until_spent() is None


def test_freeze_then_thaw_counts_the_time_frozen(page, now, tmp_path):
    f = freezer.Freezer(str(tmp_path), 60.0)
    f.op(b'{"op": "freeze", "key": 4}', 4)
    assert state(tmp_path) == "FROZEN"
    now[0] += 2.0
    assert f.frozen_secs() == 2.0
    assert f.until_spent() == 58.0
    assert clock.frozen_clock_read(page) == 0.0  # the sample's alarm learns it at the thaw
    f.op(b'{"op": "thaw", "key": 4}', 4)
    assert state(tmp_path) == "THAWED"
    assert clock.frozen_clock_read(page) == 2.0
    now[0] += 5.0
    assert f.frozen_secs() == 2.0


def test_ops_of_another_job_and_unreadable_lines_are_ignored(page, now, tmp_path):
    f = freezer.Freezer(str(tmp_path), 60.0)
    for line in (b'{"op": "freeze", "key": 3}', b"not json", b"[1, 2]", b'{"op": "freeze"}'):
        f.op(line, 4)
    assert f.since is None and state(tmp_path) == "THAWED"


def test_no_freezer_cgroup_no_freeze(page, now):
    f = freezer.Freezer(None, 60.0)
    f.op(b'{"op": "freeze", "key": 0}', 0)
    assert f.since is None


def test_credits_count_as_frozen_time_within_their_bounds(page, now, tmp_path):
    f = freezer.Freezer(str(tmp_path), 60.0)
    f.op(b'{"op": "credit", "key": 1, "secs": 0.25}', 1)
    assert f.frozen_secs() == 0.25 and clock.frozen_clock_read(page) == 0.25
    for secs in (b"0", b"-1", b"11", b'"1"', b"null"):
        f.op(b'{"op": "credit", "key": 1, "secs": ' + secs + b"}", 1)
    assert f.frozen_secs() == 0.25


def test_the_budget_caps_frozen_and_credited_time(page, now, tmp_path):
    f = freezer.Freezer(str(tmp_path), 5.0)
    f.op(b'{"op": "credit", "key": 1, "secs": 4}', 1)
    f.op(b'{"op": "credit", "key": 1, "secs": 4}', 1)
    assert f.frozen_secs() == 5.0
    f.op(b'{"op": "freeze", "key": 1}', 1)
    assert f.since is None, "no freeze once the budget is spent"


def test_a_sample_held_for_its_whole_budget_is_thawed(page, now, tmp_path):
    f = freezer.Freezer(str(tmp_path), 3.0)
    f.op(b'{"op": "freeze", "key": 0}', 0)
    now[0] += 1.0
    f.expire()
    assert state(tmp_path) == "FROZEN" and f.until_spent() == 2.0
    now[0] += 2.5
    assert f.until_spent() == 0.0
    f.expire()
    assert state(tmp_path) == "THAWED"
    assert f.frozen_secs() == 3.0 and clock.frozen_clock_read(page) == 3.0


def test_after_the_verdict_no_freeze_or_credit_but_a_thaw(page, now, tmp_path):
    f = freezer.Freezer(str(tmp_path), 60.0)
    f.op(b'{"op": "freeze", "key": 0}', 0)
    f.done = True
    f.op(b'{"op": "credit", "key": 0, "secs": 1}', 0)
    f.op(b'{"op": "thaw", "key": 0}', 0)
    f.op(b'{"op": "freeze", "key": 0}', 0)
    assert state(tmp_path) == "THAWED" and f.since is None
    assert f.frozen_secs() == 0.0
