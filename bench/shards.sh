#!/usr/bin/env bash
# Shards at full size: for N = 1..4, `bcb evaluate --shard I/N` over a real samples file and
# `bcb merge` must give the files one unsharded run gives (date aside), and ground-truth-only
# shards merged (`bcb merge --check-gt-only`) the ground-truth verdicts one `--check-gt-only`
# run gives. Prints the split's balance (bcb plan), each shard's wall time next to the cost
# model's prediction, and every task whose verdicts differ (a flaky task shows up here, not
# as a silent mismatch). Shards run one after another, each with all cores: run it on a quiet
# machine (about 5 full evaluations: ~2 h on 2 cores for the full set).
#
# usage: bench/shards.sh [SAMPLES.jsonl[.gz]]   (default: the Hermes-2-Theta answers in ../shared/real-samples)
#   IDS=1,2,3 bench/shards.sh      only these tasks (a quick check)
#   COUNTS="2 4" bench/shards.sh   other shard counts
#   BCB=path/to/bcb                a built binary (default: cargo build --release)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
root=$here
shared=$(cd "$root/.." && pwd)/shared
samples_in="${1:-$shared/real-samples/NousResearch--Hermes-2-Theta-Llama-3-8B--main--bigcodebench-complete--vllm-0-1-sanitized_calibrated.jsonl.gz}"
counts="${COUNTS:-1 2 3 4}"
export BCB_OFFLINE=1
bench_bcb_env
work=$(mktemp -d "${TMPDIR:-/tmp}/bcb-shards.XXXXXX")
echo "work dir: $work" >&2
ids=()
[[ -n "${IDS:-}" ]] && ids=(--ids "$IDS")

# The same samples under every name (a shard set is tied to its file's results path).
samples() { # name
  local out="$work/$1.jsonl"
  case "$samples_in" in
    *.gz) gzip -dc "$samples_in" >"$out" ;;
    *) cp "$samples_in" "$out" ;;
  esac
  echo "$out"
}
secs() { python3 -c 'import sys,time; print(f"{time.time()-float(sys.argv[1]):.1f}")' "$1"; }
now() { python3 -c 'import time; print(time.time())'; }

# Files equal but for `date` (results) and `model` (pass@k: the file name differs).
same_results() { # a_eval_results.json b_eval_results.json
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    d["date"] = None
diff = sorted(k for k in set(a["eval"]) | set(b["eval"]) if a["eval"].get(k) != b["eval"].get(k))
ka, kb = (json.load(open(p.replace("_eval_results.json", "_pass_at_k.json"))) for p in sys.argv[1:3])
ka["model"] = kb["model"] = None
for k in diff:
    st = lambda d: [r["status"] for r in d["eval"].get(k, [])]
    print(f"  differs: {k}: {st(a)} vs {st(b)}")
print("  equal" if not diff and ka == kb else f"  NOT equal ({len(diff)} task(s); pass@k {'same' if ka == kb else 'differs'})")
sys.exit(0 if not diff and ka == kb else 1)
PY
}
same_gt() { # cache_dir_a cache_dir_b
  python3 - "$1" "$2" <<'PY'
import glob, json, sys
def load(d):
    (f,) = [p for p in glob.glob(d + "/ground-truth/*.jsonl") if ".shard-" not in p]
    rows = [json.loads(l) for l in open(f)][1:]
    return {r["id"]["task_id"]: (r["status"], r["details"]) for r in rows}
a, b = load(sys.argv[1]), load(sys.argv[2])
diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
for k in diff:
    print(f"  differs: {k}: {a.get(k, ('missing',))[0]} vs {b.get(k, ('missing',))[0]}")
print("  equal" if not diff else f"  NOT equal ({len(diff)} task(s))")
sys.exit(0 if not diff else 1)
PY
}

status=0
echo "== balance of the split (bcb plan)"
"$BCB" plan "${ids[@]}" --machines "${counts// /,}"
whole=$(samples whole)
"$BCB" plan "${ids[@]}" --machines "${counts// /,}" --samples "$whole"

echo "== samples: one run, then N shards merged"
export BCB_CACHE_DIR="$work/cache-whole"
t=$(now); "$BCB" evaluate -q "${ids[@]}" --samples "$whole" >/dev/null; echo "unsharded: $(secs "$t")s"
for n in $counts; do
  export BCB_CACHE_DIR="$work/cache-n$n"
  s=$(samples "n$n")
  walls=()
  for i in $(seq 1 "$n"); do
    t=$(now); "$BCB" evaluate -q "${ids[@]}" --samples "$s" --shard "$i/$n" >/dev/null; walls+=("$(secs "$t")")
  done
  "$BCB" merge "${ids[@]}" --samples "$s" >/dev/null
  echo "N=$n: shard walls ${walls[*]} s (predicted: bcb plan --machines $n above)"
  same_results "${s%.jsonl}_eval_results.json" "${whole%.jsonl}_eval_results.json" || status=1
done

echo "== ground truth: one --check-gt-only, then N ground-truth shards merged"
export BCB_CACHE_DIR="$work/gt-whole"
t=$(now); "$BCB" evaluate -q "${ids[@]}" --check-gt-only >"$work/gt-whole.txt"; echo "unsharded: $(secs "$t")s"
for n in $counts; do
  export BCB_CACHE_DIR="$work/gt-n$n"
  walls=()
  for i in $(seq 1 "$n"); do
    t=$(now); "$BCB" evaluate -q "${ids[@]}" --check-gt-only --shard "$i/$n" >/dev/null; walls+=("$(secs "$t")")
  done
  "$BCB" merge "${ids[@]}" --check-gt-only >"$work/gt-n$n.txt"
  echo "N=$n: shard walls ${walls[*]} s"
  same_gt "$work/gt-whole" "$work/gt-n$n" || status=1
  cmp -s "$work/gt-whole.txt" "$work/gt-n$n.txt" && echo "  summary equal" || { echo "  summary differs:"; diff "$work/gt-whole.txt" "$work/gt-n$n.txt" || true; status=1; }
done
exit $status
