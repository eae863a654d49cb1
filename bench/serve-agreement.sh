#!/usr/bin/env bash
# Served verdicts on the real samples (issue 18): `bcb serve --subset hard` gets the hard-subset
# rows of both models in ../shared/real-samples through POST /v1/evaluate (one request per
# model), `bcb evaluate --subset hard` runs the same rows, and every verdict is compared with
# the other and with the official result files. Prints agreement counts and each disagreement
# with both sides' details. Verdict cache off for both (each side executes every sample); the
# ground truth is checked once by the server at start and reused by the evaluate runs.
# usage: bench/serve-agreement.sh [parallel, default nproc]
# env:   BCB_BIN (default: a release build), BCB_PYTHON, BCB_DATASET_DIR, REAL (samples dir),
#        BENCH_OUT, PORT (18766)
set -euo pipefail
parallel=${1:-$(nproc)}
port=${PORT:-18766}
. "$(dirname "$0")/lib.sh"
bench_python
real=${REAL:-$BCB_DATASET_DIR/../real-samples}
bench_out agreement
bench_bcb_bin
py=$BCB_PYTHON
url=http://127.0.0.1:$port
export BCB_CACHE_DIR=$out/cache
driver="$py $here/bench/serve_agreement.py"

$driver prepare "$real" "$BCB_DATASET_DIR" "$out"

echo "== bcb serve --subset hard (ground truth checked at start)" >&2
/usr/bin/time -f 'serve: wall %e s, user %U s, sys %S s' -o "$out/serve.time" \
    "$BCB_BIN" serve --listen 127.0.0.1:$port --subset hard --parallel "$parallel" \
    --no-cache --request-timeout 14400 2>"$out/serve.log" &
pid=$!
t0=$(date +%s)
until curl -fs "$url/readyz" >/dev/null 2>&1; do
    kill -0 $pid 2>/dev/null || { cat "$out/serve.log"; exit 1; }
    sleep 1
done
echo "ready after $(( $(date +%s) - t0 )) s" | tee "$out/times.txt" >&2
t0=$(date +%s)
$driver serve "$url" "$out"
echo "served both models in $(( $(date +%s) - t0 )) s" | tee -a "$out/times.txt" >&2
kill -TERM $pid; wait $pid || true

echo "== bcb evaluate --subset hard on the same rows" >&2
for f in "$out"/*--real.jsonl; do
    /usr/bin/time -f "evaluate $(basename "$f"): wall %e s, user %U s, sys %S s" -a -o "$out/times.txt" \
        "$BCB_BIN" evaluate --subset hard --samples "$f" --parallel "$parallel" --no-cache -q >/dev/null
done
cat "$out/serve.time" >>"$out/times.txt"

echo "== agreement" >&2
$driver compare "$real" "$out" | tee "$out/agreement.txt"
cat "$out/times.txt"
echo "files in $out" >&2
