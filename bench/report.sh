#!/usr/bin/env bash
# Size and time of `bcb report` / `bcb compare` on the two real models x 1,140 tasks in
# ../shared/real-samples (the issue's target: the page under 5 MB).
# Usage: bench/report.sh   (needs the dataset: $BCB_DATASET_DIR, default ../shared/bigcodebench)
set -euo pipefail
cd "$(dirname "$0")/.."
export BCB_DATASET_DIR="${BCB_DATASET_DIR:-$(cd .. && pwd)/shared/bigcodebench}"
REAL="${BCB_REAL_SAMPLES_DIR:-$BCB_DATASET_DIR/../real-samples}"
cargo build --release -q -p bcb-cli
BIN=target/release/bcb
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
A="$REAL/NousResearch--Hermes-2-Theta-Llama-3-8B--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated_eval_results.json.gz"
B="$REAL/microsoft--Phi-4-multimodal-instruct--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated_eval_results.json.gz"
secs() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$@"; }
t0=$(date +%s.%N); "$BIN" report "$A" "$B" -o "$WORK/page.html" >/dev/null; t1=$(date +%s.%N)
echo "report (html, 2 models x 1,140 tasks): $(stat -c %s "$WORK/page.html") bytes in $(secs "$t0" "$t1") s"
for f in md csv json; do
  t0=$(date +%s.%N); "$BIN" report "$A" "$B" --format "$f" >"$WORK/out.$f" 2>/dev/null; t1=$(date +%s.%N)
  echo "report --format $f: $(stat -c %s "$WORK/out.$f") bytes in $(secs "$t0" "$t1") s"
done
t0=$(date +%s.%N); "$BIN" compare "$A" "$B" >/dev/null; t1=$(date +%s.%N)
echo "compare (10,000 resamples): $(secs "$t0" "$t1") s"
