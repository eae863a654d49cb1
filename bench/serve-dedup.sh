#!/usr/bin/env bash
# `bcb serve` dedup across requests and the verdict cache across a SIGKILL (issue 18), by
# counts (load-independent) and wall (honest only on a quiet machine):
#   1. the hard subset's canonical solutions xCOPIES from CLIENTS concurrent clients, one
#      sample per request, dedup and cache on: executions (verdicts minus dedup and cache
#      hits) should be 148, not 148 x COPIES; wall beside bench/serve.sh's --no-dedup run.
#   2. the server killed with SIGKILL, restarted on the same cache: the same rows again are
#      all cache hits (every pass and ordinary fail it executed before the kill).
# usage: bench/serve-dedup.sh [parallel, default nproc]
# env:   BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT, CLIENTS (64), COPIES (4), PORT (18766)
set -euo pipefail
parallel=${1:-$(nproc)}
clients=${CLIENTS:-64}
copies=${COPIES:-4}
port=${PORT:-18766}
. "$(dirname "$0")/lib.sh"
bench_python
bench_out serve-dedup
(cd "$here" && cargo build -q --release --bin bcb)
bcb=${CARGO_TARGET_DIR:-$here/target}/release/bcb
py=$BCB_PYTHON
url=http://127.0.0.1:$port
export BCB_CACHE_DIR=$out/cache

serve() {
    "$bcb" serve --listen 127.0.0.1:$port --subset hard --parallel "$parallel" 2>>"$out/serve.log" &
    pid=$!
    until curl -fs "$url/readyz" >/dev/null 2>&1; do
        kill -0 $pid 2>/dev/null || { cat "$out/serve.log"; exit 1; }
        sleep 0.5
    done
}
counts() { # label
    curl -fs "$url/metrics" | awk -v label="$1" '
        /^bcb_verdicts_total\{/ { v += $2 }
        /^bcb_dedup_hits_total / { d = $2 }
        /^bcb_cache_hits_total / { c = $2 }
        END { printf "%s: %d verdicts, %d executed, %d dedup hits, %d cache hits\n", label, v, v - d - c, d, c }'
}

echo "== ground truth of the hard subset (cached for both servers)" >&2
"$bcb" evaluate --check-gt-only --subset hard --parallel "$parallel" -q

echo "== 1. hard canonical x$copies, $clients clients, dedup and cache on" >&2
serve
"$py" "$here/bench/serve_load.py" throughput "$url" "$BCB_DATASET_DIR" "$copies" "$clients" "$out/served-1.jsonl" | tee "$out/dedup.txt"
counts "first server" | tee -a "$out/dedup.txt"

echo "== 2. SIGKILL, restart on the same cache, the same rows again" >&2
kill -KILL $pid
wait $pid 2>/dev/null || true
serve
"$py" "$here/bench/serve_load.py" throughput "$url" "$BCB_DATASET_DIR" 1 "$clients" "$out/served-2.jsonl" | tee -a "$out/dedup.txt"
counts "after SIGKILL and restart" | tee -a "$out/dedup.txt"
kill -TERM $pid
wait $pid || true
echo "results in $out" >&2
