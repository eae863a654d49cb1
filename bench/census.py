#!/usr/bin/env python3
"""The verdict census behind bench/repeat.sh: which (task, program) got different verdicts
in repeated runs of the same inputs, and the original harness's own verdicts for those.

  census.py compare OUT            print each run's wall beside its floor, and every
                                   (task, program) whose verdict differed between runs;
                                   writes OUT/differing.jsonl (the programs, as samples)
  census.py ids OUT                the differing programs' task ids, comma-separated (the
                                   original's --selective_evaluate)
  census.py original OUT RESULTS...  the original's verdicts (its *_eval_results.json files,
                                   one per repeat) for the differing programs
"""
import glob
import gzip
import json
import os
import sys

from journal import exit_cpu, rows as journal_rows


def results_rows(path):
    """(task_id, index, status, solution) of a *_eval_results.json (ours or the original's)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    return [(t, i, r["status"], r.get("solution"))
            for t, rs in doc["eval"].items() for i, r in enumerate(rs)]


def compare(out):
    cores = int(open(os.path.join(out, "cores")).read())
    print("run                 wall     floor  ratio  to reap  ratio  machine floor  ratio  (floor = max(sum sample "
          "CPU / cores, longest job); to reap: each sample's CPU with its exit after the verdict; the machine's "
          "counts the load's CPU during the run in the sum)")
    verdicts = {}  # (kind, task, program) -> [status per run]
    programs = {}
    runs = sorted(glob.glob(os.path.join(out, "gt-*.journal.jsonl")))
    for path in runs:
        name = os.path.basename(path)[: -len(".journal.jsonl")]
        rows = journal_rows(path)
        wall = float(open(os.path.join(out, name + ".time")).read().split()[0])
        longest = max((r[3] for r in rows), default=0.0)
        floor = max(sum(r[4] for r in rows) / cores, longest)
        load_path = os.path.join(out, name + ".load")
        load = float(open(load_path).read()) if os.path.exists(load_path) else 0.0
        machine = max((sum(r[4] for r in rows) + load) / cores, longest)
        err = os.path.join(out, name + ".err")
        reaped = max((sum(r[4] for r in rows) + sum(exit_cpu(err))) / cores, longest)
        left = open(os.path.join(out, name + ".left")).read().strip()
        print(f"{name:16s} {wall:8.1f}s {floor:8.1f}s  {wall / floor:5.2f}  {reaped:6.1f}s  {wall / reaped:5.2f}  "
              f"{machine:11.1f}s  {wall / machine:5.2f}  left behind: {left}")
        for t, prog, status, _, _ in rows:
            verdicts.setdefault(("gt", t, prog), []).append(status)
    for path in sorted(glob.glob(os.path.join(out, "samples-*", "*_eval_results.json"))):
        for t, i, status, solution in results_rows(path):
            key = ("sample:" + os.path.basename(path).split("--")[1][:24], t, str(i))
            verdicts.setdefault(key, []).append(status)
            programs[key] = solution
    differing = {k: v for k, v in verdicts.items() if len(set(v)) > 1}
    print(f"\n{len(verdicts)} (task, program) pairs, {len(differing)} with verdicts that differ between runs:")
    for (kind, t, prog), v in sorted(differing.items()):
        print(f"  {kind:32s} {t:18s} {prog:10s} {' '.join(v)}")
    tasks = {}
    for line in gzip.open(os.environ["DATASET"], "rt"):
        row = json.loads(line)
        tasks[row["task_id"]] = row
    with open(os.path.join(out, "differing.jsonl"), "w") as f:
        for (kind, t, prog) in sorted(differing):
            sol = programs.get((kind, t, prog)) or tasks[t]["complete_prompt"] + tasks[t]["canonical_solution"]
            f.write(json.dumps({"task_id": t, "solution": sol, "census": [kind, prog]}) + "\n")


def differing_programs(out):
    return [json.loads(l) for l in open(os.path.join(out, "differing.jsonl"))]


def ids(out):
    print(",".join(sorted({w["task_id"] for w in differing_programs(out)})))


def original(out, result_files):
    wanted = differing_programs(out)
    seen = {}
    for path in result_files:
        for t, i, status, _ in results_rows(path):
            seen.setdefault((t, i), []).append(status)
    by_task = {}
    for w in wanted:
        i = by_task.setdefault(w["task_id"], 0)
        by_task[w["task_id"]] += 1
        print(f"  original  {w['census'][0]:32s} {w['task_id']:18s} {' '.join(seen.get((w['task_id'], i), ['(no result)']))}")


if __name__ == "__main__":
    if sys.argv[1] == "compare":
        compare(sys.argv[2])
    elif sys.argv[1] == "ids":
        ids(sys.argv[2])
    else:
        original(sys.argv[2], sys.argv[3:])
