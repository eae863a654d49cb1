#!/usr/bin/env python3
"""bcb journals, as the bench scripts read them.

  journal.py stamp DIR PID   follow DIR/*.partial.jsonl while PID runs and print each record
                             as it arrives: {"t", "task_id", "status", "wall", "cpu"}, t in
                             seconds from the start (the journal is deleted when a run ends)

Imported: rows(path) reads a finished journal (bench/census.py); stamped_runs(out) reads
what `stamp` wrote for the runs of a bench (bench/idle-tail.sh, bench/sweep-floor.sh);
exit_cpu(path) reads a run's stderr for the CPU its samples used after their verdicts.
"""
import glob
import json
import os
import re
import sys
import time


def rows(path):
    """(task_id, program, status, wall, cpu) of each record of a bcb journal."""
    out = []
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if "bcb_journal" in r or "id" not in r:
            continue
        out.append((r["id"]["task_id"], json.dumps(r["id"].get("program")), r["status"],
                    r.get("wall_secs") or 0.0, r.get("cpu_secs") or 0.0))
    return out


def exit_cpu(path):
    """The CPU (s) each sample used after its verdict (its exit, mostly), from the debug lines
    of `bcb_execute::stages` in a run's stderr (BCB_LOG=warn,bcb_execute::stages=debug)."""
    found = (re.search(r"after the verdict: ([0-9.]+) s of CPU", line)
             for line in open(path, errors="replace"))
    return [float(m.group(1)) for m in found if m]


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def stamp(d, pid):
    t0, pos, buf, path = time.time(), 0, b"", None
    while True:
        running = alive(pid)
        path = path or next(iter(glob.glob(d + "/*.partial.jsonl")), None)
        if path:
            try:
                with open(path, "rb") as f:
                    f.seek(pos)
                    chunk = f.read()
                pos += len(chunk)
                buf += chunk
            except FileNotFoundError:
                pass
            *lines, buf = buf.split(b"\n")
            for line in lines:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if "id" in r:
                    print(json.dumps({"t": time.time() - t0, "task_id": r["id"]["task_id"],
                                      "status": r["status"], "wall": r.get("wall_secs") or 0.0,
                                      "cpu": r.get("cpu_secs") or 0.0}), flush=True)
        if not running:
            break
        time.sleep(0.1)


def stamped_runs(out, names=("baseline", "current")):
    """(name, dir, stamped rows, wall, peak RSS in KiB) of each run of `out` that finished."""
    for name in names:
        d = os.path.join(out, name)
        if not os.path.exists(os.path.join(d, "time")):
            continue
        stamped = [json.loads(l) for l in open(os.path.join(d, "stamped.jsonl"))]
        # The last line (time adds "Command exited with non-zero status N" before it).
        wall, rss = open(os.path.join(d, "time")).read().split("\n")[-2].split()
        yield name, d, stamped, float(wall), int(rss)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "stamp":
        sys.exit(__doc__)
    stamp(sys.argv[2], int(sys.argv[3]))
