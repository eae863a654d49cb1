"""The harness's side of the wire agreement test (crates/bcb-sandbox/tests/wire_agreement.rs).

    python -I wire_probe.py HARNESS_DIR MESSAGES_JSON WORK_DIR

runs the real harness (`HARNESS_DIR/bcb_harness.py`, as bcb writes it: a slot, every kernel
protection off, so no root is needed) on the lines bcb's Rust side wrote (MESSAGES_JSON:
{"config": ..., "jobs": {name: job}, "ops": {op: line}}), and prints one JSON object:

    {"reads": {message: [field, ...]},   every field the harness read of each message
     "events": [{"run": name, "event": {...}}, ...],   every line the harness sent on fd 4
     "static": {"config": [...], "result": [...]},     the config fields the harness's code
                reads and the result fields it writes, wherever they are (branches the runs
                here do not take: a mount namespace, a memory cgroup)
     "problems": [text, ...]}             a run that did not go as planned

A field read is one the harness's code looked up (`[]`, `get`, `in`) on the object its own
reader (`json.loads`) made of bcb's line, and that it had not set itself. The driver changes
values (keys to match, paths into WORK_DIR, which sample runs), never which fields a message
has.
"""

import ast
import json
import os
import runpy
import select
import signal
import sys
import time


# The messages, by their first field; the objects inside them that are messages too. Other
# values (env, a script's files, the stages) are maps of the sender's, not fields.
NESTED = {"config": ("isolation", "limits"), "job": ("script",)}
LOG = None
WAIT = 60.0


def kind_of(obj):
    if not isinstance(obj, dict):
        return None
    if "protocol" in obj:
        return "config"
    if "op" in obj:
        return "op." + str(obj["op"])
    if "time_limit" in obj:
        return "job"
    return None


def note(path, key):
    """One read, appended to the log (every process of the slot: a descriptor would not
    survive the sample process closing all of its own)."""
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, ("%s\t%s\n" % (path, key)).encode())
    finally:
        os.close(fd)


class Reading(dict):
    """A message as the harness reads it: each field looked up is noted."""

    def __init__(self, data, path):
        super().__init__(data)
        self._path, self._own = path, set()
        for k in NESTED.get(path, ()):
            if isinstance(data.get(k), dict):
                dict.__setitem__(self, k, Reading(data[k], path + "." + k))

    def _read(self, k):
        if k not in self._own:
            note(self._path, k)

    def __getitem__(self, k):
        self._read(k)
        return dict.__getitem__(self, k)

    def get(self, k, default=None):
        self._read(k)
        return dict.get(self, k, default)

    def __contains__(self, k):
        self._read(k)
        return dict.__contains__(self, k)

    def pop(self, k, *default):
        self._read(k)
        return dict.pop(self, k, *default)

    def setdefault(self, k, default=None):
        self._read(k)
        return dict.setdefault(self, k, default)

    def __setitem__(self, k, v):
        self._own.add(k)
        dict.__setitem__(self, k, v)


def reading_loads(loads):
    def patched(s, *args, **kwargs):
        obj = loads(s, *args, **kwargs)
        kind = kind_of(obj)
        return Reading(obj, kind) if kind is not None else obj

    return patched


def slot_process(entry, ctrl, events, workroot):
    """The slot, as bcb spawns one: control on fd 3, events on fd 4, cwd its work root."""
    try:
        os.dup2(ctrl, 3)
        os.dup2(events, 4)
        os.chdir(workroot)
        json.loads = reading_loads(json.loads)
        sys.argv = [entry]
        runpy.run_path(entry, run_name="__main__")
    finally:
        os._exit(0)


