#!/usr/bin/env bash
# BigCodeBench/205 and /363 (canonical solutions that end a `multiprocessing.Pool` with
# `terminate()`) N times each beside a CPU-bound load, with the default admission: how many
# time out. Each copy differs by a comment line, so none is deduplicated. With BASELINE_BCB
# (e.g. an older main) the same file runs through it too, in the same run, as the control.
# The base limit is lowered (BIGCODEBENCH_TIMEOUT_PER_TASK, default 30 s) so that a hang costs
# 31 s rather than 241 s; an honest copy takes well under a second of test.
#
# usage: bench/pool-hang.sh [N=50] [parallel=nproc]
# env:   BASELINE_BCB, BCB_BIN (default: this checkout's release build), LIMIT (30),
#        BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT
set -euo pipefail
n=${1:-50}
parallel=${2:-$(nproc)}
. "$(dirname "$0")/lib.sh"
out=${BENCH_OUT:-$(mktemp -d /tmp/bcb-pool-hang.XXXXXX)}
mkdir -p "$out"
bench_bcb_bin
BCB_PYTHON=${BCB_PYTHON:-$("$BCB_BIN" env setup | tail -n 1)}
export BCB_PYTHON
python3 - "$BCB_DATASET_DIR/bigcodebench-v0.1.4.jsonl.gz" "$n" >"$out/copies.jsonl" <<'PY'
import gzip, json, sys
tasks = {r["task_id"]: r for r in map(json.loads, gzip.open(sys.argv[1], "rt"))}
for i in range(int(sys.argv[2])):
    for t in ("BigCodeBench/205", "BigCodeBench/363"):
        r = tasks[t]
        print(json.dumps({"task_id": t, "solution": f"# copy {i}\n" + r["complete_prompt"] + r["canonical_solution"]}))
PY
load=()
trap 'for p in "${load[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
for _ in $(seq "$(nproc)"); do bash -c 'while :; do :; done' & load+=($!); done

run() { # name binary
    local dir=$out/$1
    mkdir -p "$dir"; cp "$out/copies.jsonl" "$dir/copies.jsonl"
    echo "== $1: $2 evaluate (${n} copies each of 205 and 363, ${LIMIT:-30}-s base limit, CPU load beside)" >&2
    BIGCODEBENCH_TIMEOUT_PER_TASK=${LIMIT:-30} BCB_CACHE_DIR=$dir/cache /usr/bin/time -f '%e' -o "$dir/time" \
        "$2" evaluate --split complete --subset full --ids 205,363 --no-gt --parallel "$parallel" \
        --samples "$dir/copies.jsonl" >"$dir/out" 2>"$dir/err" || true
    python3 - "$dir/copies_eval_results.json" "$(cat "$dir/time")" "$1" <<'PY'
import collections, json, sys
doc = json.load(open(sys.argv[1]))
for t, rows in sorted(doc["eval"].items()):
    c = collections.Counter(r["status"] for r in rows)
    print(f"{sys.argv[3]:9s} {t}: {dict(c)}  (run wall {float(sys.argv[2]):.0f} s)")
PY
}
[ -n "${BASELINE_BCB:-}" ] && run baseline "$BASELINE_BCB"
run current "$BCB_BIN"
echo "(files in $out)"
