"""The entry, `python -I bcb_harness.py`: the slot refuses a config of another wire version
before anything runs."""

import json
import os
import subprocess
import sys

from conftest import HARNESS

from bcb_harness import PROTOCOL


def slot_with_config(cfg, fds):
    """Runs the entry with `cfg` as the first line on fd 3 (events on fd 4); returns the
    process and what it wrote on fd 4."""
    ctrl_r, ctrl_w = fds.pipe()
    ev_r, ev_w = fds.pipe()
    os.write(ctrl_w, (json.dumps(cfg) + "\n").encode())
    fds.close(ctrl_w)

    def to_3_and_4():
        os.dup2(ctrl_r, 3)
        os.dup2(ev_w, 4)

    p = subprocess.run(
        [sys.executable, "-I", "-B", os.path.join(HARNESS, "bcb_harness.py")],
        close_fds=False,  # closing happens after `preexec_fn`, and would take 3 and 4 too
        preexec_fn=to_3_and_4,
        capture_output=True,
        timeout=60,
    )
    fds.close(ev_w)
    return p, os.read(ev_r, 1 << 16)


def test_a_config_of_another_wire_version_is_refused(fds):
    p, events = slot_with_config({"protocol": PROTOCOL + 1, "isolation": {}}, fds)
    assert p.returncode == 2
    assert p.stderr.decode() == "bcb harness: wire protocol %d, this harness speaks %d\n" % (PROTOCOL + 1, PROTOCOL)
    assert events == b""
