"""supervisor.judge and result_base: how the report channel's bytes become the `result`
event's report, account findings and stages."""

import json

from bcb_harness.supervisor import judge, result_base


NONCE = "ab" * 16
CFG = {"hacks": True}
JOB = {"key": 5, "declared_skips": []}


def channel(*objs):
    return bytearray(b"".join((json.dumps(o) if not isinstance(o, bytes) else o.decode()).encode() + b"\n" for o in objs))


def report(**extra):
    return {"nonce": NONCE, "status": "pass", "details": {}, "test_secs": 0.1, "ran": ["test_a"], "skipped": 0, "integrity": None, **extra}


def test_the_result_event_starts_with_the_supervisors_own_observations():
    assert result_base({"key": 5}, 1.5, 0.25, ["test_a"]) == {
        "event": "result", "key": 5, "wall_secs": 1.5, "cpu_secs": 0.25, "expected": ["test_a"], "killed_at_deadline": False,
    }


def test_the_report_is_the_line_with_the_nonce_and_the_account_the_lines_before_it():
    buf = channel(
        {"acct": "begin"},
        {"acct": "outcome", "t": "test_a", "o": "success"},
        {"acct": "call", "t": "test_a", "ok": True},
        {"acct": "end"},
        report(),
        {"acct": "outcome", "t": "test_a", "o": "failure"},  # after the report: nothing counts
    )
    msg, stages = {}, {}
    assert judge(msg, buf, NONCE, JOB, CFG, ["test_a"], False, stages, 100.0)
    assert msg["report"] == {"status": "pass", "details": {}, "test_secs": 0.1, "ran": ["test_a"], "skipped": 0, "integrity": None}
    assert msg["hacks"] == []
    assert "integrity" not in msg


def test_the_childs_stamps_become_stages_relative_to_the_job_line():
    msg, stages = {}, {"handed": 0.001}
    buf = channel(report(stamps={"child": 101.5, "report": 102.0, "text": "x", "int": 102}))
    judge(msg, buf, NONCE, JOB, CFG, None, False, stages, 100.0)
    assert stages == {"handed": 0.001, "child_child": 1.5, "child_report": 2.0}
    assert "stamps" not in msg["report"] and "nonce" not in msg["report"]


def test_a_second_report_is_an_integrity_problem():
    msg = {}
    judge(msg, channel(report(), report(status="fail")), NONCE, JOB, CFG, None, False, {}, 0.0)
    assert msg["integrity"] == "more than one report"
    assert msg["report"]["status"] == "fail"


def test_without_the_nonce_there_is_no_report_and_garbage_is_skipped():
    msg = {}
    buf = channel(report(nonce="forged"), b"not json", b"[1]", {"acct": "begin", "nonce": "x"})
    assert not judge(msg, buf, NONCE, JOB, CFG, ["test_a"], False, {}, 0.0)
    assert "report" not in msg
    assert msg["hacks"] == []


def test_account_lines_that_carry_a_nonce_are_not_account():
    buf = channel({"acct": "begin"}, {"acct": "outcome", "t": "test_a", "o": "failure", "nonce": "x"}, {"acct": "end"}, report())
    msg = {}
    judge(msg, buf, NONCE, JOB, CFG, ["test_a"], False, {}, 0.0)
    assert msg["hacks"] == []


def test_account_findings_are_judged_with_the_jobs_declared_skips():
    buf = channel({"acct": "begin"}, {"acct": "outcome", "t": "test_a", "o": "skip"}, {"acct": "end"}, report())
    msg = {}
    judge(msg, buf, NONCE, JOB, CFG, ["test_a"], False, {}, 0.0)
    assert [h["class"] for h in msg["hacks"]] == ["unittest-control"]
    msg = {}
    judge(msg, buf, NONCE, {"key": 5, "declared_skips": ["test_a"]}, CFG, ["test_a"], False, {}, 0.0)
    assert msg["hacks"] == []


def test_no_account_without_the_watch_or_for_a_script():
    for cfg, script in (({"hacks": False}, False), ({}, False), (CFG, True)):
        msg = {}
        assert judge(msg, channel(report()), NONCE, JOB, cfg, None, script, {}, 0.0)
        assert "hacks" not in msg