class Slot:
    def __init__(self, entry, workroot, config):
        ctrl_r, self.ctrl = os.pipe()
        self.events, ev_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self.ctrl)
            os.close(self.events)
            slot_process(entry, ctrl_r, ev_w, workroot)
        os.close(ctrl_r)
        os.close(ev_w)
        self.buf, self.seen = b"", []
        self.send(config)

    def send(self, *msgs):
        data = b"".join((json.dumps(m) + "\n").encode() for m in msgs)
        while data:
            data = data[os.write(self.ctrl, data) :]

    def next_event(self):
        deadline = time.monotonic() + WAIT
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.events], [], [], left)[0]:
                raise TimeoutError("no event within %d s (so far: %s)" % (WAIT, [e.get("event") for e in self.seen]))
            data = os.read(self.events, 1 << 16)
            if not data:
                raise EOFError("the slot closed its events (so far: %s)" % [e.get("event") for e in self.seen])
            self.buf += data
        line, _, self.buf = self.buf.partition(b"\n")
        event = json.loads(line)
        self.seen.append(event)
        return event

    def until(self, name):
        while True:
            event = self.next_event()
            if event.get("event") == name:
                return event

    def close(self):
        os.close(self.ctrl)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            pid, _ = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                break
            time.sleep(0.01)
        else:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.events)
        return self.seen


def run(name, entry, work, msgs, plan, problems, events, **cfg):
    """One slot: the config (with `cfg`'s values), then each (job, ops) of `plan`; exit."""
    workroot = os.path.join(work, name)
    freezer = os.path.join(workroot, "cg", "freezer")
    os.makedirs(freezer)
    config = dict(msgs["config"], workroot=workroot, freezer=freezer, **cfg)
    slot = Slot(entry, workroot, config)
    try:
        slot.until("ready")
        for job_name, ops in plan:
            job = msgs["jobs"][job_name]
            slot.send(job, *[dict(msgs["ops"][op], key=job["key"]) for op in ops])
            slot.until("result")
            if not config["one_shot"]:
                slot.until("idle")
        if not config["one_shot"]:
            slot.send(msgs["ops"]["exit"])
    except (TimeoutError, EOFError) as e:
        problems.append("%s: %s" % (name, e))
    events += [{"run": name, "event": e} for e in slot.close()]


def static_fields(pkg):
    """The config fields read anywhere in the package (`cfg[...]`, `cfg.get(...)`), and the
    result fields `supervisor.py` writes (`msg[...] = ...`, and `result_base`'s literal)."""
    config, result = set(), set()
    for name in sorted(os.listdir(pkg)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(pkg, name)) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(node.slice, ast.Constant):
                if node.value.id == "cfg":
                    config.add(node.slice.value)
                if node.value.id == "msg" and name == "supervisor.py" and isinstance(node.ctx, ast.Store):
                    result.add(node.slice.value)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
                owner = node.func.value
                if isinstance(owner, ast.Name) and owner.id == "cfg" and node.args and isinstance(node.args[0], ast.Constant):
                    config.add(node.args[0].value)
            if isinstance(node, ast.FunctionDef) and node.name == "result_base" and name == "supervisor.py":
                for ret in ast.walk(node):
                    if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Dict):
                        result.update(k.value for k in ret.value.keys if isinstance(k, ast.Constant))
    return {"config": sorted(config), "result": sorted(result)}


def main():
    global LOG
    harness, messages, work = sys.argv[1:4]
    with open(messages) as f:
        msgs = json.load(f)
    LOG = os.path.join(work, "reads.tsv")
    entry = os.path.join(harness, "bcb_harness.py")
    problems, events = [], []
    # A pool slot: the watch on; a sample that passes with a trace hook set (a flag), with
    # the scheduler's ops; one killed by a signal (its result waits for the reap) with a
    # credit; a script job.
    run("pool", entry, work, msgs, [("hack", ["freeze", "thaw", "credit"]), ("killed", ["credit"]), ("script", [])], problems, events, one_shot=False, hacks=True)
    # A one-shot slot, whose result always waits for the sample's exit.
    run("one-shot", entry, work, msgs, [("plain", [])], problems, events, one_shot=True, hacks=False)
    # A harness that fails in the sample's process (its cgroup is not there): `harness_error`.
    run("harness-error", entry, work, msgs, [("plain", [])], problems, events, one_shot=True, hacks=False, cgroups=[os.path.join(work, "no-such-cgroup")])
    reads = {}
    if os.path.exists(LOG):
        with open(LOG) as f:
            for line in f:
                path, key = line.rstrip("\n").split("\t")
                reads.setdefault(path, set()).add(key)
    out = {
        "reads": {k: sorted(v) for k, v in sorted(reads.items())},
        "events": events,
        "static": static_fields(os.path.join(harness, "bcb_harness")),
        "problems": problems,
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
