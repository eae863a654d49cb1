#!/usr/bin/env bash
# pass@100 scale on a slice: T hard tasks (default 20) × n answers (default 100) built from the
# real answers in ../shared/real-samples (bench/make-sweep.py, at most 5% duplicate programs),
# bcb and then the original (bigcodebench 0.2.5) on the same file, 2 workers each, no ground
# truth: wall, CPU, peak RSS, bcb's CPU floor and verdict agreement (bench/sweep-floor.sh).
#
# Which tasks: those whose tests are quick and whose real answers never time out, so that the
# slice measures per-sample cost at n = 100 (an answer that sleeps to its limit, repeated
# 100 times, would measure only the limit: ~50 × 241 s a worker). Precisely: hard v0.1.4 tasks
# whose canonical tests take under 2 s (crates/bcb-eval/priors/gt-secs.tsv) and where neither
# real model's answer timed out (../shared/real-samples/*_eval_results.json.gz), the first T in
# a seeded hash order.
#
# usage: bench/slice.sh [T, default 20] [n, default 100] [parallel, default nproc]
# env:   as bench/sweep-floor.sh (BCB_BIN, BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT).
set -euo pipefail
tasks=${1:-20}
n=${2:-100}
parallel=${3:-$(nproc)}
. "$(dirname "$0")/lib.sh"
ids=$(python3 - "$here" "$BCB_DATASET_DIR/.." "$tasks" <<'PY'
import glob, gzip, hashlib, json, os, sys
here, shared, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
gt = {}
for line in open(os.path.join(here, "crates/bcb-eval/priors/gt-secs.tsv")):
    if not line.startswith("#") and line.strip():
        t, secs = line.split("\t")
        gt[t] = float(secs)
with gzip.open(os.path.join(shared, "bigcodebench/bigcodebench-hard-v0.1.4.jsonl.gz"), "rt") as f:
    hard = [json.loads(l)["task_id"] for l in f]
timed_out = set()
for p in glob.glob(os.path.join(shared, "real-samples/*_eval_results.json.gz")):
    for t, rows in json.load(gzip.open(p, "rt"))["eval"].items():
        if any(r["status"] == "timeout" or "Timeout" in str(r.get("details", "")) for r in rows):
            timed_out.add(t)
ok = [t for t in hard if gt.get(t, 99) < 2 and t not in timed_out]
ok.sort(key=lambda t: hashlib.sha256(("slice/" + t).encode()).hexdigest())
print(",".join(sorted(ok[:k], key=lambda t: int(t.split("/")[1]))))
PY
)
echo "slice: $tasks tasks × $n answers: $ids" >&2
BENCH_IDS=$ids ORIGINAL=1 exec "$here/bench/sweep-floor.sh" "$n" "$parallel"
