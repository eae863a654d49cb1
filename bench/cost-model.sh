#!/usr/bin/env bash
# Checks `bcb plan` against real shard runs: runs N ground-truth shards one after another with
# C workers each (each stands for one machine of C cores), and prints each shard's measured wall
# next to the prediction from the shipped timings and from the shards' own measured job times
# (the second isolates the scheduling model from the timings' accuracy).
#
# usage: bench/cost-model.sh [N] [C] [extra evaluate flags...]   (default 2 shards x 1 worker, hard subset)
#   BCB=path/to/bcb   a built binary (default: cargo build --release)
#   e.g. bench/cost-model.sh 2 1 --subset hard
set -euo pipefail
. "$(dirname "$0")/lib.sh"
root=$here
n="${1:-2}"
c="${2:-1}"
shift $(($# < 2 ? $# : 2))
flags=("$@")
((${#flags[@]})) || flags=(--subset hard)
export BCB_OFFLINE=1
bench_bcb_env
work=$(mktemp -d "${TMPDIR:-/tmp}/bcb-cost.XXXXXX")
export BCB_CACHE_DIR="$work/cache"
now() { python3 -c 'import time; print(time.time())'; }

walls=()
for i in $(seq 1 "$n"); do
  t=$(now)
  "$BCB" evaluate -q --check-gt-only --shard "$i/$n" --parallel "$c" "${flags[@]}" >/dev/null
  walls+=("$(python3 -c 'import sys,time; print(f"{time.time()-float(sys.argv[1]):.1f}")' "$t")")
done
mapfile -t journals < <(ls "$BCB_CACHE_DIR"/ground-truth/*.shard-*-of-"$n".jsonl)
echo "== predicted from the shipped timings"
"$BCB" plan --machines "$n" --cores "$c" "${flags[@]}"
echo "== predicted from the shards' measured job times"
"$BCB" plan --machines "$n" --cores "$c" "${flags[@]}" --timings "${journals[@]}" 2>/dev/null
echo "== measured shard walls (s): ${walls[*]}"
python3 - "${journals[@]}" <<'PY'
import json, re, sys
for p in sys.argv[1:]:
    rows = [json.loads(l) for l in open(p)][1:]
    wall = sum(r["wall_secs"] for r in rows)
    test = sum(r.get("test_secs") or 0 for r in rows)
    print(f"{re.search(r'shard-[0-9]+-of-[0-9]+', p).group()}: {len(rows)} jobs, sum of job wall {wall:.1f}s, of test time {test:.1f}s")
PY
