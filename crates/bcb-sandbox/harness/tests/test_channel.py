"""channel.py: the control lines in (fd 3) and the events out (fd 4)."""

import os
import threading

from bcb_harness import channel


def test_readline_gives_whole_lines_in_order(fds):
    r, w = fds.pipe()
    os.write(w, b'{"protocol": 2}\n{"key": 0}\n')
    reader = channel.LineReader(r)
    assert reader.readline() == b'{"protocol": 2}\n'
    assert reader.readline() == b'{"key": 0}\n'
    assert not reader.eof


def test_readline_at_end_of_file_gives_the_rest_then_nothing(fds):
    r, w = fds.pipe()
    os.write(w, b'{"op": "ex')
    fds.close(w)
    reader = channel.LineReader(r)
    assert reader.readline() == b'{"op": "ex'
    assert reader.readline() == b""
    assert reader.eof


def test_take_gives_only_complete_lines_and_keeps_the_rest(fds):
    r, w = fds.pipe()
    reader = channel.LineReader(r)
    os.write(w, b'{"op": "thaw"')
    reader.fill()
    assert reader.take() is None
    os.write(w, b', "key": 0}\n{"op"')
    reader.fill()
    assert reader.take() == b'{"op": "thaw", "key": 0}'
    assert reader.take() is None
    assert reader.buf == b'{"op"'


def test_a_job_line_longer_than_a_pipe_arrives_whole(fds):
    r, w = fds.pipe()
    line = b'{"code": "' + b"x" * 300_000 + b'"}\n'
    writer = threading.Thread(target=channel.write_all, args=(w, line + b'{"op": "exit"}\n'))
    writer.start()
    reader = channel.LineReader(r)
    assert reader.readline() == line
    assert reader.readline() == b'{"op": "exit"}\n'
    writer.join()


def test_write_all_writes_everything_through_short_writes(fds):
    r, w = fds.pipe()
    data = os.urandom(1 << 20)
    writer = threading.Thread(target=channel.write_all, args=(w, data))
    writer.start()
    got = bytearray()
    while len(got) < len(data):
        got += os.read(r, 1 << 16)
    writer.join()
    assert bytes(got) == data


def test_send_writes_one_json_line_on_the_event_fd(fds, monkeypatch):
    r, w = fds.pipe()
    monkeypatch.setattr(channel, "CTRL_OUT", w)
    channel.send({"event": "idle", "cpu_after_verdict_secs": None})
    channel.send({"event": "started", "key": 3, "pid": 7})
    assert os.read(r, 4096) == b'{"event": "idle", "cpu_after_verdict_secs": null}\n{"event": "started", "key": 3, "pid": 7}\n'


def test_log_goes_to_stderr_with_the_harness_prefix(capfd):
    channel.log("slot ready")
    assert capfd.readouterr().err == "bcb-harness: slot ready\n"
