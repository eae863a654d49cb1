#!/usr/bin/env bash
# A whole `bcb generate` run as a batch job would do it: under nohup, stderr to a log file,
# against the real llama.cpp test server (.ci/setup-llm.sh). Prints the interval between
# progress lines, whether the log has escape codes, and whether the final samples file is
# byte-identical to Python's `json.dumps` re-dump of its rows (what the original writes).
#
# usage: bench/generate-nohup.sh [hard|full] [max_tokens] [interval_secs]
# env:   BCB_DATASET_DIR, BCB_LLM_PYTHON, BCB_LLM_MODEL (defaults: what setup-llm.sh installs),
#        PYTHON (for the json check; default python3), BENCH_OUT (results dir)
set -euo pipefail
subset=${1:-hard}
max_tokens=${2:-48}
interval=${3:-15}
. "$(dirname "$0")/lib.sh"
eval "$(bash "$here/.ci/setup-llm.sh" | sed 's/^/export /')"
bench_out generate
(cd "$here" && cargo build -q --bin bcb)
bcb=$here/target/debug/bcb
log=$out/run.log
start=$(date +%s)
BCB_OFFLINE=1 nohup "$bcb" generate --subset "$subset" --split instruct --model "$BCB_LLM_MODEL" \
  --chat-template gemma --root "$out/results" --max-tokens "$max_tokens" \
  --progress-interval "$interval" >"$log" 2>&1
echo "wall_seconds=$(( $(date +%s) - start ))"
file=$(ls "$out"/results/*.jsonl)
echo "samples=$(wc -l <"$file") file=$file"
echo "progress_lines=$(grep -c ' samples (' "$log")"
grep -o 'elapsed [0-9:]*' "$log" | awk -F'[ :]' '{t=$2*3600+$3*60+$4; if (p!="") {d=t-p; if (d>m) m=d; s+=d; n++} p=t}
  END {if (n) printf "progress_interval_max_s=%d progress_interval_mean_s=%.1f\n", m, s/n}'
echo "escape_codes_in_log=$(grep -c $'\x1b' "$log" || true)"
"${PYTHON:-python3}" - "$file" <<'PY'
import json, sys
raw = open(sys.argv[1], "rb").read()
rows = [json.loads(l) for l in raw.decode("utf-8").splitlines()]
redump = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
print(f"byte_identical_to_json_dumps={redump == raw}")
PY
