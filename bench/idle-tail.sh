#!/usr/bin/env bash
# The idle tail: how long a run goes on after its last sample that did not time out.
# Builds a samples file of real canonical solutions plus sleepers (samples that sleep past
# the limit: 6 on one task, 2 on another, as in a real sweep), runs `bcb evaluate --no-gt`
# on it, stamps each journal line as it arrives, and prints
#   tail = (last verdict) - (last non-timeout verdict), as a multiple of the sample limit,
#   how many sleepers were in flight together (start = arrival - the sample's wall), and the
#   CPU floor (sum of per-sample CPU / parallel) beside the wall.
# Goal (issue 12): tail <= 1.1 x limit.
#
# usage: bench/idle-tail.sh [normal samples, default 40] [parallel, default nproc]
# env:   BASELINE_BCB=path/to/older/bcb (optional, run first, same file), TIMEOUT (base
#        limit, default 60 -> limit 61 s; the default 240 is the real case), SAMPLES=file (use this samples file instead),
#        BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT
set -euo pipefail
normal=${1:-40}
parallel=${2:-$(nproc)}
timeout=${TIMEOUT:-60}
. "$(dirname "$0")/lib.sh"
bench_python
bench_out idle
(cd "$here" && cargo build -q --release --bin bcb)
current=${CARGO_TARGET_DIR:-$here/target}/release/bcb
py=$BCB_PYTHON

if [ -n "${SAMPLES:-}" ]; then
    cp "$SAMPLES" "$out/samples.jsonl"
else
    "$py" - "$BCB_DATASET_DIR" "$normal" "$here/crates/bcb-eval/priors/gt-secs.tsv" >"$out/samples.jsonl" <<'PY'
import gzip, json, sys
ds, normal, priors = sys.argv[1], int(sys.argv[2]), sys.argv[3]
tasks = {}
for line in gzip.open(ds + "/bigcodebench-v0.1.4.jsonl.gz", "rt"):
    t = json.loads(line)
    tasks[t["task_id"]] = t
secs = dict((l.split("\t")[0], float(l.split("\t")[1])) for l in open(priors) if "\t" in l)
# Sleepers on the two tasks expected quickest, which longest-first order starts last (the
# case of a real sweep); normal samples: canonical solutions of tasks of 0.2-5 s.
quick = sorted((s, t) for t, s in secs.items() if t in tasks)[:2]
normal_ids = [t for t in tasks if 0.2 <= secs.get(t, 0) <= 5][:normal]
sleeper = "import time\ndef task_func(*args, **kwargs):\n    time.sleep(100000)\n"
for tid in normal_ids:
    t = tasks[tid]
    print(json.dumps({"task_id": t["task_id"], "solution": t["complete_prompt"] + "\n" + t["canonical_solution"]}))
for (_, tid), n in zip(quick, (6, 2)):
    t = tasks[tid]
    for _ in range(n):
        print(json.dumps({"task_id": t["task_id"], "solution": t["complete_prompt"] + "\n" + sleeper}))
PY
fi
ids=$("$py" -c 'import json,sys; print(",".join(sorted({json.loads(l)["task_id"] for l in open(sys.argv[1])})))' "$out/samples.jsonl")
limit=$("$py" -c "print(max($timeout, 20) + 1)")

run() { # name binary
    local name=$1 bin=$2 dir="$out/$1"
    rm -rf "$dir"; mkdir -p "$dir"; cp "$out/samples.jsonl" "$dir/s.jsonl"
    echo "== $name: $bin evaluate --no-gt --timeout $timeout --parallel $parallel" >&2
    BCB_CACHE_DIR=$dir/cache /usr/bin/time -f '%e %M' -o "$dir/time" \
        "$bin" evaluate --samples "$dir/s.jsonl" --split complete --subset full --ids "$ids" \
        --no-gt --timeout "$timeout" --parallel "$parallel" -q >"$dir/out" 2>"$dir/err" &
    local pid=$!
    # Stamp journal lines as they arrive (the journal is deleted when the run ends).
    "$py" "$here/bench/journal.py" stamp "$dir" "$pid" >"$dir/stamped.jsonl"
    wait "$pid" || true
}

[ -n "${BASELINE_BCB:-}" ] && run baseline "$BASELINE_BCB"
run current "$current"

PYTHONPATH="$here/bench" "$py" - "$out" "$limit" "$parallel" <<'PY'
import sys
from journal import stamped_runs
out, limit, cores = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
for name, d, rows, wall, rss in stamped_runs(out):
    if not rows:
        print(f"{name:9s} no verdicts seen (see {d}/err)")
        continue
    last = max(r["t"] for r in rows)
    done = [r["t"] for r in rows if r["status"] != "timeout"]
    last_ok = max(done) if done else 0.0
    sleepers = [(r["t"] - r["wall"], r["t"]) for r in rows if r["status"] == "timeout"]
    together = max((sum(1 for s, e in sleepers if s < end <= e) for _, end in sleepers), default=0)
    floor = sum(r.get("cpu", 0.0) for r in rows) / cores
    print(f"{name:9s} wall {wall:6.1f}s  CPU floor {floor:6.1f}s  peak RSS {rss / 1024:6.1f} MB  "
          f"verdicts {len(rows)}  timeouts {len(sleepers)}  limit {limit:.0f}s")
    print(f"{'':9s} tail after the last non-timeout verdict {last - last_ok:6.1f}s = "
          f"{(last - last_ok) / limit:.2f} x limit (goal <= 1.1); sleepers in flight together: {together}")
print(f"(files in {out})")
PY
