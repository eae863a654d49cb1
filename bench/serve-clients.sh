#!/usr/bin/env bash
# Every known client of a code reward against `bcb serve` (issue 38), each with its own retry
# rule (bench/serve_clients.py: verl's /run_code, the sandbox-fusion client's /submit,
# OpenRLHF's /openrlhf, bcb's client on /v1/evaluate), at 1x and 4x of what the server runs at
# once (CAPACITY: --max-in-flight). The queue admits CAPACITY samples (QUEUE_LIMIT), so at 4x
# the server sheds and each client's retry rule is what keeps a shed request from becoming a
# reward. Per client: sent, retried, answered, wrong rewards (must be 0), lost (must be 0),
# p50/p99 latency. Exits 1 when any reward was wrong or lost.
# usage: bench/serve-clients.sh [requests per client and multiple, default 200]
# env:   BCB_BIN (default: cargo build --release), BCB_PYTHON, BCB_DATASET_DIR, BENCH_OUT,
#        PARALLEL (nproc), CAPACITY (PARALLEL), QUEUE_LIMIT (CAPACITY), MULTS ("1 4"),
#        CLIENTS ("verl fusion openrlhf native"), PORT (18766), BENCH_IDS (tasks)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
: "${BCB_DATASET_DIR:=$here/../shared/bigcodebench}" "${BCB_PYTHON:=$HOME/.cache/bcb/eval-env-py311/bin/python}"
: "${BENCH_OUT:=$(mktemp -d /tmp/bcb-bench-clients.XXXXXX)}" "${PARALLEL:=$(nproc)}"
export BCB_DATASET_DIR BCB_PYTHON BCB_CACHE_DIR=$BENCH_OUT/cache
out=$BENCH_OUT n=${1:-200} capacity=${CAPACITY:-$PARALLEL}
parallel=$PARALLEL queue=${QUEUE_LIMIT:-$capacity}
mkdir -p "$out"
if [[ -z "${BCB_BIN:-}" ]]; then
    (cd "$here" && cargo build -q --release --bin bcb)
    BCB_BIN=${CARGO_TARGET_DIR:-$here/target}/release/bcb
fi
ids=${BENCH_IDS:-BigCodeBench/592,BigCodeBench/720,BigCodeBench/800,BigCodeBench/854,BigCodeBench/313,BigCodeBench/765}
export BENCH_IDS=$ids
port=${PORT:-18766}
url=http://127.0.0.1:$port
"$BCB_BIN" serve --listen 127.0.0.1:$port --subset hard --ids "$ids" --parallel "$parallel" \
    --max-in-flight "$capacity" --queue-limit "$queue" --no-cache --no-dedup 2>"$out/serve.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
# Ready once the ground truth is checked and every slot warm (curl retries 503 and refusals).
curl -fs --retry 1200 --retry-delay 1 --retry-connrefused -o /dev/null "$url/readyz" ||
    { cat "$out/serve.log"; exit 1; }
echo "bcb serve: --parallel $parallel --max-in-flight $capacity --queue-limit $queue, $n answers per client and multiple" | tee "$out/clients.txt"
status=0
for m in ${MULTS:-1 4}; do
    # shellcheck disable=SC2086 # CLIENTS is a list
    "$BCB_PYTHON" "$here/bench/serve_clients.py" "$url" "$BCB_DATASET_DIR" $((m * capacity)) "$n" \
        ${CLIENTS:-verl fusion openrlhf native} | sed "s/^/${m}x /" | tee -a "$out/clients.txt" || status=1
done
curl -fs "$url/metrics" | grep -E '^bcb_(rejected_busy|cancelled_samples)_total' | tee -a "$out/clients.txt"
echo "results in $out" >&2
exit $status
