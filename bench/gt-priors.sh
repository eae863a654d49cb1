#!/usr/bin/env bash
# Regenerates crates/bcb-eval/priors/gt-secs.tsv (the shipped ground-truth timings that order a
# first run longest first) from a ground-truth journal of a full v0.1.4 run, e.g. the
# `current.journal.jsonl` that bench/gt-floors.sh full leaves, or a file from
# ~/.cache/bcb/ground-truth/.
#
# usage: bench/gt-priors.sh JOURNAL.jsonl
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
python3 - "$1" "$here/crates/bcb-eval/priors/gt-secs.tsv" <<'PY'
import json, sys
src, dst = sys.argv[1], sys.argv[2]
secs, cpu = {}, {}
for line in open(src):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if "bcb_journal" in r or r.get("id", {}).get("program") != "ground_truth":
        continue
    task = r["id"]["task_id"]
    if r.get("cpu_secs") is not None:
        cpu[task] = r["cpu_secs"]
    if r["status"] == "pass":
        secs[task] = r.get("test_secs") or r.get("wall_secs") or 0.1
    elif r["status"] == "timeout":
        secs[task] = 241.0
    else:
        secs[task] = 0.1  # failed canonical solutions fail fast
# Canonical solutions that hang at random until the limit (multiprocessing.Pool's teardown
# under upstream's kill guard, see README): whatever this run saw, start them first, so a
# hang overlaps the run instead of becoming its tail.
for task in ("BigCodeBench/205", "BigCodeBench/363"):
    if task in secs:
        secs[task] = 241.0
if len(secs) != 1140:
    sys.exit(f"{src}: {len(secs)} tasks, expected the full set (1140)")
with open(dst, "w") as f:
    f.write("# Test time (s) of each task's canonical solution, then the CPU time (s) of its process tree\n")
    f.write("# (- when not measured): bcb pool executor, v0.1.4 full, 2 cores.\n")
    f.write("# Failed canonical solutions: 0.1 (they fail fast); timeouts and random hangs (205, 363): 241. Regenerate: bench/gt-priors.sh\n")
    for t in sorted(secs, key=lambda t: int(t.split("/")[1])):
        c = f"{cpu[t]:.3f}" if t in cpu else "-"
        f.write(f"{t}\t{secs[t]:.3f}\t{c}\n")
print(f"wrote {dst}: {len(secs)} tasks")
PY
