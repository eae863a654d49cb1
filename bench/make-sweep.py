#!/usr/bin/env python3
"""Builds an n-per-task sweep of real answers with realistic duplication, for bench/sweep.sh.

Sampling a model n times at a modest temperature returns the same program many times and
trivially different ones (a comment, a blank line) often. We model that from the two real
models in ../shared/real-samples: each of the n samples of a task is one of the two real
answers (chosen by a seeded coin), and with probability `--variant` it carries a harmless
extra comment line, which makes it a distinct program with the same behaviour. Deterministic
for a given --seed; a second seed gives a second "checkpoint" that shares most programs.

With `--max-dup F` the variant probability is raised (in steps of 0.05, from --variant) until
at most a share F of the samples repeat a program of the same task (a real RL checkpoint
sampled at temperature repeats few: about 5%). The default --variant 0.4 gives about 40%.

With `--ids A,B,...` only those tasks get samples (a slice: bench/slice.sh).

usage: make-sweep.py OUT.jsonl [--n 10] [--subset hard|full] [--seed 0] [--variant 0.4]
                     [--max-dup 0.05] [--ids BigCodeBench/1,BigCodeBench/2]
"""
import argparse
import gzip
import hashlib
import json
import os

here = os.path.dirname(os.path.abspath(__file__))
shared = os.path.join(here, "..", "..", "shared")
ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--n", type=int, default=10)
ap.add_argument("--subset", default="hard", choices=["hard", "full"])
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--variant", type=float, default=0.4)
ap.add_argument("--max-dup", type=float, default=None)
ap.add_argument("--ids", default="", help="comma-separated task ids (default: every task)")
ap.add_argument("--shared", default=os.environ.get("BCB_SHARED", shared))
a = ap.parse_args()

real = os.path.join(a.shared, "real-samples")
models = sorted(f for f in os.listdir(real) if f.endswith("sanitized_calibrated.jsonl.gz"))
answers = []
for m in models:
    with gzip.open(os.path.join(real, m), "rt") as f:
        answers.append({r["task_id"]: r["solution"] for r in map(json.loads, f)})

ds = "bigcodebench%s-v0.1.4.jsonl.gz" % ("-hard" if a.subset == "hard" else "")
with gzip.open(os.path.join(a.shared, "bigcodebench", ds), "rt") as f:
    task_ids = [json.loads(line)["task_id"] for line in f]
if a.ids:
    wanted = a.ids.split(",")
    unknown = sorted(set(wanted) - set(task_ids))
    if unknown:
        raise SystemExit(f"make-sweep.py: --ids names tasks not in {ds}: {', '.join(unknown)}")
    task_ids = [t for t in task_ids if t in set(wanted)]


def coin(*parts):
    h = hashlib.sha256("/".join(map(str, (a.seed,) + parts)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def build(variant):
    rows = []
    for t in task_ids:
        for k in range(a.n):
            sol = answers[int(coin(t, k, "model") * len(answers))][t]
            if coin(t, k, "variant") < variant:
                sol = sol.rstrip("\n") + "\n# sample %d of seed %d\n" % (k, a.seed)
            rows.append((t, sol))
    return rows


variant = a.variant
while True:
    rows = build(variant)
    distinct = len(set(rows))
    dup = 1 - distinct / len(rows)
    if a.max_dup is None or dup <= a.max_dup or variant >= 1:
        break
    variant = min(1.0, variant + 0.05)
with open(a.out, "w") as out:
    for t, sol in rows:
        out.write(json.dumps({"task_id": t, "solution": sol}) + "\n")
print(f"{a.out}: {len(rows)} samples, {len(task_ids)} tasks, {distinct} distinct programs "
      f"({dup:.1%} duplicates, variant probability {variant:.2f})")
