"""The slot's channel with bcb: control lines in on fd 3, events out on fd 4 (one JSON
object a line; the protocol is in this package's `__init__`), and stderr for the log."""

import json
import os


CTRL_IN = 3
CTRL_OUT = 4


class LineReader:
    """Lines from the control fd without read-ahead surprises: `select` on the fd and the
    buffer here agree on what has arrived."""

    def __init__(self, fd):
        self.fd, self.buf, self.eof = fd, b"", False

    def fill(self):
        data = os.read(self.fd, 1 << 16)
        if not data:
            self.eof = True
        self.buf += data

    def take(self):
        """The next complete line, or None."""
        if b"\n" not in self.buf:
            return None
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def readline(self):
        while b"\n" not in self.buf and not self.eof:
            self.fill()
        line = self.take()
        if line is None:
            line, self.buf = self.buf, b""
            return line
        return line + b"\n"


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def send(msg):
    write_all(CTRL_OUT, (json.dumps(msg) + "\n").encode())


def log(msg):
    try:
        os.write(2, ("bcb-harness: %s\n" % msg).encode())
    except OSError:
        pass
